"""The first build's light readers index what the daemon's readers serve: a Codex rollout read
by :func:`read_codex` gives the same entries, leaf, id, cwd and title as ``CodexSession``
(every rollout of tests/fixtures/codex, forks and compactions included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiond.search.codex_file import read_codex
from sessiond.search.extract import entry_docs
from sessiond.store.codex import CodexSession

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"
ROLLOUTS = sorted(FIXTURES.rglob("rollout-*.jsonl"))


def test_there_are_rollouts() -> None:
    assert len(ROLLOUTS) >= 5


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_read_codex_indexes_what_codex_session_serves(path: Path) -> None:
    light = read_codex(path)
    session = CodexSession.open(path)
    try:
        served = session.entries()
        assert [e.get("id") for e in light.entries()] == [e.get("id") for e in served]
        assert [entry_docs(e) for e in light.entries()] == [entry_docs(e) for e in served]
        assert (light.id, light.cwd, light.name) == (session.id, session.cwd, session.name)
        assert light.leaf_id == session.leaf_id
    finally:
        session.close()
        light.close()
