"""One open session in the daemon: its session, who uses it, and what it announces.

Every mutation goes through the host so that what changed is published once, in order:
the write runs inline on the event loop (microseconds; the session lock keeps writers from
several connections apart), the updates are published right after it — so subscribers see
entries in file order — and only then does an ``fsync``-mode append wait, in a worker
thread, for the shared ``fdatasync`` before it is acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio

from sessiond_protocol import methods as M

from ..errors import JournalBrokenError, ReadOnlySessionError
from ..model import entries as E
from ..model.js import UNDEFINED, get, nullish
from ..model.tokens import TokenEstimator
from ..store.listing import SessionInfo
from ..store.remote import arriving
from ..store.session import PendingAppend, ReadableSession, Session
from . import views
from .hub import Hub
from .windows import context_window

log = logging.getLogger("sessiond.service")

P = TypeVar("P", bound=PendingAppend | None)

USAGE_FIELDS = ("used", "size", "percent", "source")
"""The fields of a ``usage_update``."""


class SessionHost:
    def __init__(
        self,
        session: ReadableSession,
        hub: Hub,
        estimator: TokenEstimator,
        window_for: views.WindowFor,
    ) -> None:
        self.session = session
        self.hub = hub
        self.estimator = estimator
        self._window_for = window_for
        self.users: set[int] = set()
        """Connections that loaded or wrote the session (it stays open while any does)."""
        self._last_usage: dict[str, Any] | None = None
        self.after_write: Callable[[PendingAppend | None], None] | None = None
        """Called after each write of the daemon's, with what it wrote (``None``: not known):
        the watcher expects the new size, the usage records take the lines written."""
        self.root: Any = None
        """The :class:`~sessiond.service.roots.Root` the session's file lives in."""
        self.on_broken: Callable[[Session], Awaitable[None]] | None = None
        """Called when a flush of the session failed (its journal refuses writes from then on)."""
        self.write_order = anyio.Lock()
        """Appends to a shared log commit in a worker thread, one at a time, in arrival order."""
        self.entry_hooks: list[Callable[[SessionHost, list[str]], None]] = []
        """Called with the ids of every batch of entries announced, the daemon's own and other
        writers' (the registry's ``on_entries``: the search index)."""

    @property
    def id(self) -> str:
        return self.session.id

    # ------------------------------------------------------------------ what may be done to it

    def writer(self) -> Session:
        """The session as its writer. The one place a write to a session sessiond must not write
        (another agent's transcript, a file in a read-only root) is refused."""
        session = self.session
        if isinstance(session, Session) and session.read_only is None:
            return session
        raise ReadOnlySessionError(self.id, session.read_only or "sessiond does not write it")

    def pi_session(self, doing: str) -> Session:
        """The session as a Pi session, read-only or not, for what reads it as one (``doing``:
        forking it, preparing a compaction); another agent's transcript refuses it as read-only."""
        session = self.session
        if isinstance(session, Session):
            return session
        raise ReadOnlySessionError(self.id, f"{session.read_only} ({doing} it is not supported)")

    # ------------------------------------------------------------------ writing

    def shared(self) -> bool:
        """Whether the session's log is shared with other daemons (committing is a round trip)."""
        session = self.session
        return isinstance(session, Session) and session.remote is not None

    async def commit(self, write: Callable[[Session], P]) -> P:
        """Run ``write`` (one ``begin_*`` of the writer), then publish and complete what it wrote.

        A session of the local store writes inline (microseconds, see the module's docstring).
        A shared log (JetStream) commits in a worker thread, one write of the host at a time in
        arrival order (``write_order``, the lock ``session/append`` takes too): a commit waiting
        for the cluster (up to ``ack_wait`` during a leader election) holds this session's
        writes, never the daemon's loop and the other sessions.
        """
        session = self.writer()
        if session.remote is None:
            pending = write(session)
            if pending is not None:
                await self.complete(pending)
            return pending
        with arriving():  # ack_wait counts from the request, queueing included (store/remote.py)
            async with self.write_order:
                pending = await anyio.to_thread.run_sync(write, session)
                if pending is not None:
                    await self.complete(pending)
                return pending

    def publish(self, pending: PendingAppend) -> None:
        """Announce what ``pending`` wrote (after what another program appended just before, as
        external), without waiting for it to be durable: the part of :meth:`complete` that never
        waits, which a buffered append completes with at receipt
        (:meth:`Service.append_now <sessiond.service.service.Service.append_now>`)."""
        backlog = self.writer().take_external()
        if backlog:
            self.announce(entry_ids(backlog), external=True)
        self.announce(pending.entry_ids)
        if self.after_write is not None:
            self.after_write(pending)

    async def complete(self, pending: PendingAppend) -> list[str]:
        """Publish what ``pending`` wrote, then wait (off the loop) until it is durable.

        Entries another program appended just before (indexed by the write) are announced first,
        in file order, as external.
        """
        self.publish(pending)
        return await self.settle(pending)

    async def settle(self, pending: PendingAppend) -> list[str]:
        """Wait (off the loop) until what ``pending`` wrote is durable, as its mode says; its ids.

        Published already (:meth:`publish`): the loop may serve other appends meanwhile, and
        their announcements come after this one, in file order."""
        if pending.needs_sync:
            try:
                await anyio.to_thread.run_sync(pending.wait)
            except JournalBrokenError:
                # The fdatasync failed: the journal refuses every later write. Without a reopen
                # the session would stay unwritable until every client let go of it.
                session = self.writer()
                if self.on_broken is not None:
                    try:
                        await self.on_broken(session)
                    except Exception as exc:  # the append's own error is what the client gets
                        log.warning("%s: cannot reopen after a failed flush: %s", session.path, exc)
                raise
        return pending.entry_ids

    def announce(
        self, entry_ids: list[str], *, external: bool = False, previous_leaf: Any = UNDEFINED
    ) -> None:
        """Publish ``entries_appended`` and what the entries imply (labels, name, usage)."""
        session = self.session
        for hook in self.entry_hooks:
            hook(self, entry_ids)
        if not self.hub.subscriber_count(self.id):
            self._last_usage = None
            return
        entries = [session.get(i) for i in entry_ids]
        update: dict[str, Any] = {
            "sessionUpdate": "entries_appended",
            "entryIds": entry_ids,
            "parentIds": [get(e, "parentId") for e in entries],
            "types": [get(e, "type") for e in entries],
            "leafId": session.leaf_id,
        }
        if external:
            update["external"] = True
        self.hub.publish(self.id, update)
        for entry in entries:
            t = get(entry, "type")
            if t == E.LABEL:
                label = get(entry, "label")
                self.hub.publish(
                    self.id,
                    {
                        "sessionUpdate": "label_update",
                        "entryId": get(entry, "targetId"),
                        "label": label if type(label) is str and label else None,
                    },
                )
            elif t == E.SESSION_INFO:
                self.publish_name()
        self.publish_usage()

    def announce_external(self, entries: list[Any]) -> None:
        """Publish entries another program appended (read by an ingest)."""
        ids = entry_ids(entries)
        if ids:
            self.announce(ids, external=True)

    def replace_session(self, session: ReadableSession) -> None:
        """Serve a freshly opened copy of the file (after someone rewrote or replaced it)."""
        self.session = session
        self._last_usage = None

    def publish_name(self) -> None:
        self.hub.publish(
            self.id,
            {"sessionUpdate": "session_info_update", "title": self.session.name, "updatedAt": _now_iso()},
        )

    def publish_leaf(self, previous: Any) -> None:
        self.hub.publish(
            self.id,
            {
                "sessionUpdate": "leaf_changed",
                "leafId": self.session.leaf_id,
                "previousLeafId": None if nullish(previous) else previous,
            },
        )

    def publish_usage(self, *, force: bool = False) -> None:
        """``usage_update`` when the numbers changed since the last one (or ``force``)."""
        if not self.hub.subscriber_count(self.id):
            return
        public = usage_update_fields(self.usage())
        if force or public != self._last_usage:
            self._last_usage = public
            self.hub.publish(self.id, {"sessionUpdate": "usage_update", **public})

    # ------------------------------------------------------------------ reading

    def usage(self) -> M.UsageResult:
        """How full the context is, with where the number comes from (``context/usage``)."""
        return views.usage(self.session, self.estimator, self._window_for)

    def describe(self, row: SessionInfo | None = None) -> M.LoadResult:
        """``session/load``'s answer; ``row``: the session's listing row (its count and title)."""
        root = self.root
        return views.describe(
            self.session,
            format=getattr(root, "format", "pi"),
            root=getattr(root, "name", "sessiond"),
            row=row,
        )


def usage_update_fields(usage: M.UsageResult) -> dict[str, Any]:
    """The fields of a ``usage_update`` (the public part of ``context/usage``)."""
    return {k: getattr(usage, k) for k in USAGE_FIELDS}


def entry_ids(entries: list[Any]) -> list[str]:
    """The string ids of entries (ingested lines may be junk without one)."""
    return [e["id"] for e in entries if type(e) is dict and type(e.get("id")) is str]


def _now_iso() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def default_window_for(
    overrides: dict[str, int], settings_window: Callable[[str], int | None]
) -> views.WindowFor:
    """The context window of a session: its own setting, else the window the agent recorded
    (Codex's ``model_context_window``), else config overrides, else the table.

    Asked after every append (the compaction policy), so a model's window is looked up in the
    tables once and remembered (the tables do not change while the daemon runs).
    """
    known: dict[tuple[str, str], int | None] = {}

    def window(session: ReadableSession, model: Any) -> int | None:
        own = settings_window(session.id)
        if own:
            return own
        native = getattr(session, "native_context_window", None)
        recorded = native() if callable(native) else None
        if type(recorded) is int and recorded > 0:
            return recorded
        provider, model_id = get(model, "provider"), get(model, "modelId")
        if type(provider) is not str or type(model_id) is not str:
            return context_window(provider, model_id, overrides)
        if (provider, model_id) in known:
            return known[provider, model_id]
        if len(known) >= _KNOWN_MODELS:
            known.clear()  # a client inventing model names cannot grow this
        found = known[provider, model_id] = context_window(provider, model_id, overrides)
        return found

    return window


_KNOWN_MODELS = 256
