"""Other daemons' appends to a shared session, announced to this daemon's subscribers.

A session of a shared store (JetStream) is followed by an ordered consumer on the link's
thread. A delivery only wakes this daemon's loop; here, on the loop, the session writes what
arrived to its replica and indexes it, and the host announces it like any other writer's
entries (``entries_appended`` with ``external: true``) — in the log's order, which is the same
order on every daemon.
"""

from __future__ import annotations

import asyncio
import logging

import anyio

from ..errors import SessiondError
from ..store.session import Session
from .host import SessionHost
from .peer import WARNING
from .registry import SessionRegistry

log = logging.getLogger("sessiond.replication")


class Replication:
    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry
        self._tasks: set[asyncio.Task[None]] = set()

    def opened(self, host: SessionHost) -> None:
        session = host.session
        if not isinstance(session, Session) or session.remote is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # opened outside the daemon's loop (a test, a tool): nothing to announce to
        scheduled = False

        async def pump() -> None:
            nonlocal scheduled
            # After an append of this daemon announced its entries: an append committing in a
            # worker thread may already hold later entries of others in its backlog, and they
            # must not be announced before its own (subscribers see the log's order).
            async with host.write_order:
                scheduled = False
                if host.session is not session or self.registry.hosts.get(host.id) is not host:
                    return  # closed or replaced meanwhile
                try:
                    # Usually only what the subscription delivered; after a gap, a read from
                    # the stream (a round trip): in a worker thread, like every commit.
                    entries = await anyio.to_thread.run_sync(session.take_remote)
                except SessiondError as exc:
                    self.registry.tell(
                        host.id, WARNING, f"cannot follow other daemons' appends: {exc.message}"
                    )
                    return
                if entries:
                    host.announce_external(entries)
                    self.registry.changed(host)
                    if host.after_write is not None:
                        host.after_write(None)  # the replica grew: no echo from the file watcher

        def start() -> None:
            task = loop.create_task(pump())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        def wake() -> None:
            nonlocal scheduled
            if not scheduled:  # one pump drains every delivery so far
                scheduled = True
                loop.call_soon_threadsafe(start)

        try:
            session.remote.follow(wake)
        except SessiondError as exc:
            self.registry.tell(host.id, WARNING, f"cannot follow other daemons' appends: {exc.message}")
        except Exception as exc:
            log.warning("%s: cannot subscribe to its log: %s", host.id, exc)

    def closed(self, host: SessionHost) -> None:
        session = host.session
        if isinstance(session, Session) and session.remote is not None:
            session.remote.close()
