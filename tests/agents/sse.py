"""What the agent stand-ins (``claude/standin.py``, ``codex/standin.py``) share: a loopback HTTP
server on its own thread, and a Server-Sent Events answer.

Both real agents stream their model's reply as ``text/event-stream``; a stand-in only decides
which events to send. The server and the event framing live here once, so the two stand-ins
cannot drift apart in how they answer (one of them flushing, the other not, say).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def sse_event(name: str, data: Any) -> bytes:
    """One event, framed as the APIs send it: ``event:`` and ``data:`` lines, a blank line."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def send_event_stream(
    handler: BaseHTTPRequestHandler, events: Iterable[bytes], headers: dict[str, str] | None = None
) -> None:
    """Answer ``handler``'s request with ``events`` (framed by :func:`sse_event`), each written
    as soon as it is made, then close the connection (the APIs end a stream that way)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Connection", "close")
    handler.end_headers()
    for chunk in events:
        handler.wfile.write(chunk)
        handler.wfile.flush()
    handler.close_connection = True


class LoopbackServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 (a free port), served from a daemon thread while
    the ``with`` block runs."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
