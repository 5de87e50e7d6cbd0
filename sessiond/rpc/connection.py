"""One client connection: framing, the lifecycle, limits, backpressure.

Messages come in whole: a byte stream (``stream.py``) cuts them out of the bytes in the framing the
client chose and hands each to :meth:`Connection.receive` from the event loop's callback (no read
task); a WebSocket's are read by :meth:`Connection._read_loop`. They are parsed with orjson;
requests go to the method table (``dispatch.py``) — lifecycle requests answered at
receipt, a buffered ``session/append`` too when nothing else of the connection is in flight,
the others as tasks of the connection's JSON-RPC engine (pygls, ``engine.py``), which also
cancels them and carries the server's own requests to the client. Everything a client
can do wrong before a handler runs is answered here with its precise error: not JSON, not
JSON-RPC, no ``initialize`` yet, an unknown method, too many requests in flight, an id still
in use. Messages out are queued, bounded (a client that stops reading cannot grow the daemon's
memory: its requests are not read while its answers are backed up, and past
``max_queued_bytes`` it is disconnected), and written in the client's framing at the end of the loop tick
that queued them (one ``write`` for all of it), by the write loop only while the socket is
backed up.

A connection ends when the client closes its side, sends ``exit`` or sends bytes that cannot be
read as messages: the requests it sent before are answered first (``printf '...' | sessiond
connect`` writes everything at once), within ``HALF_CLOSE_GRACE``. Why pygls is used one
protocol object per connection: docs/design-notes.md §1.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sessiond_protocol import ErrorCode
from sessiond_protocol.methods import MAX_ENTRIES_PER_APPEND

from ..errors import AuthenticationError
from ..model.js_json import JSONParseError, dumps, parse
from ..service.config import Limits
from .auth import Credentials, Granted
from .dispatch import Daemon, Json, Method, answer_now
from .engine import Engine
from .errors import ErrorAnswer
from .framing import Framing, FramingError, MessageSource, MessageTooLargeError, frame
from .stream import MessageStream

if TYPE_CHECKING:
    from ..service.service import Service

log = logging.getLogger("sessiond.rpc")

HALF_CLOSE_GRACE = 60.0
"""Seconds the answers to requests already received may take after the client half-closed
(or sent ``exit``)."""

_ids = itertools.count(1)


class Connection:
    """A client of the daemon: the :class:`~sessiond.rpc.dispatch.Caller` its handlers get, and
    the peer the service keeps (``id`` identifies it as a subscriber)."""

    def __init__(
        self,
        source: MessageStream | MessageSource,
        writer: Any,
        methods: Mapping[str, Method],
        service: Service,
        limits: Limits,
        *,
        peer: str = "",
        credentials: Credentials | None = None,
        on_close: Callable[[Connection], None] | None = None,
    ) -> None:
        """``source`` is a byte stream, which hands this connection its messages as they arrive
        (:mod:`sessiond.rpc.stream`), or a transport that already delivers whole messages and
        is read by this connection (a WebSocket: :mod:`sessiond.web.transport`); ``writer``
        gets each framed message in one ``write`` call."""
        self.id = next(_ids)
        self.peer = peer
        self.methods = methods
        self.service = service
        self.limits = limits
        self._source = source
        self._stream = source if isinstance(source, MessageStream) else None
        if self._stream is not None:
            self._stream.attach(self)
        self._writer = writer
        self._joins = self._stream is not None
        """A byte stream: queued messages may be joined into one write."""
        self.credentials = credentials
        """Set for anonymous transports (TCP, the viewer's WebSocket): ``initialize`` must
        present a credential of theirs. None: the peer is the owner (Unix socket, stdio)."""
        self.granted: Granted | None = None
        """What this connection's credential granted (None before, or when none is needed)."""
        self.generation = credentials.generation if credentials is not None else 0
        self._on_close = on_close
        self._context = {MAX_ENTRIES_PER_APPEND: limits.max_entries_per_append}
        """What params validators need besides the params: the limits that are settings."""
        self.initialized = False
        self.shutting_down = False
        self.exited = False
        """The client sent ``exit``: nothing more is read."""
        self.closed = False
        self.client_info: dict[str, Any] = {}
        self.opt_out: set[str] = set()
        self.summarizer = False
        """The client answers ``compaction/summarize`` (declared in ``initialize``)."""
        self._out: deque[bytes] = deque()
        self._out_bytes = 0
        self._out_ready = asyncio.Event()
        """Wakes the write loop: what is queued waits for a transport that is backed up (or frames
        each message itself); otherwise :meth:`_flush` writes it at the end of the tick."""
        transport = getattr(writer, "transport", None) if self._joins else None
        self._buffered_out: Callable[[], int] | None = getattr(transport, "get_write_buffer_size", None)
        """How much the transport still holds (``None``: unknown, the write loop writes)."""
        self._flush_due = False
        """A :meth:`_flush` is scheduled for this loop tick."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._resync: set[str] = set()
        self._dead = False
        self.daemon: Daemon | None = None
        """Set by the daemon: itself (``daemon/status`` reports on it)."""
        self.connected_at = time.time()
        self.engine = Engine(self.send, self, self._context)

    @property
    def framing(self) -> Framing:
        return self._source.framing or Framing.LSP

    @property
    def in_flight(self) -> int:
        return self.engine.in_flight

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        writer_task = asyncio.ensure_future(self._write_loop())
        try:
            if await (self._stream.ended if self._stream is not None else self._read_loop()):
                await self._answer_what_was_asked()
        finally:
            await self._finish(writer_task)

    async def _answer_what_was_asked(self) -> None:
        """The client closed its sending side, said ``exit``, or sent what cannot be read: answer
        what it already asked.

        ``printf '...' | sessiond connect`` half-closes right after its last request and still
        reads the answers. Requests this side sent to the client can no longer be answered, so
        they are cancelled at once (a compaction waiting on this client's summarizer fails over);
        the handlers still running get ``HALF_CLOSE_GRACE`` seconds, less if the client is gone.
        """
        self.engine.cancel_asked()
        if not self.engine.in_flight:
            return
        idle = asyncio.ensure_future(self.engine.idle())
        try:
            deadline = asyncio.get_running_loop().time() + HALF_CLOSE_GRACE
            while not idle.done() and not self._dead:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                await asyncio.wait({idle}, timeout=min(left, 0.5))
        finally:
            idle.cancel()

    async def _read_loop(self) -> bool:
        """Read and dispatch a message source until it ends, cannot be read any more, or the
        client says ``exit``; then True: what it asked so far is still answered. False: it is
        gone. (A byte stream is not read here: it calls :meth:`receive` itself.)"""
        source = self._source
        assert not isinstance(source, MessageStream)
        while not self.closed:
            try:
                body = await source.read()
            except (MessageTooLargeError, FramingError) as exc:
                if self.refuse(exc):
                    continue
                return True
            except (ConnectionError, OSError):
                return False
            if body is None:
                return True
            if not self.receive(body):
                return self.exited
        return False

    def receive(self, body: bytes) -> bool:
        """One message from the client; False once nothing more is to be read from it.

        Nothing a message holds may escape from here: on a byte stream this runs in the event
        loop's read callback, where an exception would abort the transport and drop the answers
        already queued for the messages read before (an append stored but never acknowledged).
        A bug is answered -32603 with id null and logged, and the connection goes on."""
        try:
            self._receive(body)
        except Exception as exc:
            log.exception("connection %s (%s): a message could not be handled", self.id, self.peer)
            self._error(
                None, ErrorCode.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}", {"closing": False}
            )
        return not (self.exited or self.closed)

    def refuse(self, exc: MessageTooLargeError | FramingError) -> bool:
        """Answer what could not be read as a message; False: the stream cannot go on."""
        if isinstance(exc, MessageTooLargeError):
            data: Json = {"limit": exc.limit}
            if not exc.in_sync:
                data["closing"] = True
            self._error(None, ErrorCode.MESSAGE_TOO_LARGE, str(exc), data)
            if exc.in_sync:
                return True
        else:
            message = f"Cannot read the message stream: {exc}"
            self._error(None, ErrorCode.PARSE_ERROR, message, {"closing": True})
        log.info("connection %s (%s): %s", self.id, self.peer, exc)
        return False

    def _flush_soon(self) -> None:
        if not self._flush_due:
            self._flush_due = True
            loop = self._loop
            if loop is None:
                # once: asyncio.get_running_loop() costs a getpid(2) per call on CPython 3.11
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write everything queued in one ``write``, at the end of the loop tick that queued it,
        when the transport holds nothing more — without waking the write loop (a task step per
        message). A transport that is backed up is the write loop's, which waits for it to drain
        (backpressure).

        Not right after each message: with 8 clients, writing each answer at once woke its
        client while the daemon still had the other connections' requests of the tick to
        handle, and the clients took the 2 cores from it (docs/append-path.md: 1,500–1,800
        appends/s and p99 20–30 ms against 1,650–3,800 and 6–30 ms at the end of the tick)."""
        self._flush_due = False
        out = self._out
        if not out or self._dead:
            return
        buffered = self._buffered_out
        if buffered is None or self._resync or buffered():
            # the write loop's: it drains the transport, then tells of dropped updates
            self._out_ready.set()
            return
        data = out.popleft() if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_bytes = 0
        try:
            self._writer.write(data)
        except (ConnectionError, OSError):
            self.closed = self._dead = True

    async def _write_loop(self) -> None:
        writer = self._writer
        try:
            while True:
                await self._out_ready.wait()
                out = self._out
                while out:
                    # Everything queued since the last write goes out in one write() (answers and
                    # notifications of one loop tick: one syscall, not one per message); a
                    # transport that frames each message itself (a WebSocket) gets them one by one.
                    if len(out) == 1 or not self._joins:
                        data = out.popleft()
                    else:
                        data = b"".join(out)
                        out.clear()
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
        self.engine.cancel_all()
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
        self._source.feed_eof()

    # ------------------------------------------------------------------ incoming

    def _receive(self, body: bytes) -> None:
        try:
            message = parse(body)
        except JSONParseError as exc:
            self._error(None, ErrorCode.PARSE_ERROR, f"Parse error: {exc}", {"closing": False})
            return
        if isinstance(message, list):
            self._error(
                None,
                ErrorCode.INVALID_REQUEST,
                "Batch requests are not supported; send one message at a time",
                {"field": ""},
            )
            return
        if type(message) is not dict:
            self._error(
                None, ErrorCode.INVALID_REQUEST, "A JSON-RPC message must be an object", {"field": ""}
            )
            return
        msg_id = message.get("id")
        has_id = "id" in message
        if message.get("jsonrpc") != "2.0":
            self._error(
                msg_id if has_id else None,
                ErrorCode.INVALID_REQUEST,
                'jsonrpc must be "2.0"',
                {"field": "jsonrpc"},
            )
            return
        if has_id and not (type(msg_id) in (str, int) or msg_id is None):
            self._error(
                None, ErrorCode.INVALID_REQUEST, "id must be a string, a number or null", {"field": "id"}
            )
            return
        method = message.get("method")
        if method is None and has_id and ("result" in message or "error" in message):
            self.engine.answer(message)
            return
        if type(method) is not str:
            self._error(
                msg_id if has_id else None,
                ErrorCode.INVALID_REQUEST,
                "method must be a string",
                {"field": "method"},
            )
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

    def _request(self, msg_id: Any, method: str, params: Json) -> None:
        if self.shutting_down:
            self._error(
                msg_id,
                ErrorCode.INVALID_REQUEST,
                "The server is shutting down this connection",
                {"method": method, "reason": "shutdown"},
            )
            return
        if not self.initialized and method != "initialize":
            self._error(
                msg_id,
                ErrorCode.SERVER_NOT_INITIALIZED,
                "The connection is not initialized: send initialize first",
                {"method": method},
            )
            return
        entry = self.methods.get(method)
        if entry is None:
            self._error(msg_id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
            return
        if entry.immediate:
            self._answer_now(msg_id, entry, params)
            return
        if self.engine.in_flight >= self.limits.max_in_flight:
            self._error(
                msg_id,
                ErrorCode.OVERLOADED,
                "Overloaded, retry: too many requests in flight on this connection",
                {"maxInFlight": self.limits.max_in_flight},
            )
            return
        if self.engine.running(msg_id):
            self._error(
                msg_id,
                ErrorCode.INVALID_REQUEST,
                f"A request with id {msg_id!r} is still running",
                {"field": "id"},
            )
            return
        # Counted from dispatch (not from when the handler starts): a burst read in one go is
        # dispatched before any handler runs.
        self.engine.request(msg_id, entry, params)

    def _answer_now(self, msg_id: Any, entry: Method, params: Json) -> None:
        """A lifecycle request, answered before the next message is read."""
        initializing = entry.spec.name == "initialize"
        if initializing and self.initialized:
            self._error(
                msg_id,
                ErrorCode.INVALID_REQUEST,
                "The connection is already initialized",
                {"method": "initialize"},
            )
            return
        try:
            result = answer_now(entry, self, params, self._context)
        except ErrorAnswer as error:
            self.send({"jsonrpc": "2.0", "id": msg_id, "error": error.to_wire()})
            return
        if initializing:
            self.initialized = True
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def _notification(self, method: str, params: Json) -> None:
        if method == "exit":
            self.exited = True
        elif method in ("$/cancelRequest", "$/cancel_request"):
            field = "id" if method == "$/cancelRequest" else "requestId"
            request_id = params.get(field)
            if type(request_id) in (str, int):
                self.engine.cancel(request_id)
            else:
                # A notification has no id to answer, so the error goes out with id null (as for
                # a message that cannot be read); an object or array is no request id and would
                # not even hash.
                self._error(
                    None,
                    ErrorCode.INVALID_PARAMS,
                    f"{method}: params.{field} must be the id of a request (a string or an integer)",
                    {"field": field},
                )
        elif method in ("initialized", "$/setTrace"):
            pass
        else:
            log.debug("ignoring notification %s", method)

    # ------------------------------------------------------------------ outgoing

    def send(self, payload: Json, *, droppable: bool = False) -> bool:
        """Queue a message; a droppable one is refused when the queue is full."""
        if self._dead:
            return False
        return self._queue(frame(dumps(payload), self.framing), droppable)

    def _queue(self, data: bytes, droppable: bool) -> bool:
        """Queue a framed message (see :meth:`send`)."""
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
        self._flush_soon()
        return True

    def _notify(self, method: str, params: Any, *, droppable: bool = False) -> bool:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params}, droppable=droppable)

    def _error(self, msg_id: Any, code: ErrorCode, message: str, data: Json) -> None:
        """An error answer; ``data`` is never left out (the SPEC: errors always carry it)."""
        self.send(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": int(code), "message": message, "data": data}}
        )

    def send_update(self, session_id: str, update: Json) -> None:
        """A ``session/update`` for a subscribed session (dropped if opted out or overflowing)."""
        if self.closed or "session/update" in self.opt_out or update.get("sessionUpdate") in self.opt_out:
            return
        if session_id in self._resync:
            return  # the client will resync; older updates would only mislead it
        if self._dead:
            return
        if not self._queue(_encoded_update(session_id, update, self.framing), True):
            self._resync.add(session_id)

    def progress(self, token: str | int, kind: str, **value: Any) -> None:
        if "$/progress" in self.opt_out:
            return
        self._notify("$/progress", {"token": token, "value": {"kind": kind, **value}})

    def log_message(self, level: int, message: str) -> None:
        if "window/logMessage" not in self.opt_out:
            self._notify("window/logMessage", {"type": level, "message": message})

    async def request_client(self, method: str, params: Any) -> Any:
        """A server -> client request (e.g. asking a summarizer for a summary); see
        :meth:`Engine.ask <sessiond.rpc.engine.Engine.ask>`."""
        if self.closed:
            raise ConnectionError(f"connection {self.id} is closed")
        return await self.engine.ask(method, params)

    @property
    def owner(self) -> bool:
        """On the Unix socket (uid checked) or stdio: no credential needed."""
        return self.credentials is None

    @property
    def anonymous(self) -> bool:
        """Not initialized yet on a transport that needs a credential (its own small budget)."""
        return self.credentials is not None and not self.initialized

    def check_token(self, token: str | None) -> str | None:
        """Raise ``AuthenticationError`` unless ``token`` is a credential of this server (on
        TCP and the viewer's WebSocket); the viewer token to hand back when it was a one-time
        code."""
        credentials = self.credentials
        if credentials is None:
            return None
        granted = credentials.check(token) if type(token) is str else None
        if granted is None:
            log.warning(
                "connection %s (%s): refused: %s authToken",
                self.id,
                self.peer,
                "no" if token is None else "a wrong",
            )
            self.shutting_down = True
            asyncio.get_running_loop().call_later(0.05, self.close)
            raise AuthenticationError()
        self.granted = granted
        if granted.viewer is not None:
            credentials.opened(granted.viewer)
        return granted.issued


_last_update: tuple[dict[str, Any], str, Framing, bytes] | None = None
"""The last ``session/update`` encoded: (update, session id, framing, framed message)."""


def _encoded_update(session_id: str, update: dict[str, Any], framing: Framing) -> bytes:
    """A ``session/update`` notification, framed; encoded once for all the subscribers it is
    published to.

    The hub hands one update object to every subscriber in turn, so the message of the previous
    subscriber (same object, same session, same framing) is the message of this one: the update is
    encoded once per publish instead of once per subscriber. Holding the update keeps its
    identity from being reused; a published update is never changed afterwards.
    """
    global _last_update  # noqa: PLW0603 (a one-entry cache of the publish in progress)
    last = _last_update
    if last is not None and last[0] is update and last[1] == session_id and last[2] is framing:
        return last[3]
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    data = frame(dumps(message), framing)
    _last_update = (update, session_id, framing, data)
    return data
