"""A client that half-closes (or says ``exit``) after its last request still gets every answer.

``printf '...' | sessiond connect`` is the one-shot way to script the daemon: stdin ends right
after the requests, so the bridge half-closes the socket while the daemon is still working (or
still starting). The daemon must answer what it was asked before it closes — also when the last
message is LSP's ``exit``, in both framings.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Daemon


def _requests(cwd: Path) -> bytes:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(cwd)}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}},
    ]
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def _answers(data: bytes) -> dict[int, dict[str, object]]:
    out = {}
    for line in data.splitlines():
        message = json.loads(line)
        if "id" in message:
            out[message["id"]] = message
    return out


def _lifecycle(framing: str) -> bytes:
    """initialize, initialized, session/list, shutdown, exit — written at once."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    bodies = [json.dumps(m).encode() for m in messages]
    if framing == "ndjson":
        return b"".join(b + b"\n" for b in bodies)
    return b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)


def _messages(data: bytes) -> list[dict[str, Any]]:
    if data.lstrip().startswith(b"{"):
        return [json.loads(line) for line in data.splitlines() if line.strip()]
    out = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_requests_before_exit_are_answered_before_the_close(daemon: Daemon, framing: str) -> None:
    """The socket stays open on the client's side: only ``exit`` ends the conversation."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(daemon.socket))
        s.sendall(_lifecycle(framing))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    answers = {m["id"]: m for m in _messages(data) if "id" in m}
    assert sorted(answers) == [1, 2, 3], data
    assert answers[2]["result"] == {"sessions": [], "nextCursor": None}
    assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": None}


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_exit_through_connect_prints_every_answer_and_succeeds(daemon: Daemon, framing: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sessiond", "connect", "--socket", str(daemon.socket)],
        input=_lifecycle(framing),
        capture_output=True,
        timeout=60,
        check=False,
        env=daemon.env,
    )
    answers = {m["id"]: m for m in _messages(done.stdout) if "id" in m}
    assert sorted(answers) == [1, 2, 3], (done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr


def test_answers_arrive_after_a_half_close(daemon: Daemon, tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(daemon.socket))
        s.sendall(_requests(tmp_path))
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    answers = _answers(data)
    assert sorted(answers) == [1, 2, 3], data
    assert all("result" in a for a in answers.values()), answers
    assert answers[3]["result"] == {"sessions": [], "nextCursor": None}  # not saved until it has an answer


def test_one_shot_through_connect_while_the_daemon_starts(tmp_path: Path) -> None:
    """No daemon runs: the bridge starts it, and the piped requests are still all answered."""
    store = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-m", "sessiond", "connect", "--store", str(store)],
        input=_requests(tmp_path),
        capture_output=True,
        timeout=60,
        check=False,
    )
    try:
        assert done.returncode == 0, done.stderr
        answers = _answers(done.stdout)
        assert sorted(answers) == [1, 2, 3], done.stdout
        assert all("result" in a for a in answers.values()), answers
        assert len(list((store / "sessions").rglob("*.jsonl"))) == 0  # a new session has no file yet
    finally:
        subprocess.run(
            [sys.executable, "-c", _STOP, str(store)],
            check=False,
            timeout=30,
        )


# Stop the daemon the bridge started (its pid is in the store's lock file).
_STOP = """
import os, signal, sys, time
from pathlib import Path
lock = Path(sys.argv[1]) / "daemon.lock"
try:
    pid = int(lock.read_text().split()[0])
except (OSError, ValueError, IndexError):
    sys.exit(0)
os.kill(pid, signal.SIGTERM)
for _ in range(100):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.1)
"""
