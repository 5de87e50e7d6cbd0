"""The session viewer: its page and a WebSocket speaking JSON-RPC, on loopback only.

One listener (the ``websockets`` library parses HTTP and the WebSocket protocol) serves

* ``GET /`` and ``GET /assets/...``: the viewer's built files, shipped in ``static/``;
* ``GET /rpc``: a WebSocket, each message one JSON-RPC message, handled by a
  :class:`~sessiond.rpc.connection.Connection` like any socket client.

The rules are TCP's: a loopback address only, and a WebSocket client is anonymous until its
``initialize`` presents the token of ``<store>/tcp.token`` (the page gets it from ``sessiond
ui`` in the URL's fragment, which browsers never send). Two more checks stop other web pages
the user has open: the ``Host`` header must name this listener (no DNS rebinding), and a
WebSocket's ``Origin``, when there is one, must be the viewer's own.

Where it listens is written to ``<run dir>/ui.json`` (0600, beside the socket) for ``sessiond
ui`` and editors, and removed when the daemon stops; it also names the directory of the page's
files (``staticDir``), which the VS Code extension loads into its own webview.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import logging
import mimetypes
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from .location import INFO_FILE
from .transport import WebSocketSource, WebSocketWriter

log = logging.getLogger("sessiond.web")
_ws_log = logging.getLogger("sessiond.web.websockets")
_ws_log.setLevel(logging.WARNING)  # a line per frame at debug, per connection at info: too much

STATIC = Path(__file__).parent / "static"
RPC_PATH = "/rpc"

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".map": "application/json",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    immutable: bool
    """Vite's hashed file names never change content: cached for good. ``index.html`` is not."""


def load_assets(directory: Path = STATIC) -> dict[str, Asset]:
    """Every file under ``directory`` by URL path, read once: only these paths are ever served,
    so no request path is ever joined onto the file system."""
    assets: dict[str, Asset] = {}
    if not directory.is_dir():
        return assets
    for path in sorted(directory.rglob("*")):
        if not path.is_file() or path.name.startswith("."):
            continue
        rel = path.relative_to(directory).as_posix()
        kind = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        assets["/" + rel] = Asset(path.read_bytes(), kind, rel.startswith("assets/"))
    if "/index.html" in assets:
        assets["/"] = assets["/index.html"]
    return assets


class ViewerServer:
    """The listener; ``open_connection`` makes the daemon's connection for each WebSocket."""

    def __init__(
        self,
        open_connection: Callable[[WebSocketSource, WebSocketWriter, str], Any],
        *,
        max_message_bytes: int,
        max_connections: int = 128,
        on_refused: Callable[[], None] | None = None,
        assets: dict[str, Asset] | None = None,
    ) -> None:
        self._open_connection = open_connection
        self._max_message = max_message_bytes
        self.max_connections = max_connections
        """HTTP and WebSocket connections at once (half-open requests included); more are
        closed as soon as they are accepted, so a flood of requests cannot take every file
        descriptor the daemon has."""
        self.open_connections = 0
        self.refused = 0
        self._on_refused = on_refused
        self._flooded = False
        self.assets = load_assets() if assets is None else assets
        self.static_dir: Path | None = STATIC if assets is None and self.assets else None
        """Where the page's files are on disk (told in ui.json: an editor can load them itself)."""
        self._server: Server | None = None
        self.host = ""
        self.port = 0
        self.info_path: Path | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _connection_class(self) -> type[ServerConnection]:
        """``ServerConnection`` counted against :attr:`max_connections` from its accept on."""
        viewer = self

        class Counted(ServerConnection):
            _counted = False

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                super().connection_made(transport)
                if viewer.open_connections >= viewer.max_connections:
                    viewer.refuse()
                    cast(asyncio.Transport, transport).abort()
                    return
                self._counted = True
                viewer.open_connections += 1

            def connection_lost(self, exc: Exception | None) -> None:
                if self._counted:
                    self._counted = False
                    viewer.open_connections -= 1
                    if viewer._flooded and viewer.open_connections < viewer.max_connections // 2:
                        viewer._flooded = False
                        log.warning("viewer: accepting connections again (%d refused so far)", viewer.refused)
                super().connection_lost(exc)

        return Counted

    def refuse(self) -> None:
        """A connection over the cap: closed unread, logged once per flood."""
        self.refused += 1
        if self._on_refused is not None:
            self._on_refused()
        if not self._flooded:
            self._flooded = True
            log.warning(
                "viewer: %d connections open (the limit): refusing more until half of them closed",
                self.open_connections,
            )

    async def start(self, host: str, port: int) -> None:
        self._server = await serve(
            self._handle,
            host,
            port,
            process_request=self._process_request,
            max_size=self._max_message,
            compression=None,
            server_header=None,
            logger=_ws_log,
            # a viewer left open in a tab for days is fine; a dead peer is noticed by pings
            ping_interval=20,
            ping_timeout=20,
            open_timeout=10,  # a request's headers, then the WebSocket handshake
            create_connection=self._connection_class(),
        )
        sock = next(iter(self._server.sockets))
        bound = sock.getsockname()
        self.host, self.port = str(bound[0]), int(bound[1])
        if not self.assets:
            log.warning("the viewer's files are missing from %s: only the WebSocket is served", STATIC)

    def write_info(self, run_dir: Path, token_path: Path) -> None:
        """``ui.json`` beside the socket: where the viewer is and where its token is."""
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        info: dict[str, object] = {
            "url": self.url,
            "pid": os.getpid(),
            "tokenPath": str(token_path),
            "rpcPath": RPC_PATH,
        }
        if self.static_dir is not None:
            # the VS Code extension shows these files in its own webview, bridging the page's
            # JSON-RPC to the Unix socket: no HTTP through a port forward (docs/vscode.md)
            info["staticDir"] = str(self.static_dir)
        path = run_dir / INFO_FILE
        tmp = run_dir / f".{INFO_FILE}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        os.replace(tmp, path)
        self.info_path = path

    async def close(self) -> None:
        if self.info_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.info_path.unlink()
            self.info_path = None
        if self._server is not None:
            self._server.close(close_connections=True)
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    # ------------------------------------------------------------------ HTTP

    def _allowed_hosts(self) -> set[str]:
        names = {self.host.lower()}
        if self.host in ("127.0.0.1", "::1"):
            names.add("localhost")
        return {f"[{n}]:{self.port}" if ":" in n else f"{n}:{self.port}" for n in names}

    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        repeated = _repeated_header(request.headers, "Host", "Origin")
        if repeated is not None:
            # which of two Hosts (or Origins) would count is a guess another proxy may make
            # differently; and websockets' ``get`` raises on it (an HTTP 500 with a traceback)
            log.info("viewer: refused a request with more than one %s header", repeated)
            return _text(http.HTTPStatus.BAD_REQUEST, f"More than one {repeated} header.\n")
        host = request.headers.get("Host", "")
        if host.lower() not in self._allowed_hosts():
            log.warning("viewer: refused a request for host %r (DNS rebinding?)", host)
            return _text(
                http.HTTPStatus.MISDIRECTED_REQUEST, "This server answers to its own address only.\n"
            )
        path = request.path.split("?", 1)[0]
        if path == RPC_PATH:
            origin = request.headers.get("Origin")
            if origin is not None and origin.lower() != f"http://{host.lower()}":
                log.warning("viewer: refused a WebSocket from origin %r", origin)
                return _text(http.HTTPStatus.FORBIDDEN, "Cross-origin WebSocket refused.\n")
            return None  # the WebSocket handshake proceeds
        asset = self.assets.get(path)
        if asset is None:
            return _text(http.HTTPStatus.NOT_FOUND, f"Not found: {path}\n")
        headers = Headers(
            [
                ("Content-Type", asset.content_type),
                ("Content-Length", str(len(asset.body))),
                ("Cache-Control", "public, max-age=31536000, immutable" if asset.immutable else "no-cache"),
                ("X-Content-Type-Options", "nosniff"),
                ("Referrer-Policy", "no-referrer"),
                ("Content-Security-Policy", _csp(host)),
                ("Connection", "close"),
            ]
        )
        return Response(http.HTTPStatus.OK.value, "OK", headers, asset.body)

    # ------------------------------------------------------------------ WebSocket

    async def _handle(self, ws: ServerConnection) -> None:
        peer = ws.remote_address
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        source = WebSocketSource(ws)
        writer = WebSocketWriter(ws)
        try:
            await self._open_connection(source, writer, f"web {where}")
        finally:
            source.feed_eof()


def _repeated_header(headers: Headers, *names: str) -> str | None:
    """The first of ``names`` sent more than once, if any."""
    for name in names:
        if len(headers.get_all(name)) > 1:
            return name
    return None


def _csp(host: str) -> str:
    """Only this origin: scripts, styles, the WebSocket; framed by itself or a VS Code webview."""
    return (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        f"connect-src 'self' ws://{host}; frame-ancestors 'self' vscode-webview: vscode-file:; "
        "base-uri 'none'; form-action 'none'"
    )


def _text(status: http.HTTPStatus, text: str) -> Response:
    body = text.encode()
    headers = Headers(
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
        ]
    )
    return Response(status.value, status.phrase, headers, body)
