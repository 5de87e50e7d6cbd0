"""Keep the daemon in step with other programs writing session files.

The :class:`~sessiond.service.watcher.Watcher` says *which* file changed *how*; this decides
what that means for the daemon:

* an open session grew -> index only the new complete lines and publish them
  (``entries_appended`` with ``external: true``, then ``usage_update``);
* an open session was rewritten, replaced or deleted -> reopen it (or close it) and publish
  ``external_change`` with what changed (leaf, entry count);
* a session file appeared, changed or went in a root -> ``session_list_update`` to the
  connections that listed with ``subscribe: true``.

The daemon's own appends advance the session's read offset (and the watcher's expectation)
before the watcher looks, so they never come back as external changes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import SessiondError
from ..store.memory import BUDGET
from .catalog import UUID_STEM, Listed
from .hub import WARNING
from .watcher import FileEvent, Watcher

if TYPE_CHECKING:
    from .host import SessionHost
    from .service import Service

log = logging.getLogger("sessiond.watch")


class Follower:
    """Two watchers: kernel watches (inotify) for the roots other agents write — sessiond
    never writes there, so the watches cost it nothing — and stat polling for the roots
    sessiond writes itself. A kernel watch on a directory makes every ``write()`` into it wake
    the watching thread (measured here: ~15 us per write, ~60 us of daemon CPU per append
    with the notification machinery, a quarter of an append's cost); another program
    appending to a sessiond-owned file is the exception, and the daemon reads such a tail
    before its own next write anyway. Polling finds it within ``[watch] poll_interval``.
    """

    ROOT_CHECK_INTERVAL = 2.0
    """Seconds between looks for roots that do not exist yet (Pi or Claude Code installed later)."""
    SWEEP_INTERVAL = 10.0
    """Seconds between sweeps of the memory budget for idle sessions' parsed content."""

    def __init__(self, service: Service) -> None:
        self.service = service
        config = service.config.watch
        self.enabled = config.enabled
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
        """Roots sessiond writes (polled; ``own_poll_interval = 0`` uses kernel watches there too)."""

    def _watcher(self, root: Any) -> Watcher:
        return self.own if root is None or root.writable else self.foreign

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        if not self.enabled:
            with anyio.CancelScope() as self._sweeping:  # nothing to follow; memory is still given back
                await self._sweep_memory()
            return
        missing = []
        for root in self.service.catalog.roots:
            if root.path.is_dir():
                self._watcher(root).watch_dir(root.path, recursive=True)
            else:
                missing.append(root)
        for host in list(self.service.hosts.values()):
            self.opened(host)
        async with anyio.create_task_group() as tg:
            if missing:
                tg.start_soon(self._wait_for_roots, missing)
            tg.start_soon(self.own.run)
            tg.start_soon(self._sweep_memory)
            await self.foreign.run()
            tg.cancel_scope.cancel()

    async def _sweep_memory(self) -> None:
        """Give back what open sessions hold parsed and stopped using, also when nothing else
        happens (the memory budget otherwise checks only when a session reports). Runs with
        ``[watch] enabled = false`` too, until the daemon stops."""
        while True:
            await anyio.sleep(self.SWEEP_INTERVAL)
            BUDGET.sweep()

    async def _wait_for_roots(self, missing: list[Any]) -> None:
        while missing:
            await anyio.sleep(self.ROOT_CHECK_INTERVAL)
            for root in [r for r in missing if r.path.is_dir()]:
                missing.remove(root)
                log.info("watching %s (it appeared)", root.path)
                self._watcher(root).watch_dir(root.path, recursive=True)

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
            host.after_write = lambda: self.written(host)

    def written(self, host: SessionHost) -> None:
        size = host.session.file_size()
        if size is not None:
            self._watcher(host.root).expect(host.session.path, size)

    def closed(self, host: SessionHost) -> None:
        host.after_write = None

    # ------------------------------------------------------------------ events

    async def on_events(self, events: list[FileEvent]) -> None:
        for event in events:
            host = None
            try:
                host = self.service.host_at(event.path)
                if host is not None:
                    await self._follow(host, event)
                self._list_update(event)
            except (SessiondError, OSError) as exc:
                message = exc.message if isinstance(exc, SessiondError) else str(exc)
                if host is not None:
                    self.service.tell(host.id, WARNING, f"cannot follow a change to {event.path}: {message}")
                else:
                    log.warning("%s: %s", event.path, message)

    async def _follow(self, host: SessionHost, event: FileEvent) -> None:
        session = host.session
        if event.kind == "deleted":
            self._publish_change(host, "deleted", None, host.session.entry_count)
            self.service.drop_host(host)
            return
        if event.kind in ("grown", "created"):
            result = await anyio.to_thread.run_sync(session.ingest)
            if result.reload_required is None:
                if result.entries:
                    self.service.file_history.forget(host.id)  # snapshots may have arrived
                    host.announce_external(result.entries)
                return
            kind = "replaced" if "replaced" in result.reload_required else "rewritten"
        else:
            kind = event.kind
        await self._reload(host, kind)

    async def _reload(self, host: SessionHost, reason: str) -> None:
        previous_leaf, previous_count = host.session.leaf_id, host.session.entry_count
        root = host.root
        fresh = await anyio.to_thread.run_sync(
            lambda: self.service.catalog.open(root, host.session.path, self.service.config.durability)
        )
        old = host.session
        host.replace_session(fresh)
        self.service.file_history.forget(host.id)
        old.close()
        self.opened(host)
        self._publish_change(host, reason, previous_leaf, previous_count)
        host.publish_usage(force=True)

    def _publish_change(
        self, host: SessionHost, reason: str, previous_leaf: Any, previous_count: int
    ) -> None:
        session = host.session
        self.service.hub.publish(
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
        service = self.service
        from .service import LIST_TOPIC, summary  # noqa: PLC0415 (the service imports this module)

        if not service.hub.subscriber_count(LIST_TOPIC):
            return
        root = service.catalog.root_of(event.path)
        if root.format == "claude-code" and not UUID_STEM.fullmatch(event.path.stem):
            return  # sub-agent transcripts and other files are not sessions
        if event.kind == "deleted":
            stem = event.path.stem
            session_id = stem if root.format == "claude-code" else stem.rsplit("_", 1)[-1]
            self._send(session_id, {"change": "removed", "session": None, "path": str(event.path)})
            return
        info = (
            service.catalog.claude_info(event.path)
            if root.format == "claude-code"
            else service.listing.info(os.fspath(event.path))
        )
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
        from .service import LIST_TOPIC  # noqa: PLC0415

        update = {"sessionUpdate": "session_list_update", **fields}
        for subscriber in self.service.hub.subscribers(LIST_TOPIC):
            subscriber.send_update(session_id, update)
