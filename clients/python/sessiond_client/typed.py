"""The typed client: one method per protocol method, typed updates, handlers, reconnection.

    async with await SessiondClient.connect() as c:          # the store's daemon (started if needed)
        new = await c.session_new(cwd="/repo", subscribe=True)
        async with c.updates(new.sessionId) as updates:
            await c.append(new.sessionId, [{"type": "message", "message": {...}}])
            async for event in updates:
                ...                                          # SessionUpdate, event.update typed

Params are checked with the ``sessiond_protocol`` params model before anything is sent (an
:class:`~sessiond_client.errors.InvalidParams` with ``client_side=True``) and sent as given, so
entries keep their key order and fields; results are parsed into the result models. The client
is asyncio-based and works under anyio's asyncio backend (cancel scopes included); it is not
thread-safe — use :mod:`sessiond_client.sync` from threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import subprocess
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypedDict, TypeVar, Unpack, cast

import anyio
from pydantic import BaseModel, ValidationError

from sessiond_protocol import METHODS, NOTIFICATIONS, PROTOCOL_VERSION, ErrorCode
from sessiond_protocol import methods as M
from sessiond_protocol.models import SessionSummary
from sessiond_protocol.notifications import (
    LogMessage,
    Progress,
    ResyncRequired,
    SessionUpdate,
    SummarizeParams,
    SummarizeResult,
)

from .client import Client, ConnectionClosedError, RpcError
from .discovery import (
    DEFAULT_DAEMON_ARGV,
    START_TIMEOUT,
    Connector,
    StdioConnector,
    TcpConnector,
    UnixConnector,
    default_store,
    socket_path,
    stdio_argv,
    token_path,
)
from .errors import (
    ConnectionClosed,
    DaemonUnavailable,
    ProtocolVersionMismatch,
    SessionNotFound,
    from_rpc_error,
)
from .methods import METHOD_NAMES, Methods
from .params import UNSET, EntryLike, JsonObject, Unset, arguments, build_params, python_name

log = logging.getLogger("sessiond_client")

RECONNECTED = "reconnected"
"""``reason`` of the :class:`ResyncRequired` update a stream gets after a reconnection."""

QUEUE_OVERFLOW = "the client's update queue overflowed"
"""``reason`` of the :class:`ResyncRequired` update a stream gets when it was read too slowly."""


SummarizeAnswer = SummarizeResult | str | Mapping[str, Any]
"""What a summarizer returns: a :class:`SummarizeResult`, its dict, or just the summary text."""
Summarizer = Callable[[SummarizeParams], Awaitable[SummarizeAnswer] | SummarizeAnswer]
"""Answers ``compaction/summarize``. Coroutine functions run on the event loop; plain functions
in a worker thread (so a blocking model call does not stall the connection)."""
ServerRequestHandler = Callable[[Any], Awaitable[Any]]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
U = TypeVar("U", bound=BaseModel)


class ClientOptions(TypedDict, total=False):
    """Options of every way to create a :class:`SessiondClient`."""

    name: str
    """``clientInfo.name`` sent in ``initialize``."""
    version: str | None
    opt_out: Sequence[str]
    """Notifications or update kinds not to receive (``capabilities.notifications.optOut``)."""
    summarizer: Summarizer | None
    """Answer ``compaction/summarize`` (declares the ``summarizer`` capability)."""
    reconnect: bool
    """When the connection drops: reconnect, re-initialize, re-subscribe (default False)."""
    reconnect_timeout: float | None
    """Seconds to keep trying to reconnect (None: forever). Default 60."""
    request_timeout: float | None
    """Seconds any request may take before it is cancelled (TimeoutError). Default: none."""
    framing: str
    """``content-length`` (default) or ``ndjson``."""
    queue_size: int
    """Updates buffered per stream before it is reset with a ``resync_required`` (default 10000)."""


# The ways to reach a daemon, each declared once: the async client's constructors and
# connectors and the blocking client's take them as keyword arguments (``Unpack``).


class UnixOptions(ClientOptions, total=False):
    """The daemon of a store, over its Unix socket (:meth:`SessiondClient.unix`)."""

    socket: str | os.PathLike[str] | None
    """The socket (default: where the store's daemon puts it)."""
    start: bool
    """Start ``sessiond serve`` when no daemon answers (default True)."""
    daemon_argv: Sequence[str]
    """How to start it (default ``python -m sessiond`` with this interpreter)."""
    daemon_env: Mapping[str, str] | None
    start_timeout: float
    """Seconds to wait for a started daemon's socket (default ``START_TIMEOUT``)."""


class TcpOptions(ClientOptions, total=False):
    """``sessiond serve --tcp HOST:PORT`` (:meth:`SessiondClient.tcp`)."""

    token: str | None
    token_file: str | os.PathLike[str] | None
    store: str | os.PathLike[str] | None
    """Where ``tcp.token`` is read when neither ``token`` nor ``token_file`` is given."""


class StdioOptions(ClientOptions, total=False):
    """A private ``sessiond serve --stdio`` (:meth:`SessiondClient.stdio`)."""

    store: str | os.PathLike[str] | None
    env: Mapping[str, str] | None
    log_file: str | os.PathLike[str] | None


def _client_options(options: Mapping[str, Any], *, without: type) -> ClientOptions:
    """``options`` less the keys of the way to reach the daemon (``without``'s own keys)."""
    own = without.__annotations__.keys() - ClientOptions.__annotations__.keys()  # (inherited ones too)
    return cast(ClientOptions, {k: v for k, v in options.items() if k not in own})


# --------------------------------------------------------------------------- streams


class _End:
    pass


_END = _End()


@dataclass(frozen=True)
class _Failed:
    error: BaseException


@dataclass(frozen=True)
class Notification:
    """A notification: ``params`` parsed into its model (``SessionUpdate``, ``Progress``,
    ``LogMessage``) when the method is known and the params fit, else as received."""

    method: str
    params: Any


class _Stream(Generic[T]):
    """An async iterator fed by the client; it sees what arrives after it was created.

    Use it as ``async with`` (or call :meth:`close`) to stop buffering; a stream that is no
    longer referenced is dropped automatically. It ends (``StopAsyncIteration``) when the client
    is closed and raises :class:`ConnectionClosed` when the connection is lost for good.
    """

    def __init__(self, owner: SessiondClient, maxsize: int) -> None:
        self._owner = owner
        self._items: deque[T | _End | _Failed] = deque()
        self._wakeup = asyncio.Event()
        self._maxsize = max(1, maxsize)
        self.closed = False
        owner._register(self)

    def _push(self, item: T) -> None:
        if self.closed:
            return
        if len(self._items) >= self._maxsize:
            self._overflow(item)
        else:
            self._items.append(item)
        self._wakeup.set()

    def _overflow(self, item: T) -> None:
        self._items.popleft()
        self._items.append(item)

    def _finish(self, marker: _End | _Failed) -> None:
        if not self.closed:
            self._items.append(marker)
            self._wakeup.set()

    def __aiter__(self) -> _Stream[T]:
        return self

    async def __anext__(self) -> T:
        while not self._items:
            if self.closed:
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()
        item = self._items[0]
        if isinstance(item, _End):
            raise StopAsyncIteration
        if isinstance(item, _Failed):
            raise item.error
        self._items.popleft()
        return item

    async def next(self, timeout: float | None = None) -> T:
        """The next item; ``TimeoutError`` after ``timeout`` seconds, ``StopAsyncIteration`` at the end."""
        async with asyncio.timeout(timeout):
            return await self.__anext__()

    def pending(self) -> list[T]:
        """The items buffered now, without waiting (they are consumed)."""
        out: list[T] = []
        while self._items and not isinstance(self._items[0], _End | _Failed):
            out.append(self._items.popleft())  # type: ignore[arg-type]
        return out

    def close(self) -> None:
        """Stop receiving; iteration ends after nothing more."""
        if not self.closed:
            self.closed = True
            self._items.clear()
            self._items.append(_END)
            self._wakeup.set()
            self._owner._unregister(self)

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> _Stream[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class UpdateStream(_Stream[SessionUpdate]):
    """``session/update`` notifications of one session (or of all), as typed :class:`SessionUpdate`
    (``event.update`` is one of the ``sessiond_protocol.notifications`` update models).

    After a reconnection every stream gets ``ResyncRequired(reason="reconnected")`` for each
    session it follows: what it shows may have changed meanwhile, reload it.
    """

    def __init__(self, owner: SessiondClient, session_id: str | None, maxsize: int) -> None:
        self.session_id = session_id
        super().__init__(owner, maxsize)

    def _accepts(self, event: SessionUpdate) -> bool:
        return self.session_id is None or event.sessionId == self.session_id

    def _overflow(self, item: SessionUpdate) -> None:
        # Dropped updates: the reader has to reload, exactly as after the daemon's own resync.
        sessions = dict.fromkeys(
            [e.sessionId for e in self._items if isinstance(e, SessionUpdate)] + [item.sessionId]
        )
        self._items.clear()
        for sid in sessions:
            self._items.append(_resync(sid, QUEUE_OVERFLOW))

    async def wait_for(
        self,
        match: type[BaseModel] | Callable[[SessionUpdate], bool],
        *,
        timeout: float | None = None,
    ) -> SessionUpdate:
        """Skip updates until one matches: an update class (``CompactionUpdate``) or a predicate."""

        def matches(event: SessionUpdate) -> bool:
            if isinstance(match, type):
                return isinstance(event.update, match)
            return bool(match(event))

        async with asyncio.timeout(timeout):
            while True:
                event = await self.__anext__()
                if matches(event):
                    return event

    async def expect(self, kind: type[U], *, timeout: float | None = None) -> U:
        """Skip updates until one of ``kind`` (``UsageUpdate``, ``CompactionUpdate``, ...) and
        return that update itself, typed as such (its session is :attr:`session_id`'s)."""
        event = await self.wait_for(kind, timeout=timeout)
        update = event.update
        assert isinstance(update, kind)
        return update

    async def __aenter__(self) -> UpdateStream:
        return self


class Subscription(UpdateStream):
    """The updates of a session this connection subscribed to; :attr:`info` is what
    ``session/subscribe`` answered. Closing it stops the stream, not the subscription
    (``session_unsubscribe`` does that)."""

    info: M.LoadResult

    async def __aenter__(self) -> Subscription:
        return self


class NotificationStream(_Stream[Notification]):
    """Every notification (or those of the given methods), e.g. ``$/progress``."""

    def __init__(self, owner: SessiondClient, methods: frozenset[str] | None, maxsize: int) -> None:
        self.methods = methods
        super().__init__(owner, maxsize)

    def _accepts(self, note: Notification) -> bool:
        return self.methods is None or note.method in self.methods

    async def __aenter__(self) -> NotificationStream:
        return self


ModelT = TypeVar("ModelT", bound=BaseModel)


class ModelStream(_Stream[ModelT]):
    """The notifications of one method, parsed into its ``sessiond_protocol`` model (those
    that do not fit the model are skipped and logged), optionally filtered by ``accept``."""

    def __init__(
        self,
        owner: SessiondClient,
        method: str,
        model: type[ModelT],
        accept: Callable[[ModelT], bool] | None,
        maxsize: int,
    ) -> None:
        self.method = method
        self.model = model
        self._accept = accept
        super().__init__(owner, maxsize)

    def _offer(self, method: str, parsed: Any) -> None:
        if (
            method == self.method
            and isinstance(parsed, self.model)
            and (self._accept is None or self._accept(parsed))
        ):
            self._push(parsed)

    async def __aenter__(self) -> ModelStream[ModelT]:
        return self


def _resync(session_id: str, reason: str) -> SessionUpdate:
    return SessionUpdate(
        sessionId=session_id, update=ResyncRequired(sessionUpdate="resync_required", reason=reason)
    )


def _check_version(result: M.InitializeResult) -> None:
    """A daemon that accepted ``initialize`` but speaks another protocol version is refused here
    (one older than the version rule would not have refused the client itself)."""
    if result.protocolVersion == PROTOCOL_VERSION:
        return
    server = result.serverInfo
    newer = result.protocolVersion > PROTOCOL_VERSION
    raise ProtocolVersionMismatch(
        ErrorCode.PROTOCOL_VERSION_MISMATCH,
        f"Protocol version mismatch: this client (sessiond_client) speaks version {PROTOCOL_VERSION}, "
        f"the daemon ({server.name} {server.version}) speaks version {result.protocolVersion}; "
        f"upgrade the {'client' if newer else 'daemon'}",
        {"clientVersion": PROTOCOL_VERSION, "serverVersion": result.protocolVersion},
        method="initialize",
        client_side=True,
    )


def _summary_answer(answer: Any) -> dict[str, Any]:
    if isinstance(answer, str):
        answer = SummarizeResult.model_validate({"summary": answer})
    elif isinstance(answer, Mapping):
        answer = SummarizeResult.model_validate(dict(answer))
    elif not isinstance(answer, SummarizeResult):
        raise TypeError(
            f"a summarizer returns a SummarizeResult, a dict or a str, not {type(answer).__name__}"
        )
    dumped: dict[str, Any] = answer.model_dump(mode="json", exclude_none=True)
    return dumped


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


# --------------------------------------------------------------------------- the client


class SessiondClient(Methods):
    """A typed connection to sessiond that can survive the daemon's restarts.

    Create it connected with :meth:`connect` (the store's Unix socket), :meth:`connect_tcp` or
    :meth:`spawn`; or unconnected with :meth:`unix`, :meth:`tcp`, :meth:`stdio`, register
    handlers, then ``await client.open()`` / ``async with client``. The typed methods, one per
    protocol method (``session_append``, ``tree_get``...), are generated (``methods.py``).
    """

    METHOD_NAMES: ClassVar[dict[str, str]] = METHOD_NAMES
    """Protocol method -> name of its typed method."""

    def __init__(
        self,
        connector: Connector,
        *,
        name: str = "sessiond_client",
        version: str | None = None,
        opt_out: Sequence[str] = (),
        summarizer: Summarizer | None = None,
        reconnect: bool = False,
        reconnect_timeout: float | None = 60.0,
        request_timeout: float | None = None,
        framing: str = "content-length",
        queue_size: int = 10000,
    ) -> None:
        self.connector = connector
        self._name = name
        self._version = version
        self._opt_out = list(opt_out)
        self._summarizer: Summarizer | None = summarizer
        self._summarizer_declared = False
        self.reconnect = reconnect
        self.reconnect_timeout = reconnect_timeout
        self.request_timeout = request_timeout
        self._framing = framing
        self._queue_size = queue_size
        self._handlers: dict[str, ServerRequestHandler] = {"compaction/summarize": self._answer_summarize}
        self._client: Client | None = None
        self._opened = False
        self._closing = False
        self._failure: BaseException | None = None
        self._ready = asyncio.Event()
        """Set while a connection is usable, or for good once the client is closed or failed."""
        self._watcher: asyncio.Task[None] | None = None
        self._streams: weakref.WeakSet[_Stream[Any]] = weakref.WeakSet()
        self._subscribed: dict[str, None] = {}
        self._list_subscribed = False
        self._stats_subscription: dict[str, Any] | None = None
        """The last ``stats/subscribe`` params (``None``: not subscribed), made again on reconnect."""
        self._reconnect_callbacks: list[Callable[[], Any]] = []
        self.initialize_result: M.InitializeResult | None = None
        """What the daemon answered to ``initialize`` (on the current connection)."""
        self.reconnects = 0
        """How many times the client reconnected."""

    # ------------------------------------------------------------------ creating

    @classmethod
    def unix(
        cls, store: str | os.PathLike[str] | None = None, **options: Unpack[UnixOptions]
    ) -> SessiondClient:
        """An unconnected client for the daemon of ``store`` (default: ``$SESSIOND_HOME``, ...).

        The socket is found the way the daemon chooses it (or given); with ``start`` a daemon is
        started (``sessiond serve``, detached, logging to ``<store>/daemon.log``) when none
        answers — at first and on every reconnection.
        """
        root = Path(store).expanduser() if store is not None else default_store()
        socket = options.get("socket")
        connector = UnixConnector(
            root,
            Path(socket).expanduser() if socket is not None else socket_path(root),
            options.get("start", True),
            tuple(options.get("daemon_argv", DEFAULT_DAEMON_ARGV)),
            options.get("daemon_env"),
            options.get("start_timeout", START_TIMEOUT),
        )
        return cls(connector, **_client_options(options, without=UnixOptions))

    @classmethod
    async def connect(
        cls, store: str | os.PathLike[str] | None = None, **options: Unpack[UnixOptions]
    ) -> SessiondClient:
        """Connect to the daemon of ``store`` (see :meth:`unix`) and initialize."""
        return await cls.unix(store, **options).open()

    @classmethod
    def tcp(cls, host: str, port: int, **options: Unpack[TcpOptions]) -> SessiondClient:
        """An unconnected client for ``sessiond serve --tcp HOST:PORT``. The token is ``token``,
        else the content of ``token_file``, else of ``<store>/tcp.token`` (read at each connection)."""
        token_file = options.get("token_file")
        file = Path(token_file).expanduser() if token_file is not None else token_path(options.get("store"))
        connector = TcpConnector(host, port, options.get("token"), file)
        return cls(connector, **_client_options(options, without=TcpOptions))

    @classmethod
    async def connect_tcp(cls, host: str, port: int, **options: Unpack[TcpOptions]) -> SessiondClient:
        """Connect over loopback TCP (see :meth:`tcp`) and initialize."""
        return await cls.tcp(host, port, **options).open()

    @classmethod
    def stdio(cls, argv: Sequence[str] | None = None, **options: Unpack[StdioOptions]) -> SessiondClient:
        """An unconnected client that runs its own server on stdio (default ``sessiond serve
        --stdio [--store STORE]``). That server takes the store's lock: no daemon may run for it.
        Its log goes to ``log_file``, else ``<store>/daemon.log`` when ``store`` is given."""
        store, log_file = options.get("store"), options.get("log_file")
        args = list(argv) if argv is not None else stdio_argv(store)
        logs = Path(log_file) if log_file is not None else (Path(store) / "daemon.log" if store else None)
        connector = StdioConnector(args, options.get("env"), logs)
        return cls(connector, **_client_options(options, without=StdioOptions))

    @classmethod
    async def spawn(
        cls, argv: Sequence[str] | None = None, **options: Unpack[StdioOptions]
    ) -> SessiondClient:
        """Run ``sessiond serve --stdio`` (see :meth:`stdio`) and initialize."""
        return await cls.stdio(argv, **options).open()

    # ------------------------------------------------------------------ state

    @property
    def connected(self) -> bool:
        return self._client is not None and not self._client.closed and self._ready.is_set()

    @property
    def raw(self) -> Client:
        """The transport of the current connection (for what the typed API does not cover)."""
        if self._client is None:
            raise ConnectionClosed("not connected")
        return self._client

    @property
    def subscriptions(self) -> frozenset[str]:
        """Sessions this client is subscribed to (re-subscribed after a reconnection)."""
        return frozenset(self._subscribed)

    @property
    def daemon_process(self) -> subprocess.Popen[bytes] | None:
        """The daemon this client started (Unix socket with ``start``), if it started one."""
        return self.connector.process if isinstance(self.connector, UnixConnector) else None

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> SessiondClient:
        """Connect and initialize (a no-op when already open)."""
        if self._closing:
            raise ConnectionClosed("the client is closed")
        if self._opened:
            return self
        client = await self._establish()
        self._opened = True
        self._install(client)
        return self

    async def __aenter__(self) -> SessiondClient:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Say ``shutdown``/``exit``, close the connection, end every stream. Idempotent."""
        if self._closing:
            return
        self._closing = True
        watcher, client = self._watcher, self._client
        with anyio.CancelScope(shield=True):
            if watcher is not None and not watcher.done():
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
            if client is not None:
                if not client.closed:
                    with anyio.move_on_after(2), contextlib.suppress(Exception):
                        await client.request("shutdown", {}, timeout=None)
                        await client.notify("exit")
                with contextlib.suppress(Exception):
                    await client.close()
        self._terminate(None)

    def on_reconnect(self, callback: Callable[[], Any]) -> Callable[[], Any]:
        """Call ``callback()`` (a function or coroutine function) after each reconnection, once
        the subscriptions are restored. Usable as a decorator."""
        self._reconnect_callbacks.append(callback)
        return callback

    async def _establish(self) -> Client:
        """Open a transport, initialize it, restore the subscriptions."""
        client = await self.connector.open(self._framing)
        try:
            for method, handler in self._handlers.items():
                client.on_request(method, handler)
            capabilities: dict[str, Any] = {}
            if self._opt_out:
                capabilities["notifications"] = {"optOut": self._opt_out}
            declare = self._summarizer is not None
            if declare:
                capabilities["summarizer"] = True
            params = build_params(
                "initialize",
                {
                    "protocol_version": PROTOCOL_VERSION,
                    "client_info": {"name": self._name}
                    if self._version is None
                    else {"name": self._name, "version": self._version},
                    "capabilities": capabilities or None,
                    "auth_token": self.connector.auth_token(),
                },
            )
            result = await self._send(client, "initialize", params)
            _check_version(result)
            self.initialize_result = result
            await client.notify("initialized", {})
            self._summarizer_declared = declare
            for sid in list(self._subscribed):
                try:
                    await self._send(client, "session/subscribe", {"sessionId": sid})
                except SessionNotFound:
                    log.warning("session %s is gone: no longer subscribed", sid)
                    self._subscribed.pop(sid, None)
            if self._list_subscribed:
                await self._send(client, "session/list", {"subscribe": True, "limit": 1})
            if self._stats_subscription is not None:
                try:
                    await self._send(client, "stats/subscribe", self._stats_subscription)
                except SessionNotFound:
                    log.warning("the stats subscription's session is gone: no longer subscribed")
                    self._stats_subscription = None
        except BaseException:
            with contextlib.suppress(Exception):
                await client.close()
            raise
        return client

    def _install(self, client: Client) -> None:
        self._client = client
        self._ready.set()
        self._watcher = asyncio.ensure_future(self._watch(client))

    async def _watch(self, client: Client) -> None:
        """While a connection lives: dispatch its notifications. When it ends: reconnect or fail."""
        try:
            pump = asyncio.ensure_future(self._pump(client))
            try:
                await client.wait_closed()
            finally:
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump
            for method, params in client.drain_notifications():
                self._dispatch(method, params)
            if self._closing:
                return
            self._ready.clear()
            if not self.reconnect:
                self._terminate(ConnectionClosed("the connection to sessiond was lost"))
                return
            log.warning("the connection to sessiond was lost; reconnecting")
            await self._reconnect_loop()
        except Exception as exc:  # never leave requests waiting on a dead watcher
            log.exception("the connection watcher failed")
            self._terminate(ConnectionClosed(f"the client failed: {type(exc).__name__}: {exc}"))

    async def _pump(self, client: Client) -> None:
        while True:
            method, params = await client.notification(timeout=None)
            try:
                self._dispatch(method, params)
            except Exception:  # a bad notification must not stop the others
                log.exception("cannot dispatch %s", method)

    async def _reconnect_loop(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if self.reconnect_timeout is None else loop.time() + self.reconnect_timeout
        delay = 0.05
        last: BaseException | None = None
        while not self._closing:
            try:
                client = await self._establish()
            except ProtocolVersionMismatch as exc:  # the daemon was upgraded: retrying cannot help
                self._terminate(ConnectionClosed(f"could not reconnect to sessiond: {exc.message}"))
                return
            except Exception as exc:  # not there yet (refused, starting, initializing): retry
                last = exc
            else:
                self.reconnects += 1
                following = dict.fromkeys(self._subscribed)
                for stream in list(self._streams):
                    if isinstance(stream, UpdateStream) and stream.session_id is not None:
                        following[stream.session_id] = None
                for sid in following:
                    self._dispatch_update(_resync(sid, RECONNECTED))
                self._install(client)
                log.info("reconnected to sessiond")
                for callback in list(self._reconnect_callbacks):
                    try:
                        result = callback()
                        if inspect.isawaitable(result):
                            await result
                    except Exception:
                        log.exception("on_reconnect callback failed")
                return
            if deadline is not None and loop.time() >= deadline:
                self._terminate(
                    ConnectionClosed(
                        f"could not reconnect to sessiond within {self.reconnect_timeout} s: {last}"
                    )
                )
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _terminate(self, error: BaseException | None) -> None:
        if error is not None and self._failure is None:
            self._failure = error
        self._ready.set()
        marker: _End | _Failed = _END if error is None else _Failed(error)
        for stream in list(self._streams):
            stream._finish(marker)

    def _register(self, stream: _Stream[Any]) -> None:
        self._streams.add(stream)
        if self._closing:
            stream._finish(_END)
        elif self._failure is not None:
            stream._finish(_Failed(self._failure))

    def _unregister(self, stream: _Stream[Any]) -> None:
        self._streams.discard(stream)

    # ------------------------------------------------------------------ notifications

    def _dispatch(self, method: str, params: Any) -> None:
        parsed: Any = params
        if method == "session/update":
            try:
                event = SessionUpdate.model_validate(params)
            except ValidationError:
                log.debug("ignoring an update this client does not know: %r", params)
            else:
                self._dispatch_update(event)
                parsed = event
        elif method in NOTIFICATIONS:
            with contextlib.suppress(ValidationError):
                parsed = NOTIFICATIONS[method].model_validate(params)
            if isinstance(parsed, LogMessage):
                levels = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO}
                level = levels.get(parsed.type, logging.DEBUG)
                log.log(level, "sessiond: %s", parsed.message)
        note = Notification(method, parsed)
        for stream in list(self._streams):
            if isinstance(stream, NotificationStream) and stream._accepts(note):
                stream._push(note)
            elif isinstance(stream, ModelStream):
                stream._offer(method, parsed)

    def _dispatch_update(self, event: SessionUpdate) -> None:
        for stream in list(self._streams):
            if isinstance(stream, UpdateStream) and stream._accepts(event):
                stream._push(event)

    def updates(self, session_id: str | None = None) -> UpdateStream:
        """Typed updates of one session (or of every subscribed session), from now on.

        This only filters what arrives: subscribe with ``session_new``/``session_load``
        (``subscribe=True``), :meth:`subscribe` or ``session_subscribe``.
        """
        return UpdateStream(self, session_id, self._queue_size)

    async def subscribe(self, session_id: str) -> Subscription:
        """Subscribe to a session and return the stream of its updates (created before the
        request, so nothing in between is missed); ``.info`` is the ``session/subscribe`` answer."""
        stream = Subscription(self, session_id, self._queue_size)
        try:
            stream.info = await self.session_subscribe(session_id)
        except BaseException:
            stream.close()
            raise
        return stream

    def notifications(self, *methods: str) -> NotificationStream:
        """Every notification from now on (or only those of ``methods``), as :class:`Notification`
        (``params`` parsed when known). The typed streams below are usually handier."""
        return NotificationStream(self, frozenset(methods) or None, self._queue_size)

    def progress(self, token: str | int | None = None) -> ModelStream[Progress]:
        """``$/progress`` of requests sent with a ``work_done_token`` (only ``token``'s when
        given), as :class:`~sessiond_protocol.notifications.Progress`, from now on. Create it
        before sending the request: ``begin`` may arrive before the answer."""

        def mine(note: Progress) -> bool:
            return note.token == token

        return ModelStream(self, "$/progress", Progress, None if token is None else mine, self._queue_size)

    def log_messages(self) -> ModelStream[LogMessage]:
        """``window/logMessage`` from the daemon, as :class:`~sessiond_protocol.notifications.LogMessage`
        (they are also logged to the ``sessiond_client`` logger)."""
        return ModelStream(self, "window/logMessage", LogMessage, None, self._queue_size)

    NOTIFICATION_STREAMS: ClassVar[dict[str, str]] = {
        "session/update": "updates",
        "$/progress": "progress",
        "window/logMessage": "log_messages",
    }
    """Protocol notification -> the method returning a typed stream of it (checked by the tests
    against ``sessiond_protocol.NOTIFICATIONS``)."""

    SERVER_REQUEST_HANDLERS: ClassVar[dict[str, str]] = {"compaction/summarize": "on_summarize"}
    """Server -> client request -> the method registering its typed handler (checked against
    ``sessiond_protocol.notifications.SERVER_REQUESTS``)."""

    # ------------------------------------------------------------------ server requests

    def on_summarize(self, fn: Summarizer | None) -> Any:
        """Answer ``compaction/summarize`` with ``fn(SummarizeParams)`` (a summary string, a dict
        or a :class:`SummarizeResult`; raising fails that compaction). Register it before
        connecting: the ``summarizer`` capability is declared in ``initialize``. If the daemon
        cancels the request, the coroutine is cancelled. Usable as a decorator."""
        if fn is not None and self._opened and not self._summarizer_declared:
            raise RuntimeError(
                "register the summarizer before connecting (or pass summarizer= when connecting): "
                "the capability is declared in initialize"
            )
        self._summarizer = fn
        return fn

    summarizer = on_summarize
    """Decorator form of :meth:`on_summarize`: ``@client.summarizer``."""

    def on_request(self, method: str, handler: ServerRequestHandler) -> None:
        """Answer another server -> client request with ``await handler(params)`` (raw JSON)."""
        self._handlers[method] = handler
        if self._client is not None:
            self._client.on_request(method, handler)

    async def _answer_summarize(self, params: Any) -> Any:
        fn = self._summarizer
        if fn is None:
            raise RuntimeError("no summarizer is registered")
        request = SummarizeParams.model_validate(params)
        if _is_async_callable(fn):
            answer = await fn(request)  # type: ignore[misc]
        else:
            answer = await asyncio.to_thread(fn, request)
            if inspect.isawaitable(answer):
                answer = await answer
        return _summary_answer(answer)

    # ------------------------------------------------------------------ requests

    async def _current(self) -> Client:
        if not self._opened and not self._closing:
            raise ConnectionClosed("not connected: await client.open() (or use async with) first")
        while True:
            if self._failure is not None:
                raise ConnectionClosed(str(self._failure))
            if self._closing:
                raise ConnectionClosed("the client is closed")
            client = self._client
            if client is not None and not client.closed and self._ready.is_set():
                return client
            if client is not None and client.closed:
                self._ready.clear()  # the watcher has not noticed yet; it will reconnect or give up
            await self._ready.wait()

    async def _send(self, client: Client, method: str, params: Any) -> Any:
        try:
            async with asyncio.timeout(self.request_timeout):
                raw = await client.request(method, params, timeout=None)
        except TimeoutError:
            raise
        except RpcError as exc:
            raise from_rpc_error(exc, method) from None
        except (ConnectionClosedError, ConnectionError, OSError) as exc:
            raise ConnectionClosed(f"{method}: the connection to sessiond was lost") from exc
        spec = METHODS.get(method)
        if spec is None or spec.result is None:
            return raw
        return spec.result.model_validate(raw)

    async def _call(self, method: str, args: dict[str, Any]) -> Any:
        params = build_params(method, arguments(args))
        result = await self._send(await self._current(), method, params)
        self._follow(method, params, result)
        return result

    def _follow(self, method: str, params: dict[str, Any], result: Any) -> None:
        """Keep track of the subscriptions a reconnection restores."""
        if method == "session/subscribe" or (
            method in ("session/new", "session/load") and params.get("subscribe")
        ):
            self._subscribed[result.sessionId] = None
        elif method in ("session/close", "session/delete", "session/unsubscribe"):
            self._subscribed.pop(params["sessionId"], None)
        elif method == "session/list" and params.get("subscribe"):
            self._list_subscribed = True
        elif method == "stats/subscribe":
            self._stats_subscription = dict(params)
        elif method == "stats/unsubscribe":
            self._stats_subscription = None

    async def request(self, method: str, params: Any = None) -> Any:
        """Send any request as raw JSON (no checks, no parsing); errors are still mapped."""
        try:
            async with asyncio.timeout(self.request_timeout):
                return await (await self._current()).request(method, params, timeout=None)
        except TimeoutError:
            raise
        except RpcError as exc:
            raise from_rpc_error(exc, method) from None
        except (ConnectionClosedError, ConnectionError, OSError) as exc:
            raise ConnectionClosed(f"{method}: the connection to sessiond was lost") from exc

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification as raw JSON."""
        await (await self._current()).notify(method, params)

    # ------------------------------------------------------------------ conveniences

    async def iter_sessions(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        root: Literal["sessiond", "pi", "claude", "codex", "opencode"] | None = None,
        format: Literal["pi", "claude-code", "codex", "opencode"] | None = None,
        page_size: int = 200,
    ) -> AsyncGenerator[SessionSummary, None]:
        """Every session (``session/list`` page after page), newest first."""
        cursor: str | None = None
        while True:
            page = await self.session_list(cwd=cwd, root=root, format=format, cursor=cursor, limit=page_size)
            for summary in page.sessions:
                yield summary
            if page.nextCursor is None:
                return
            cursor = page.nextCursor

    append = Methods.session_append
    context = Methods.context_get


async def connect(
    store: str | os.PathLike[str] | None = None,
    *,
    socket: str | os.PathLike[str] | None = None,
    start: bool = True,
    **options: Unpack[ClientOptions],
) -> SessiondClient:
    """:meth:`SessiondClient.connect`: the store's daemon (started when none runs, unless ``start=False``)."""
    return await SessiondClient.connect(store, socket=socket, start=start, **options)


__all__ = [
    "QUEUE_OVERFLOW",
    "RECONNECTED",
    "UNSET",
    "ClientOptions",
    "DaemonUnavailable",
    "EntryLike",
    "JsonObject",
    "ModelStream",
    "Notification",
    "NotificationStream",
    "SessiondClient",
    "Subscription",
    "Unset",
    "UpdateStream",
    "build_params",
    "connect",
    "python_name",
]
