"""One client connection: framing, lifecycle, a pygls ``JsonRPCProtocol`` of its own, backpressure.

pygls dispatches requests, tracks their futures and cancels them (``$/cancelRequest``);
everything around it is here because pygls cannot do it for several clients (tech-notes
B.1): one protocol object per connection, both framings, orjson in and out (pygls's default
converter turns params into namedtuples and never answers a request without ``params``), the
LSP lifecycle, ACP's ``$/cancel_request``, a limit on requests in flight, and a bounded
outgoing queue so a client that stops reading cannot grow the daemon's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hmac
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from lsprotocol import converters
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.protocol import JsonRPCProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.server import JsonRPCServer

from sessiond_protocol import ErrorCode

from ..errors import AuthenticationError, ClientRequestError
from ..model.js_json import JSONParseError, dumps, parse
from ..service.config import Limits
from .errors import error_answer
from .framing import Framing, FramingError, MessageReader, MessageTooLargeError, frame

log = logging.getLogger("sessiond.rpc")

Handler = Callable[["Connection", dict[str, Any]], Awaitable[Any]]


def handlers_initialize(conn: Connection, params: dict[str, Any]) -> None:
    from .methods import begin_initialize  # noqa: PLC0415 (methods imports this module)

    begin_initialize(conn, params)


HALF_CLOSE_GRACE = 60.0
"""Seconds the answers to requests already received may take after the client half-closed."""

_REFUSALS = frozenset({ErrorCode.PATH_OUTSIDE_STORE, ErrorCode.PATH_REFUSED, ErrorCode.READ_ONLY})
"""Errors that refuse access (not mere mistakes): logged as warnings, with the peer."""

_ids = itertools.count(1)
_server_request_ids = itertools.count(1)


class _Server(JsonRPCServer):
    """pygls' server object, one per connection; errors are reported by sessiond, not pygls."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        pass


_CONVERTER: Any = None


def _converter() -> Any:
    """pygls wants a cattrs converter; sessiond's messages never go through it, so one is shared.

    Building lsprotocol's converter costs ~20 ms (it generates code); once per process.
    """
    global _CONVERTER  # noqa: PLW0603 (a lazily built process-wide constant)
    if _CONVERTER is None:
        _CONVERTER = converters.get_converter()
    return _CONVERTER


class SessiondProtocol(JsonRPCProtocol):
    """pygls' protocol with sessiond's method table and orjson framing on the way out."""

    conn: Connection

    def handle_message(self, message: Any) -> None:
        """Dispatch on the message's concrete class.

        pygls tests runtime-checkable Protocols with ``isinstance``, ~20 µs a message; the
        connection already built the exact pygls class, so the class says what it is.
        """
        ctx = contextvars.copy_context()
        cls = type(message)
        if cls is JsonRPCRequestMessage:
            ctx.run(self._handle_request, message.id, message.method, message.params)
        elif cls is JsonRPCNotification:
            ctx.run(self._handle_notification, message.method, message.params)
        elif cls is JsonRPCResponseMessage:
            ctx.run(self._handle_response, message.id, message.result)
        else:
            ctx.run(self._handle_response, message.id, None, message.error)

    def _get_handler(self, feature_name: str) -> Any:
        handler = self.conn.handlers.get(feature_name)
        if handler is None:
            raise JsonRpcMethodNotFound.of(feature_name)
        conn = self.conn

        async def run(params: Any) -> Any:
            return await conn.call(feature_name, handler, params)

        return run

    def _send_data(self, data: Any) -> None:
        if isinstance(data, JsonRPCResponseMessage):
            payload: dict[str, Any] = {"jsonrpc": "2.0", "id": data.id, "result": data.result}
        elif isinstance(data, ResponseErrorMessage) and data.error is not None:
            error: dict[str, Any] = {"code": data.error.code, "message": data.error.message}
            if data.error.code == ErrorCode.REQUEST_CANCELLED:  # pygls' own answer to a cancel
                error = {"code": data.error.code, "message": f"Request {data.id} was cancelled"}
                error["data"] = {"requestId": data.id}
            elif data.error.data is not None:
                error["data"] = data.error.data
            payload = {"jsonrpc": "2.0", "id": data.id, "error": error}
        elif isinstance(data, JsonRPCNotification):
            payload = {"jsonrpc": "2.0", "method": data.method, "params": data.params}
        elif isinstance(data, JsonRPCRequestMessage):
            payload = {"jsonrpc": "2.0", "id": data.id, "method": data.method, "params": data.params}
        else:
            log.error("cannot send %r", type(data).__name__)
            return
        self.conn.send(payload)


class Connection:
    """A client of the daemon. ``id`` identifies it as a subscriber."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Any,
        handlers: dict[str, Handler],
        limits: Limits,
        *,
        peer: str = "",
        auth_token: str | None = None,
        on_close: Callable[[Connection], None] | None = None,
        header_timeout: bool = True,
    ) -> None:
        """``header_timeout=False`` (stdio: its one client owns the process) waits for headers
        forever instead of closing after ``limits.header_timeout``."""
        self.id = next(_ids)
        self.peer = peer
        self.handlers = handlers
        self.limits = limits
        self._reader = MessageReader(
            reader,
            limits.max_message_bytes,
            limits.max_header_bytes,
            limits.header_timeout if header_timeout else None,
        )
        self._writer = writer
        self._auth_token = auth_token
        self._on_close = on_close
        self.initialized = False
        self.shutting_down = False
        self.closed = False
        self.client_info: dict[str, Any] = {}
        self.opt_out: set[str] = set()
        self.summarizer = False
        """The client answers ``compaction/summarize`` (declared in ``initialize``)."""
        self.in_flight = 0
        self._handling: set[Any] = set()
        """Futures of the client's requests being handled (pygls keeps them in one table with
        the requests this side sent the client)."""
        self._out: deque[bytes] = deque()
        self._out_bytes = 0
        self._out_ready = asyncio.Event()
        self._resync: set[str] = set()
        self._dead = False
        self._server = _Server(SessiondProtocol, _converter)
        self.protocol: SessiondProtocol = self._server.protocol  # type: ignore[assignment]
        self.protocol.conn = self
        self.service: Any = None
        """Set by the daemon: the ``Service`` handlers call."""
        self.initialize_handler: Callable[[Connection, dict[str, Any]], None] = handlers_initialize
        """Validates ``initialize`` params and applies them (synchronously, before dispatch)."""

    @property
    def framing(self) -> Framing:
        return self._reader.framing or Framing.LSP

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        writer_task = asyncio.ensure_future(self._write_loop())
        try:
            if await self._read_loop():
                await self._answer_after_eof()
        finally:
            await self._finish(writer_task)

    async def _answer_after_eof(self) -> None:
        """The client closed its sending side: answer what it already asked, then close.

        ``printf '...' | sessiond connect`` half-closes right after its last request and still
        reads the answers. Requests this side sent to the client can no longer be answered, so
        they are cancelled at once (a compaction waiting on this client's summarizer fails over);
        the handlers still running get ``HALF_CLOSE_GRACE`` seconds, less if the client is gone.
        """
        handling = set(self._handling)
        for future in list(self.protocol._request_futures.values()):
            if future not in handling:
                future.cancel()
        deadline = asyncio.get_running_loop().time() + HALF_CLOSE_GRACE
        pending = {f for f in handling if not f.done()}
        while pending and not self._dead:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            _done, pending = await asyncio.wait(pending, timeout=min(left, 0.5))

    async def _read_loop(self) -> bool:
        """Read and dispatch until the stream ends; True when it ended cleanly (EOF)."""
        while not self.closed:
            try:
                body = await self._reader.read()
            except MessageTooLargeError as exc:
                self._error(None, ErrorCode.MESSAGE_TOO_LARGE, str(exc), {"limit": exc.limit})
                continue
            except FramingError as exc:
                self._error(None, ErrorCode.PARSE_ERROR, f"Cannot read the message stream: {exc}")
                log.info("connection %s (%s): %s", self.id, self.peer, exc)
                return False
            except (ConnectionError, OSError):
                return False
            if body is None:
                return True
            self._receive(body)
        return False

    async def _write_loop(self) -> None:
        writer = self._writer
        try:
            while True:
                await self._out_ready.wait()
                while self._out:
                    data = self._out.popleft()
                    self._out_bytes -= len(data)
                    writer.write(data)
                self._out_ready.clear()
                await writer.drain()
                if self._resync and len(self._out) < self.limits.notification_queue // 2:
                    for session_id in sorted(self._resync):
                        self._notify(
                            "session/update",
                            {
                                "sessionId": session_id,
                                "update": {
                                    "sessionUpdate": "resync_required",
                                    "reason": "updates were dropped",
                                },
                            },
                        )
                    self._resync.clear()
        except (ConnectionError, OSError):
            self.closed = self._dead = True

    async def _finish(self, writer_task: asyncio.Future[None]) -> None:
        self.closed = True
        for future in list(self.protocol._request_futures.values()):
            future.cancel()
        try:
            if self._out:
                self._out_ready.set()
                await asyncio.wait_for(asyncio.shield(self._drain_out()), timeout=2)
        except (TimeoutError, ConnectionError, OSError):
            pass
        writer_task.cancel()
        with contextlib.suppress(ConnectionError, OSError):
            self._writer.close()
        if self._on_close is not None:
            self._on_close(self)

    async def _drain_out(self) -> None:
        while self._out:
            await asyncio.sleep(0.005)

    def close(self) -> None:
        """Stop reading and close once what is queued has been sent."""
        self.closed = True
        self._reader_feed_eof()

    def _reader_feed_eof(self) -> None:
        reader = self._reader._reader
        reader.feed_eof()

    # ------------------------------------------------------------------ incoming

    def _receive(self, body: bytes) -> None:
        try:
            message = parse(body)
        except JSONParseError as exc:
            self._error(None, ErrorCode.PARSE_ERROR, f"Parse error: {exc}")
            return
        if isinstance(message, list):
            self._error(
                None,
                ErrorCode.INVALID_REQUEST,
                "Batch requests are not supported; send one message at a time",
            )
            return
        if type(message) is not dict:
            self._error(None, ErrorCode.INVALID_REQUEST, "A JSON-RPC message must be an object")
            return
        msg_id = message.get("id")
        has_id = "id" in message
        if message.get("jsonrpc") != "2.0":
            self._error(msg_id if has_id else None, ErrorCode.INVALID_REQUEST, 'jsonrpc must be "2.0"')
            return
        if has_id and not (type(msg_id) in (str, int) or msg_id is None):
            self._error(None, ErrorCode.INVALID_REQUEST, "id must be a string, a number or null")
            return
        method = message.get("method")
        if method is None and has_id and ("result" in message or "error" in message):
            self._response(message)
            return
        if type(method) is not str:
            self._error(msg_id if has_id else None, ErrorCode.INVALID_REQUEST, "method must be a string")
            return
        params = message.get("params")
        if params is not None and type(params) is not dict:
            if has_id:
                self._error(msg_id, ErrorCode.INVALID_PARAMS, "params must be an object", {"field": "params"})
            return
        if has_id:
            self._request(msg_id, method, params if params is not None else {})
        else:
            self._notification(method, params if params is not None else {})

    def _request(self, msg_id: Any, method: str, params: dict[str, Any]) -> None:
        if self.shutting_down:
            self._error(msg_id, ErrorCode.INVALID_REQUEST, "The server is shutting down this connection")
            return
        if not self.initialized and method != "initialize":
            self._error(
                msg_id,
                ErrorCode.SERVER_NOT_INITIALIZED,
                "The connection is not initialized: send initialize first",
            )
            return
        if method == "initialize":
            if self.initialized:
                self._error(msg_id, ErrorCode.INVALID_REQUEST, "The connection is already initialized")
                return
            # Decided here, synchronously: a client may pipeline requests right behind it.
            try:
                self.initialize_handler(self, params)
            except Exception as exc:
                answer = error_answer(exc, method, params)
                self._error(msg_id, ErrorCode(answer.code), answer.message, answer.data)
                return
            self.initialized = True
        if self.in_flight >= self.limits.max_in_flight:
            self._error(
                msg_id,
                ErrorCode.OVERLOADED,
                "Overloaded, retry: too many requests in flight on this connection",
                {"maxInFlight": self.limits.max_in_flight},
            )
            return
        if msg_id in self.protocol._request_futures:
            self._error(msg_id, ErrorCode.INVALID_REQUEST, f"A request with id {msg_id!r} is still running")
            return
        if method not in self.handlers:
            self._error(msg_id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
            return
        # Counted from dispatch (not from when the handler starts): a burst read in one go is
        # dispatched before any handler runs. The future's callback also covers cancellation.
        self.in_flight += 1
        self.protocol.handle_message(
            JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
        )
        future = self.protocol._request_futures.get(msg_id)
        if future is None:
            self.in_flight -= 1  # answered synchronously
        else:
            self._handling.add(future)
            future.add_done_callback(self._request_done)

    def _request_done(self, future: Any) -> None:
        self.in_flight -= 1
        self._handling.discard(future)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "exit":
            self.close()
        elif method == "$/cancelRequest":
            self.protocol.handle_message(
                JsonRPCNotification(method=method, jsonrpc="2.0", params=SimpleNamespace(id=params.get("id")))
            )
        elif method == "$/cancel_request":
            request_id = params.get("requestId")
            if isinstance(request_id, str | int):
                self.protocol._handle_cancel_notification(request_id)
        elif method in ("initialized", "$/setTrace"):
            pass
        else:
            log.debug("ignoring notification %s", method)

    def _response(self, message: dict[str, Any]) -> None:
        error = message.get("error")
        if error is not None:
            err = ResponseError(
                code=error.get("code", -32603), message=str(error.get("message", "")), data=error.get("data")
            )
            self.protocol.handle_message(ResponseErrorMessage(id=message["id"], error=err))
        else:
            self.protocol.handle_message(
                JsonRPCResponseMessage(id=message["id"], jsonrpc="2.0", result=message.get("result"))
            )

    async def call(self, method: str, handler: Handler, params: dict[str, Any]) -> Any:
        """Run a handler (called by pygls); every failure becomes a precise JSON-RPC error."""
        token = params.get("workDoneToken") if isinstance(params, dict) else None
        if token is not None and type(token) in (str, int):
            self.progress(token, "begin", title=method)
        try:
            return await handler(self, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = error_answer(exc, method, params)
            if error.code in _REFUSALS:
                log.warning("connection %s (%s): refused %s: %s", self.id, self.peer, method, error.message)
            raise JsonRpcException(code=error.code, message=error.message, data=error.data) from None
        finally:
            if token is not None and type(token) in (str, int):
                self.progress(token, "end")

    # ------------------------------------------------------------------ outgoing

    def send(self, payload: dict[str, Any], *, droppable: bool = False) -> bool:
        """Queue a message; a droppable one is refused when the queue is full."""
        if self._dead:
            return False
        data = frame(dumps(payload), self.framing)
        if droppable and len(self._out) >= self.limits.notification_queue:
            return False
        if self._out_bytes + len(data) > self.limits.max_queued_bytes:
            log.warning("connection %s (%s) is not reading; disconnecting it", self.id, self.peer)
            self.closed = self._dead = True
            self._out.clear()
            self._out_bytes = 0
            with contextlib.suppress(ConnectionError, OSError):
                self._writer.close()
            return False
        self._out.append(data)
        self._out_bytes += len(data)
        self._out_ready.set()
        return True

    def _notify(self, method: str, params: Any, *, droppable: bool = False) -> bool:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params}, droppable=droppable)

    def _error(self, msg_id: Any, code: ErrorCode, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": int(code), "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        """A ``session/update`` for a subscribed session (dropped if opted out or overflowing)."""
        if self.closed or "session/update" in self.opt_out or update.get("sessionUpdate") in self.opt_out:
            return
        if session_id in self._resync:
            return  # the client will resync; older updates would only mislead it
        if not self._notify("session/update", {"sessionId": session_id, "update": update}, droppable=True):
            self._resync.add(session_id)

    def progress(self, token: str | int, kind: str, **value: Any) -> None:
        if "$/progress" in self.opt_out:
            return
        self._notify("$/progress", {"token": token, "value": {"kind": kind, **value}})

    def log_message(self, level: int, message: str) -> None:
        if "window/logMessage" not in self.opt_out:
            self._notify("window/logMessage", {"type": level, "message": message})

    async def request_client(self, method: str, params: Any) -> Any:
        """A server -> client request (e.g. asking a summarizer for a summary).

        Raises :class:`ClientRequestError` when the client answers with an error and
        ``ConnectionError`` when the connection closes first. Cancelling the awaiting task
        sends ``$/cancelRequest`` so the client can stop working on it.
        """
        if self.closed:
            raise ConnectionError(f"connection {self.id} is closed")
        msg_id = f"sessiond-{next(_server_request_ids)}"
        future = self.protocol.send_request(method, params, msg_id=msg_id)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                self.protocol._request_futures.pop(msg_id, None)
                if not self.closed:
                    self._notify("$/cancelRequest", {"id": msg_id})
                raise
            raise ConnectionError(f"connection {self.id} closed before answering {method}") from None
        except JsonRpcException as exc:
            raise ClientRequestError(method, exc.code, exc.message) from None

    def check_token(self, token: Any) -> None:
        if self._auth_token is None:
            return
        if type(token) is not str or not hmac.compare_digest(token, self._auth_token):
            log.warning(
                "connection %s (%s): refused: %s authToken",
                self.id,
                self.peer,
                "no" if token is None else "a wrong",
            )
            self.shutting_down = True
            asyncio.get_running_loop().call_later(0.05, self.close)
            raise AuthenticationError()
