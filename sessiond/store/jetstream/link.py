"""The daemon's one connection to the JetStream cluster, on a thread of its own.

The session's write path is synchronous (it runs under the session's lock, inline on the
daemon's loop or in a worker thread) while nats-py is asyncio: the client lives on a private
event loop in a daemon thread, and the store's blocking calls hand coroutines to it. So a
write never waits on the daemon's own loop, and the subscription callbacks never run on it
(they only wake it, see :meth:`~.log.JetStreamLog.follow`).

While the connection is down every call fails at once with
:class:`~sessiond.errors.ClusterUnavailableError` (a precise refusal, no hanging writes); the
client keeps reconnecting in the background and the subscriptions resume where they were.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, ObjectStoreConfig, StorageType, StreamConfig
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from ...errors import ClusterUnavailableError
from .settings import JetStreamSettings

log = logging.getLogger("sessiond.jetstream")

T = TypeVar("T")


class Link:
    """A connected NATS client on its own loop; blocking calls for the store."""

    def __init__(self, settings: JetStreamSettings) -> None:
        self.settings = settings
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sessiond-nats", daemon=True)
        self._thread.start()
        self._nc: NATS | None = None
        self._js: JetStreamContext | None = None
        self._kv: KeyValue | None = None
        self._objects: ObjectStore | None = None
        self.connected = threading.Event()
        self._spawned: set[concurrent.futures.Future[Any]] = set()
        self._closing = False
        self.created: set[str] = set()
        """The stream and buckets this link created because they did not exist (``sessiond gc``
        refuses to read references from a stream it just made: a misnamed stream has none)."""
        try:
            self.call(self._connect(), settings.connect_timeout + 10)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ plumbing

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the link's loop and wait for its result (never from the link's thread)."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` on the link's loop without waiting (metadata updates)."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        self._spawned.add(future)
        future.add_done_callback(self._spawned.discard)
        future.add_done_callback(_log_failure)

    @property
    def max_payload(self) -> int:
        """The largest message the cluster takes (headers included; the servers' ``max_payload``)."""
        assert self._nc is not None
        return self._nc.max_payload

    @property
    def js(self) -> JetStreamContext:
        assert self._js is not None
        return self._js

    @property
    def kv(self) -> KeyValue:
        assert self._kv is not None
        return self._kv

    @property
    def objects(self) -> ObjectStore:
        """The file-history blobs' bucket."""
        assert self._objects is not None
        return self._objects

    def require(self, session: str) -> None:
        """Refuse at once while the cluster is out of reach."""
        if not self.connected.is_set():
            raise ClusterUnavailableError(session, f"not connected to {', '.join(self.settings.servers)}")

    # ------------------------------------------------------------------ connecting

    async def _connect(self) -> None:
        s = self.settings

        async def disconnected() -> None:
            self.connected.clear()
            if self._closing:
                return
            log.warning("disconnected from the JetStream cluster; writes are refused until it is back")

        async def reconnected() -> None:
            self.connected.set()
            log.warning("reconnected to the JetStream cluster")

        async def error(exc: Exception) -> None:
            log.debug("nats: %s", exc)

        try:
            connecting = nats.connect(
                servers=list(s.servers),
                connect_timeout=min(s.connect_timeout, 2.0),
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                ping_interval=2,
                max_outstanding_pings=2,
                disconnected_cb=disconnected,
                reconnected_cb=reconnected,
                error_cb=error,
                name="sessiond",
            )
            nc = await asyncio.wait_for(connecting, s.connect_timeout)
        except Exception as exc:
            raise ClusterUnavailableError(
                "(store)",
                f"cannot connect to {', '.join(s.servers)} within {s.connect_timeout:g} s: "
                f"{str(exc) or type(exc).__name__}",
                outcome="check [store.jetstream] servers and that the cluster runs (docs/scale-out.md)",
            ) from exc
        self._nc = nc
        self._js = nc.jetstream(timeout=s.ack_wait)
        self.connected.set()
        await self._ensure_stream()
        try:
            self._kv = await self._js.key_value(s.kv_bucket)
        except Exception:
            self._kv = await self._js.create_key_value(
                KeyValueConfig(bucket=s.kv_bucket, history=1, replicas=s.replicas, storage=StorageType.FILE)
            )
            self.created.add(s.kv_bucket)
        try:
            self._objects = await self._js.object_store(s.object_bucket)
        except Exception:
            self._objects = await self._js.create_object_store(
                s.object_bucket,
                ObjectStoreConfig(replicas=s.replicas, storage=StorageType.FILE),
            )
            self.created.add(s.object_bucket)

    async def _ensure_stream(self) -> None:
        s = self.settings
        try:
            await self.js.stream_info(s.stream)
            return
        except NotFoundError:
            pass
        await self.js.add_stream(
            StreamConfig(
                name=s.stream,
                subjects=[f"{s.subject_prefix}.>"],
                num_replicas=s.replicas,
                storage=StorageType.FILE,
                duplicate_window=120.0,
                max_msg_size=-1,
            )
        )
        self.created.add(s.stream)

    def close(self) -> None:
        """Finish the metadata updates still in flight (briefly), then disconnect."""
        if self._closing:
            return
        concurrent.futures.wait(list(self._spawned), timeout=2)
        self._closing = True
        nc = self._nc
        if nc is not None:
            try:
                self.call(nc.close(), 5)
            except Exception as exc:
                log.debug("closing the NATS connection: %s", exc)
        try:
            self.call(_cancel_the_rest(), 2)
        except Exception as exc:
            log.debug("stopping the NATS client's tasks: %s", exc)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


async def _cancel_the_rest() -> None:
    """Cancel what the client leaves running on the link's loop (an ordered consumer's
    heartbeat and flow-control checks outlive the connection): a task still pending when the
    stopped loop is collected is logged as an error ("Task was destroyed but it is pending")
    wherever that happens to be — once in another test's captured log."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


def _log_failure(future: Any) -> None:
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None:
        log.warning("a metadata update failed: %s", exc)


Wake = Callable[[], None]
AsyncCallback = Callable[[Any], Awaitable[None]]
