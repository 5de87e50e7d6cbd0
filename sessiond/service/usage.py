"""Usage and cost in the daemon: ``stats/query``, ``stats/subscribe`` and ``stats_update``.

The records live in :class:`sessiond.usage.index.UsageIndex` (``<store>/usage.sqlite3``). The
daemon builds it once in a worker thread when it starts (a restart reads only files that
changed), then keeps it in step from the follower's one hook (:attr:`Follower.listeners`): a
followed file that grew (another agent's transcript, a file another program appended to) and
the daemon's own appends name their path and, where the daemon holds them, the lines added
(what an open session's ingest read, what the daemon wrote: :class:`~.following.Tail`), which
are parsed from there instead of read again (:meth:`UsageIndex.feed`). A file nobody has open
that grew is read by the search index's kept reader, which hands the lines over
(:meth:`UsageFeed.handed`); the feed waits for them (at most :attr:`UsageFeed.HANDOVER_WAIT`).
The other paths are read from where they were left. The changes are collected and taken in
together in a worker thread, at most every :attr:`UsageFeed.THROTTLE` seconds while a connection
is subscribed, after which each subscribed connection whose numbers changed gets one
``stats_update`` (``session/update`` with ``sessionUpdate: "stats_update"``; the envelope's
``sessionId`` is the subscribed session's id, or ``""`` when the subscription names none).
With nobody subscribed they are taken in every :attr:`UsageFeed.QUIET_THROTTLE` seconds, and
by each ``stats/query`` (and a subscription's answer) first: an answer counts every line the
daemon had seen when it was asked.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Any, Final

import anyio

from ..usage.index import DB_FILE, READS, Source, UsageIndex
from ..usage.prices import PriceBook
from ..usage.registry import registry_window
from ..usage.report import Query, run, today_totals, zone
from .config import Config
from .following import FileChange, Tail
from .hub import Hub
from .peer import Peer

log = logging.getLogger("sessiond.usage")

STATS_TOPIC: Final = "*stats*"
"""The hub topic of ``stats_update`` subscribers (not a session id: ids cannot contain ``*``)."""


def sources(config: Config) -> list[Source]:
    """Every root the daemon serves, as the usage index reads them."""
    return [Source(root.name, root.format, root.path) for root in config.roots]


def open_index(config: Config) -> UsageIndex:
    """The usage records beside the store (created ``0600`` on first use)."""
    return UsageIndex(config.root / DB_FILE, sources(config), PriceBook(config.prices))


@dataclass(slots=True)
class _Subscription:
    peer: Peer
    session_id: str | None
    tz: tzinfo
    last: dict[str, Any] | None = None


class UsageFeed:
    THROTTLE: Final = 0.2
    """Seconds between two reads of changed files (and so between two ``stats_update``) while a
    connection is subscribed."""
    QUIET_THROTTLE: Final = 2.0
    """The same while nobody is subscribed: nobody waits for the numbers (a query takes in what
    is pending itself), and each take costs a worker thread's round trip and a transaction. A
    followed transcript's lines (20 a second in benchmarks/watch.py) cost the daemon 0.2-0.5 ms
    of CPU less each than with a take every 0.2 s."""
    HANDOVER_WAIT: Final = 1.0
    """Seconds a grown file nobody has open waits for the search index's reader to hand over
    what it read (:meth:`handed`, usually within milliseconds) before it is read here after
    all (the reader was let go meanwhile, the lines are not complete yet)."""

    def __init__(self, config: Config, hub: Hub) -> None:
        self.config = config
        self.hub = hub
        self._index: UsageIndex | None = None
        self._pending: dict[str, list[tuple[int, bytes]] | None] = {}
        """The changed files, each with the lines the daemon handed over (in file order), or
        ``None``: read it."""
        self._wake = anyio.Event()
        self._subs: dict[int, _Subscription] = {}
        self.handed_over_by: Callable[[str], bool] | None = None
        """Whether another reader of the daemon (the search index's kept reader) will hand
        over what a file nobody has open grew by (set by the service; ``None``: nobody)."""
        self._awaited: dict[str, tuple[int, float]] = {}
        """Grown files whose new lines another reader is to hand over: the size to cover and
        until when to wait for it (:data:`HANDOVER_WAIT`)."""
        self.progress: tuple[int, int] | None = (0, 0)
        """(files read, files) while the first build runs, then ``None``."""
        self._taking = anyio.Lock()
        """Held while pending changes are taken in (the feed's loop or a query): one at a time."""
        self._hurry = anyio.Event()
        """Set by a subscription: the feed's quiet pause ends (subscribers get updates at once)."""

    @property
    def bytes_read(self) -> int:
        """Bytes of session files read for the records since the start (``daemon/status``)."""
        return READS.bytes

    # ------------------------------------------------------------------ the hook

    def changed(self, change: FileChange) -> None:
        """A session file grew or changed (the follower's hook, on the event loop; cheap: no
        I/O here). Its lines are kept when the change carries them and every earlier change
        of the file since the last update did too; one change without them means a read of
        the file (which covers the lines handed over as well)."""
        path = os.fspath(change.path)  # str keys: hashing a Path costs more than the rest here
        tail = change.tail
        if tail is None and self._hands_over(change):
            size = max(change.size or 0, self._awaited.get(path, (0, 0.0))[0])
            due = self._awaited.get(path, (0, time.monotonic() + self.HANDOVER_WAIT))[1]
            self._awaited[path] = (size, due)
            self._pending.setdefault(path, [])
        elif tail is None:
            self._pending[path] = None
        else:
            kept = self._pending.setdefault(path, [])
            if kept is not None:
                kept.append((tail.start, tail.data))
        self._wake.set()

    def _hands_over(self, change: FileChange) -> bool:
        """Whether another reader hands over what ``change`` added (a file nobody has open
        that grew, followed by the search index's kept reader)."""
        return (
            change.kind == "grown"
            and not change.open
            and change.size is not None
            and self.handed_over_by is not None
            and self.handed_over_by(os.fspath(change.path))
        )

    def handed(self, path: str, start: int, data: bytes) -> None:
        """Another reader read what ``path`` grew by (on the event loop): taken from here."""
        self.changed(FileChange(Path(path), "grown", False, Tail(start, data)))
        awaited = self._awaited.get(path)
        if awaited is not None and start + len(data) >= awaited[0]:
            del self._awaited[path]

    def _take(self) -> dict[str, list[tuple[int, bytes]] | None]:
        """The changes to take in now: all but the files whose growth is still to be handed
        over (within :data:`HANDOVER_WAIT`; after it, they are read)."""
        now = time.monotonic()
        ready: dict[str, list[tuple[int, bytes]] | None] = {}
        for path, tails in list(self._pending.items()):
            awaited = self._awaited.get(path)
            if awaited is not None and now >= awaited[1]:
                del self._awaited[path]
                ready[path] = None  # not handed over in time: read (the tails kept too)
                del self._pending[path]
                continue
            if tails == []:
                continue  # still to be handed over
            ready[path] = tails
            if awaited is None:
                del self._pending[path]
            else:
                self._pending[path] = []
        return ready

    # ------------------------------------------------------------------ running

    async def index(self) -> UsageIndex:
        if self._index is None:
            self._index = await anyio.to_thread.run_sync(open_index, self.config)
        return self._index

    async def run(self) -> None:
        """Build the records once, then follow changes until cancelled."""
        # The model registry takes ~0.5 s to import: here, off the loop, rather than on the
        # first usage_update that needs a context window. Only a head start: when it fails (an
        # import racing another thread's, say) the first lookup that needs it imports it again,
        # and the records are built all the same.
        try:
            await anyio.to_thread.run_sync(registry_window, "claude-sonnet-4-5")
        except Exception:
            log.warning("usage: the model registry was not loaded ahead (first use will)", exc_info=True)
        index = await self.index()

        def report(done: int, total: int) -> None:
            self.progress = (done, total)

        try:
            await anyio.to_thread.run_sync(lambda: index.refresh(report))
        except Exception:  # a damaged root must not stop the daemon: the feed still follows
            log.exception("usage: the first build failed")
        self.progress = None
        await self._notify()
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if await self._take_in(index):
                await self._notify()
            if self._pending:
                self._wake.set()  # growth still to be handed over: looked at again
            if self._subs:
                await anyio.sleep(self.THROTTLE)
            else:
                with anyio.move_on_after(self.QUIET_THROTTLE):
                    await self._hurry.wait()
                self._hurry = anyio.Event()

    async def _take_in(self, index: UsageIndex) -> bool:
        """Take in the pending changes (in a worker thread); whether there were any."""
        async with self._taking:
            paths = self._take()
            if not paths:
                return False
            try:
                await anyio.to_thread.run_sync(_update, index, paths)
            except Exception:
                log.exception("usage: reading %d changed files failed", len(paths))
            return True

    async def _current(self) -> UsageIndex:
        """The index, with what is pending taken in while nobody is subscribed (the feed's loop
        takes it in every :data:`QUIET_THROTTLE` seconds only; with subscribers, every
        :data:`THROTTLE`, then tells them, as always) and the first build is over (before, it
        reads every file anyway). A take the loop started is waited for (the lock): it holds
        changes that are no longer pending."""
        index = await self.index()
        if self.progress is None and not self._subs:
            await self._take_in(index)
        return index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()

    # ------------------------------------------------------------------ the protocol's

    async def query(self, q: Query) -> dict[str, Any]:
        index = await self._current()
        result = await anyio.to_thread.run_sync(run, index, q)
        progress = self.progress
        result["indexing"] = {"done": progress[0], "total": progress[1]} if progress is not None else None
        return result

    async def knows(self, session_id: str) -> bool:
        """Whether any usage record belongs to the session."""
        index = await self._current()
        return await anyio.to_thread.run_sync(index.knows, session_id)

    async def subscribe(self, peer: Peer, session_id: str | None, timezone: str | None) -> dict[str, Any]:
        """Send ``peer`` ``stats_update`` from now on (replacing its earlier subscription);
        the current numbers are the answer."""
        sub = _Subscription(peer, session_id, zone(timezone))
        index = await self._current()
        self.hub.subscribe(STATS_TOPIC, peer)
        self._subs[peer.id] = sub
        self._hurry.set()  # the feed's loop goes back to THROTTLE now
        sub.last = await anyio.to_thread.run_sync(_numbers, index, sub)
        return sub.last

    def unsubscribe(self, peer: Peer) -> bool:
        self._subs.pop(peer.id, None)
        return self.hub.unsubscribe(STATS_TOPIC, peer)

    async def _notify(self) -> None:
        live = {p.id for p in self.hub.subscribers(STATS_TOPIC)}
        for pid in [pid for pid in self._subs if pid not in live]:
            del self._subs[pid]  # the connection went (the hub dropped it)
        if not self._subs or self._index is None:
            return
        index = self._index
        for sub in list(self._subs.values()):
            numbers = await anyio.to_thread.run_sync(_numbers, index, sub)
            if numbers != sub.last:
                sub.last = numbers
                sub.peer.send_update(sub.session_id or "", {"sessionUpdate": "stats_update", **numbers})


def _update(index: UsageIndex, changes: dict[str, list[tuple[int, bytes]] | None]) -> None:
    for path, tails in changes.items():
        if tails is None:
            index.update_path(Path(path))
        else:
            index.feed(Path(path), tails)


def _numbers(index: UsageIndex, sub: _Subscription) -> dict[str, Any]:
    out: dict[str, Any] = {"today": today_totals(index, sub.tz)}
    if sub.session_id is not None:
        out["sessionId"] = sub.session_id
        out["session"] = today_totals(index, sub.tz, sub.session_id)
    return out
