"""Helpers for attacking the real daemon: a raw NDJSON client and a snapshot of the store.

The raw client is deliberately not ``sessiond_client``: hostile tests send what no real client
would (broken frames, wrong types, garbage), read every byte the daemon answers, and need to
see a close as a close.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from tests.harness.daemon import Daemon

MISSING: Any = object()


class Closed(Exception):
    """The daemon closed the connection."""


class RawClient:
    """A blocking NDJSON JSON-RPC client on a Unix (or TCP) socket, for hostile tests."""

    def __init__(self, sock: socket.socket, timeout: float = 30) -> None:
        self.sock = sock
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.notifications: list[dict[str, Any]] = []
        self._ids = 0

    @classmethod
    def unix(cls, path: Path, timeout: float = 30) -> RawClient:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        s.connect(str(path))
        return cls(s, timeout)

    @classmethod
    def tcp(cls, host: str, port: int, timeout: float = 30) -> RawClient:
        return cls(socket.create_connection((host, port), timeout=timeout), timeout)

    def send(self, data: bytes | dict[str, Any]) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n"
        self.sock.sendall(raw)

    def read_line(self) -> bytes:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise Closed(self.buffer.decode(errors="replace"))
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def message(self) -> dict[str, Any]:
        """The next message, NDJSON or (when the daemon took us for an LSP client) framed."""
        line = self.read_line()
        if line.startswith(b"Content-Length:"):
            length = int(line.split(b":")[1])
            while self.read_line().strip():
                pass
            while len(self.buffer) < length:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise Closed(self.buffer.decode(errors="replace"))
                self.buffer += chunk
            line, self.buffer = self.buffer[:length], self.buffer[length:]
        value: dict[str, Any] = json.loads(line)
        return value

    def response(self, msg_id: Any) -> dict[str, Any]:
        """The answer to ``msg_id`` (an error with ``id: null`` also ends the wait)."""
        while True:
            msg = self.message()
            if "method" in msg and "id" not in msg:
                self.notifications.append(msg)
                continue
            if msg.get("id") == msg_id or ("error" in msg and msg.get("id") is None):
                return msg

    def request(self, method: str, params: Any = MISSING, *, msg_id: Any = None) -> dict[str, Any]:
        if msg_id is None:
            self._ids += 1
            msg_id = self._ids
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not MISSING:
            message["params"] = params
        self.send(message)
        return self.response(msg_id)

    def call(self, method: str, params: Any = MISSING) -> Any:
        """``request`` that must succeed."""
        answer = self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def initialize(self, **extra: Any) -> dict[str, Any]:
        return self.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "hostile"}, **extra})

    def closed_within(self, seconds: float) -> bool:
        """Whether the daemon closes the connection within ``seconds`` (what it sent is dropped)."""
        self.sock.settimeout(seconds)
        try:
            while self.sock.recv(1 << 16):
                pass
            return True
        except TimeoutError:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True

    def close(self) -> None:
        self.sock.close()


DERIVED = ("usage.sqlite3", "index.sqlite3")
"""Files the daemon writes in the background from what was acknowledged earlier (the usage
records follow appends within 0.2 s; the search index, ``search/index.sqlite3*``, follows them
from its writer thread): not what a refused request changed."""


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory below ``root`` with its size and mtime (ns): any write shows."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if name.startswith(DERIVED):
                continue
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns)
    return out


def assert_no_traceback(error: dict[str, Any]) -> None:
    """No Python internals in an error: no traceback, no source locations."""
    text = json.dumps(error)
    assert "Traceback" not in text and 'File \\"/' not in text and 'File "/' not in text, error


def wait_for_log(daemon: Daemon, needle: str, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = daemon.log_text()
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} not in the daemon log:\n{daemon.log_text()[-3000:]}")
