"""The daemon's API, transport-agnostic: one method per protocol method, plain values in and out.

It owns the open sessions (one ``SessionHost`` per session, shared by every connection: one
writer per session, whoever the clients are), the subscriptions, the listing cache and the
per-session settings. Slow work — opening a big file, listing the store, forking — runs in
worker threads; writes run inline on the event loop so their order is the order they were
received in.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
import orjson

from ..errors import (
    EntryNotFoundError,
    InvalidArgumentError,
    ReadOnlySessionError,
    SessionExistsError,
    SessionNotFoundError,
)
from ..model import entries as E
from ..model.js import UNDEFINED, get, key
from ..model.messages import content_text
from ..model.tokens import get_estimator
from ..store.journal import Durability
from ..store.listing import ListingCache, iso_string
from ..store.session import ReadableSession, Session
from .catalog import Catalog, Listed
from .compactor import Compactor
from .config import Config
from .filehistory import FileHistoryService
from .following import Follower
from .host import USAGE_FIELDS, SessionHost, default_window_for
from .hub import ERROR, INFO, WARNING, Hub, Subscriber
from .roots import Root
from .settings import SessionSettings

log = logging.getLogger("sessiond.service")

_LOGGING_LEVEL = {ERROR: logging.ERROR, WARNING: logging.WARNING, INFO: logging.INFO}

LIST_TOPIC = "*sessions*"
"""The hub topic of ``session_list_update`` (not a session id: ids cannot contain ``*``)."""


class Service:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.layout = config.layout
        self.hub = Hub()
        self.hosts: dict[str, SessionHost] = {}
        self.settings = SessionSettings(self.layout.root / "settings")
        self.listing = ListingCache(self.layout.root / "cache" / "listing.json")
        self.catalog = Catalog(config.roots, self.listing)
        self.estimator = get_estimator(config.estimator)
        self._paths: dict[str, Path] = {}
        self._opening: dict[str, anyio.Lock] = {}
        self._window_for = default_window_for(
            dict(config.context_windows), lambda sid: self.settings.get(sid).get("contextWindow")
        )
        self.clients: dict[int, Subscriber] = {}
        """Connections that used a session, by id (to find a summarizing client)."""
        self.compactor = Compactor(self)
        self.follower = Follower(self)
        self.file_history = FileHistoryService(self)
        self.layout.ensure_dirs()

    # ------------------------------------------------------------------ telling people

    def tell(self, session_id: str, level: int, message: str) -> None:
        """Log a problem with a session and show it to every client using or watching it.

        Background work (an automatic compaction, following an external writer, reopening
        after a failed flush) has no request to answer with an error; without this an editor
        would only see the daemon's log, which its user never reads.
        """
        text = f"session {session_id}: {message}"
        log.log(_LOGGING_LEVEL.get(level, logging.INFO), "%s", text)
        audience = {s.id: s for s in self.hub.subscribers(session_id)}
        host = self.hosts.get(session_id)
        for user_id in host.users if host is not None else ():
            client = self.clients.get(user_id)
            if client is not None:
                audience.setdefault(user_id, client)
        for client in audience.values():
            client.log_message(level, text)

    # ------------------------------------------------------------------ hosts

    def _host_for(self, session: ReadableSession, root: Root | None = None) -> SessionHost:
        host = SessionHost(session, self.hub, self.estimator, self._window_for)
        host.root = root or self.catalog.roots[0]
        host.on_broken = lambda failed: self._reopen_after_failed_flush(host, failed)
        self.follower.opened(host)
        self.hosts[session.id] = host
        self._paths[session.id] = session.path
        return host

    async def _reopen_after_failed_flush(self, host: SessionHost, failed: Session) -> None:
        """Serve the file as it now is after a failed ``fdatasync`` broke ``failed``'s journal.

        The appends waiting for that flush were not acknowledged, but their lines were written:
        whether they reached the disk is unknown. Reopening makes what the daemon serves
        exactly what the file holds (no entry in memory that the file lacks) and gives the
        session a working journal again; subscribers are told to reload what they show.
        """
        if host.session is not failed:
            return  # another append waiting on the same flush reopened it already
        root = host.root
        try:
            fresh = await anyio.to_thread.run_sync(
                lambda: self.catalog.open(root, failed.path, self.config.durability)
            )
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
        host.replace_session(fresh)
        self.file_history.forget(host.id)
        failed.close()
        self.follower.opened(host)
        reason = "a write failed to reach the disk; the session was reloaded from its file"
        self.tell(host.id, WARNING, reason)
        self.hub.publish(
            host.id,
            {
                "sessionUpdate": "resync_required",
                "reason": reason,
            },
        )
        if (fresh.leaf_id, fresh.entry_count) != (previous_leaf, previous_count):
            host.publish_leaf(previous_leaf)
        host.publish_usage(force=True)

    def _find(self, session_id: str) -> tuple[Root, Path]:
        known = self._paths.get(session_id)
        if known is not None and known.exists():
            return self.catalog.root_of(known), known
        root, path = self.catalog.find(session_id)
        self._paths[session_id] = path
        return root, path

    def _find_path(self, session_id: str) -> Path:
        return self._find(session_id)[1]

    async def host(self, session_id: str, user: Subscriber | None = None) -> SessionHost:
        """The open session with this id, opening it (in a worker thread) if needed."""
        host = self.hosts.get(session_id)
        if host is None:
            lock = self._opening.setdefault(session_id, anyio.Lock())
            async with lock:
                host = self.hosts.get(session_id)
                if host is None:
                    root, path = await anyio.to_thread.run_sync(self._find, session_id)
                    session = await anyio.to_thread.run_sync(
                        lambda: self.catalog.open(root, path, self.config.durability)
                    )
                    host = self._host_for(session, root)
            self._opening.pop(session_id, None)
        if user is not None:
            host.users.add(user.id)
            self.clients[user.id] = user
        return host

    def summarizing_client(self, host: SessionHost, preferred: Any = None) -> Any:
        """A connection of this session that can summarise (``preferred`` if it can)."""
        if preferred is not None and getattr(preferred, "summarizer", False) and preferred.id in host.users:
            return preferred
        for user_id in sorted(i for i in host.users if i > 0):
            client = self.clients.get(user_id)
            if client is not None and getattr(client, "summarizer", False):
                return client
        return None

    def release(self, user: Subscriber) -> None:
        """A connection went away: drop its subscriptions, close sessions nobody uses."""
        self.hub.unsubscribe_all(user)
        self.clients.pop(user.id, None)
        for session_id, host in list(self.hosts.items()):
            host.users.discard(user.id)
            self._close_if_unused(session_id)

    def _close_if_unused(self, session_id: str) -> None:
        host = self.hosts.get(session_id)
        if host is not None and not host.users and not self.hub.subscriber_count(session_id):
            self.drop_host(host)

    def drop_host(self, host: SessionHost) -> None:
        """Close an open session (nobody uses it, or its file was deleted)."""
        self.follower.closed(host)
        self.file_history.forget(host.id)
        host.session.close()
        if self.hosts.get(host.id) is host:
            del self.hosts[host.id]
            self.compactor.forget(host.id)
            self.settings.forget(host.id)
            self._paths.pop(host.id, None)

    def host_at(self, path: Path) -> SessionHost | None:
        """The open session whose file is ``path``, if any."""
        target = os.path.abspath(path)
        for host in self.hosts.values():
            if os.path.abspath(host.session.path) == target:
                return host
        return None

    def close_all(self) -> None:
        for host in self.hosts.values():
            host.session.close()
        self.hosts.clear()
        self.listing.save()

    # ------------------------------------------------------------------ sessions

    async def new_session(
        self,
        user: Subscriber,
        cwd: str,
        session_id: str | None = None,
        parent_session: str | None = None,
        subscribe: bool = False,
    ) -> dict[str, Any]:
        if not os.path.isabs(cwd):
            raise InvalidArgumentError("cwd must be an absolute path", field="cwd")
        if session_id is not None and (session_id in self.hosts or self._exists(session_id)):
            raise SessionExistsError(session_id)
        session = Session.create(
            self.layout.cwd_dir(cwd),
            cwd,
            session_id=session_id,
            parent_session=parent_session,
            durability=self.config.durability,
        )
        host = self._host_for(session)
        host.users.add(user.id)
        self.clients[user.id] = user
        if subscribe:
            self.hub.subscribe(session.id, user)
        return {"sessionId": session.id, "path": str(session.path), "cwd": session.cwd}

    def _exists(self, session_id: str) -> bool:
        try:
            self._find_path(session_id)
        except SessionNotFoundError:
            return False
        return True

    async def load(self, user: Subscriber, session_id: str, subscribe: bool) -> dict[str, Any]:
        host = await self.host(session_id, user)
        if subscribe:
            self.subscribe(user, host)
        return host.describe()

    def subscribe(self, user: Subscriber, host: SessionHost) -> None:
        self.hub.subscribe(host.id, user)
        host.users.add(user.id)
        self.clients[user.id] = user
        usage = host.usage()
        user.send_update(host.id, {"sessionUpdate": "usage_update", **{k: usage[k] for k in USAGE_FIELDS}})

    def subscribe_list(self, user: Subscriber) -> None:
        """Send ``user`` a ``session_list_update`` whenever a session appears, changes or goes."""
        self.hub.subscribe(LIST_TOPIC, user)
        self.clients[user.id] = user

    async def unsubscribe(self, user: Subscriber, session_id: str) -> dict[str, Any]:
        if session_id not in self.hosts and not self._exists(session_id):
            raise SessionNotFoundError(session_id)
        self.hub.unsubscribe(session_id, user)
        return {}

    async def close(self, user: Subscriber, session_id: str) -> dict[str, Any]:
        host = self.hosts.get(session_id)
        if host is None:
            if not self._exists(session_id):
                raise SessionNotFoundError(session_id)
            return {}
        self.hub.unsubscribe(session_id, user)
        host.users.discard(user.id)
        self._close_if_unused(session_id)
        return {}

    async def delete(self, user: Subscriber, session_id: str) -> dict[str, Any]:
        path = (
            self._find_path(session_id)
            if session_id not in self.hosts
            else self.hosts[session_id].session.path
        )
        reason = self.catalog.root_of(path).read_only_reason
        if reason is not None:  # another agent's session: sessiond never moves its files
            raise ReadOnlySessionError(session_id, reason)
        host = self.hosts.pop(session_id, None)
        if host is not None:
            self.hub.publish(
                session_id, {"sessionUpdate": "resync_required", "reason": "the session was deleted"}
            )
            for sub_id in list(host.users):
                host.users.discard(sub_id)
            host.session.close()
        trash = self.layout.trash_dir
        trash.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = trash / f"{stamp}_{path.parent.name}_{path.name}"
        if path.exists():
            await anyio.to_thread.run_sync(shutil.move, str(path), str(target))
        self._paths.pop(session_id, None)
        return {"trashedPath": str(target)}

    async def list_sessions(
        self,
        cwd: str | None,
        cursor: str | None,
        limit: int,
        root: str | None = None,
        fmt: str | None = None,
    ) -> dict[str, Any]:
        if cwd is not None and not os.path.isabs(cwd):
            raise InvalidArgumentError("cwd must be an absolute path", field="cwd")
        listed: list[Listed] = await anyio.to_thread.run_sync(lambda: self.catalog.list_all(cwd, root, fmt))
        start = 0
        if cursor:
            after = _decode_cursor(cursor)
            start = next((i + 1 for i, x in enumerate(listed) if x.info.path == after), None) or _bad_cursor()
        page = listed[start : start + limit]
        more = start + limit < len(listed)
        return {
            "sessions": [summary(x) for x in page],
            "nextCursor": _encode_cursor(page[-1].info.path) if more and page else None,
        }

    # ------------------------------------------------------------------ writing

    async def append(
        self,
        user: Subscriber,
        session_id: str,
        entries: list[Any],
        parent_id: Any = UNDEFINED,
        expect_leaf_id: Any = UNDEFINED,
        durability: str | None = None,
    ) -> dict[str, Any]:
        host = await self.host(session_id, user)
        pending = host.writer().begin_append(
            entries,
            parent_id=parent_id,
            expect_leaf_id=expect_leaf_id,
            durability=None if durability is None else Durability(durability),
        )
        ids = await host.complete(pending)
        self.compactor.after_append(host, ids)
        return {"entryIds": ids, "leafId": ids[-1]}

    async def set_name(
        self, user: Subscriber, session_id: str, name: str, durability: str | None
    ) -> dict[str, Any]:
        result = await self.append(
            user, session_id, [{"type": E.SESSION_INFO, "name": name}], durability=durability
        )
        return {"entryId": result["entryIds"][0], "name": self.hosts[session_id].session.name}

    async def label(
        self, user: Subscriber, session_id: str, entry_id: str, label: str | None, durability: str | None
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": E.LABEL, "targetId": entry_id}
        if label:
            spec["label"] = label
        result = await self.append(user, session_id, [spec], durability=durability)
        return {"entryId": result["entryIds"][0]}

    async def edit(
        self, user: Subscriber, session_id: str, target_id: str, replacement: Any, durability: str | None
    ) -> dict[str, Any]:
        spec = {"type": E.CONTEXT_EDIT, "targetId": target_id, "replacement": replacement}
        result = await self.append(user, session_id, [spec], durability=durability)
        return {"entryId": result["entryIds"][0]}

    async def navigate(
        self,
        user: Subscriber,
        session_id: str,
        target_id: str | None,
        summary: str | None,
        summary_details: Any,
        label: str | None,
        durability: str | None,
    ) -> dict[str, Any]:
        """Pi's ``navigateTree`` with the summary supplied by the client, and a persisted move."""
        host = await self.host(session_id, user)
        session = host.session
        mode = None if durability is None else Durability(durability)
        previous = session.leaf_id
        if target_id is not None and target_id not in session.tree:
            raise EntryNotFoundError(target_id)
        if key(target_id) == key(previous):
            return {"leafId": previous, "moved": False}
        editor_text: str | None = None
        new_leaf: Any = target_id
        if target_id is not None:
            target = session.get(target_id)
            is_user = get(target, "type") == E.MESSAGE and get(get(target, "message"), "role") == "user"
            if is_user or get(target, "type") == E.CUSTOM_MESSAGE:
                new_leaf = get(target, "parentId")
                content = get(get(target, "message"), "content") if is_user else get(target, "content")
                editor_text = content_text(content, "") if type(content) in (str, list) else ""
        result: dict[str, Any] = {"moved": True}
        if editor_text is not None:
            result["editorText"] = editor_text
        written: list[str] = []
        if summary is not None:
            spec: dict[str, Any] = {"type": E.BRANCH_SUMMARY, "summary": summary}
            if summary_details is not None:
                spec["details"] = summary_details
            pending = host.writer().begin_append([spec], parent_id=new_leaf, durability=mode)
            result["summaryEntryId"] = pending.entry_ids[0]
            written += await host.complete(pending)
        else:
            moved = host.writer().begin_move_leaf(new_leaf, durability=mode)
            if moved is not None:
                result["markerEntryId"] = moved.entry_ids[0]
                written += await host.complete(moved)
        if label:
            label_target = result.get("summaryEntryId", target_id)
            pending = host.writer().begin_append(
                [{"type": E.LABEL, "targetId": label_target, "label": label}], durability=mode
            )
            written += await host.complete(pending)
        host.publish_leaf(previous)
        result["leafId"] = session.leaf_id
        return result

    async def fork(self, user: Subscriber, session_id: str, entry_id: str, position: str) -> dict[str, Any]:
        host = await self.host(session_id, user)
        source = host.pi_session("forking")
        selected = source.get(entry_id)
        where: Literal["before", "at"] = "at" if position == "at" else "before"
        # A read-only session (another agent's) is forked into sessiond's own store.
        directory = None if source.read_only is None else self.layout.cwd_dir(source.cwd or "/")
        forked: Session = await anyio.to_thread.run_sync(
            lambda: source.fork(entry_id, where, directory=directory)
        )
        await self.file_history.fork(host, forked.id)
        new_host = self._host_for(forked)
        new_host.users.add(user.id)
        result: dict[str, Any] = {
            "sessionId": forked.id,
            "path": str(forked.path),
            "leafId": forked.leaf_id,
            "saved": forked.flushed,
        }
        if position == "before":
            content = get(get(selected, "message"), "content")
            result["selectedText"] = content_text(content, "") if type(content) in (str, list) else ""
        return result

    async def configure(
        self, user: Subscriber, session_id: str, context_window: int | None
    ) -> dict[str, Any]:
        host = await self.host(session_id, user)
        self.settings.update(session_id, contextWindow=context_window)
        host.publish_usage()
        return {"contextWindow": self.settings.get(session_id).get("contextWindow")}

    # ------------------------------------------------------------------ reading

    async def entries(
        self, user: Subscriber, session_id: str, offset: int | None, after_id: str | None, limit: int
    ) -> dict[str, Any]:
        host = await self.host(session_id, user)
        session = host.session
        index = session.index
        total = len(index)
        if after_id is not None:
            light = session.tree.get(after_id)
            if light is None:
                raise EntryNotFoundError(after_id)
            start = index.position(light) + 1
        else:
            start = offset or 0
        end = min(total, start + limit)
        entries = await anyio.to_thread.run_sync(lambda: [index.full_at(i) for i in range(start, end)])
        return {
            "entries": entries,
            "offset": start,
            "nextOffset": end if end < total else None,
            "total": total,
        }

    async def tree(self, user: Subscriber, session_id: str) -> dict[str, Any]:
        host = await self.host(session_id, user)
        return host.session.tree_view()

    async def branch(
        self, user: Subscriber, session_id: str, entry_id: str | None, full: bool
    ) -> dict[str, Any]:
        host = await self.host(session_id, user)
        session = host.session
        if entry_id is not None and entry_id not in session.tree:
            raise EntryNotFoundError(entry_id)
        start = UNDEFINED if entry_id is None else entry_id
        if not full:
            return {"entryIds": session.branch_ids(start)}
        # The ids from the entries read: one walk (for Claude Code, one reconstruction), and the
        # two lists cannot disagree if an append lands in between.
        entries = await anyio.to_thread.run_sync(lambda: session.branch(start))
        return {"entryIds": [get(e, "id") for e in entries], "entries": entries}

    async def context(self, user: Subscriber, session_id: str, leaf_id: str | None) -> dict[str, Any]:
        host = await self.host(session_id, user)
        session = host.session
        if leaf_id is None:
            projection = session.context()
        else:
            if leaf_id not in session.tree:
                raise EntryNotFoundError(leaf_id)
            projection = session.context_for(session.tree.branch(leaf_id))
        messages = [
            {"entryId": get(p.source, "id"), "message": m} for p in projection.entries for m in p.messages
        ]
        return {
            "messages": messages,
            "thinkingLevel": projection.settings.thinking_level,
            "model": projection.settings.model,
            "entryIds": [get(p.source, "id") for p in projection.entries],
        }

    async def usage(self, user: Subscriber, session_id: str) -> dict[str, Any]:
        host = await self.host(session_id, user)
        return host.usage()


# ---------------------------------------------------------------------------- helpers


def summary(listed: Listed) -> dict[str, Any]:
    """A session as ``session/list`` shows it."""
    info, root = listed.info, listed.root
    return {
        "sessionId": info.id,
        "path": info.path,
        "cwd": info.cwd,
        "title": info.name,
        "firstMessage": info.first_message,
        "createdAt": iso_string(info.created_ms),
        "updatedAt": iso_string(info.modified_ms),
        "messageCount": info.message_count,
        "parentSession": info.parent_session_path,
        "format": root.format,
        "root": root.name,
        "readOnly": not root.writable,
    }


def _encode_cursor(path: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"after": path})).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        after = data["after"]
        if type(after) is not str:
            raise TypeError
        return after
    except (ValueError, KeyError, TypeError):
        raise InvalidArgumentError("cursor is not one this server issued", field="cursor") from None


def _bad_cursor() -> int:
    raise InvalidArgumentError("cursor refers to a session no longer listed; list again", field="cursor")
