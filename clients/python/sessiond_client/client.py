"""The transport core of the Python client: one connection, requests, notifications."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson


class RpcError(Exception):
    """An error answer from sessiond: ``code`` (see ``sessiond_protocol.ErrorCode``), ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} [{code}]")
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosedError(ConnectionError):
    pass


ServerRequestHandler = Callable[[Any], Awaitable[Any]]


class Client:
    """One connection to sessiond. Not thread-safe; use it from one event loop."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        framing: str = "content-length",
        process: asyncio.subprocess.Process | None = None,
    ) -> None:
        if framing not in ("content-length", "ndjson"):
            raise ValueError("framing must be 'content-length' or 'ndjson'")
        self._reader = reader
        self._writer = writer
        self.framing = framing
        self._process = process
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._notifications: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._handlers: dict[str, ServerRequestHandler] = {}
        self._closed = asyncio.Event()
        self._answering: set[asyncio.Future[None]] = set()
        self._answering_by_id: dict[Any, asyncio.Future[None]] = {}
        self.cancelled_requests: list[Any] = []
        """Ids of server requests the server cancelled (``$/cancelRequest``)."""
        self._read_task = asyncio.ensure_future(self._read_loop())

    # ------------------------------------------------------------------ connecting

    @classmethod
    async def connect_unix(cls, path: str | os.PathLike[str], *, framing: str = "content-length") -> Client:
        reader, writer = await asyncio.open_unix_connection(os.fspath(path), limit=2**26)
        return cls(reader, writer, framing=framing)

    @classmethod
    async def connect_tcp(cls, host: str, port: int, *, framing: str = "content-length") -> Client:
        reader, writer = await asyncio.open_connection(host, port, limit=2**26)
        return cls(reader, writer, framing=framing)

    @classmethod
    async def spawn(
        cls, *argv: str, framing: str = "content-length", env: dict[str, str] | None = None
    ) -> Client:
        """Start a server process speaking on its stdio (``sessiond serve --stdio`` or ``connect``)."""
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=2**26
        )
        assert proc.stdout is not None and proc.stdin is not None
        writer = proc.stdin
        return cls(proc.stdout, writer, framing=framing, process=proc)

    async def __aenter__(self) -> Client:
        return self

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (the server closed it, or :meth:`close` was called)."""
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        """Return once the connection has ended (pending requests have failed by then)."""
        await self._closed.wait()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()
        self._read_task.cancel()
        with contextlib.suppress(BaseException):
            await self._read_task
        if self._process is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._process.wait(), timeout=5)
            if self._process.returncode is None:
                self._process.kill()
                await self._process.wait()

    # ------------------------------------------------------------------ messages

    def _frame(self, message: dict[str, Any]) -> bytes:
        body = orjson.dumps(message)
        if self.framing == "ndjson":
            return body + b"\n"
        return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (for tests of the server's framing and error handling)."""
        self._writer.write(data)
        await self._writer.drain()

    async def request(
        self, method: str, params: Any = None, *, msg_id: Any = None, timeout: float | None = 30
    ) -> Any:
        """Send a request and return its result; an error answer raises :class:`RpcError`.

        Cancelling the awaiting task sends ``$/cancelRequest`` for it.
        """
        if self._closed.is_set():
            raise ConnectionClosedError("the connection is closed")
        rid = next(self._ids) if msg_id is None else msg_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.send_raw(self._frame(message))
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result when a
            # cancel arrives as the answer does, swallowing the cancel (a Ctrl-C then left
            # `sessiond tail -f` running).
            async with asyncio.timeout(timeout):
                return await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                # Shielded: an anyio cancel scope re-cancels every await inside it, and the
                # daemon must hear of the cancellation or it keeps working (and may write).
                # anyio is imported here, not at the top: `sessiond ls` never cancels, and
                # does not pay for it (issue 30).
                import anyio  # noqa: PLC0415

                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await self.notify("$/cancelRequest", {"id": rid})
            raise
        finally:
            self._pending.pop(rid, None)
            # Nobody awaits it any more (the send failed, a timeout, a cancel): an answer or a
            # "connection closed" landing on it later must not be reported as never retrieved.
            if future.done():
                if not future.cancelled():
                    future.exception()
            else:
                future.cancel()

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(self._frame(message))

    async def initialize(self, name: str = "sessiond_client", **capabilities: Any) -> Any:
        params: dict[str, Any] = {"protocolVersion": 1, "clientInfo": {"name": name}}
        token = capabilities.pop("auth_token", None)
        if token is not None:
            params["authToken"] = token
        if capabilities:
            params["capabilities"] = capabilities
        result = await self.request("initialize", params)
        await self.notify("initialized", {})
        return result

    def on_request(self, method: str, handler: ServerRequestHandler) -> None:
        """Answer server -> client requests of ``method`` (e.g. ``compaction/summarize``)."""
        self._handlers[method] = handler

    async def notification(self, timeout: float | None = 10) -> tuple[str, Any]:
        """The next notification ``(method, params)``."""
        async with asyncio.timeout(timeout):  # not wait_for: see request()
            return await self._notifications.get()

    async def updates(
        self, session_id: str | None = None, timeout: float | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """``session/update`` payloads (``update`` objects), optionally of one session."""
        while True:
            async with asyncio.timeout(timeout):  # not wait_for: see request()
                method, params = await self._notifications.get()
            if method == "session/update" and (session_id is None or params.get("sessionId") == session_id):
                yield params["update"]

    def drain_notifications(self) -> list[tuple[str, Any]]:
        out = []
        while not self._notifications.empty():
            out.append(self._notifications.get_nowait())
        return out

    # ------------------------------------------------------------------ reading

    async def _read_message(self) -> bytes | None:
        reader = self._reader
        if self.framing == "ndjson":
            line = await reader.readline()
            return line or None
        length = None
        while True:
            line = await reader.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return await reader.readexactly(length)

    async def _read_loop(self) -> None:
        try:
            while True:
                body = await self._read_message()
                if body is None:
                    break
                if not body.strip():
                    continue
                self._dispatch(orjson.loads(body))
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self._closed.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosedError("the server closed the connection"))

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" in message and "id" in message:
            task = asyncio.ensure_future(self._answer(message))
            self._answering.add(task)
            self._answering_by_id[message["id"]] = task
            task.add_done_callback(self._answering.discard)
            request_id = message["id"]

            def forget(_task: asyncio.Future[None]) -> None:
                self._answering_by_id.pop(request_id, None)

            task.add_done_callback(forget)
        elif message.get("method") == "$/cancelRequest":
            request_id = (message.get("params") or {}).get("id")
            self.cancelled_requests.append(request_id)
            running = self._answering_by_id.get(request_id)
            if running is not None:
                running.cancel()  # the server no longer wants the answer: stop the handler
        elif "method" in message:
            self._notifications.put_nowait((message["method"], message.get("params")))
        else:
            future = self._pending.get(message.get("id"))
            if future is None or future.done():
                if message.get("id") is None and "error" in message:
                    self._notifications.put_nowait(("$/error", message["error"]))
                return
            error = message.get("error")
            if error is not None:
                future.set_exception(
                    RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
                )
            else:
                future.set_result(message.get("result"))

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self._handlers.get(message["method"])
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"Method not found: {message['method']}"}
        else:
            try:
                reply["result"] = await handler(message.get("params"))
            except Exception as exc:  # report to the server, never crash the reader
                reply["error"] = {"code": -32603, "message": f"{type(exc).__name__}: {exc}"}
        with contextlib.suppress(ConnectionError, OSError):  # the connection is gone: nobody to answer
            await self.send_raw(self._frame(reply))
