"""The first build's light readers index what the daemon's readers serve: a Codex rollout read
by :func:`read_codex` gives the same entries, leaf, id, cwd and title as ``CodexSession``
(every rollout of tests/fixtures/codex, forks, compactions and rollbacks included: the
``event_msg`` lines it leaves unparsed must be none of those the tree is made of), a Claude Code
transcript read by :func:`read_claude` the same entries, leaf, id, cwd and title as
``ClaudeSession`` (every transcript of tests/fixtures: sub-agents, compactions, parallel tool
results), and a transcript with a line over the line limit is left to ``ClaudeSession``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiond.search.claude_file import read_claude
from sessiond.search.codex_file import read_codex
from sessiond.search.extract import file_docs
from sessiond.search.readers import open_for_index
from sessiond.store import bounded
from sessiond.store.claude import ClaudeSession
from sessiond.store.codex import CodexSession

ALL_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURES = ALL_FIXTURES / "codex"
ROLLOUTS = sorted(FIXTURES.rglob("rollout-*.jsonl"))
TRANSCRIPTS = sorted(
    p for p in ALL_FIXTURES.rglob("*.jsonl") if "claude-code" in p.parts or p.name.startswith("claude-code")
)


def test_there_are_rollouts() -> None:
    assert len(ROLLOUTS) >= 5


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_read_codex_indexes_what_codex_session_serves(path: Path) -> None:
    light = read_codex(path)
    session = CodexSession.open(path)
    try:
        served = session.entries()
        assert [e.get("id") for e in light.entries()] == [e.get("id") for e in served]
        assert file_docs(light.entries()) == file_docs(served)
        assert (light.id, light.cwd, light.name) == (session.id, session.cwd, session.name)
        assert light.leaf_id == session.leaf_id
    finally:
        session.close()
        light.close()


def test_there_are_transcripts() -> None:
    assert len(TRANSCRIPTS) >= 10
    assert any("subagents" in p.parts for p in TRANSCRIPTS)


def _same_as_claude_session(light: Any, path: Path) -> None:
    session = ClaudeSession.open(path)
    try:
        assert light.entries() == session.entries()
        assert (light.id, light.cwd, light.name) == (session.id, session.cwd, session.name)
        assert light.leaf_id == session.leaf_id
    finally:
        session.close()
        light.close()


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: str(p.relative_to(ALL_FIXTURES)))
def test_read_claude_indexes_what_claude_session_serves(path: Path) -> None:
    light = read_claude(path)
    assert light is not None
    _same_as_claude_session(light, path)


def test_a_transcript_with_an_oversized_line_is_read_by_claude_session(tmp_path: Path) -> None:
    path = tmp_path / "5b7e0a52-1c1e-4d36-9a57-3c39d1e9b1f4.jsonl"
    path.write_bytes(TRANSCRIPTS[0].read_bytes() + b'{"type":"user","text":"' + b"x" * 4000 + b'"}\n')
    bounded.set_line_limit(1024)
    try:
        assert read_claude(path) is None
        light = open_for_index("claude-code", path)
        assert isinstance(light, ClaudeSession)  # its reader, which shows the line as a placeholder
        _same_as_claude_session(light, path)
    finally:
        bounded.set_line_limit(bounded.DEFAULT_LINE_LIMIT)


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_followed_file_is_opened_by_the_daemons_reader(agent: str) -> None:
    """A file the engine keeps following needs ``ingest``, which the light readers lack."""
    path = TRANSCRIPTS[0] if agent == "claude-code" else ROLLOUTS[0]
    session = open_for_index(agent, path, follow=True)
    try:
        assert isinstance(session, ClaudeSession if agent == "claude-code" else CodexSession)
        assert callable(session.ingest)
    finally:
        session.close()
    light = open_for_index(agent, path)
    assert not hasattr(light, "ingest")
    light.close()
