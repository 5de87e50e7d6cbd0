"""The repository stands on its own: nothing refers to material beside it, fixtures live inside.

A clone with nothing next to it must pass its tests, so no tracked file may point at the
reference material that once sat beside the repository (design notes, fixtures, tools), and the
fixtures the tests and benchmarks read must be files of the repository, each with its origin
recorded in a ``SOURCES.tsv`` row.
"""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest

from benchmarks import harness
from tests.conftest import CLAUDE_FIXTURES, FIXTURES, GOLDEN, PI_FIXTURES, REPO

SIBLING = "shared"
FORBIDDEN = (
    f"../{SIBLING}",
    f"{SIBLING}/design",
    f"{SIBLING}/fixtures",
    f"{SIBLING}/tools",
    f"{SIBLING}/seeds",
    f"SESSIOND_{SIBLING.upper()}",
    "tech" + "-notes",
    f'parent / "{SIBLING}"',
)
"""What a reference to the old sibling directory looks like (built here, so this file is clean)."""


def tracked_files() -> list[Path]:
    """Every file git tracks (the walk of the tree when this is not a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True, timeout=60
        ).stdout
        return [REPO / name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", ".cache", "node_modules", "__pycache__", "out"}
        found = []
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [d for d in dirs if d not in skip]
            found += [Path(root) / f for f in files]
        return found


def test_no_tracked_file_refers_to_material_beside_the_repository() -> None:
    hits = []
    for path in tracked_files():
        if not path.is_file():
            continue  # deleted in the work tree, not yet committed
        text = path.read_bytes().decode("utf-8", errors="replace")
        hits += [f"{path.relative_to(REPO)}: {needle}" for needle in FORBIDDEN if needle in text]
    assert hits == []


@pytest.mark.parametrize("directory", [FIXTURES, PI_FIXTURES, CLAUDE_FIXTURES, GOLDEN, harness.FIXTURES])
def test_fixture_paths_are_inside_the_repository(directory: Path) -> None:
    assert directory.resolve().is_relative_to(REPO.resolve())
    assert directory.is_dir()


def test_every_fixture_has_its_sources_row_and_every_row_its_file() -> None:
    """Each ``SOURCES.tsv`` lists exactly the files of its directory tree (nothing copied in
    without its origin, nothing recorded that is missing)."""
    sources = sorted(FIXTURES.rglob("SOURCES.tsv"))
    assert {p.parent.name for p in sources} >= {"pi", "claude-code"}
    for table in sources:
        with open(table, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        listed = {row["file"] for row in rows}
        assert all(row["file"] and all(v for v in row.values()) for row in rows), table
        present = {
            p.relative_to(table.parent).as_posix()
            for p in table.parent.rglob("*")
            if p.is_file() and p.name != "SOURCES.tsv"
        }
        assert listed == present, table


def test_the_pi_oracle_is_the_projects_own() -> None:
    """The harness and its pinned package are in the repository, and setup-oracle installs them."""
    oracle = REPO / "tests" / "oracle"
    assert (oracle / "harness.mjs").is_file()
    assert '"@earendil-works/pi-coding-agent": "1.6.0"' in (oracle / "package.json").read_text()
    assert (oracle / "package-lock.json").is_file()
    setup = (REPO / "scripts" / "setup-oracle").read_text()
    assert "tests/oracle" in setup and "PI_ORACLE_SRC" not in setup
