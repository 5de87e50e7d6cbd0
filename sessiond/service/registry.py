"""The open sessions: one ``SessionHost`` per session, who uses it, and when it closes.

Everything that works on open sessions — the ``Service`` (the API), the compactor, file
history, following other writers — finds them here and depends on this, not on each other.
The registry knows nothing of those helpers: what they keep per session is dropped through
the hooks they register (``on_open``, ``on_changed``, ``on_close``, ``on_forget``), so
adding one is a line where the service is assembled, not an edit here.

A session stays open while anyone uses it: a connection that loaded or wrote it (its
*users*), a subscriber, or an internal *pin* (a running compaction). The last one letting go
closes it. Opening runs in a worker thread, once per session however many ask at once; so does
creating one with a given id (``session/new``): both hold the id's lock (:meth:`claimed`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Final

import anyio

from ..errors import SessionNotFoundError
from ..model.tokens import TokenEstimator
from ..store.journal import Durability
from ..store.session import ReadableSession, Session
from .catalog import Catalog
from .host import SessionHost
from .hub import Hub
from .peer import ERROR, INFO, WARNING, Peer
from .roots import Root
from .views import WindowFor

log = logging.getLogger("sessiond.service")

_LOGGING_LEVEL: Final = {ERROR: logging.ERROR, WARNING: logging.WARNING, INFO: logging.INFO}
_pins = itertools.count(-1, -1)

HostHook = Callable[[SessionHost], None]


class SessionRegistry:
    def __init__(
        self,
        catalog: Catalog,
        hub: Hub,
        estimator: TokenEstimator,
        window_for: WindowFor,
        durability: Durability,
    ) -> None:
        self.catalog = catalog
        self.hub = hub
        self.estimator = estimator
        self.window_for = window_for
        self.durability = durability
        """How sessions are opened (the daemon's default; an append may ask for more)."""
        self.hosts: dict[str, SessionHost] = {}
        self.peers: dict[int, Peer] = {}
        """Connections that used a session, by id (the audience of ``tell``, the summarizers)."""
        self._paths: dict[str, Path] = {}
        self._opening: dict[str, tuple[anyio.Lock, int]] = {}
        """The lock of each id being opened or created, and how many hold or wait for it."""
        self.on_open: list[HostHook] = []
        """Called when a host starts serving a session object (opened, or read again)."""
        self.on_changed: list[HostHook] = []
        """Called when the file changed under the daemon (another writer, a reload)."""
        self.on_close: list[HostHook] = []
        """Called when a host is dropped, before its session is closed."""
        self.on_forget: list[Callable[[str], None]] = []
        """Called with a session id that is no longer open (drop what is kept for it)."""
        self.on_entries: list[Callable[[SessionHost, list[str]], None]] = []
        """Called with every batch of entries a host announces (own appends and other writers')."""

    # ------------------------------------------------------------------ finding

    def find(self, session_id: str) -> tuple[Root, Path]:
        """The root and file of a session id (remembered while it is open)."""
        known = self._paths.get(session_id)
        if known is not None and known.exists():
            return self.catalog.root_of(known), known
        root, path = self.catalog.find(session_id)
        self._paths[session_id] = path
        return root, path

    def exists(self, session_id: str) -> bool:
        if session_id in self.hosts:
            return True
        try:
            self.find(session_id)
        except SessionNotFoundError:
            return False
        return True

    def host_at(self, path: Path) -> SessionHost | None:
        """The open session whose file is ``path``, if any."""
        target = os.path.abspath(path)
        for host in self.hosts.values():
            if os.path.abspath(host.session.path) == target:
                return host
        return None

    # ------------------------------------------------------------------ opening

    async def host(self, session_id: str, user: Peer | None = None) -> SessionHost:
        """The open session with this id, opening it (in a worker thread) if needed."""
        host = self.hosts.get(session_id)
        if host is None:
            async with self.claimed(session_id):
                host = self.hosts.get(session_id)
                if host is None:
                    root, path = await anyio.to_thread.run_sync(self.find, session_id)
                    session = await anyio.to_thread.run_sync(
                        lambda: self.catalog.open(root, path, self.durability)
                    )
                    host = self.adopt(session, root)
        if user is not None:
            self.use(host, user)
        return host

    @contextlib.asynccontextmanager
    async def claimed(self, session_id: str) -> AsyncIterator[None]:
        """Hold the lock of one session id while it is opened or created: whoever comes next for
        the same id waits, then finds it served (or, for ``session/new``, taken); other ids do
        not wait. The lock is forgotten when nobody holds or waits for it, never before: a
        newcomer must queue on the same lock as those still waiting, or two could run at once
        (hence the count beside it)."""
        lock, count = self._opening.get(session_id) or (anyio.Lock(), 0)
        self._opening[session_id] = (lock, count + 1)
        try:
            async with lock:
                yield
        finally:
            lock, count = self._opening[session_id]
            if count == 1:
                del self._opening[session_id]
            else:
                self._opening[session_id] = (lock, count - 1)

    def adopt(
        self, session: ReadableSession, root: Root | None = None, user: Peer | None = None
    ) -> SessionHost:
        """Serve a session opened or created elsewhere (``session/new``, a fork)."""
        host = SessionHost(session, self.hub, self.estimator, self.window_for)
        host.entry_hooks = self.on_entries
        host.root = root or self.catalog.roots[0]
        host.on_broken = lambda failed: self._reopen_after_failed_flush(host, failed)
        for hook in self.on_open:
            hook(host)
        self.hosts[session.id] = host
        self._paths[session.id] = session.path
        if user is not None:
            self.use(host, user)
        return host

    async def read_again(self, host: SessionHost) -> ReadableSession:
        """A fresh copy of the host's file, read in a worker thread (not served yet)."""
        root, path = host.root, host.session.path
        return await anyio.to_thread.run_sync(lambda: self.catalog.open(root, path, self.durability))

    def serve(self, host: SessionHost, fresh: ReadableSession) -> ReadableSession:
        """Serve ``fresh`` in place of the host's session (after a reload); the old one is closed."""
        old = host.session
        host.replace_session(fresh)
        self.changed(host)
        old.close()
        for hook in self.on_open:
            hook(host)
        return old

    def changed(self, host: SessionHost) -> None:
        """The session's content changed other than by the daemon's own writes: whatever was
        derived from it (file history replayed from its snapshots) must be derived again."""
        for hook in self.on_changed:
            hook(host)

    async def _reopen_after_failed_flush(self, host: SessionHost, failed: Session) -> None:
        """Serve the file as it now is after a failed ``fdatasync`` broke ``failed``'s journal.

        The appends waiting for that flush were not acknowledged, but their lines were written:
        whether they reached the disk is unknown. Reopening makes what the daemon serves
        exactly what the file holds (no entry in memory that the file lacks) and gives the
        session a working journal again; subscribers are told to reload what they show.
        """
        if host.session is not failed:
            return  # another append waiting on the same flush reopened it already
        try:
            fresh = await self.read_again(host)
        except Exception as exc:  # the append's own error is what its client gets
            message = getattr(exc, "message", None) or str(exc)
            self.tell(
                host.id,
                ERROR,
                f"a write failed to reach the disk and the file cannot be reloaded ({message}); "
                "writes fail until the session is opened again",
            )
            return
        if host.session is not failed:
            fresh.close()
            return
        previous_leaf, previous_count = failed.leaf_id, failed.entry_count
        self.serve(host, fresh)
        reason = "a write failed to reach the disk; the session was reloaded from its file"
        self.tell(host.id, WARNING, reason)
        self.hub.publish(host.id, {"sessionUpdate": "resync_required", "reason": reason})
        if (fresh.leaf_id, fresh.entry_count) != (previous_leaf, previous_count):
            host.publish_leaf(previous_leaf)
        host.publish_usage(force=True)

    # ------------------------------------------------------------------ users

    def use(self, host: SessionHost, user: Peer) -> None:
        """``user`` uses the session: it stays open until ``user`` lets go or goes away."""
        host.users.add(user.id)
        self.peers[user.id] = user

    def subscribe(self, host: SessionHost, user: Peer) -> None:
        self.hub.subscribe(host.id, user)
        self.use(host, user)

    def let_go(self, host: SessionHost, user: Peer) -> None:
        """``user`` is done with the session (``session/close``): close it if nobody else uses it."""
        self.hub.unsubscribe(host.id, user)
        host.users.discard(user.id)
        self.close_if_unused(host.id)

    def pin(self, host: SessionHost) -> int:
        """Keep the session open (while background work on it runs) even if every client leaves."""
        pin = next(_pins)
        host.users.add(pin)
        return pin

    def unpin(self, host: SessionHost, pin: int) -> None:
        host.users.discard(pin)
        self.close_if_unused(host.id)

    def release(self, user: Peer) -> None:
        """A connection went away: drop its subscriptions, close sessions nobody uses."""
        self.hub.unsubscribe_all(user)
        self.peers.pop(user.id, None)
        for session_id, host in list(self.hosts.items()):
            host.users.discard(user.id)
            self.close_if_unused(session_id)

    def close_if_unused(self, session_id: str) -> None:
        host = self.hosts.get(session_id)
        if host is not None and not host.users and not self.hub.subscriber_count(session_id):
            self.drop_host(host)

    def summarizing_client(self, host: SessionHost, preferred: Peer | None = None) -> Peer | None:
        """A connection of this session that can summarise (``preferred`` if it can), else None.

        Otherwise the longest-connected one (lowest id): the choice is stable while it stays.
        """
        if preferred is not None and preferred.summarizer and preferred.id in host.users:
            return preferred
        for user_id in sorted(i for i in host.users if i > 0):
            client = self.peers.get(user_id)
            if client is not None and client.summarizer:
                return client
        return None

    # ------------------------------------------------------------------ telling people

    def tell(self, session_id: str, level: int, message: str) -> None:
        """Log a problem with a session and show it to every client using or watching it.

        Background work (an automatic compaction, following an external writer, reopening
        after a failed flush) has no request to answer with an error; without this an editor
        would only see the daemon's log, which its user never reads. Each client is told once,
        whether it subscribed, used the session, or both.
        """
        text = f"session {session_id}: {message}"
        log.log(_LOGGING_LEVEL.get(level, logging.INFO), "%s", text)
        audience = {s.id: s for s in self.hub.subscribers(session_id)}
        host = self.hosts.get(session_id)
        for user_id in host.users if host is not None else ():
            client = self.peers.get(user_id)
            if client is not None:
                audience.setdefault(user_id, client)
        for client in audience.values():
            client.log_message(level, text)

    # ------------------------------------------------------------------ closing

    def drop_host(self, host: SessionHost) -> None:
        """Close an open session (nobody uses it, it was deleted, or its file went away)."""
        for hook in self.on_close:
            hook(host)
        host.session.close()
        if self.hosts.get(host.id) is host:
            del self.hosts[host.id]
            self._paths.pop(host.id, None)
            for forget in self.on_forget:
                forget(host.id)

    def forget_path(self, session_id: str) -> None:
        """The session's file moved away (deleted to the trash): find it afresh next time."""
        self._paths.pop(session_id, None)

    def close_all(self) -> None:
        for host in self.hosts.values():
            host.session.close()
        self.hosts.clear()
