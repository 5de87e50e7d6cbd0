"""The daemon's API, transport-agnostic: one method per protocol method, typed results out.

``Service`` is where the daemon is assembled: the session registry (open sessions, their
users, telling them things), the compactor, file history and the follower, each depending on
the registry and on the few pieces it needs, never on ``Service`` — and the API methods the
transport calls, each finding its session in the registry, doing its work on the host and
answering with the protocol's result model (``views`` builds the read ones, for the daemon
and the command line alike). Slow work — opening a big file, listing the store, forking —
runs in worker threads; writes run inline on the event loop so their order is the order
they were received in.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio

from sessiond_protocol import methods as M

from ..errors import (
    EntryNotFoundError,
    InvalidArgumentError,
    ReadOnlySessionError,
    SessionExistsError,
    SessionNotFoundError,
)
from ..model import entries as E
from ..model.js import UNDEFINED, get
from ..model.tokens import get_estimator
from ..store.backend import open_store
from ..store.export import export_to_pi, exported_leaf
from ..store.journal import Durability
from ..store.layout import check_cwd_fits
from ..store.listing import ListingCache
from ..store.memory import BUDGET
from ..store.remote import arriving
from ..store.session import PendingAppend, Session
from ..usage.report import Query
from . import views
from .catalog import Catalog, Listed
from .compactor import Compactor
from .config import Config
from .filehistory import FileHistoryService
from .following import Follower
from .host import SessionHost, default_window_for, usage_update_fields
from .hub import LIST_TOPIC, Hub
from .navigation import navigate, prompt_text
from .peer import Peer
from .registry import SessionRegistry
from .replication import Replication
from .searching import Searching
from .settings import SessionSettings
from .tail import read_tail
from .usage import UsageFeed

__all__ = ["LIST_TOPIC", "Service", "summary"]

summary = views.summary
"""A ``session/list`` row (kept here for the code that imported it from this module)."""


class Service:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.layout = config.layout
        self.hub = Hub()
        self.settings = SessionSettings(self.layout.root / "settings")
        self.listing = ListingCache(self.layout.root / "cache" / "listing.json")
        self.layout.ensure_dirs()
        self.store = open_store(config.store_backend, self.layout.sessions_dir, config.jetstream)
        """Where sessiond's own sessions live: the local JSONL files, or a JetStream cluster."""
        self.catalog = Catalog(config.roots, self.listing, self.store)
        self.estimator = get_estimator(config.estimator)
        window_for = default_window_for(
            dict(config.context_windows), lambda sid: self.settings.get(sid).get("contextWindow")
        )
        self.registry = SessionRegistry(self.catalog, self.hub, self.estimator, window_for, config.durability)
        self.compactor = Compactor(self.registry, self.settings, config)
        self.follower = Follower(self.registry, self.listing, config.watch)
        self.stats = UsageFeed(config, self.hub)
        """Usage and cost of every agent (``stats/*``, ``stats_update``)."""
        self.follower.listeners.append(self.stats.changed)
        self.file_history = FileHistoryService(
            self.registry, self.layout.root / "file-history", config, self.store.blobs
        )
        registry = self.registry
        registry.on_open.append(self.follower.opened)
        registry.on_changed.append(lambda host: self.file_history.forget(host.id))
        registry.on_close.append(self.follower.closed)
        registry.on_close.append(lambda host: self.file_history.forget(host.id))
        registry.on_forget.append(self.compactor.forget)
        registry.on_forget.append(self.settings.forget)
        self.replication = Replication(registry)
        registry.on_open.append(self.replication.opened)
        registry.on_close.append(self.replication.closed)
        self.search = Searching(config, self.catalog)
        """The full-text index (started by the daemon: :meth:`Searching.start`)."""
        registry.on_entries.append(self.search.entries)
        registry.on_open.append(self.search.opened)
        self.follower.listeners.append(self.search.file_changed)
        # A file nobody has open: the index's kept reader reads what it grew by and hands it
        # to the usage records, which wait for it rather than read it too.
        self.search.on_tail = self.stats.handed
        self.stats.handed_over_by = self.search.follows
        BUDGET.configure(config.memory.budget_mb << 20, config.memory.idle_seconds)

    # ------------------------------------------------------------------ the registry's

    @property
    def hosts(self) -> dict[str, SessionHost]:
        """The open sessions, by id."""
        return self.registry.hosts

    @property
    def clients(self) -> dict[int, Peer]:
        """Connections that used a session, by id."""
        return self.registry.peers

    def tell(self, session_id: str, level: int, message: str) -> None:
        self.registry.tell(session_id, level, message)

    async def host(self, session_id: str, user: Peer | None = None) -> SessionHost:
        return await self.registry.host(session_id, user)

    def summarizing_client(self, host: SessionHost, preferred: Peer | None = None) -> Peer | None:
        return self.registry.summarizing_client(host, preferred)

    def release(self, user: Peer) -> None:
        """A connection went away: drop its subscriptions, close sessions nobody uses."""
        self.registry.release(user)

    def drop_host(self, host: SessionHost) -> None:
        self.registry.drop_host(host)

    def host_at(self, path: Path) -> SessionHost | None:
        return self.registry.host_at(path)

    def close_all(self) -> None:
        self.search.close()
        self.registry.close_all()
        self.stats.close()
        self.listing.save()
        self.store.close()

    # ------------------------------------------------------------------ sessions

    async def new_session(
        self,
        user: Peer,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
        subscribe: bool = False,
    ) -> M.NewResult:
        if not os.path.isabs(cwd):
            raise InvalidArgumentError("cwd must be an absolute path", field="cwd")
        check_cwd_fits(cwd)
        if session_id is None:
            session = await self._create(cwd, None, parent_session)
            host = self.registry.adopt(session, user=user)
        else:
            # Check and create under the id's lock: a second session/new for the same id waits,
            # then is refused; had it been created too, it would have replaced the session the
            # first one's users already write to (the soak lost acknowledged entries that way).
            async with self.registry.claimed(session_id):
                if self.registry.exists(session_id):
                    raise SessionExistsError(session_id)
                session = await self._create(cwd, session_id, parent_session)
                host = self.registry.adopt(session, user=user)
        if subscribe:
            self.hub.subscribe(host.id, user)
        return M.NewResult.model_construct(sessionId=session.id, path=str(session.path), cwd=session.cwd)

    async def _create(self, cwd: str, session_id: str | None, parent_session: str | None) -> Session:
        """A new session object (in a worker thread); nothing is on disk before its first flush."""
        return await anyio.to_thread.run_sync(
            lambda: self.store.create(
                self.layout.cwd_dir(cwd),
                cwd,
                session_id=session_id,
                parent_session=parent_session,
                durability=self.config.durability,
            )
        )

    async def load(self, user: Peer, session_id: str, subscribe: bool) -> M.LoadResult:
        host = await self.registry.host(session_id, user)
        if subscribe:
            self.subscribe(user, host)
        row = None
        if host.root is not None:
            row = await anyio.to_thread.run_sync(self.catalog.info_of, host.root, host.session.path)
        return host.describe(row)

    def subscribe(self, user: Peer, host: SessionHost) -> None:
        """Subscribe ``user`` to the session's updates, starting with how full its context is."""
        self.registry.subscribe(host, user)
        user.send_update(host.id, {"sessionUpdate": "usage_update", **usage_update_fields(host.usage())})

    def subscribe_list(self, user: Peer) -> None:
        """Send ``user`` a ``session_list_update`` whenever a session appears, changes or goes."""
        self.hub.subscribe(LIST_TOPIC, user)
        self.registry.peers[user.id] = user

    async def unsubscribe(self, user: Peer, session_id: str) -> M.EmptyResult:
        if not self.registry.exists(session_id):
            raise SessionNotFoundError(session_id)
        self.hub.unsubscribe(session_id, user)
        return M.EmptyResult.model_construct()

    async def close(self, user: Peer, session_id: str) -> M.EmptyResult:
        host = self.registry.hosts.get(session_id)
        if host is None:
            if not self.registry.exists(session_id):
                raise SessionNotFoundError(session_id)
        else:
            self.registry.let_go(host, user)
        return M.EmptyResult.model_construct()

    async def delete(self, user: Peer, session_id: str) -> M.DeleteResult:
        """Move the session's file to the trash; an open session is closed for everyone.

        Another agent's session (a read-only root) is refused: sessiond never moves its files.
        """
        host = self.registry.hosts.get(session_id)
        path = self.registry.find(session_id)[1] if host is None else host.session.path
        reason = self.catalog.root_of(path).read_only_reason
        if reason is not None:
            raise ReadOnlySessionError(session_id, reason)
        if host is not None:
            self.hub.publish(
                session_id, {"sessionUpdate": "resync_required", "reason": "the session was deleted"}
            )
            host.users.clear()
            self.registry.drop_host(host)
        trash = self.layout.trash_dir
        trash.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = trash / f"{stamp}_{path.parent.name}_{path.name}"
        if path.exists():
            await anyio.to_thread.run_sync(shutil.move, str(path), str(target))
        self.search.removed(path)
        if self.catalog.root_of(path) is self.catalog.roots[0]:
            await anyio.to_thread.run_sync(self.store.delete, session_id)
        self.registry.forget_path(session_id)
        return M.DeleteResult.model_construct(trashedPath=str(target))

    async def list_sessions(
        self,
        cwd: str | None,
        cursor: str | None,
        limit: int,
        root: str | None = None,
        fmt: str | None = None,
    ) -> M.ListResult:
        if cwd is not None and not os.path.isabs(cwd):
            raise InvalidArgumentError("cwd must be an absolute path", field="cwd")
        listed: list[Listed] = await anyio.to_thread.run_sync(lambda: self.catalog.list_all(cwd, root, fmt))
        return views.page(listed, cursor, limit)

    # ------------------------------------------------------------------ writing

    async def append(
        self,
        user: Peer,
        session_id: str,
        entries: list[Any],
        parent_id: Any = UNDEFINED,
        expect_leaf_id: Any = UNDEFINED,
        durability: str | None = None,
    ) -> M.AppendResult:
        host = await self.registry.host(session_id, user)
        writer = host.writer()
        mode = None if durability is None else Durability(durability)
        if writer.remote is None:
            pending = writer.begin_append(
                entries, parent_id=parent_id, expect_leaf_id=expect_leaf_id, durability=mode
            )
            ids = await host.complete(pending)
        else:
            # A shared log: committing waits for the cluster (a leader election may take
            # seconds), so it runs in a worker thread, one append of the host at a time, in the
            # order they arrived (the lock is fair) — the loop keeps serving everyone else.
            # The cluster's ack_wait counts from here, the time queued behind this session's
            # earlier writes included (store/remote.py: arriving).
            with arriving():
                async with host.write_order:
                    pending = await anyio.to_thread.run_sync(
                        lambda: writer.begin_append(
                            entries, parent_id=parent_id, expect_leaf_id=expect_leaf_id, durability=mode
                        )
                    )
                    ids = await host.complete(pending)
        self.compactor.after_append(host, ids)
        return M.AppendResult.model_construct(entryIds=ids, leafId=ids[-1])

    def append_now(
        self,
        user: Peer,
        session_id: str,
        entries: list[Any],
        parent_id: Any = UNDEFINED,
        expect_leaf_id: Any = UNDEFINED,
        durability: str | None = None,
    ) -> M.AppendResult | Coroutine[Any, Any, M.AppendResult]:
        """:meth:`append` done at receipt when nothing has to wait: its result; otherwise what is
        left to await (run as the request's task).

        A buffered append to an open local session never waits (the line is written, published
        and checked synchronously), so it needs no task of its own: a task and the loop
        iterations that run it and hand its result on cost ~25% of the daemon's CPU per append
        (docs/append-path.md). What waits — opening the session, a shared log, an fsync — is
        decided before anything is written, or (the fsync) awaited after a write that has
        happened exactly once either way.
        """
        host = self.registry.hosts.get(session_id)
        if host is None or host.writer().remote is not None:
            return self.append(user, session_id, entries, parent_id, expect_leaf_id, durability)
        self.registry.use(host, user)
        writer = host.writer()
        mode = None if durability is None else Durability(durability)
        pending = writer.begin_append(
            entries, parent_id=parent_id, expect_leaf_id=expect_leaf_id, durability=mode
        )
        host.publish(pending)  # now, in file order, whatever waits after
        if pending.needs_sync:
            return self._settle_append(host, pending)
        ids = pending.entry_ids
        self.compactor.after_append(host, ids)
        return M.AppendResult.model_construct(entryIds=ids, leafId=ids[-1])

    async def _settle_append(self, host: SessionHost, pending: PendingAppend) -> M.AppendResult:
        ids = await host.settle(pending)
        self.compactor.after_append(host, ids)
        return M.AppendResult.model_construct(entryIds=ids, leafId=ids[-1])

    async def set_name(
        self, user: Peer, session_id: str, name: str, durability: str | None
    ) -> M.SetNameResult:
        result = await self.append(
            user, session_id, [{"type": E.SESSION_INFO, "name": name}], durability=durability
        )
        return M.SetNameResult.model_construct(
            entryId=result.entryIds[0], name=self.registry.hosts[session_id].session.name
        )

    async def label(
        self, user: Peer, session_id: str, entry_id: str, label: str | None, durability: str | None
    ) -> M.LabelResult:
        spec: dict[str, Any] = {"type": E.LABEL, "targetId": entry_id}
        if label:
            spec["label"] = label
        result = await self.append(user, session_id, [spec], durability=durability)
        return M.LabelResult.model_construct(entryId=result.entryIds[0])

    async def edit(
        self, user: Peer, session_id: str, target_id: str, replacement: Any, durability: str | None
    ) -> M.EditResult:
        spec = {"type": E.CONTEXT_EDIT, "targetId": target_id, "replacement": replacement}
        result = await self.append(user, session_id, [spec], durability=durability)
        return M.EditResult.model_construct(entryId=result.entryIds[0])

    async def navigate(
        self,
        user: Peer,
        session_id: str,
        target_id: str | None,
        summary: str | None,
        summary_details: Any,
        label: str | None,
        durability: str | None,
    ) -> M.NavigateResult:
        """Pi's ``navigateTree`` with the summary supplied by the client, and a persisted move."""
        host = await self.registry.host(session_id, user)
        return await navigate(host, target_id, summary, summary_details, label, durability)

    async def fork(self, user: Peer, session_id: str, entry_id: str, position: str) -> M.ForkResult:
        host = await self.registry.host(session_id, user)
        source = host.pi_session("forking")
        selected = source.get(entry_id)
        where: Literal["before", "at"] = "at" if position == "at" else "before"
        # A read-only session (another agent's) is forked into sessiond's own store.
        directory = None if source.read_only is None else self.layout.cwd_dir(source.cwd or "/")
        forked: Session = await anyio.to_thread.run_sync(
            lambda: self.store.adopt(source.fork(entry_id, where, directory=directory))
        )
        await self.file_history.fork(host, forked.id)
        self.registry.adopt(forked, user=user)
        fields: dict[str, Any] = {}
        if position == "before":
            fields["selectedText"] = prompt_text(get(get(selected, "message"), "content"))
        return M.ForkResult.model_construct(
            sessionId=forked.id, path=str(forked.path), leafId=forked.leaf_id, saved=forked.flushed, **fields
        )

    async def stats_query(self, p: M.StatsQueryParams) -> M.StatsQueryResult:
        """``stats/query``: the usage records grouped as asked (docs/usage.md)."""
        if p.sessionId is not None:
            await self.known_session(p.sessionId)
        query = Query(p.groupBy, p.agent, p.cwd, p.since, p.until, p.timezone, p.breakdown, p.sessionId)
        return M.StatsQueryResult.model_construct(**(await self.stats.query(query)))

    async def stats_subscribe(
        self, user: Peer, session_id: str | None, timezone: str | None
    ) -> M.StatsUpdateResult:
        """``stats/subscribe``: ``stats_update`` to ``user`` from now on; the numbers now."""
        if session_id is not None:
            await self.known_session(session_id)
        return M.StatsUpdateResult.model_construct(**(await self.stats.subscribe(user, session_id, timezone)))

    async def export(
        self, user: Peer, session_id: str, leaf_id: str | None, *, again: bool = False
    ) -> M.ExportResult:
        """Any session's context as a new Pi session in the store (``sessiond export``'s work),
        served at once like a fork; the source is only read. An export of the same session at
        the same leaf made before is answered instead of a second identical copy, unless
        ``again``."""
        host = await self.registry.host(session_id, user)
        source = host.session
        if leaf_id is not None and leaf_id not in source.tree:
            raise EntryNotFoundError(leaf_id)
        leaf = leaf_id if leaf_id is not None else source.leaf_id
        info: dict[str, Any] = {"format": host.root.format, "root": host.root.name, "path": str(source.path)}
        if not again:
            earlier = await anyio.to_thread.run_sync(lambda: self._earlier_export(source.id, leaf))
            if earlier is not None:
                return M.ExportResult.model_construct(
                    sessionId=earlier.info.id,
                    path=str(earlier.info.path),
                    cwd=earlier.info.cwd,
                    entryCount=earlier.info.message_count,
                    source={**info, "sessionId": source.id, "leafId": leaf},
                    existing=True,
                )
        kwargs: dict[str, Any] = {} if leaf_id is None else {"leaf": leaf_id}
        exported: Session = await anyio.to_thread.run_sync(
            lambda: self.store.adopt(
                export_to_pi(
                    source,  # type: ignore[arg-type]  # any readable session: context, tree, cwd, name
                    self.layout.cwd_dir,
                    source_info=info,
                    durability=self.config.durability,
                    **kwargs,
                )
            )
        )
        self.registry.adopt(exported, user=user)
        return M.ExportResult.model_construct(
            sessionId=exported.id,
            path=str(exported.path),
            cwd=exported.cwd,
            entryCount=exported.entry_count,
            source={**info, "sessionId": source.id, "leafId": leaf},
            existing=False,
        )

    def _earlier_export(self, source_id: str, leaf: Any) -> Listed | None:
        """A store session that is an export of ``source_id`` at ``leaf`` (the listing knows each
        session's source from its first entry; that entry records the leaf)."""
        for listed in self.catalog.list_all(root=self.catalog.roots[0].name):
            if listed.info.export_of == source_id and exported_leaf(str(listed.info.path)) == leaf:
                return listed
        return None

    async def known_session(self, session_id: str) -> None:
        """A session a filter (stats, search) may name: open, in a root, or with usage records (a
        Claude Code parent only its sub-agents' files name); else ``SessionNotFoundError``, as
        every method naming a session answers for one that does not exist."""
        if session_id in self.registry.hosts or await self.stats.knows(session_id):
            return
        await anyio.to_thread.run_sync(self.catalog.find, session_id)

    async def configure(self, user: Peer, session_id: str, context_window: int | None) -> M.ConfigureResult:
        host = await self.registry.host(session_id, user)
        self.settings.update(session_id, contextWindow=context_window)
        host.publish_usage()
        return M.ConfigureResult.model_construct(
            contextWindow=self.settings.get(session_id).get("contextWindow")
        )

    # ------------------------------------------------------------------ reading

    async def entries(
        self, user: Peer, session_id: str, offset: int | None, after_id: str | None, limit: int
    ) -> M.EntriesResult:
        host = await self.registry.host(session_id, user)
        session = host.session
        index = session.index
        total = len(index)
        if after_id is not None:
            views.require_entry(session, after_id)
            start = index.position(session.tree.get(after_id)) + 1
        else:
            start = offset or 0
        end = min(total, start + limit)
        entries = await anyio.to_thread.run_sync(lambda: [index.full_at(i) for i in range(start, end)])
        return M.EntriesResult.model_construct(
            entries=entries, offset=start, nextOffset=end if end < total else None, total=total
        )

    async def tail(self, user: Peer, session_id: str, limit: int) -> M.TailResult:
        """The newest entries: from the open session, else from the file's end without opening it
        (formats whose tail cannot be read alone are opened, as ``session/entries`` would)."""
        host = self.registry.hosts.get(session_id)
        if host is None:
            root, path = self.registry.find(session_id)
            read = await anyio.to_thread.run_sync(read_tail, path, root.format, limit)
            if read is not None:
                entries, cwd = read
                return M.TailResult.model_construct(
                    sessionId=session_id,
                    path=str(path),
                    cwd=cwd,
                    format=root.format,
                    root=root.name,
                    readOnly=root.read_only_reason is not None,
                    entries=entries,
                    exact=False,
                )
            host = await self.registry.host(session_id, user)
        described = host.describe()
        index = host.session.index
        total = len(index)
        start = max(0, total - limit)
        entries = await anyio.to_thread.run_sync(lambda: [index.full_at(i) for i in range(start, total)])
        return M.TailResult.model_construct(
            sessionId=session_id,
            path=described.path,
            cwd=described.cwd,
            format=described.format,
            root=described.root,
            readOnly=described.readOnly,
            entries=entries,
            exact=True,
        )

    async def tree(self, user: Peer, session_id: str) -> M.TreeResult:
        host = await self.registry.host(session_id, user)
        return views.tree(host.session)

    async def branch(self, user: Peer, session_id: str, entry_id: str | None, full: bool) -> M.BranchResult:
        host = await self.registry.host(session_id, user)
        session = host.session
        if not full:
            return views.branch(session, entry_id, full)
        if entry_id is not None:
            views.require_entry(session, entry_id)  # here, not in the thread: a cheap refusal
        return await anyio.to_thread.run_sync(lambda: views.branch(session, entry_id, full))

    async def context(self, user: Peer, session_id: str, leaf_id: str | None) -> M.ContextResult:
        host = await self.registry.host(session_id, user)
        return views.context(host.session, leaf_id)

    async def usage(self, user: Peer, session_id: str) -> M.UsageResult:
        host = await self.registry.host(session_id, user)
        return host.usage()
