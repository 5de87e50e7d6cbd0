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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson

from ..store.bounded import line_limit
from ..store.regular import read_regular
from . import claude, codex, opencode, pi
from .prices import PriceBook
from .records import Record, SessionInfo
from .registry import prices_as_of

log = logging.getLogger("sessiond.usage")
_T = TypeVar("_T")

DB_FILE: Final = "usage.sqlite3"
SCHEMA_VERSION: Final = "2"
CHUNK: Final = 8 << 20
"""Bytes read at a time from a growing file."""
BATCH: Final = 64
"""Files stored in one transaction during a first build (few commits, yet the write lock is
let go often for the daemon or another ``sessiond stats``)."""
PARALLEL_FROM: Final = 32
"""Files to read before worker processes pay for their start (about 0.3 s each)."""
MAX_LINE: Final = 64 << 20
"""A longer line (a pasted file, a runaway writer) is skipped, never held whole: no usage
record is that large, and memory stays bounded by this and :data:`CHUNK`."""
HEAD: Final = 64
"""Bytes of a file's start remembered to tell an append from a rewrite."""

COST: Final = "coalesce({r}.agent_cost, {r}.calc_cost)"
"""A record's cost: the agent's own, else the computed one (``NULL``: unpriced)."""
_ADD: Final = f"""
    INSERT INTO buckets VALUES(new.ts / 900000, new.agent, new.model, new.input, new.output,
        new.cache_read, new.cache_creation, coalesce({COST.format(r="new")}, 0),
        {COST.format(r="new")} IS NOT NULL, 1)
    ON CONFLICT(bucket, agent, model) DO UPDATE SET input = input + excluded.input,
        output = output + excluded.output, cache_read = cache_read + excluded.cache_read,
        cache_creation = cache_creation + excluded.cache_creation, cost = cost + excluded.cost,
        priced = priced + excluded.priced, n = n + 1;"""
_OLD_BUCKET: Final = "bucket = old.ts / 900000 AND agent = old.agent AND model = old.model"
_SUBTRACT: Final = f"""
    UPDATE buckets SET input = input - old.input, output = output - old.output,
        cache_read = cache_read - old.cache_read, cache_creation = cache_creation - old.cache_creation,
        cost = cost - coalesce({COST.format(r="old")}, 0),
        priced = priced - ({COST.format(r="old")} IS NOT NULL), n = n - 1
    WHERE {_OLD_BUCKET};"""
_PRUNE: Final = f"""
    DELETE FROM buckets WHERE {_OLD_BUCKET} AND n <= 0;"""
TRIGGERS: Final = {
    "records_added": f"AFTER INSERT ON records BEGIN{_ADD}\nEND;",
    "records_removed": f"AFTER DELETE ON records BEGIN{_SUBTRACT}{_PRUNE}\nEND;",
    "records_changed": f"AFTER UPDATE ON records BEGIN{_SUBTRACT}{_ADD}{_PRUNE}\nEND;",
}
"""What keeps the 15-minute sums equal to the records: a record added, removed or replaced."""
INDEXES: Final = {
    "records_ts": "records(ts)",
    "records_session": "records(session_id)",
    "records_file": "records(file)",
}
"""The records' indexes besides their key (made once at the end of a first build: cheaper
than kept up per insert)."""
TABLES: Final = """
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
CREATE TABLE IF NOT EXISTS sessions(
    agent TEXT NOT NULL, session_id TEXT NOT NULL, cwd TEXT, title TEXT,
    PRIMARY KEY(agent, session_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS buckets(
    bucket INTEGER NOT NULL, agent TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL,
    output INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_creation INTEGER NOT NULL,
    cost REAL NOT NULL, priced INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY(bucket, agent, model)) WITHOUT ROWID;
"""
SCHEMA: Final = "\n".join(
    [
        TABLES,
        *(f"CREATE INDEX IF NOT EXISTS {name} ON {on};" for name, on in INDEXES.items()),
        *(f"CREATE TRIGGER IF NOT EXISTS {name} {body}" for name, body in TRIGGERS.items()),
    ]
)
REBUILD_BUCKETS: Final = f"""
INSERT INTO buckets SELECT ts / 900000, agent, model, sum(input), sum(output), sum(cache_read),
    sum(cache_creation), sum(coalesce({COST.format(r="records")}, 0)),
    sum({COST.format(r="records")} IS NOT NULL), count(*)
FROM records GROUP BY ts / 900000, agent, model
"""
BUCKET_MS: Final = 15 * 60 * 1000
"""The ``buckets`` table sums records by 15 minutes (every time zone's offset is a multiple of
15 minutes), agent and model, kept by triggers: a daily report over a year of records reads a
few thousand rows, not every record."""

UPSERT = """
INSERT INTO records(agent, key, file, session_id, model, ts, input, output, cache_read,
    cache_creation, cache_5m, cache_1h, agent_cost, calc_cost)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(agent, key) DO UPDATE SET model = excluded.model, ts = excluded.ts,
    input = excluded.input, output = excluded.output, cache_read = excluded.cache_read,
    cache_creation = excluded.cache_creation, cache_5m = excluded.cache_5m,
    cache_1h = excluded.cache_1h, agent_cost = excluded.agent_cost, calc_cost = excluded.calc_cost
"""


class _ReadCount:
    """Bytes of session files this process read for usage records (``daemon/status``): what a
    fed growth (:meth:`UsageIndex.feed`) saves shows here as bytes not read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bytes = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.bytes += n


READS = _ReadCount()


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
            version = self._meta("schema") if self._has_meta() else None
            if version not in (None, SCHEMA_VERSION):  # another layout: start again
                for table in ("records", "files", "sessions", "buckets"):
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _statements(SCHEMA):
                self.db.execute(statement)
            self._set_meta("schema", SCHEMA_VERSION)
            if self._meta("buckets") == "stale":
                self._rebuild_buckets()
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

    def _rebuild_buckets(self) -> None:
        """The 15-minute sums from the records, and the triggers that keep them (in a transaction)."""
        self.db.execute("DELETE FROM buckets")
        self.db.execute(REBUILD_BUCKETS)
        for statement in _statements(SCHEMA):
            self.db.execute(statement)
        self.db.execute("DELETE FROM meta WHERE key = 'buckets'")

    def _has_meta(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is not None

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
        with self._lock:
            empty = self.db.execute("SELECT 1 FROM records LIMIT 1").fetchone() is None
        if empty:  # nothing to price: the registry is not even imported (a fresh store)
            with self._tx():
                self._set_meta("prices", fingerprint)
                self.db.execute("DELETE FROM meta WHERE key = 'pricesAsOf'")
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
            self._set_meta("pricesAsOf", prices_as_of())

    @property
    def prices_as_of(self) -> str:
        """The date of the price data the stored costs were computed with (kept in the file, so
        a report needs not import the registry)."""
        with self._lock:
            stored = self._meta("pricesAsOf")
        if stored is None:
            stored = prices_as_of()
            with self._tx():
                self._set_meta("pricesAsOf", stored)
        return stored

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

    def refresh(self, progress: Progress | None = None, *, workers: int = 1) -> set[tuple[str, str]]:
        """Read what changed in every root; the ``(agent, session id)`` pairs that got records.

        ``workers`` > 1 reads the files in that many worker processes (``sessiond stats``'s
        first build; the daemon reads in one thread, beside serving): parsing runs in
        parallel, the records are stored here in the files' order."""
        found = list(self.files())
        plans = [plan for source, path in found if (plan := self._plan(source, path)) is not None]
        self._forget_missing({str(path) for _, path in found})
        with self._lock:
            bulk = (
                len(plans) >= PARALLEL_FROM
                and self.db.execute("SELECT 1 FROM records LIMIT 1").fetchone() is None
            )
        if not bulk:
            return self._read_all(plans, progress, workers, batch=1)
        # The first build: the 15-minute sums and the records' indexes are made once at the end
        # instead of per record (a trigger and three index updates per insert, most of the
        # build's SQLite time), and many files go in one transaction. Records another writer
        # adds meanwhile are in the table when the sums are computed, and later ones meet the
        # triggers again: the sums stay exact.
        preload = threading.Thread(target=self.prices.preload, name="usage-prices", daemon=True)
        preload.start()  # the registry loads (about a second) while the files are read
        with self._tx():
            for trigger in TRIGGERS:
                self.db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            for name in INDEXES:
                self.db.execute(f"DROP INDEX IF EXISTS {name}")
            self._set_meta("buckets", "stale")  # a build killed midway is finished on next open
        try:
            return self._read_all(plans, progress, workers, batch=BATCH)
        finally:
            with self._tx():
                self._rebuild_buckets()

    def _read_all(
        self, plans: list[_Plan], progress: Progress | None, workers: int, batch: int
    ) -> set[tuple[str, str]]:
        """Read the planned files (in ``workers`` processes when there are many) and store
        what each gave, ``batch`` files to a transaction."""
        changed: set[tuple[str, str]] = set()
        total = len(plans)
        if progress is not None:
            progress(0, total)
        reads: Iterator[_Read]
        pool = None
        if workers > 1 and total >= PARALLEL_FROM:
            import multiprocessing  # noqa: PLC0415
            from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

            pool = ProcessPoolExecutor(min(workers, total), mp_context=multiprocessing.get_context("spawn"))
            sent = pool.map(_read_plan_sent, plans, chunksize=max(1, min(16, total // (workers * 8))))
            reads = (_received(one) for one in sent)
        else:
            reads = (_read_plan(plan) for plan in plans)
        try:
            done = 0
            for group in _batches(zip(plans, reads, strict=True), batch):
                with self._tx():
                    for plan, read in group:
                        changed |= self._write(plan, read)
                done += len(group)
                if progress is not None:
                    progress(done, total)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return changed

    def knows(self, session_id: str) -> bool:
        """Whether any record belongs to the session."""
        with self._lock:
            found = self.db.execute("SELECT 1 FROM records WHERE session_id = ? LIMIT 1", (session_id,))
            return found.fetchone() is not None

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

    def feed(self, path: Path, tails: list[tuple[int, bytes]]) -> set[tuple[str, str]]:
        """Take what a file grew by from bytes the daemon holds already (``(file offset,
        complete lines)`` in file order: what an open session's ingest read, what the daemon
        appended), not from the file; the sessions that got records.

        Used only where it continues exactly what was read of the same file (its inode, the
        offset reached); anything else — a file never read, replaced, shrunk, a gap (a line
        the daemon did not hand over), a database — is read from the file as :meth:`update`
        does. Bytes read already (a read got there first) are skipped. A ``stat`` stores the
        file's signature, so a later look at the unchanged file reads nothing."""
        source = self.source_of(path)
        if source is None:
            return set()
        if source.format == "opencode":
            return self.update_path(path)
        key = str(path)
        try:
            st = os.stat(path)
        except OSError:
            return self.update(source, path)
        with self._lock:
            row = self.db.execute(
                "SELECT offset, inode, head, state FROM files WHERE path = ?", (key,)
            ).fetchone()
        if row is None or not stat.S_ISREG(st.st_mode) or row[1] != st.st_ino or st.st_size < row[0]:
            return self.update(source, path)
        offset, head = int(row[0]), bytes(row[2])
        state: dict[str, Any] = orjson.loads(row[3])
        sessions: dict[str, SessionInfo] = {}
        records: list[Record] = []
        for start, data in tails:
            end = start + len(data)
            if end <= offset:
                continue  # read already
            if start != offset or end > st.st_size:
                return self.update(source, path)  # a gap, or bytes the file no longer has
            records.extend(_parse(source, path, data, start, state, sessions))
            offset = end
        if offset == row[0]:
            return set()
        if len(records) > 1:  # the same key again: the last wins (as in read_file)
            records = list({r.key: r for r in records}.values())
        # the file's signature only when it ends where the lines did (else a later look reads on)
        sig = (st.st_size, st.st_mtime_ns, st.st_ino) if st.st_size == offset else (offset, 0, st.st_ino)
        plan = _Plan(source, path, sig, True, True, int(row[0]), head, state)
        with self._tx():
            return self._write(plan, (records, offset, head, state, sessions))

    def update(self, source: Source, path: Path) -> set[tuple[str, str]]:
        """Read ``path`` from where it was left (or whole); the sessions that got records."""
        plan = self._plan(source, path)
        if plan is None:
            return set()
        read = read_file(plan.source, plan.path, plan.offset, plan.head, plan.state)
        with self._tx():
            return self._write(plan, read)

    def _plan(self, source: Source, path: Path) -> _Plan | None:
        """What to read of ``path`` (``None``: nothing changed; a file that went is forgotten)."""
        key = str(path)
        try:
            st = os.stat(path)
        except OSError:
            with self._tx():
                self._drop_file(key)
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        sig = (st.st_size, st.st_mtime_ns, st.st_ino)
        if source.format == "opencode" and path.name == opencode.DB_NAME:
            sig = _db_signature(path)
        with self._lock:
            row = self.db.execute(
                "SELECT size, mtime_ns, inode, offset, head, state FROM files WHERE path = ?", (key,)
            ).fetchone()
        if row is not None and tuple(row[:3]) == sig:
            return None
        grown = (
            row is not None
            and source.format != "opencode"
            and row[2] == st.st_ino
            and st.st_size >= row[3]
            and _head(path, len(row[4])) == row[4]
        )
        if grown:
            return _Plan(source, path, sig, True, False, row[3], row[4], orjson.loads(row[5]))
        return _Plan(source, path, sig, False, row is not None, 0, b"", {})

    def _write(self, plan: _Plan, read: _Read) -> set[tuple[str, str]]:
        """Store what reading a file gave (inside a transaction)."""
        records, offset, head, state, sessions = read
        key = str(plan.path)
        if plan.known and not plan.grown:
            self._drop_file(key)  # rewritten, replaced or shrunk: read whole again
        self._store(plan.source, key, records, sessions)
        self.db.execute(
            "INSERT OR REPLACE INTO files(path, agent, size, mtime_ns, inode, offset, head, state)"
            " VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
            (key, plan.source.name, *plan.sig, offset, head, orjson.dumps(state).decode()),
        )
        return {(plan.source.name, r.session_id) for r in records}

    def _store(
        self, source: Source, key: str, records: list[Record], sessions: dict[str, SessionInfo]
    ) -> None:
        cost = self.prices.cost
        agent = source.name
        self.db.executemany(UPSERT, [(agent, r[0], key, *r[1:], cost(r)) for r in records])
        self.db.executemany(
            "INSERT INTO sessions(agent, session_id, cwd, title) VALUES(?, ?, ?, ?)"
            " ON CONFLICT(agent, session_id) DO UPDATE SET cwd = coalesce(cwd, excluded.cwd),"
            " title = coalesce(title, excluded.title)",
            [(agent, info.session_id, info.cwd, info.title) for info in sessions.values()],
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


@dataclass(frozen=True, slots=True)
class _Plan:
    source: Source
    path: Path
    sig: tuple[int, int, int]
    grown: bool
    """Read on from ``offset`` (else whole)."""
    known: bool
    """It was read before (what it gave is dropped when it is read whole again)."""
    offset: int
    head: bytes
    state: dict[str, Any]


_Read = tuple[list[Record], int, bytes, dict[str, Any], dict[str, SessionInfo]]
"""What reading a file gives: records, the new offset and head, its state, its sessions."""


def _read_plan(plan: _Plan) -> _Read:
    return read_file(plan.source, plan.path, plan.offset, plan.head, plan.state)


_Sent = tuple[list[tuple[Any, ...]], int, bytes, dict[str, Any], dict[str, SessionInfo]]
"""A read as a worker process sends it: the records as plain tuples (a named tuple pickles and
unpickles five times slower: a tenth of the first build's CPU)."""


def _read_plan_sent(plan: _Plan) -> _Sent:
    records, offset, head, state, sessions = _read_plan(plan)
    return [tuple(r) for r in records], offset, head, state, sessions


def _received(sent: _Sent) -> _Read:
    records, offset, head, state, sessions = sent
    return [Record._make(r) for r in records], offset, head, state, sessions


def read_file(source: Source, path: Path, offset: int, head: bytes, state: dict[str, Any]) -> _Read:
    """Read a session file from ``offset`` to its last complete line: pure, so the first build
    can run it in worker processes."""
    sessions: dict[str, SessionInfo] = {}
    records, offset, head = _read_records(source, path, offset, head, state, sessions)
    if len(records) > 1:  # the same key again (a streamed response's pieces): the last wins,
        records = list({r.key: r for r in records}.values())  # as the upsert would decide
    return records, offset, head, state, sessions


def _read_records(
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
    with os.fdopen(fd, "rb", buffering=0) as f:  # big reads straight into one bytes object
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return records, offset, head
        if offset == 0:
            head = f.read(HEAD)
        f.seek(offset)
        pending: list[bytes] = []  # the pieces of a line not finished yet
        held = 0
        skipping = False  # inside a line longer than MAX_LINE: dropped up to its end
        start = pos = offset  # start: the first byte not consumed; pos: where this chunk starts
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            READS.add(len(chunk))
            end = chunk.rfind(b"\n")
            if end < 0:
                if skipping:
                    start = pos + len(chunk)
                else:
                    pending.append(chunk)
                    held += len(chunk)
                    if held > min(MAX_LINE, line_limit()):  # [limits] max_line_bytes
                        skipping, pending, held, start = True, [], 0, pos + len(chunk)
                pos += len(chunk)
                continue
            if skipping:
                first = chunk.find(b"\n") + 1
                body, body_start = chunk[first : end + 1], pos + first
                skipping = False
            elif held == 0 and end == len(chunk) - 1:  # whole lines, nothing pending: no copy
                body, body_start = chunk, start
            else:
                body, body_start = b"".join([*pending, chunk[: end + 1]]), start
            records.extend(_parse(source, path, body, body_start, state, sessions))
            pending, held = [chunk[end + 1 :]], len(chunk) - end - 1
            start = pos + end + 1
            pos += len(chunk)
        return records, start, head


def _parse(
    source: Source,
    path: Path,
    data: bytes,
    start: int,
    state: dict[str, Any],
    sessions: dict[str, SessionInfo],
) -> list[Record]:
    reader = {"claude-code": claude.read, "codex": codex.read}.get(source.format, pi.read)
    return reader(path, data, start, state, sessions)


def _batches(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    group: list[_T] = []
    for item in items:
        group.append(item)
        if len(group) >= size:
            yield group
            group = []
    if group:
        yield group


def _walk(directory: Path, suffix: str) -> Iterator[Path]:
    for dirpath, _dirs, names in os.walk(directory):
        for name in names:
            if name.endswith(suffix):
                yield Path(dirpath) / name


def _statements(script: str) -> list[str]:
    """The schema's statements one by one (a trigger's body holds semicolons of its own)."""
    out: list[str] = []
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    return out


def _head(path: Path, size: int) -> bytes:
    try:
        return read_regular(path, size)  # never blocks on a FIFO
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
