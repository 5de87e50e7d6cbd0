"""Live differential test: fresh sessions, Pi's own code, sessiond — same answers.

Unlike the committed goldens, these sessions are generated now (another seed than the
goldens'), and Pi's own code (``tests/oracle/harness.mjs``) runs on them in this test. Set
``SESSIOND_LIVE_SEED`` and ``SESSIOND_LIVE_COUNT`` to explore further seeds. Skipped when Pi is
not installed (``scripts/setup-oracle``; ``scripts/test`` installs it).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from sessiond.formats.pi import load_session
from sessiond.inspection import describe_session
from sessiond.model.tree import SessionTree
from tests.conftest import FIXTURES, REPO, oracle_dir
from tests.oracle.compare import VARIANT_ARGS, VARIANTS, differences
from tests.oracle.generate_sessions import generate
from tests.oracle.mutations import mutate
from tests.oracle.pi import pi_results

ORACLE = oracle_dir()
pytestmark = [pytest.mark.oracle, pytest.mark.skipif(ORACLE is None, reason="pi-oracle is not installed")]

SEED = int(os.environ.get("SESSIOND_LIVE_SEED", "900001"))
COUNT = int(os.environ.get("SESSIOND_LIVE_COUNT", "60"))
MUTATED = int(os.environ.get("SESSIOND_LIVE_MUTATED", "150"))

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
EDGE_CASES = {
    # lines that are JSON but not objects: Pi keeps them as entries with an undefined id
    "non-objects.jsonl": [
        '{"type":"message","id":"a","parentId":null,"timestamp":"x","message":{"role":"user","content":"hi","timestamp":1}}',
        "[1,2]",
        '"a string"',
        "5",
        "null",
        "0",
    ],
    # an entry without an id becomes the (undefined) leaf; context falls back to the last line
    "no-id-leaf.jsonl": [
        '{"type":"message","id":"a","parentId":null,"timestamp":"x","message":{"role":"user","content":"hi","timestamp":1}}',
        '{"type":"custom","customType":"x"}',
    ],
    # numeric and string ids that look alike are different ids
    "numeric-ids.jsonl": [
        '{"type":"message","id":1,"parentId":null,"timestamp":"x","message":{"role":"user","content":"a","timestamp":1}}',
        '{"type":"message","id":"1","parentId":1,"timestamp":"x","message":{"role":"user","content":"b","timestamp":1}}',
        '{"type":"message","id":"c","parentId":"1","timestamp":"x","message":{"role":"bashExecution","command":"ls",'
        '"output":"o","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/p","timestamp":1}}',
    ],
    # integer-like keys, labels on an unknown entry, session names with JS whitespace
    "odd-values.jsonl": [
        '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant",'
        '"content":[{"type":"toolCall","id":"t","name":"edit","arguments":{"b":1,"10":2,"2":[1.5,1e21],"path":"x"}}],'
        '"provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":0},'
        '"stopReason":"toolUse","timestamp":1}}',
        '{"type":"label","id":"l","parentId":"a","timestamp":"z","targetId":"zz","label":"L"}',
        '{"type":"session_info","id":"n","parentId":"l","timestamp":"z","name":"\\u00a0 named \\ufeff"}',
        '{"type":"message","id":"u","parentId":"n","timestamp":"z","message":{"role":"user","content":"x😀y","timestamp":1}}',
    ],
}


def _write_cases(directory: Path) -> list[Path]:
    files: list[Path] = []
    for i in range(COUNT):
        path = directory / f"live-{SEED + i}.jsonl"
        path.write_bytes(generate(random.Random(SEED + i), i).encode())
        files.append(path)
    for i in range(MUTATED):
        rng = random.Random(SEED + COUNT + i)
        text = mutate(generate(random.Random(SEED + COUNT + i), i), rng)
        path = directory / f"mutated-{SEED + COUNT + i}.jsonl"
        path.write_bytes(text.encode())
        if SessionTree(load_session(path).entries).diagnostics().cycles:
            continue  # Pi never returns on a parent cycle; sessiond's handling is tested elsewhere
        files.append(path)
    for name, lines in EDGE_CASES.items():
        path = directory / name
        path.write_text(HEADER + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    files.append(REPO / "examples" / "auth-refactor.jsonl")
    files.append(FIXTURES / "design" / "worked-example.jsonl")
    return files


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_live_differential(variant: str, tmp_path: Path) -> None:
    assert ORACLE is not None
    files = _write_cases(tmp_path)
    expected = pi_results(ORACLE, files, *VARIANT_ARGS[variant])
    failures: list[str] = []
    compared = 0
    for path, pi in zip(files, expected, strict=True):
        if "error" in pi:
            continue  # Pi itself failed on this file (a malformed message it cannot read)
        ours = describe_session(load_session(path), VARIANTS[variant], file=str(path))
        compared += 1
        diffs = differences(ours, pi)
        if diffs:
            failures.append(f"{path.name}:\n  " + "\n  ".join(diffs))
    assert compared >= COUNT + MUTATED * 0.8
    assert not failures, f"{len(failures)} of {compared} files differ from Pi:\n" + "\n".join(failures[:10])
