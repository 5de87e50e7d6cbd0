"""A client that sends requests faster than it reads the answers: the daemon stops reading it
while the answers are backed up (sessiond/rpc/stream.py), so the requests wait in the client's
socket, not in the daemon's memory — and every one is still answered, in order, once the client
reads. Reading them all and queueing every answer would pass ``max_queued_bytes`` and cut the
client off."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

from sessiond_protocol import ErrorCode
from tests.harness.daemon import start_daemon

REQUESTS = 60_000


def test_a_client_that_does_not_read_is_paused_not_dropped(tmp_path: Path) -> None:
    # Every answer is ~140 bytes: 8 MB of answers against 2 MiB allowed in the queue. (One read
    # of the socket, up to 256 KiB of requests, is handled whole: its answers must fit.)
    d = start_daemon(tmp_path, config="[limits]\nmax_queued_bytes = 2097152\n")
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(str(d.socket))
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        requests = [json.dumps(init).encode() + b"\n"]
        requests += [
            json.dumps({"jsonrpc": "2.0", "id": i, "method": "session/nope", "params": {}}).encode() + b"\n"
            for i in range(1, REQUESTS + 1)
        ]
        sent = threading.Event()

        def send() -> None:
            sock.sendall(b"".join(requests))
            sent.set()

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        time.sleep(1.0)
        assert not sent.is_set()  # the daemon stopped reading: the client waits in sendall
        sock.settimeout(30)
        data = b""
        lines = 0
        while lines < REQUESTS + 1:
            chunk = sock.recv(1 << 20)
            assert chunk, f"disconnected after {lines} answers"
            data += chunk
            lines += chunk.count(b"\n")
        sender.join(10)
        answers = [json.loads(line) for line in data.splitlines()]
        assert [a["id"] for a in answers] == list(range(REQUESTS + 1))
        assert all(a["error"]["code"] == ErrorCode.METHOD_NOT_FOUND for a in answers[1:])
        sock.close()
        assert "is not reading; disconnecting it" not in d.log_text()
    finally:
        assert d.stop() == 0
