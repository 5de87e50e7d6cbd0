"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for summarizer tests.

``FakeModel`` runs a ``ThreadingHTTPServer`` in a thread; it records every request and answers
with whatever ``reply`` (a function of the recorded request) returns: a :class:`Reply` with a
status and a body, chunked or not, or one that never answers (it then notices when the client
closes the connection, ``client_closed``). ``FakeModel(tls=context)`` serves HTTPS.

Usable as a program too: ``python -m tests.service.fake_model`` serves a fixed answer until
interrupted (handy to try the ``http`` summarizer by hand).
"""

from __future__ import annotations

import json
import select
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] = b""
    chunked: bool = False
    """Send the body with ``Transfer-Encoding: chunked`` (in small chunks)."""
    no_length: bool = False
    """Neither a length nor chunks: the body ends when the connection closes."""
    hang: bool = False
    """Never answer (until the client goes away or the server stops)."""
    headers: dict[str, str] = field(default_factory=dict)


def completion(
    content: Any = "A summary.",
    finish_reason: str | None = "stop",
    *,
    usage: dict[str, Any] | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A chat-completion answer body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class FakeModel:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Recorded] = []
        self.reply: Callable[[Recorded], Reply] = lambda _: Reply(body=completion())
        self.received = threading.Event()
        self.client_closed = threading.Event()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _handler(fake: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            recorded = Recorded("POST", self.path, dict(self.headers.items()), self.rfile.read(length))
            fake.requests.append(recorded)
            fake.received.set()
            reply = fake.reply(recorded)
            if reply.hang:
                self._hang()
                return
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if reply.chunked:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i in range(0, len(body), 7):
                    piece = body[i : i + 7]
                    self.wfile.write(f"{len(piece):x};ext=1\r\n".encode() + piece + b"\r\n")
                self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
            elif reply.no_length:
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True
            else:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            self.wfile.flush()

        def _hang(self) -> None:
            sock = self.connection
            while not fake._stop.is_set():
                readable, _, _ = select.select([sock], [], [], 0.02)
                if readable:
                    try:
                        data = sock.recv(4096)  # whatever else comes is ignored
                    except ssl.SSLWantReadError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        fake.client_closed.set()
                        break
            self.close_connection = True

    return Handler


if __name__ == "__main__":
    with FakeModel() as server:
        print(f"fake model at {server.url}", flush=True)
        threading.Event().wait()
