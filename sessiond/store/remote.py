"""What a session's write path needs from a log shared with other daemons (docs/scale-out.md).

With the local store a session's file *is* its log. With a shared backend (JetStream) the log
lives in a cluster and the file is this daemon's replica of it: an append is committed to the
log first — only if the log still ends where this replica ends (compare-and-append) — and is
written to the file after the log acknowledged it. What other daemons committed meanwhile is
pulled and written to the file as lines another writer appended, so the read path (the lazy
index, ingest, context) is the same for both backends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol

_ARRIVAL: ContextVar[float | None] = ContextVar("sessiond_write_arrival", default=None)


def write_arrival() -> float | None:
    """When the write being committed was asked for (``time.monotonic()``), if the service said.

    A shared log's wait for the cluster (``ack_wait``) counts from there, not from the commit:
    a write queued behind another of the same session (which may wait a whole leader election)
    must not then wait a full ``ack_wait`` of its own again (a queued append waited 10 s with
    ``ack_wait = 5``)."""
    return _ARRIVAL.get()


@contextlib.contextmanager
def arriving() -> Iterator[None]:
    """Mark the write this context runs as asked for now (kept when an outer one already did:
    the request's arrival is what counts). Worker threads see it (contextvars are copied)."""
    if _ARRIVAL.get() is not None:
        yield
        return
    token = _ARRIVAL.set(time.monotonic())
    try:
        yield
    finally:
        _ARRIVAL.reset(token)


class RemoteMoved(Exception):
    """The shared log holds entries this replica has not seen: pull them, then stage again."""


class RemoteLog(Protocol):
    """One session's shared log, as its writer sees it. Methods block (they are called under the
    session's lock, from the event loop or a worker thread); failures to reach the log raise
    :class:`~sessiond.errors.ClusterUnavailableError`."""

    def commit(self, data: bytes, *, create: bool, leaf: Any) -> None:
        """Store ``data`` (whole Pi lines, one batch) right after what this replica holds.

        ``create``: the first write of a new session (the log must not exist yet). Raises
        :class:`RemoteMoved` if the log moved on; a retried commit after a lost
        acknowledgement is stored once. ``leaf`` is the session's leaf after the batch (kept
        with the session's metadata)."""
        ...

    def pull(self, *, fetch: bool) -> list[bytes]:
        """Batches other writers committed after what this replica holds, in log order, now held.

        Without ``fetch`` only what the live subscription already delivered (no round trip)."""
        ...

    def vanished(self) -> bool:
        """After a refused commit with nothing new to pull: whether the log no longer holds what
        this replica does (deleted, cut short); ``False``: the refusal was transient (a leader
        change) and the commit may be tried again."""
        ...

    def follow(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (from any thread) whenever the subscription delivered something new."""
        ...

    def close(self) -> None: ...
