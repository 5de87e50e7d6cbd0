"""A v1 file migrated in memory gets the same ids at every read (read-only roots re-migrate
at every load; an id copied from one read must name the same entry at the next)."""

from __future__ import annotations

from pathlib import Path

from sessiond.formats.pi import load_session
from tests.conftest import PI_FIXTURES

V1 = PI_FIXTURES / "before-compaction.v1.jsonl"


def _ids(path: Path) -> list[str]:
    return [e["id"] for e in load_session(path).entries]


def test_ids_are_stable_across_reads_and_distinct(tmp_path: Path) -> None:
    first, second = _ids(V1), _ids(V1)
    assert first == second
    assert len(set(first)) == len(first) and all(len(i) == 8 for i in first)
    # another session (another header id) gets other ids
    other = tmp_path / "other.jsonl"
    lines = V1.read_text().splitlines()
    lines[0] = lines[0].replace('"id":"', '"id":"x', 1)
    other.write_text("\n".join(lines) + "\n")
    assert not set(_ids(other)) & set(first)
