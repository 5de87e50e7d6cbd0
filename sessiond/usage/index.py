"""The usage records of every root, kept in an SQLite file beside the store (``usage.sqlite3``).

Each session file is read once; afterwards only what it grew by (from the offset of its last
complete line), unless it shrank, was replaced (another inode) or its start changed, which
re-reads it whole. A restart compares each file's size, mtime and inode with what was stored,
so it re-reads only files that changed while the daemon was away. OpenCode's database is read
again whole when it changed (its messages are upserted by id). The file is created ``0600``
(usage says what the owner worked on and when).

The daemon and the ``sessiond stats`` command may both update it: SQLite's locking orders them
(WAL mode, a busy timeout), and a file read twice upserts the same keys.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from . import claude, codex, opencode, pi
from .prices import PriceBook
from .records import Record, SessionInfo

log = logging.getLogger("sessiond.usage")

DB_FILE: Final = "usage.sqlite3"
SCHEMA_VERSION: Final = "1"
CHUNK: Final = 8 << 20
"""Bytes read at a time from a growing file."""
HEAD: Final = 64
"""Bytes of a file's start remembered to tell an append from a rewrite."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, agent TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL, offset INTEGER NOT NULL, head BLOB NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(
    agent TEXT NOT NULL, key TEXT NOT NULL, file TEXT NOT NULL, session_id TEXT NOT NULL,
    model TEXT NOT NULL, ts INTEGER NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL,
    cache_read INTEGER NOT NULL, cache_creation INTEGER NOT NULL, cache_5m INTEGER NOT NULL,
    cache_1h INTEGER NOT NULL, agent_cost REAL, calc_cost REAL,
    PRIMARY KEY(agent, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_ts ON records(ts, agent, model, session_id, input, output,
    cache_read, cache_creation, agent_cost, calc_cost);
CREATE INDEX IF NOT EXISTS records_session ON records(session_id);
CREATE INDEX IF NOT EXISTS records_file ON records(file);
CREATE TABLE IF NOT EXISTS sessions(
    agent TEXT NOT NULL, session_id TEXT NOT NULL, cwd TEXT, title TEXT,
    PRIMARY KEY(agent, session_id)) WITHOUT ROWID;
"""

UPSERT = """
INSERT INTO records(agent, key, file, session_id, model, ts, input, output, cache_read,
    cache_creation, cache_5m, cache_1h, agent_cost, calc_cost)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(agent, key) DO UPDATE SET model = excluded.model, ts = excluded.ts,
    input = excluded.input, output = excluded.output, cache_read = excluded.cache_read,
    cache_creation = excluded.cache_creation, cache_5m = excluded.cache_5m,
    cache_1h = excluded.cache_1h, agent_cost = excluded.agent_cost, calc_cost = excluded.calc_cost
"""


@dataclass(frozen=True, slots=True)
class Source:
    """A root to read: its name (the ``agent`` of its records), its format and directory."""

    name: str
    format: str
    """``pi``, ``claude-code``, ``codex`` or ``opencode``."""
    path: Path


Progress = Callable[[int, int], None]
"""Called with (files done, files to read) during a refresh."""


class UsageIndex:
    """The records and what was read of each file. Thread-safe (one lock: SQLite writes are
    serialised anyway); the daemon calls it from worker threads."""

    def __init__(self, path: Path, sources: list[Source], prices: PriceBook) -> None:
        self.path = Path(path)
        self.sources = list(sources)
        self.prices = prices
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        self.db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        with self._tx():
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            version = self._meta("schema")
            if version not in (None, SCHEMA_VERSION):
                for table in ("records", "files", "sessions"):
                    self.db.execute(f"DELETE FROM {table}")
            self._set_meta("schema", SCHEMA_VERSION)
        self._reprice_if_needed()

    def close(self) -> None:
        with self._lock:
            self.db.close()

    # ------------------------------------------------------------------ bookkeeping

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    def _reprice_if_needed(self) -> None:
        """The stored costs were computed with other prices (a new registry, a changed
        ``[prices]``): compute them again (no file is read)."""
        fingerprint = self.prices.fingerprint
        if self._meta("prices") == fingerprint:
            return
        with self._tx():
            rows = self.db.execute(
                "SELECT agent, key, model, ts, input, output, cache_read, cache_creation, cache_5m, cache_1h"
                " FROM records"
            ).fetchall()
            updates = []
            for agent, key, model, ts, i, o, cr, cc, c5, c1 in rows:
                r = Record(key, "", model, ts, i, o, cr, cc, c5, c1)
                updates.append((self.prices.cost(r), agent, key))
            self.db.executemany("UPDATE records SET calc_cost = ? WHERE agent = ? AND key = ?", updates)
            self._set_meta("prices", fingerprint)

    # ------------------------------------------------------------------ reading

    def files(self) -> Iterator[tuple[Source, Path]]:
        """Every session file of every source (OpenCode's database counts as one)."""
        for source in self.sources:
            root = source.path
            if source.format == "codex":
                dirs = [root / "sessions", root / "archived_sessions"]
            elif source.format == "opencode":
                db = root / opencode.DB_NAME
                if db.is_file():
                    yield source, db
                dirs = [root / "storage" / "message"]
            else:
                dirs = [root]
            suffix = ".json" if source.format == "opencode" else ".jsonl"
            for directory in dirs:
                if directory.is_dir():
                    for path in sorted(_walk(directory, suffix)):
                        yield source, path

    def refresh(self, progress: Progress | None = None) -> set[tuple[str, str]]:
        """Read what changed in every root; the ``(agent, session id)`` pairs that got records."""
        found = list(self.files())
        changed: set[tuple[str, str]] = set()
        seen: set[str] = set()
        for n, (source, path) in enumerate(found):
            seen.add(str(path))
            changed |= self.update(source, path)
            if progress is not None:
                progress(n + 1, len(found))
        self._forget_missing(seen)
        return changed

    def source_of(self, path: Path) -> Source | None:
        """The source a path belongs to (the longest matching root)."""
        best: Source | None = None
        for source in self.sources:
            try:
                Path(path).relative_to(source.path)
            except ValueError:
                continue
            if best is None or len(str(source.path)) > len(str(best.path)):
                best = source
        return best

    def update_path(self, path: Path) -> set[tuple[str, str]]:
        """Read what a changed file added (a followed file's event, an own append)."""
        source = self.source_of(path)
        if source is None:
            return set()
        if source.format == "opencode" and path.name.startswith(opencode.DB_NAME):
            path = source.path / opencode.DB_NAME
        return self.update(source, path)

    def update(self, source: Source, path: Path) -> set[tuple[str, str]]:
        """Read ``path`` from where it was left (or whole); the sessions that got records."""
        key = str(path)
        try:
            st = os.stat(path)
        except OSError:
            with self._tx():
                self._drop_file(key)
            return set()
        if not stat.S_ISREG(st.st_mode):
            return set()
        sig = (st.st_size, st.st_mtime_ns, st.st_ino)
        if source.format == "opencode" and path.name == opencode.DB_NAME:
            sig = _db_signature(path)
        with self._lock:
            row = self.db.execute(
                "SELECT size, mtime_ns, inode, offset, head, state FROM files WHERE path = ?", (key,)
            ).fetchone()
        if row is not None and tuple(row[:3]) == sig:
            return set()
        offset, state, head = 0, {}, b""
        grown = (
            row is not None
            and source.format != "opencode"
            and row[2] == st.st_ino
            and st.st_size >= row[3]
            and _head(path, len(row[4])) == row[4]
        )
        if grown:
            offset, head, state = row[3], row[4], orjson.loads(row[5])
        sessions: dict[str, SessionInfo] = {}
        records, offset, head = self._read(source, path, offset, head, state, sessions)
        with self._tx():
            if row is not None and not grown:
                self._drop_file(key)  # rewritten, replaced or shrunk: read whole again
            self._store(source, key, records, sessions)
            self.db.execute(
                "INSERT OR REPLACE INTO files(path, agent, size, mtime_ns, inode, offset, head, state)"
                " VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                (key, source.name, *sig, offset, head, orjson.dumps(state).decode()),
            )
        return {(source.name, r.session_id) for r in records}

    def _read(
        self,
        source: Source,
        path: Path,
        offset: int,
        head: bytes,
        state: dict[str, Any],
        sessions: dict[str, SessionInfo],
    ) -> tuple[list[Record], int, bytes]:
        if source.format == "opencode":
            if path.name == opencode.DB_NAME:
                return opencode.read_database(path, sessions), 0, b""
            found = opencode.read_message_file(path)
            session_file = _opencode_session_file(source.path, path.parent.name)
            if session_file is not None:
                opencode.read_session_file(session_file, sessions)
            return ([found] if found is not None else []), 0, b""
        records: list[Record] = []
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return records, offset, head
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return records, offset, head
            if offset == 0:
                head = f.read(HEAD)
            f.seek(offset)
            carry = b""
            start = offset
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                data = carry + chunk
                end = data.rfind(b"\n")
                if end < 0:
                    carry = data
                    continue
                lines = _lines(data[: end + 1], start)
                records.extend(self._parse(source, path, lines, state, sessions))
                start += end + 1
                carry = data[end + 1 :]
            return records, start, head

    @staticmethod
    def _parse(
        source: Source,
        path: Path,
        lines: list[tuple[int, bytes]],
        state: dict[str, Any],
        sessions: dict[str, SessionInfo],
    ) -> list[Record]:
        if source.format == "claude-code":
            return claude.read(path, lines, sessions)
        if source.format == "codex":
            return codex.read(path, lines, state, sessions)
        return pi.read(path, lines, state, sessions)

    def _store(
        self, source: Source, key: str, records: list[Record], sessions: dict[str, SessionInfo]
    ) -> None:
        cost = self.prices.cost
        self.db.executemany(
            UPSERT,
            [
                (
                    source.name,
                    r.key,
                    key,
                    r.session_id,
                    r.model,
                    r.ts,
                    r.input,
                    r.output,
                    r.cache_read,
                    r.cache_creation,
                    r.cache_5m,
                    r.cache_1h,
                    r.agent_cost,
                    cost(r),
                )
                for r in records
            ],
        )
        for info in sessions.values():
            self.db.execute(
                "INSERT INTO sessions(agent, session_id, cwd, title) VALUES(?, ?, ?, ?)"
                " ON CONFLICT(agent, session_id) DO UPDATE SET cwd = coalesce(cwd, excluded.cwd),"
                " title = coalesce(title, excluded.title)",
                (source.name, info.session_id, info.cwd, info.title),
            )

    def _drop_file(self, key: str) -> None:
        self.db.execute("DELETE FROM records WHERE file = ?", (key,))
        self.db.execute("DELETE FROM files WHERE path = ?", (key,))

    def _forget_missing(self, seen: set[str]) -> None:
        with self._lock:
            known = [r[0] for r in self.db.execute("SELECT path FROM files")]
        gone = [k for k in known if k not in seen]
        if gone:
            with self._tx():
                for key in gone:
                    self._drop_file(key)


def _walk(directory: Path, suffix: str) -> Iterator[Path]:
    for dirpath, _dirs, names in os.walk(directory):
        for name in names:
            if name.endswith(suffix):
                yield Path(dirpath) / name


def _lines(data: bytes, start: int) -> list[tuple[int, bytes]]:
    out = []
    pos = 0
    for line in data.split(b"\n"):
        if line.strip():
            out.append((start + pos, line))
        pos += len(line) + 1
    return out


def _head(path: Path, size: int) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _db_signature(path: Path) -> tuple[int, int, int]:
    """A database's change mark: its and its write-ahead log's sizes and mtimes together."""
    total_size, newest, inode = 0, 0, 0
    for suffix in ("", "-wal"):
        try:
            st = os.stat(f"{path}{suffix}")
        except OSError:
            continue
        total_size += st.st_size
        newest = max(newest, st.st_mtime_ns)
        inode = inode or st.st_ino
    return total_size, newest, inode


def _opencode_session_file(root: Path, session_id: str) -> Path | None:
    base = root / "storage" / "session"
    if not base.is_dir():
        return None
    for project in base.iterdir():
        candidate = project / f"{session_id}.json"
        if candidate.is_file():
            return candidate
    return None
