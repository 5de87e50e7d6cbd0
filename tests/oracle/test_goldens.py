"""``sessiond inspect`` equals Pi on every golden file, in every variant.

The goldens were produced by Pi 1.6.0's own code (pi-oracle) on 200+ generated sessions and
on Pi's migrated copies of the two real fixtures; ``tests/golden/oracle/README.md`` says how
to regenerate them. These tests need no Node: the expected outputs are committed.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.pi import parse_session
from sessiond.inspection import describe_session
from tests.conftest import GOLDEN
from tests.oracle.compare import VARIANTS, differences


def _read(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def _session_files() -> dict[str, Path]:
    files = {p.name: p for p in sorted((GOLDEN / "generated").glob("*.jsonl"))}
    for p in sorted((GOLDEN / "fixtures").glob("*.jsonl.gz")):
        files[p.name.removesuffix(".gz")] = p
    return files


def _golden_results(variant: str) -> dict[str, Any]:
    for name in (f"{variant}.jsonl", f"{variant}.jsonl.gz"):
        path = GOLDEN / "oracle" / name
        if path.exists():
            lines = _read(path).decode().splitlines()
            return {r["file"]: r for r in map(json.loads, lines)}
    return {}


SESSIONS = _session_files()
GOLDENS = {v: _golden_results(v) for v in VARIANTS}


def _cases() -> Iterator[Any]:
    for variant, results in GOLDENS.items():
        for name in sorted(results):
            yield pytest.param(variant, name, id=f"{variant}-{name}")


def test_goldens_cover_enough_sessions() -> None:
    assert len(SESSIONS) >= 202
    for variant, results in GOLDENS.items():
        assert set(results) == set(SESSIONS), variant
        assert not [n for n, r in results.items() if "error" in r], "Pi failed on a golden file"


@pytest.mark.parametrize(("variant", "name"), list(_cases()))
def test_inspect_equals_pi(variant: str, name: str) -> None:
    expected = GOLDENS[variant][name]
    loaded = parse_session(_read(SESSIONS[name]), source=name)
    ours = describe_session(loaded, VARIANTS[variant], file=name)
    diffs = differences(ours, expected)
    assert not diffs, "\n".join(diffs)
