"""Keep the daemon in step with other programs writing session files.

The :class:`~sessiond.service.watcher.Watcher` says *which* file changed *how*; this decides
what that means for the daemon:

* an open session grew -> index only the new complete lines and publish them
  (``entries_appended`` with ``external: true``, then ``usage_update``);
* an open session was rewritten, replaced or deleted -> reopen it (or close it) and publish
  ``external_change`` with what changed (leaf, entry count);
* a session file appeared, changed or went in a root -> ``session_list_update`` to the
  connections that listed with ``subscribe: true``;
* OpenCode's database committed (``PRAGMA data_version`` moved, looked at when inotify says
  the database or its write-ahead log was written, at the latest every
  :attr:`Follower.OPENCODE_RESYNC_INTERVAL`; polled every :attr:`Follower.OPENCODE_POLL_INTERVAL`
  without inotify) -> the open OpenCode sessions re-read what changed
  (``entries_appended``/``external_change`` as above) and ``session_list_update`` for the
  sessions whose row changed. A database's write-ahead log is reused in place after a
  checkpoint, so file sizes cannot tell a commit; the database itself can.

Codex's home is not watched whole (it holds logs and worktrees): only ``sessions/`` and
``archived_sessions/``.

The daemon's own appends advance the session's read offset (and the watcher's expectation)
before the watcher looks, so they never come back as external changes.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import SessiondError
from ..store.allocator import release_free_memory
from ..store.listing import ListingCache
from ..store.memory import BUDGET
from ..store.opencode import DB_NAME, OpenCodeDatabase
from .agent_roots import codex_dirs, is_codex_session_file, rollout_id
from .catalog import UUID_STEM, Listed
from .config import WatchConfig
from .hub import LIST_TOPIC
from .inotify import Nearby
from .peer import WARNING
from .registry import SessionRegistry
from .views import summary
from .watcher import FileEvent, Watcher

if TYPE_CHECKING:
    from ..store.session import IngestResult, PendingAppend
    from .host import SessionHost

log = logging.getLogger("sessiond.watch")

INLINE_INGEST_BYTES = 64 << 10
"""Growth of an open session's file up to which its ingest runs on the event loop (when no
other thread holds the session: it never waits there), not in a worker thread. A line of a
followed transcript (a few KiB) takes a fraction of a millisecond to take in; the hop to a
worker thread and back cost more than that in wake-ups alone (~0.25 ms of CPU per line on
the benchmark machine, benchmarks/watch.py). Bigger growth, or growth of unknown size, is
read in a worker thread as before."""


@dataclass(frozen=True, slots=True)
class Tail:
    """What a change added to a file, as the daemon holds it already: the complete lines the
    follower's ingest read, or the lines the daemon itself wrote."""

    start: int
    """The file offset of the first byte of :attr:`data`."""
    data: bytes
    """Exactly the file's bytes from :attr:`start` (whole lines, each ending with a newline)."""

    @property
    def end(self) -> int:
        return self.start + len(self.data)


def ingested_tail(result: IngestResult) -> Tail | None:
    """The lines an ingest read, if it kept them."""
    return Tail(result.start, result.data) if result.data and result.start >= 0 else None


def written_tail(pending: PendingAppend | None) -> Tail | None:
    """The lines an append of the daemon's wrote, if it says (not the first flush)."""
    if pending is None or not pending.data or pending.start < 0:
        return None
    return Tail(pending.start, pending.data)


@dataclass(frozen=True, slots=True)
class FileChange:
    """What :attr:`Follower.listeners` are told: a session file changed."""

    path: Path
    kind: str
    """A watcher's event kind (``grown``, ``created``, ``rewritten``, ``replaced``,
    ``deleted``...), ``written`` (the daemon's own append) or ``committed`` (``path`` is
    OpenCode's database, which committed)."""
    open: bool
    """Whether an open session follows the file: its new entries reach the search index
    through the session (``entries_appended``), so a ``grown`` one need not be read again."""
    tail: Tail | None = None
    """What the change added, when the daemon read it (an open session's ingest) or wrote it
    (``written``): a listener takes it from here instead of reading the file again. ``None``:
    a listener that wants the new bytes reads them itself (a file nobody has open, a rewrite,
    a first flush, a replica's growth)."""
    size: int | None = None
    """The file's size the watcher saw (``None``: not a watcher's event)."""


class Follower:
    """Two watchers, both on kernel watches (inotify read on the event loop) by default: one
    for the roots other agents write, one for the roots sessiond writes itself (its store, a
    writable Pi root). They differ in configuration only: ``[watch] poll_interval`` and
    ``own_poll_interval`` > 0 stat-poll the one or the other instead (file systems without
    inotify). On the own roots each of the daemon's appends raises one kernel event, which
    costs one ``stat`` that finds the expected size and says nothing; another program
    appending to a sessiond-owned file is then seen as fast as anywhere else (issue 30).
    While nothing changes neither watcher wakes.
    """

    ROOT_CHECK_INTERVAL = 2.0
    """Seconds between looks for roots that do not exist yet (Pi or Claude Code installed later)."""
    SWEEP_INTERVAL = 10.0
    """Seconds between sweeps of the memory budget for idle sessions' parsed content."""
    OPENCODE_POLL_INTERVAL = 0.25
    """Seconds between two ``PRAGMA data_version`` looks at OpenCode's database without inotify."""
    OPENCODE_RESYNC_INTERVAL = 30.0
    """With inotify: the longest wait between two looks (a commit whose event was missed)."""
    OPENCODE_SETTLE = (0.005, 0.02, 0.05, 0.1, *(0.25,) * 20)
    """With inotify: after a write to the database or its log, look again after these delays
    (~5 s in all, started again by each write) even when no new commit shows yet. A WAL commit
    writes its frames to ``-wal`` (the event), syncs them — tens to hundreds of milliseconds
    on a busy disk — and only then publishes them in ``-shm``, through a memory map that
    inotify does not see (and readers write it too). So no event marks the moment a commit
    becomes visible: a look right after the write can see the old version, and waiting for
    the next event could wait until the resync."""

    def __init__(self, registry: SessionRegistry, listing: ListingCache, config: WatchConfig) -> None:
        self.registry = registry
        self.listing = listing
        """Where a changed Pi file's summary is read (and cached) for ``session_list_update``."""
        self.enabled = config.enabled
        self.listeners: list[Callable[[FileChange], None]] = []
        """The one hook of changed session files (the usage records and the search index):
        told every watcher event (an open session's growth after its ingest, with the lines it
        read; any other event before it is followed), the daemon's own writes (with the lines
        written) and OpenCode's database after a commit, each a :class:`FileChange`. Called on
        the event loop, so each must be quick."""
        self.bytes_ingested = 0
        """Bytes of session files open sessions read to follow their growth (``daemon/status``)."""
        self._sweeping: anyio.CancelScope | None = None
        """With following disabled, the memory sweep that :meth:`run` does instead (cancelled by
        :meth:`stop`)."""
        self.foreign = Watcher(
            self.on_events, poll_interval=config.poll_interval or None, suffixes=(".jsonl",)
        )
        """Roots sessiond only reads (inotify unless polling is configured)."""
        self.own = Watcher(
            self.on_events, poll_interval=config.own_poll_interval or None, suffixes=(".jsonl",)
        )
        """Roots sessiond writes (inotify; ``own_poll_interval`` > 0 polls them instead)."""

    def _watcher(self, root: Any) -> Watcher:
        return self.own if root is None or root.writable else self.foreign

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        if not self.enabled:
            with anyio.CancelScope() as self._sweeping:  # nothing to follow; memory is still given back
                await self._sweep_memory()
            return
        missing = []
        opencode = []
        for root in self.registry.catalog.roots:
            if root.format == "opencode":
                opencode.append(root)
                continue
            for directory in _watched_dirs(root):
                if directory.is_dir():
                    self._watcher(root).watch_dir(directory, recursive=True)
                else:
                    missing.append((root, directory))
        for host in list(self.registry.hosts.values()):
            self.opened(host)
        async with anyio.create_task_group() as tg:
            if missing:
                tg.start_soon(self._wait_for_roots, missing)
            for root in opencode:
                tg.start_soon(self._poll_opencode, root)
            tg.start_soon(self.own.run)
            tg.start_soon(self._sweep_memory)
            await self.foreign.run()
            tg.cancel_scope.cancel()

    async def _sweep_memory(self) -> None:
        """Give back what open sessions hold parsed and stopped using, also when nothing else
        happens (the memory budget otherwise checks only when a session reports). Runs with
        ``[watch] enabled = false`` too, until the daemon stops.

        Then the allocator gives its free pages back to the system (``sessiond.store.allocator``):
        without it, what closed sessions and dropped contexts freed stays resident in glibc's
        heaps, and RSS creeps up with session turnover although nothing leaks. In a worker
        thread, as it holds the allocator's locks for a few milliseconds."""
        while True:
            await anyio.sleep(self.SWEEP_INTERVAL)
            BUDGET.sweep()
            await anyio.to_thread.run_sync(release_free_memory)

    async def _wait_for_roots(self, missing: list[tuple[Any, Path]]) -> None:
        """Watch roots that appear later: woken by inotify on the nearest existing ancestor of
        each (entries created there, nothing else), else every ``ROOT_CHECK_INTERVAL``."""
        waiters = {directory: Nearby(directory, appear_only=True) for _, directory in missing}
        try:
            while missing:
                armed = all([waiters[d].arm() for _, d in missing])  # noqa: C419 - arm each, then look
                for root, directory in [m for m in missing if m[1].is_dir()]:
                    missing.remove((root, directory))
                    waiters.pop(directory).close()
                    log.info("watching %s (it appeared)", directory)
                    self._watcher(root).watch_dir(directory, recursive=True)
                if not missing:
                    return
                if not armed:
                    await anyio.sleep(self.ROOT_CHECK_INTERVAL)
                    continue
                async with anyio.create_task_group() as tg:

                    async def one(waiter: Nearby, scope: anyio.CancelScope) -> None:
                        await waiter.wait(math.inf)
                        scope.cancel()

                    for _, directory in missing:
                        tg.start_soon(one, waiters[directory], tg.cancel_scope)
        finally:
            for waiter in waiters.values():
                waiter.close()

    async def _poll_opencode(self, root: Any) -> None:
        """Follow OpenCode's database: open sessions and listings, on every commit."""
        database = OpenCodeDatabase(root.path / DB_NAME)
        version: int | None = None
        listed: dict[str, float] = {}
        nearby = Nearby(root.path / DB_NAME, ignore=("-shm",))
        settle: list[float] = []
        try:
            while True:
                armed = nearby.arm()  # before the look: a commit after it wakes the wait
                now = await anyio.to_thread.run_sync(database.data_version)
                if now is not None and now != version:
                    log.debug("opencode data_version %s -> %s", version, now)
                    first = version is None
                    version = now
                    self._tell(database.path, "committed", False)
                    try:
                        await self._opencode_changed(root, listed, first)
                    except (SessiondError, OSError, sqlite3.Error) as exc:
                        log.warning("%s: %s", database.path, exc)
                if armed:
                    # Looks again soon after a write, whether or not it showed a commit: the
                    # write seen may belong to a commit that becomes visible only later.
                    wait = settle.pop(0) if settle else self.OPENCODE_RESYNC_INTERVAL
                    if await nearby.wait(wait):
                        settle = list(self.OPENCODE_SETTLE)
                else:
                    await anyio.sleep(self.OPENCODE_POLL_INTERVAL)
        finally:
            nearby.close()
            database.close()

    async def _opencode_changed(self, root: Any, listed: dict[str, float], first: bool) -> None:
        registry = self.registry
        # Open sessions compare their own signature, so looking on the first version too is
        # harmless, and it catches commits made before the database could first be read.
        for host in [h for h in list(registry.hosts.values()) if h.root is root]:
            await self._follow(host, FileEvent("grown", Path(host.session.path), 0, None, None))
        if not registry.hub.subscriber_count(LIST_TOPIC) and not first:
            listed.clear()
            return
        infos = await anyio.to_thread.run_sync(lambda: registry.catalog.list_all(root=root.name))
        current = {str(x.info.id): x for x in infos}
        if not first:
            for sid, x in current.items():
                if sid not in listed or listed[sid] != x.info.modified_ms:
                    change = "added" if sid not in listed else "updated"
                    self._send(sid, {"change": change, "session": summary(x), "path": x.info.path})
            for sid in [s for s in listed if s not in current]:
                self._send(sid, {"change": "removed", "session": None, "path": None})
        listed.clear()
        listed.update({sid: x.info.modified_ms for sid, x in current.items()})

    def stop(self) -> None:
        if self._sweeping is not None:
            self._sweeping.cancel()
        self.foreign.stop()
        self.own.stop()

    def opened(self, host: SessionHost) -> None:
        """Follow an open session's file (from the state the session was read in)."""
        if not self.enabled:
            return
        size = host.session.file_size()
        if size is not None:
            self._watcher(host.root).track(host.session.path, size)
        if host.session.read_only is None:
            host.after_write = lambda pending: self.written(host, pending)

    def written(self, host: SessionHost, pending: PendingAppend | None = None) -> None:
        """The daemon wrote the session's file: ``pending`` says what (``None``: not known,
        e.g. a replica that grew from its stream)."""
        path = host.session.path
        size = host.session.file_size()
        if size is not None:
            self._watcher(host.root).expect(path, size)
        self._tell(path if isinstance(path, Path) else Path(path), "written", True, written_tail(pending))

    def _tell(
        self, path: Path, kind: str, open_: bool, tail: Tail | None = None, size: int | None = None
    ) -> None:
        change = FileChange(path, kind, open_, tail, size)
        for listener in self.listeners:
            listener(change)

    def closed(self, host: SessionHost) -> None:
        host.after_write = None

    # ------------------------------------------------------------------ events

    async def on_events(self, events: list[FileEvent]) -> None:
        for event in events:
            host = self.registry.host_at(event.path)
            # An open session's growth is told once its ingest read it, with what was read:
            # the listeners need not read the same bytes again. Anything else before.
            ingests = host is not None and event.kind in ("grown", "created")
            if not ingests:
                self._tell(event.path, event.kind, host is not None, size=event.size)
            tail: Tail | None = None
            try:
                if host is not None:
                    tail = await self._follow(host, event)
                self._list_update(event)
            except (SessiondError, OSError) as exc:
                message = exc.message if isinstance(exc, SessiondError) else str(exc)
                if host is not None:
                    self.registry.tell(host.id, WARNING, f"cannot follow a change to {event.path}: {message}")
                else:
                    log.warning("%s: %s", event.path, message)
            finally:
                if ingests:
                    self._tell(event.path, event.kind, True, tail, event.size)

    async def _follow(self, host: SessionHost, event: FileEvent) -> Tail | None:
        """Bring the open session in step with its file; the lines its ingest read, if any
        (``None`` too when the file must be read again whole: it was rewritten or replaced)."""
        session = host.session
        if event.kind == "deleted":
            self._publish_change(host, "deleted", None, host.session.entry_count)
            self.registry.drop_host(host)
            return None
        if event.kind in ("grown", "created"):
            result = session.if_free(session.ingest) if _small_growth(event) else None
            if result is None:
                result = await anyio.to_thread.run_sync(session.ingest)
            self.bytes_ingested += result.bytes_read
            if result.reload_required is None:
                if result.entries:
                    self.registry.changed(host)  # file snapshots may have arrived, for one
                    host.announce_external(result.entries)
                return ingested_tail(result)
            kind = "replaced" if "replaced" in result.reload_required else "rewritten"
        else:
            kind = event.kind
        await self._reload(host, kind)
        return None

    async def _reload(self, host: SessionHost, reason: str) -> None:
        previous_leaf, previous_count = host.session.leaf_id, host.session.entry_count
        self.registry.serve(host, await self.registry.read_again(host))
        self._publish_change(host, reason, previous_leaf, previous_count)
        host.publish_usage(force=True)

    def _publish_change(
        self, host: SessionHost, reason: str, previous_leaf: Any, previous_count: int
    ) -> None:
        session = host.session
        self.registry.hub.publish(
            host.id,
            {
                "sessionUpdate": "external_change",
                "reason": reason,
                "leafId": None if reason == "deleted" else session.leaf_id,
                "previousLeafId": previous_leaf,
                "entryCount": 0 if reason == "deleted" else session.entry_count,
                "previousEntryCount": previous_count,
            },
        )

    # ------------------------------------------------------------------ listings

    def _list_update(self, event: FileEvent) -> None:
        registry = self.registry
        if not registry.hub.subscriber_count(LIST_TOPIC):
            return
        root = registry.catalog.root_of(event.path)
        if root.format == "claude-code" and not UUID_STEM.fullmatch(event.path.stem):
            return  # sub-agent transcripts and other files are not sessions
        if root.format == "codex" and not is_codex_session_file(root.path, event.path):
            return  # the prompt history, logs and the like
        if event.kind == "deleted":
            stem = event.path.stem
            if root.format == "claude-code":
                session_id = stem
            elif root.format == "codex":
                session_id = rollout_id(event.path) or stem
            else:
                session_id = stem.rsplit("_", 1)[-1]
            self._send(session_id, {"change": "removed", "session": None, "path": str(event.path)})
            return
        if root.format == "claude-code":
            info = registry.catalog.claude_info(event.path)
        elif root.format == "codex":
            info = registry.catalog.codex_listing.info(root.path, event.path)
        else:
            info = self.listing.info(os.fspath(event.path))
        if info is None:
            return
        self._send(
            str(info.id),
            {
                "change": "added" if event.kind == "created" else "updated",
                "session": summary(Listed(info, root)),
                "path": str(Path(event.path)),
            },
        )

    def _send(self, session_id: str, fields: dict[str, Any]) -> None:
        update = {"sessionUpdate": "session_list_update", **fields}
        for subscriber in self.registry.hub.subscribers(LIST_TOPIC):
            subscriber.send_update(session_id, update)


def _small_growth(event: FileEvent) -> bool:
    """Whether ``event`` is a growth of known, small size (see :data:`INLINE_INGEST_BYTES`)."""
    return (
        event.kind == "grown"
        and event.previous_size is not None
        and 0 <= event.size - event.previous_size <= INLINE_INGEST_BYTES
    )


def _watched_dirs(root: Any) -> list[Path]:
    """The directories of a root that hold its sessions (Codex's home holds much else)."""
    if root.format == "codex":
        return codex_dirs(root.path)
    return [root.path]
