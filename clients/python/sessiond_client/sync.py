"""A blocking facade over :class:`~sessiond_client.typed.SessiondClient`, for scripts.

    with connect_sync() as c:
        new = c.session_new(cwd="/repo", subscribe=True)
        with c.updates(new.sessionId) as updates:
            c.append(new.sessionId, [...])
            print(updates.next(timeout=5).update)

The async client runs on an event loop in a background thread; every method of the async
client exists here with the same signature and returns its result. A call blocks until the
answer; ``timeout`` (seconds, per client) bounds it, and a timeout or a ``KeyboardInterrupt``
cancels the request (the daemon gets ``$/cancelRequest``). A plain-function summarizer runs in a
worker thread. Use one client from one thread at a time, or serialise calls yourself (each call
is safe; streams are single-consumer).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, Generic, ParamSpec, TypeVar, Unpack

from pydantic import BaseModel

from sessiond_protocol.notifications import LogMessage, Progress, SessionUpdate

from .blocking import Blocking
from .methods import BlockingMethods
from .typed import (
    Notification,
    SessiondClient,
    StdioOptions,
    Summarizer,
    TcpOptions,
    UnixOptions,
    UpdateStream,
    _Stream,
)

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
U = TypeVar("U", bound=BaseModel)
_DEFAULT: Any = object()


class SyncStream(Generic[T]):
    """A blocking iterator over a stream of the async client (``for event in stream``)."""

    def __init__(self, owner: SessiondSyncClient, stream: _Stream[T]) -> None:
        self._owner = owner
        self.stream = stream

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        try:
            return self._owner.run(self.stream.__anext__(), timeout=None)
        except StopAsyncIteration:
            raise StopIteration from None

    def next(self, timeout: float | None = None) -> T:
        """The next item; ``TimeoutError`` after ``timeout`` s, ``StopIteration`` at the end."""
        try:
            return self._owner.run(self.stream.next(timeout), timeout=None)
        except StopAsyncIteration:
            raise StopIteration from None

    def pending(self) -> list[T]:
        """The items buffered now, without waiting."""

        async def take() -> list[T]:
            return self.stream.pending()

        return self._owner.run(take(), timeout=None)

    def close(self) -> None:
        self._owner.run(self.stream.aclose(), timeout=None)

    def __enter__(self) -> SyncStream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncUpdateStream(SyncStream[SessionUpdate]):
    stream: UpdateStream

    @property
    def session_id(self) -> str | None:
        return self.stream.session_id

    def wait_for(
        self,
        match: type[BaseModel] | Callable[[SessionUpdate], bool],
        *,
        timeout: float | None = None,
    ) -> SessionUpdate:
        """Skip updates until one matches (an update class or a predicate)."""
        return self._owner.run(self.stream.wait_for(match, timeout=timeout), timeout=None)

    def expect(self, kind: type[U], *, timeout: float | None = None) -> U:
        """Skip updates until one of ``kind`` and return that update (see :meth:`UpdateStream.expect`)."""
        return self._owner.run(self.stream.expect(kind, timeout=timeout), timeout=None)

    def __enter__(self) -> SyncUpdateStream:
        return self


class SessiondSyncClient(BlockingMethods):
    """Blocking twin of :class:`SessiondClient` (same typed methods, same results and errors).

    Create it with :meth:`connect` / :func:`connect_sync`, :meth:`connect_tcp` or :meth:`spawn`.
    """

    def __init__(self, factory: Callable[[], SessiondClient], *, timeout: float | None = None) -> None:
        """Start the loop thread and connect the client ``factory()`` makes (in that thread)."""
        self.timeout = timeout
        """Seconds each call may take (None: no limit); on expiry the request is cancelled."""
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="sessiond-client", daemon=True)
        self._thread.start()

        async def open_client() -> SessiondClient:
            return await factory().open()

        try:
            self.aclient: SessiondClient = self.run(open_client(), timeout=None)
            """The async client underneath (its coroutines run with :meth:`run`)."""
        except BaseException:
            self._stop_loop()
            raise

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = _DEFAULT) -> T:
        """Run a coroutine on the client's loop and wait for its result; a timeout or an
        interrupt cancels it (a request then sends ``$/cancelRequest``)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking call from the client's own loop thread would deadlock")
        if self._closed and not self._loop.is_running():
            coro.close()
            raise RuntimeError("the client is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self.timeout if timeout is _DEFAULT else timeout)
        except BaseException:
            future.cancel()
            raise

    # ------------------------------------------------------------------ creating

    # The options are the async client's (one declaration each: UnixOptions, TcpOptions,
    # StdioOptions), plus ``timeout`` (seconds per call, this client's own).

    @classmethod
    def connect(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        timeout: float | None = None,
        **options: Unpack[UnixOptions],
    ) -> SessiondSyncClient:
        """The store's daemon over its Unix socket (see :meth:`SessiondClient.unix`)."""
        return cls(lambda: SessiondClient.unix(store, **options), timeout=timeout)

    @classmethod
    def connect_tcp(
        cls, host: str, port: int, *, timeout: float | None = None, **options: Unpack[TcpOptions]
    ) -> SessiondSyncClient:
        """Loopback TCP with the token (see :meth:`SessiondClient.tcp`)."""
        return cls(lambda: SessiondClient.tcp(host, port, **options), timeout=timeout)

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str] | None = None,
        *,
        timeout: float | None = None,
        **options: Unpack[StdioOptions],
    ) -> SessiondSyncClient:
        """A private ``sessiond serve --stdio`` (see :meth:`SessiondClient.stdio`)."""
        return cls(lambda: SessiondClient.stdio(argv, **options), timeout=timeout)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the connection and stop the loop thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.run(self.aclient.close(), timeout=15)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        async def cancel_the_rest() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._loop.shutdown_asyncgens()

        if self._loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(cancel_the_rest(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> SessiondSyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ state, streams, handlers

    @property
    def connected(self) -> bool:
        return self.aclient.connected

    @property
    def initialize_result(self) -> Any:
        return self.aclient.initialize_result

    @property
    def subscriptions(self) -> frozenset[str]:
        return self.aclient.subscriptions

    @property
    def reconnects(self) -> int:
        return self.aclient.reconnects

    def _on_loop(self, fn: Callable[[], T]) -> T:
        async def call() -> T:
            return fn()

        return self.run(call(), timeout=None)

    def updates(self, session_id: str | None = None) -> SyncUpdateStream:
        """Typed updates of one session (or all), from now on (see :meth:`SessiondClient.updates`)."""
        return SyncUpdateStream(self, self._on_loop(lambda: self.aclient.updates(session_id)))

    def subscribe(self, session_id: str) -> SyncUpdateStream:
        """Subscribe and return the session's update stream (``.stream.info``: the answer)."""
        return SyncUpdateStream(self, self.run(self.aclient.subscribe(session_id)))

    def notifications(self, *methods: str) -> SyncStream[Notification]:
        return SyncStream(self, self._on_loop(lambda: self.aclient.notifications(*methods)))

    def progress(self, token: str | int | None = None) -> SyncStream[Progress]:
        """Typed ``$/progress`` (see :meth:`SessiondClient.progress`)."""
        return SyncStream(self, self._on_loop(lambda: self.aclient.progress(token)))

    def log_messages(self) -> SyncStream[LogMessage]:
        """Typed ``window/logMessage`` (see :meth:`SessiondClient.log_messages`)."""
        return SyncStream(self, self._on_loop(self.aclient.log_messages))

    def on_summarize(self, fn: Summarizer | None) -> Any:
        """See :meth:`SessiondClient.on_summarize`; pass ``summarizer=`` when connecting instead,
        since this client connects when it is created."""
        return self.aclient.on_summarize(fn)

    def on_reconnect(self, callback: Callable[[], Any]) -> Callable[[], Any]:
        """``callback()`` runs on the client's loop thread after each reconnection."""
        return self.aclient.on_reconnect(callback)

    def iter_sessions(self, **filters: Any) -> Iterator[Any]:
        """Every session, page after page (see :meth:`SessiondClient.iter_sessions`)."""
        pages = self.aclient.iter_sessions(**filters)

        async def step() -> Any:
            return await anext(pages)

        try:
            while True:
                try:
                    yield self.run(step())
                except StopAsyncIteration:
                    return
        finally:
            with contextlib.suppress(Exception):
                self.run(pages.aclose(), timeout=5)

    # ------------------------------------------------------------------ conveniences
    # The typed methods, one per protocol method, are inherited (generated: methods.py).

    append = Blocking(SessiondClient.append)
    context = Blocking(SessiondClient.context)
    request = Blocking(SessiondClient.request)
    notify = Blocking(SessiondClient.notify)


def connect_sync(
    store: str | os.PathLike[str] | None = None,
    *,
    timeout: float | None = None,
    **options: Unpack[UnixOptions],
) -> SessiondSyncClient:
    """:meth:`SessiondSyncClient.connect`: the store's daemon, started if none runs (unless
    ``start=False``)."""
    return SessiondSyncClient.connect(store, timeout=timeout, **options)
