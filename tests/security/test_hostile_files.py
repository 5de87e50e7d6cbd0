"""Hostile files against a real daemon (issue 24): FIFOs named ``*.jsonl`` where sessions are
looked for, and a symbolic link planted in the store.

A FIFO opened for reading blocks until a writer comes, so each of these once hung a worker
thread per request (and the daemon's exit); a symlink was read before it was refused.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond_protocol import ErrorCode
from tests.harness.daemon import Daemon, start_daemon
from tests.security.conftest import RawClient, assert_no_traceback, snapshot

ANSWER_WITHIN = 20.0
"""Seconds a request may take here before the test calls it a hang (they take milliseconds)."""

HEADER = '{"type":"session","version":3,"id":"%s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}\n'


def _plant_fifos(tmp: Path) -> list[Path]:
    """A FIFO where each kind of session file is looked for: a Claude Code project directory,
    Codex's dated rollouts, the store."""
    places = [
        tmp / "claude" / "projects" / "-tmp-x" / "0d3c2f4e-1111-4222-8333-444455556666.jsonl",
        tmp
        / "codex"
        / "sessions"
        / "2025"
        / "01"
        / "01"
        / "rollout-2025-01-01T00-00-00-0d3c2f4e-1111-4222-8333-444455556667.jsonl",
        tmp / "store" / "sessions" / "--tmp--" / "2025-01-01T00-00-00-000Z_fifo-1.jsonl",
    ]
    for place in places:
        place.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(place)
    return places


@pytest.fixture
def fifo_daemon(tmp_path: Path) -> Iterator[Daemon]:
    _plant_fifos(tmp_path)
    d = start_daemon(tmp_path)
    yield d
    d.stop()


def test_fifos_named_jsonl_are_skipped_and_nothing_hangs(fifo_daemon: Daemon) -> None:
    d = fifo_daemon
    c = RawClient.unix(d.socket, timeout=ANSWER_WITHIN)
    c.initialize()
    for _ in range(3):  # once per call, each call once hung a worker thread
        listed = c.call("session/list", {})
        assert listed["sessions"] == [], listed
    for sid in ("fifo-1", "0d3c2f4e-1111-4222-8333-444455556666", "0d3c2f4e-1111-4222-8333-444455556667"):
        answer = c.request("session/load", {"sessionId": sid})
        assert "error" in answer, answer
        assert answer["error"]["code"] in (ErrorCode.NOT_A_SESSION, ErrorCode.SESSION_NOT_FOUND), answer
        assert_no_traceback(answer["error"])
    skipped = c.call("daemon/status", {})["files"]["notRegular"]
    assert skipped >= 3, skipped
    c.close()
    # SIGTERM still finishes: no thread is stuck in an open()
    assert d.stop() == 0, d.log_text()[-3000:]
    assert "Traceback" not in d.log_text()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("links"))
    yield d
    assert d.stop() == 0, d.log_text()[-3000:]


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("junk", id="a target that does not parse"),
        pytest.param("session", id="a target that is a session"),
        pytest.param("fifo", id="a FIFO target"),
    ],
)
def test_a_symlinked_session_file_in_the_store_is_refused_before_it_is_opened(
    daemon: Daemon, target: str
) -> None:
    """-32016 whatever the target holds: the answer tells nothing about it (it was once -32021
    for a target that does not parse, and a FIFO target hung the request)."""
    sid = f"linked-{target}"
    outside = daemon.store.parent / "outside" / f"{sid}.jsonl"
    outside.parent.mkdir(exist_ok=True)
    if target == "fifo":
        os.mkfifo(outside)
    else:
        outside.write_text(HEADER % sid if target == "session" else "not json at all\n")
    d = daemon.store / "sessions" / f"--{sid}--"
    d.mkdir(parents=True)
    os.symlink(outside, d / f"2025-01-01T00-00-00-000Z_{sid}.jsonl")
    before = snapshot(daemon.store.parent / "outside")
    c = RawClient.unix(daemon.socket, timeout=ANSWER_WITHIN)
    c.initialize()
    for method in ("session/load", "session/entries"):
        answer = c.request(method, {"sessionId": sid})
        assert answer.get("error", {}).get("code") == ErrorCode.PATH_OUTSIDE_STORE, answer
        assert "symbolic link" in answer["error"]["data"]["reason"], answer
        assert_no_traceback(answer["error"])
    assert snapshot(daemon.store.parent / "outside") == before
    c.close()


# --------------------------------------------------------------------------- huge lines

CLAUDE_SID = "5c6f1f9e-0000-4000-8000-00000000aaaa"
LIMIT = 1 << 20
HUGE = 32 << 20


def claude_line(kind: str, uuid: str, parent: str | None, text: str, second: int) -> bytes:
    """A Claude Code record, its keys in Claude Code's order."""
    message: dict[str, object] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {
            "id": f"msg_{uuid[-6:]}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/tmp/proj",
        "sessionId": CLAUDE_SID,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
    }
    return json.dumps(record).encode() + b"\n"


def huge_line(uuid: str, parent: str, second: int, size: int = HUGE) -> tuple[bytes, bytes, bytes]:
    """A user record whose tool result is ``size`` bytes: (head, filler unit, tail) to write
    it without building it."""
    head = (
        f'{{"parentUuid":"{parent}","isSidechain":false,"userType":"external","cwd":"/tmp/proj",'
        f'"sessionId":"{CLAUDE_SID}","version":"2.1.39","gitBranch":"main","type":"user",'
        '"message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"'
    ).encode()
    tail = f'"}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:{second:02d}.000Z"}}\n'.encode()
    return head, b"x", tail


def write_huge(f: Any, uuid: str, parent: str, second: int, *, newline: bool = True) -> None:
    head, _, tail = huge_line(uuid, parent, second)
    f.write(head)
    chunk = b"x" * (1 << 20)
    for _ in range(HUGE >> 20):
        f.write(chunk)
    f.write(tail if newline else tail[:-1])
    f.flush()


def uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def rss(c: RawClient) -> int:
    value: int = c.call("daemon/status", {})["memory"]["rssBytes"]
    return value


def entries(c: RawClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = c.call("session/entries", {"sessionId": CLAUDE_SID})["entries"]
    return found


def wait_for_entries(c: RawClient, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = entries(c)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def settle_usage(c: RawClient, timeout: float = 60) -> None:
    """Until the usage index's first pass over the files is over (it reads them too, with its
    own bound on a line), so the memory measured after is the session's."""
    deadline = time.monotonic() + timeout
    while c.call("stats/query", {"groupBy": "daily"}).get("indexing") is not None:
        assert time.monotonic() < deadline, "the usage index did not finish"
        time.sleep(0.2)


def placeholder_texts(found: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) for e in found if "oversized line of" in json.dumps(e)]


def test_huge_lines_in_other_agents_files(tmp_path: Path) -> None:
    """A Claude Code transcript with a 32 MiB line (the limit set to 1 MiB): cold, followed, and
    grown without a newline. Each becomes a placeholder entry in its place in the chain, the
    daemon's memory does not grow with the line, and the counts say what was left out."""
    project = tmp_path / "claude" / "projects" / "-tmp-proj"
    project.mkdir(parents=True)
    path = project / f"{CLAUDE_SID}.jsonl"
    with open(path, "wb") as f:
        f.write(claude_line("user", uid(1), None, "hello", 1))
        f.write(claude_line("assistant", uid(2), uid(1), "hi", 2))
        write_huge(f, uid(3), uid(2), 3)
        f.write(claude_line("assistant", uid(4), uid(3), "after the huge one", 4))
    d = start_daemon(tmp_path, config=f"[limits]\nmax_line_bytes = {LIMIT}\n")
    try:
        c = RawClient.unix(d.socket, timeout=ANSWER_WITHIN * 3)
        c.initialize()
        settle_usage(c)
        base = rss(c)
        loaded = c.call("session/load", {"sessionId": CLAUDE_SID})
        assert loaded["diagnostics"]["load"]["oversizedLines"] == 1, loaded["diagnostics"]
        found = entries(c)
        assert len(found) == 4 and len(placeholder_texts(found)) == 1, found
        by_id = {e["id"]: e for e in found}
        assert by_id[uid(4)]["parentId"] == uid(3) and by_id[uid(3)]["parentId"] == uid(2), found
        assert re.search(r"oversized line of 33,5\d\d,\d\d\d bytes at offset \d", placeholder_texts(found)[0])
        cold = rss(c) - base

        # followed: a huge line appended, then one growing past the limit without a newline
        c.call("session/subscribe", {"sessionId": CLAUDE_SID})
        with open(path, "ab") as f:
            write_huge(f, uid(5), uid(4), 5)
            f.write(claude_line("assistant", uid(6), uid(5), "after the second", 6))
        found = wait_for_entries(c, 6)
        assert len(found) == 6 and len(placeholder_texts(found)) == 2, found
        with open(path, "ab") as f:
            write_huge(f, uid(7), uid(6), 7, newline=False)
            time.sleep(1.5)  # the daemon looks at the growing line meanwhile
            f.write(b"\n" + claude_line("assistant", uid(8), uid(7), "after the third", 8))
        found = wait_for_entries(c, 8)
        assert len(found) == 8 and len(placeholder_texts(found)) == 3, found
        assert {e["id"]: e for e in found}[uid(8)]["parentId"] == uid(7)
        status = c.call("daemon/status", {})
        assert status["files"]["oversizedLines"] >= 3, status["files"]
        settle_usage(c)
        grown = rss(c) - base
        # less than the line, less than the three lines: none was held whole, let alone parsed
        # (parsed, a line takes several times its size); what remains is read buffers of 4-8 MiB
        assert cold < HUGE and grown < 2 * HUGE, (cold, grown)
        c.close()
    finally:
        assert d.stop() == 0, d.log_text()[-3000:]
