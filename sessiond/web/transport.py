"""A WebSocket as a transport of :class:`~sessiond.rpc.connection.Connection`.

Each WebSocket message is one JSON-RPC message, both ways, so no framing is involved: the
source hands the connection whole messages, and the writer sends each framed reply as one
text message. The connection needs nothing else from its transport, so the viewer's clients
go through exactly the machinery of socket clients (lifecycle, limits, backpressure,
subscriptions).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..net.framing import Framing

_EOF = None


class WebSocketSource:
    """Incoming messages of one WebSocket, read by a pump task so that :meth:`feed_eof` can
    end the connection's read loop without dropping what it still has to send."""

    framing = Framing.NDJSON
    """Replies are framed as NDJSON (one line each); :class:`WebSocketWriter` drops the newline."""

    def __init__(self, ws: ServerConnection) -> None:
        self._ws = ws
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=1)
        self._pump = asyncio.ensure_future(self._run())
        self._eof = False

    async def _run(self) -> None:
        try:
            while True:
                message = await self._ws.recv()
                await self._queue.put(message.encode() if isinstance(message, str) else message)
        except ConnectionClosed:
            pass
        finally:
            self.feed_eof()

    async def read(self) -> bytes | None:
        if self._eof and self._queue.empty():
            return None
        body = await self._queue.get()
        if body is _EOF:
            self._eof = True
        return body

    def feed_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        if self._pump is not asyncio.current_task():
            self._pump.cancel()
        # when a message is waiting, read() returns it, then sees the end
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(_EOF)


class WebSocketWriter:
    """What the connection writes to: each ``write`` is one framed message, sent as a text frame."""

    def __init__(self, ws: ServerConnection) -> None:
        self._ws = ws
        self._pending: deque[bytes] = deque()
        self._closing: asyncio.Future[Any] | None = None

    def write(self, data: bytes) -> None:
        self._pending.append(data[:-1] if data.endswith(b"\n") else data)

    async def drain(self) -> None:
        while self._pending:
            data = self._pending.popleft()
            try:
                await self._ws.send(data, text=True)
            except ConnectionClosed:
                self._pending.clear()
                raise ConnectionResetError("the WebSocket closed") from None

    def close(self) -> None:
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._ws.close())

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peername":
            return self._ws.remote_address
        return default
