"""Read-only as a type: another agent's transcript is a readable session, never a writer.

A Claude Code session answers every read the daemon and the command line make (the read
protocol), and has no write operation at all; the daemon refuses writes in one place
(``SessionHost.writer``), with the same error a writer used to raise from deep inside.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import orjson
import pytest

from sessiond.errors import ReadOnlySessionError
from sessiond.model.tokens import PI
from sessiond.service.host import SessionHost
from sessiond.service.hub import Hub
from sessiond.store.claude import READ_ONLY, ClaudeSession
from sessiond.store.session import ReadableSession, Session
from tests.builders import assistant, user

WRITES = (
    "append_entries",
    "begin_append",
    "append_message",
    "append_compaction",
    "set_name",
    "move_leaf",
    "begin_move_leaf",
    "set_leaf",
    "take_external",
    "fork",
    "create_branched_session",
    "prepare_compaction_at_leaf",
)


def claude_file(directory: Path) -> Path:
    def rec(kind: str, uuid: str, parent: str | None, message: dict[str, object], second: int) -> bytes:
        return orjson.dumps(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": f"2026-01-01T00:00:0{second}.000Z",
                "sessionId": "5e55b3a1-0000-4000-8000-000000000001",
                "cwd": "/w",
                "version": "2.1.114",
            }
        )

    path = directory / "5e55b3a1-0000-4000-8000-000000000001.jsonl"
    lines = [
        rec("user", "u1", None, {"role": "user", "content": "hello"}, 1),
        rec(
            "assistant",
            "a1",
            "u1",
            {
                "id": "m1",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": "hi"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2},
            },
            2,
        ),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def readable_members() -> list[str]:
    return [
        name
        for name, _ in inspect.getmembers(ReadableSession)
        if not name.startswith("_") and name not in ("read_only",)
    ]


def test_a_claude_session_reads_everything_and_writes_nothing(tmp_path: Path) -> None:
    session = ClaudeSession.open(claude_file(tmp_path))
    assert not isinstance(session, Session)
    for name in WRITES:
        assert not hasattr(session, name), f"ClaudeSession has the write operation {name}"
    missing = [name for name in readable_members() if not hasattr(session, name)]
    assert not missing, f"ClaudeSession lacks reads of the protocol: {missing}"
    assert session.read_only == READ_ONLY
    assert session.leaf_id == "a1" and session.branch_ids() == ["u1", "a1"]
    assert [m["role"] for m in session.context().messages] == ["user", "assistant"]
    assert session.context_usage(PI).tokens == 12
    assert session.current_branch() is session.current_branch()  # cached per leaf and size


def test_a_pi_session_answers_the_read_protocol_too(tmp_path: Path) -> None:
    s = Session.create(tmp_path, "/w")
    s.append_message(user("u"))
    s.append_message(assistant("a"))
    missing = [name for name in readable_members() if not hasattr(s, name)]
    assert not missing


def host(session: ReadableSession) -> SessionHost:
    return SessionHost(session, Hub(), PI, lambda _s, _m: None)


def test_the_host_refuses_writes_in_one_place(tmp_path: Path) -> None:
    claude = host(ClaudeSession.open(claude_file(tmp_path)))
    with pytest.raises(ReadOnlySessionError) as refused:
        claude.writer()
    assert refused.value.reason == READ_ONLY and refused.value.session_id == claude.id
    with pytest.raises(ReadOnlySessionError) as refused:
        claude.pi_session("forking")
    assert "forking it is not supported" in refused.value.reason

    s = Session.create(tmp_path / "store", "/w")
    s.append_message(user("u"))
    mine = host(s)
    assert mine.writer() is s and mine.pi_session("forking") is s

    pi_read_only = host(Session.open(s.path, read_only="it is in Pi's directory"))
    with pytest.raises(ReadOnlySessionError) as refused:
        pi_read_only.writer()
    assert refused.value.reason == "it is in Pi's directory"
    assert pi_read_only.pi_session("forking") is pi_read_only.session  # forks go to the store
