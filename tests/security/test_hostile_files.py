"""Hostile files against a real daemon (issue 24): FIFOs named ``*.jsonl`` where sessions are
looked for, and a symbolic link planted in the store.

A FIFO opened for reading blocks until a writer comes, so each of these once hung a worker
thread per request (and the daemon's exit); a symlink was read before it was refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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
