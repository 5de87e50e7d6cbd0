"""The search index wired into the daemon: its source of sessions, its hooks, ``search/query``.

:class:`CatalogSource` tells the engine which files the roots hold and opens them with the
reader of their format (a Pi file of the store read-only: indexing never writes a session).
:class:`Searching` holds the engine and is the one place the service's events reach it: a host's
announced entries (the daemon's appends and other writers' lines read by a follow), a watcher's
changed paths (files nobody has open), a deletion. It answers ``search/query`` in a worker
thread. With ``[watch] enabled = false`` each query first brings the index up to date with the
files (the engine compares every file's signature).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio

from sessiond_protocol import methods as M

from ..errors import InvalidArgumentError
from ..search.engine import SearchEngine, SessionSource, SourceFile, index_path, stat_signature
from ..search.index import Filters, Hit, Signature
from ..search.query import decode_cursor, encode_cursor, parse_time, substring_needle, words_match
from ..search.readers import FILE_AGENTS, open_for_index
from ..search.resume import resume_command
from ..store.opencode import (
    DB_NAME,
    OpenCodeDatabase,
    OpenCodeJsonStore,
    OpenCodeSession,
    UnreadableDatabaseError,
    db_session_path,
    split_db_path,
)
from .agent_roots import codex_files, is_codex_session_file
from .catalog import UUID_STEM, Catalog
from .config import Config
from .following import FileChange
from .roots import ROOT_NAMES, Root

log = logging.getLogger("sessiond.search")

AGENTS: Final = {"pi": "pi", "claude-code": "claude-code", "codex": "codex", "opencode": "opencode"}
HAND_OVER_AT: Final = 256
"""Entries that are handed to the engine at once, without waiting for :data:`HAND_OVER_AFTER_S`
(a caller appending many times without yielding to the loop, or a busy session)."""
HAND_OVER_AFTER_S: Final = 0.1
"""How long announced entries wait on the event loop before they go to the engine together
(unless :data:`HAND_OVER_AT` of them came first). The index's cost per entry falls steeply
with the size of the batch it writes (an FTS5 segment, the vocabulary's upserts and a commit
per batch): one Pi message per batch cost the writer ~400 µs of CPU, 30 per batch ~55 µs
each, 100-300 ~25 µs each (``add_entries`` alone, docs/append-path.md). Handed over at the
end of each turn of the loop, 8 clients appending made batches of 30 to 400 (as often as the
writer got the GIL), and each hand-over woke the writer thread to fight the event loop for
the GIL. A query, an open, a watcher's
change, a removal and the daemon's stop hand over at once first, so nothing a query should
find waits for this; what a crash loses the restart's look at the files' signatures reads."""


class CatalogSource(SessionSource):
    """The daemon's roots as the engine sees them.

    An OpenCode root's sessions are rows of ``opencode.db`` (each named
    ``<data>/opencode.db#<id>``, as the catalog names them) and, for versions before the
    database, JSON files under ``storage/`` (those whose id the database also holds are the
    database's). A database session's signature is its messages' and parts' counts and last
    update times, read for every session in one query per table; a JSON session's, the sizes
    and mtimes of its session and message files."""

    worker_agents = FILE_AGENTS
    """The agents whose files a build may read in its own process (:mod:`sessiond.search.producer`):
    :meth:`open` reads them with :func:`~sessiond.search.readers.open_for_index`, as it does."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def files(self) -> Iterator[SourceFile]:
        for root in self.catalog.roots:
            yield from self.root_files(root, strict=False)

    def root_files(self, root: Root, *, strict: bool = True) -> Iterator[SourceFile]:
        """The sessions of one root. ``strict``: an OpenCode database that cannot be read
        raises (a rescan then keeps what is indexed of it: a busy database must not empty the
        index); otherwise it is logged and its sessions are left out."""
        if root.format == "opencode":
            yield from _opencode_files(root, strict)
            return
        for path in self._root_paths(root):
            yield SourceFile(str(path), root.name, root.format)

    def _root_paths(self, root: Root) -> Iterator[Path]:
        if root.format == "claude-code":
            yield from self.catalog.claude_files(root)
        elif root.format == "codex":
            yield from codex_files(root.path)
        elif root.format == "pi":
            yield from sorted(root.path.glob("*/*.jsonl"))

    def classify(self, path: str) -> SourceFile | None:
        p = Path(path)
        root = self.catalog.root_of(p)
        if root.format == "opencode":
            db = split_db_path(p)
            if db is not None and db[0] == root.path / DB_NAME:
                return SourceFile(path, root.name, root.format)
            if p.suffix == ".json" and p.parent.parent == root.path / "storage" / "session":
                return SourceFile(path, root.name, root.format)
            return None
        if p.suffix != ".jsonl":
            return None
        if root.format == "claude-code":
            if not UUID_STEM.fullmatch(p.stem) or p.parent.parent != root.path:
                return None
        elif root.format == "codex":
            if not is_codex_session_file(root.path, p):
                return None
        elif root.format == "pi":
            if p.parent.parent != root.path:
                return None
        else:
            return None
        return SourceFile(path, root.name, root.format)

    def signature(self, path: str) -> Signature | None:
        p = Path(path)
        db = split_db_path(p)
        if db is not None:
            return _db_session_signature(db[0], db[1])
        if p.suffix == ".json" and p.parent.parent.name == "session":
            return _json_session_signature(p)
        return stat_signature(path)

    def open(self, file: SourceFile, *, follow: bool = False) -> Any:
        path = Path(file.path)
        if file.agent == "opencode":
            return OpenCodeSession.open(path)
        return open_for_index(file.agent, path, follow=follow)


def _signature_of(value: Any, count: int, newest: Any) -> Signature:
    """Four integers standing for a session that is no file: its rows' count and newest
    update time, and a CRC-32 of everything the signature was made of."""
    newest_ms = int(newest) if type(newest) in (int, float) else 0
    return Signature(0, count, newest_ms, zlib.crc32(repr(value).encode()))


_DB_SIGNATURES: Final = (
    "SELECT id, time_updated, revert FROM session",
    "SELECT session_id, COUNT(*), MAX(time_updated) FROM message GROUP BY session_id",
    "SELECT session_id, COUNT(*), MAX(time_updated) FROM part GROUP BY session_id",
)


def _opencode_files(root: Root, strict: bool = False) -> Iterator[SourceFile]:
    """Every session of an OpenCode root with its signature (the database's in three queries)."""
    database = OpenCodeDatabase(root.path / DB_NAME)
    in_db: set[str] = set()
    if database.exists():
        try:
            with database.connect() as conn:
                conn.execute("BEGIN")
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if {"session", "message", "part"} <= tables:
                    sessions, messages, parts = (
                        {r[0]: tuple(r)[1:] for r in conn.execute(sql)} for sql in _DB_SIGNATURES
                    )
                else:
                    sessions, messages, parts = {}, {}, {}
                conn.execute("COMMIT")
        except UnreadableDatabaseError as exc:
            if strict:
                raise
            log.info("search: cannot read %s (%s)", database.path, exc)
            sessions, messages, parts = {}, {}, {}
        for sid, row in sessions.items():
            in_db.add(sid)
            m, pt = messages.get(sid, (0, None)), parts.get(sid, (0, None))
            sig = _db_signature(row, m, pt)
            yield SourceFile(str(db_session_path(root.path, sid)), root.name, root.format, sig)
    for path in OpenCodeJsonStore(root.path).session_files():
        if path.stem in in_db:
            continue
        json_sig = _json_session_signature(path)
        if json_sig is not None:
            yield SourceFile(str(path), root.name, root.format, json_sig)


def _db_signature(session: tuple[Any, ...], messages: tuple[Any, ...], parts: tuple[Any, ...]) -> Signature:
    newest = max((v for v in (session[0], messages[1], parts[1]) if type(v) in (int, float)), default=0)
    return _signature_of((session, messages, parts), int(messages[0]) + int(parts[0]), newest)


def _db_session_signature(db: Path, session_id: str) -> Signature | None:
    database = OpenCodeDatabase(db)
    try:
        with database.connect() as conn:
            conn.execute("BEGIN")
            row = conn.execute(
                "SELECT time_updated, revert FROM session WHERE id = ?", (session_id,)
            ).fetchone()
            rows = [
                tuple(
                    conn.execute(
                        f"{sql.replace(' GROUP BY session_id', '')} WHERE session_id = ?", (session_id,)
                    ).fetchone()
                )[1:]
                for sql in _DB_SIGNATURES[1:]
            ]
            conn.execute("COMMIT")
    except UnreadableDatabaseError:
        return None
    if row is None:
        return None
    return _db_signature(tuple(row), rows[0], rows[1])


def _json_session_signature(path: Path) -> Signature | None:
    """The sizes and mtimes of a JSON-store session's file and its message files."""
    try:
        st = path.stat()
    except OSError:
        return None
    stamps: list[tuple[str, int, int]] = [(path.name, st.st_size, st.st_mtime_ns)]
    messages = path.parent.parent.parent / "message" / path.stem
    with contextlib.suppress(OSError):
        for entry in sorted(os.scandir(messages), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                est = entry.stat()
                stamps.append((entry.name, est.st_size, est.st_mtime_ns))
    return _signature_of(stamps, len(stamps), max(x[2] for x in stamps))


class Searching:
    def __init__(self, config: Config, catalog: Catalog, path: Path | None = None) -> None:
        self.enabled = config.search.enabled
        self.sync_on_query = not config.watch.enabled
        self.source = CatalogSource(catalog)
        self.engine = SearchEngine(
            path or index_path(config.layout.root), self.source, exclude=config.search.exclude
        )
        self._started = False
        self.on_tail: Callable[[str, int, bytes], None] | None = None
        """Told, on the event loop, what the index's kept reader read of a grown file nobody
        has open (path, file offset, complete lines): the usage records take it from there
        (set by the service before :meth:`start`)."""
        self._appends: dict[str, _Batch] = {}
        """Entries announced lately, by path, handed to the engine together
        (:meth:`_hand_over`) :data:`HAND_OVER_AFTER_S` after the first of them."""
        self._handing: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self.enabled and not self._started:
            self._started = True
            self._hand_tails()
            self.engine.start()

    def close(self) -> None:
        if self._started:
            self._hand_over()
            self.engine.close()
            self._started = False

    def _hand_tails(self) -> None:
        """Pass the engine's read tails on to :attr:`on_tail`, from its writer thread to the
        event loop (the one running now; without one, nothing is passed on)."""
        hand = self.on_tail
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if hand is None:
            return

        def tail(path: str, start: int, data: bytes) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the daemon is stopping
                loop.call_soon_threadsafe(hand, path, start, data)

        self.engine.on_tail = tail

    def follows(self, path: str) -> bool:
        """Whether the index keeps a reader of ``path``, so that what it grows by will be
        handed to :attr:`on_tail` (a hint: the reader may be let go before it is used)."""
        return self._started and self.engine.on_tail is not None and self.engine.follows(path)

    # ------------------------------------------------------------------ hooks (event loop)

    def entries(self, host: Any, entry_ids: list[str]) -> None:
        """A host announced entries: index them (the registry's ``on_entries``).

        The announcements of :data:`HAND_OVER_AFTER_S` go to the engine together, one batch
        per file: many clients appending at once then cost the writer thread one wake-up, one
        look at the file's signature and one insert per batch, not per append (and the loop
        one hand-over to another thread). Any other event for the engine hands them over
        first, so the engine sees everything in order."""
        if not self._started or not entry_ids:
            return
        session = host.session
        entries = [session.get(i) for i in entry_ids]
        name = next(
            (e.get("name") for e in reversed(entries) if type(e) is dict and e.get("type") == "session_info"),
            None,
        )
        path = os.fspath(session.path)
        batch = self._appends.get(path)
        if batch is None:
            batch = self._appends[path] = _Batch([], None, None, None)
        batch.entries.extend(entries)
        batch.leaf, batch.size = session.leaf_id, session.file_size()
        if type(name) is str:
            batch.name = name
        if len(batch.entries) >= HAND_OVER_AT:
            self._hand_over()
        elif self._handing is None:
            try:
                self._handing = asyncio.get_running_loop().call_later(HAND_OVER_AFTER_S, self._hand_over)
            except RuntimeError:  # no event loop (a tool, a test): at once
                self._hand_over()

    def _hand_over(self) -> None:
        """Give the engine the entries announced since the last hand-over."""
        if self._handing is not None:
            self._handing.cancel()  # when called before its time: the timer has nothing left
            self._handing = None
        appends, self._appends = self._appends, {}
        for path, batch in appends.items():
            self.engine.appended(path, batch.entries, batch.leaf, batch.name, batch.size)

    def opened(self, host: Any) -> None:
        """A session was opened (the registry's ``on_open``): the writer compares its file with
        the index. A JetStream replica is written from the stream when a daemon first serves
        the session, and the watcher, told the file's size at the open, reports nothing of it:
        without this look, a daemon would not index a shared session it serves until a restart.
        Costs a ``stat`` and a 4 KiB read when the index has the file already."""
        if self._started:
            self._hand_over()
            self.engine.changed(os.fspath(host.session.path))

    def file_changed(self, change: FileChange) -> None:
        """A session file changed (the follower's ``listeners``). An open session that grew
        told the index its new entries already (``entries``, from the follower's ingest), as do
        the daemon's own writes; anything else is looked at again by the writer (only the
        grown tail of a file it read lately: ``SearchEngine``'s kept readers)."""
        if not self._started or change.kind == "written" or (change.open and change.kind == "grown"):
            return
        self._hand_over()
        if change.kind == "committed":  # OpenCode's database: which sessions, no file says
            root = self.source.catalog.root_of(change.path)
            self.engine.rescan(root.name, lambda: list(self.source.root_files(root)))
            return
        self.engine.changed(os.fspath(change.path))

    def removed(self, path: Path) -> None:
        if self._started:
            self._hand_over()
            self.engine.removed(os.fspath(path))

    # ------------------------------------------------------------------ search/query

    async def query(
        self,
        p: M.SearchParams,
        progress: Callable[[int, int], None] | None = None,
        known_session: Callable[[str], Awaitable[None]] | None = None,
    ) -> M.SearchResult:
        """``known_session``: raises for a ``sessionId`` filter naming no session (after the
        other params were checked, so a bad filter is still -32602)."""
        if not self.enabled:
            raise InvalidArgumentError("search is disabled ([search] enabled = false)", field="query")
        if p.mode == "substring":
            match, needle = None, substring_needle(p.query)
        else:
            match, needle = words_match(p.query), None
        filters = self._filters(p)
        offset = decode_cursor(p.cursor) if p.cursor is not None else 0
        if p.sessionId is not None and known_session is not None:
            await known_session(p.sessionId)
        self._hand_over()  # what was announced before the query is found by it
        if p.rebuild:
            self.engine.rebuild()
            await anyio.to_thread.run_sync(self.engine.flush)
        if progress is not None:
            while self.engine.progress is not None:
                progress(*self.engine.progress)
                await anyio.sleep(0.25)
        page = await anyio.to_thread.run_sync(
            lambda: self.engine.search(
                match=match,
                needle=needle,
                filters=filters,
                offset=offset,
                limit=p.limit,
                sync=self.sync_on_query,
            )
        )
        building = self.engine.progress
        return M.SearchResult.model_construct(
            hits=[_hit(h) for h in page.hits],
            total=page.total,
            nextCursor=None if page.next_offset is None else encode_cursor(page.next_offset),
            indexing=None if building is None else {"done": building[0], "total": building[1]},
        )

    def _filters(self, p: M.SearchParams) -> Filters:
        agent, root = p.agent, p.root
        if agent is not None and agent not in AGENTS:
            if agent in ROOT_NAMES:
                agent, root = None, root or agent
            elif agent == "claude":
                agent = "claude-code"
            else:
                raise InvalidArgumentError(
                    f"unknown agent {agent!r} (pi, claude-code, codex, opencode, or a root name)",
                    field="agent",
                )
        cwd = p.cwd
        if cwd is not None and not os.path.isabs(cwd):
            raise InvalidArgumentError("cwd must be an absolute path", field="cwd")
        return Filters(
            agent=agent,
            root=root,
            cwd=cwd,
            since_ms=None if p.since is None else parse_time(p.since, "since", end=False),
            until_ms=None if p.until is None else parse_time(p.until, "until", end=True),
            role=p.role,
            session_id=p.sessionId,
        )


@dataclass(slots=True)
class _Batch:
    """Entries announced for one file in one turn of the event loop, with the newest leaf,
    name and file size."""

    entries: list[Any]
    leaf: Any
    name: str | None
    size: int | None


def _iso(ms: int) -> str | None:
    if ms <= 0:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hit(h: Hit) -> dict[str, Any]:
    """A hit in the wire's shape (``M.SearchHit``; nested values are sent as they are)."""
    return {
        "sessionId": h.session_id,
        "entryId": h.entry_id,
        "agent": h.agent,
        "root": h.root,
        "cwd": h.cwd,
        "timestamp": _iso(h.timestamp_ms),
        "role": h.role,
        "kind": h.kind,
        "title": h.title,
        "snippet": h.snippet,
        "onBranch": h.on_branch,
        "resume": resume_command(h.agent, h.root, h.session_id, h.cwd, h.path),
    }
