"""``sessiond connect``: everything the daemon sent reaches the client, and the exit status says
whether the conversation ended as the client asked (0) or the daemon hung up on it (1)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from sessiond.rpc.framing import Framing, MessageTap, frame
from sessiond_protocol import ErrorCode
from tests.rpc.conftest import Daemon


def _lsp(message: dict[str, object]) -> bytes:
    return frame(json.dumps(message).encode(), Framing.LSP)


def _read_lsp(data: bytes) -> list[dict[str, object]]:
    out = []
    while data.strip():
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def _connect(daemon: Daemon) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sessiond", "connect", "--socket", str(daemon.socket)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=daemon.env,
    )


def test_what_the_daemon_sent_before_closing_on_an_error_is_forwarded(daemon: Daemon) -> None:
    """A broken header makes the daemon answer -32700 and close while the client is still
    writing: the write fails (broken pipe), and the answers must still come out."""
    bridge = _connect(daemon)
    assert bridge.stdin is not None and bridge.stdout is not None and bridge.stderr is not None
    initialize = _lsp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    listing = _lsp({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}})
    try:
        bridge.stdin.write(initialize + listing + b"Content-Length: many\r\n\r\n" + b"x" * 4_000_000)
        bridge.stdin.flush()
    except BrokenPipeError:
        pass  # the bridge may already be gone: what matters is what it printed
    code = bridge.wait(timeout=60)  # stdin is still open: the daemon's close ends the bridge
    out, err = bridge.stdout.read(), bridge.stderr.read().decode()
    bridge.stdin.close()
    messages = {m.get("id"): m for m in _read_lsp(out)}
    assert set(messages) == {1, 2, None}, out[:2000]  # what was asked before the bad frame too
    assert "result" in messages[1] and "result" in messages[2]
    error = messages[None]["error"]
    assert error["code"] == ErrorCode.PARSE_ERROR and error["data"] == {"closing": True}  # type: ignore[index]
    assert code == 1, err
    assert "the daemon closed the connection after an error: Cannot read the message stream" in err


def test_a_daemon_that_stops_while_the_client_talks_is_a_failure(daemon: Daemon) -> None:
    bridge = _connect(daemon)
    assert bridge.stdin is not None and bridge.stdout is not None and bridge.stderr is not None
    bridge.stdin.write(
        _lsp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    )
    bridge.stdin.flush()
    header = os.read(bridge.stdout.fileno(), 65536)  # the answer: the bridge is connected
    assert b"Content-Length" in header
    assert daemon.stop() == 0
    code = bridge.wait(timeout=30)
    err = bridge.stderr.read().decode()
    bridge.stdin.close()
    assert code == 1 and "before the client was done" in err, err


def test_a_piped_conversation_that_ends_its_input_succeeds(daemon: Daemon) -> None:
    """stdin ends after the requests: every answer, exit status 0 (the half-close case)."""
    bridge = _connect(daemon)
    requests = _lsp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    out, err = bridge.communicate(requests, timeout=60)
    assert [m.get("id") for m in _read_lsp(out)] == [1]
    assert bridge.returncode == 0, err


# --------------------------------------------------------------------------- the tap


@pytest.mark.parametrize("framing", list(Framing))
def test_the_tap_finds_every_small_message_however_the_bytes_are_cut(framing: Framing) -> None:
    rng = random.Random(7)
    bodies = [json.dumps({"i": i, "pad": "y" * rng.randrange(0, 300)}).encode() for i in range(40)]
    bodies[10] = json.dumps({"big": "x" * 9000}).encode()
    bodies[30] = b"{}"
    stream = b"".join(frame(b, framing) for b in bodies)
    for _ in range(50):
        tap, out, at = MessageTap(keep=4096), [], 0
        while at < len(stream):
            step = rng.randrange(1, 700)
            out += tap.feed(stream[at : at + step])
            at += step
        assert out == [b for b in bodies if len(b) <= 4096]
        assert tap.large == 1 and not tap.lost and tap.framing is framing


def test_the_tap_stops_at_bytes_it_cannot_read() -> None:
    tap = MessageTap()
    assert tap.feed(_lsp({"a": 1}) + b"Content-Length: x\r\n\r\n{}") == [b'{"a": 1}']
    assert tap.lost and tap.feed(_lsp({"b": 2})) == []


def test_the_tap_notes_whether_the_last_message_was_long() -> None:
    tap = MessageTap(keep=10)
    tap.feed(b'{"a":1}\n')
    assert not tap.last_large
    tap.feed(b'{"long":"..........."}\n')
    assert tap.last_large and tap.large == 1
