"""The search engine the service runs: one writer thread fed by a queue, queries beside it.

The service's append and follow events call :meth:`SearchEngine.appended`,
:meth:`SearchEngine.changed` and :meth:`SearchEngine.removed` on the event loop; each puts one
item on a queue (about a microsecond) and returns, so indexing never delays an append. The
writer thread takes what accumulated (waiting :data:`BATCH_WAIT_S` for more), writes it in one
transaction, and between batches works through the first build — the files whose inode, size
or mtime differ from what the index recorded, oldest first, so the newest sessions get the
highest row ids (queries rank the newest :data:`~.index.MATCH_CAP` matches) — reporting
``(done, total)`` as it goes. A restart thus reads only files that changed while the daemon
was away. With ``[watch] enabled = false`` nothing reports changes, so each query first has
the writer look at every file's signature (:meth:`SearchEngine.query` with ``sync=True``).

Queries run in the caller's thread on their own read connection (WAL: they never wait for the
writer) after a barrier that lets the writer finish what was queued before them: a line
appended before a query is found by it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import queue
import sqlite3
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from ..errors import InvalidArgumentError
from ..store.regular import open_regular
from . import index as ix
from .database import FILE_NAME, connect, discard, merging, open_index
from .extract import Doc
from .index import FileMeta, Filters, Page, Signature
from .readahead import ReadAhead, ReadFile
from .signature import TAIL_BYTES
from .signature import stat_signature as stat_signature  # noqa: PLC0414 - re-exported: callers import it from here

log = logging.getLogger("sessiond.search")

BATCH_WAIT_S: Final = 0.25
"""How long the writer waits for more events before writing a batch (a barrier or the end
ends the wait at once: :attr:`SearchEngine._hurry`). A followed transcript grows a line at a
time, several a second while its agent works, and the service hands its entries over every
0.1 s: each batch is a transaction whose fixed part (signature, entry list, statements,
commit, an FTS5 segment per index and the merges they cost later: with a 50 MiB transcript
indexed, the word index merged for 70-80 ms twice in 400 one-line transactions) outweighs a
line. 0.02 s wrote a batch per hand-over (~2 lines at 20 a second), 0.25 s one per ~5: the
daemon's CPU per followed line of benchmarks/watch.py's synthetic 0.3 MiB transcript
1.60-2.03 -> 1.38-1.85 ms (alternating runs). Nobody waits for it: a query's barrier ends it."""
CLOSE_WAIT_S = 10.0
"""How long ``close`` waits for the writer thread (a daemon thread: the process may end without it)."""
LOCKED_RETRIES = 5
"""Times a batch that found the file busy ("database is locked") is tried again before the
index is taken for damaged and rebuilt."""
BUILD_SLICE_S: Final = 1.0
"""Seconds of first-build work in one transaction at most. A slice ends sooner, after the file
it is inserting, when an event or a barrier is queued (they go first: an append is indexed
within about a file's insert, not a slice). Each slice ends with the vocabulary's counts of
its files and an FTS5 segment: 1 s slices took 0.4-0.5 s less CPU per 64 MiB than 0.25 s."""
WORKER_MIN_BYTES = 8 << 20
"""Bytes of pending files from which a build reads them in a process of its own
(:mod:`.producer`; starting it costs about as much as reading 4 MiB)."""
TAILERS: Final = 8
"""Session files nobody has open that the writer keeps read (their reader's state and read
offset), so that when one grows only what it grew by is read: an agent writing a transcript
nobody follows changes the file once per line."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A session file a root holds: where, which root, which agent wrote it. ``path`` may
    name a session inside a database (OpenCode's ``opencode.db#<id>``); ``signature``, when
    the source knew it while listing (a database's sessions, read in one query), saves asking
    :meth:`SessionSource.signature` for each."""

    path: str
    root: str
    agent: str
    signature: Signature | None = None


class OpenedSession(Protocol):
    """What indexing reads of a session (any ``ReadableSession`` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def name(self) -> str | None: ...

    @property
    def leaf_id(self) -> Any: ...

    def entries(self) -> list[Any]: ...

    def ingest(self) -> Any:
        """What was appended since the last read (an ``IngestResult``: ``entries``,
        ``bytes_read``, ``reload_required`` when the file must be read whole again)."""
        ...

    def close(self) -> None: ...


class SessionSource(Protocol):
    """What the engine needs of the daemon's roots (the service implements it)."""

    def files(self) -> Iterable[SourceFile]:
        """Every session file of every root, as it is now."""
        ...

    def classify(self, path: str) -> SourceFile | None:
        """The root and agent of a changed path, or ``None`` when it is not a session file."""
        ...

    def open(self, file: SourceFile, *, follow: bool = False) -> OpenedSession:
        """The session in the file, read now (its reader's errors are ``SessiondError``/``OSError``).
        ``follow``: the engine keeps it to read what the file grows by (:meth:`OpenedSession.ingest`);
        otherwise a reader that only extracts entries will do."""
        ...

    def signature(self, path: str) -> Signature | None:
        """What tells the session at ``path`` changed (``None``: it is gone); a file's is
        :func:`stat_signature`."""
        ...


@dataclass(slots=True)
class _Append:
    path: str
    entries: list[Any]
    leaf: str | None
    name: str | None
    expected_size: int | None


@dataclass(slots=True)
class _Rescan:
    """Compare the sessions of one root with the index (a database committed)."""

    root: str
    files: Callable[[], Iterable[SourceFile]]


@dataclass(slots=True)
class _Barrier:
    done: threading.Event
    sync: bool


def _coalesced(items: list[Any]) -> list[Any]:
    """``items`` with each run of appends to one file made one append (their entries in
    order, the last one's leaf, name and size): a batch of a busy session's appends is then
    indexed with one round of statements and one look at the file, not one per append (what
    made the index cost an append 2.4 times its CPU). The last expected size is the one the
    file has once they are all written: checked against the file, it gives the index the
    file's signature; an earlier one no longer matches and would mark it stale."""
    out: list[Any] = []
    merged: _Append | None = None  # the last item of ``out`` when it is a merge made here
    for item in items:
        last = out[-1] if out else None
        if isinstance(item, _Append) and isinstance(last, _Append) and last.path == item.path:
            if merged is not last:  # a copy: the caller's entry list is not ours to extend
                merged = _Append(last.path, list(last.entries), last.leaf, last.name, last.expected_size)
                out[-1] = merged
            merged.entries.extend(item.entries)
            merged.leaf = item.leaf
            merged.name = item.name if item.name is not None else merged.name
            merged.expected_size = item.expected_size
        else:
            out.append(item)
    return out


def index_path(store_root: Path) -> Path:
    """Where a store's search index lives: ``<store root>/search/index.sqlite3``."""
    return store_root / "search" / FILE_NAME


def _tail_unchanged(path: str, stored: Signature) -> bool:
    """Whether the 4 KiB before ``stored.size`` still hash to ``stored.tail``: a file rewritten
    in place and grown past its old size keeps its inode, only its bytes tell."""
    try:
        with open_regular(path) as f:
            start = max(0, stored.size - TAIL_BYTES)
            f.seek(start)
            return zlib.crc32(f.read(stored.size - start)) == stored.tail
    except OSError:
        return False


class SearchEngine:
    def __init__(
        self,
        path: Path,
        source: SessionSource,
        *,
        exclude: tuple[str, ...] = (),
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.path = path
        self.source = source
        self.exclude = tuple(os.path.expanduser(p) for p in exclude)
        self.on_progress = on_progress
        """Called from the writer thread as the first build advances (done, total)."""
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._hurry = threading.Event()
        """Set after queuing what must not wait out :data:`BATCH_WAIT_S` (a barrier, the end):
        the writer collects a batch by waiting on this, not on the queue, so the events it
        collects do not wake it one by one (with 8 clients appending, the writer woke ~9 times
        per batch, each a thread switch and a fight for the GIL with the event loop)."""
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._reader_lock = threading.Lock()
        self._branches: dict[tuple[Any, ...], Any] = {}
        self._pending: list[SourceFile] = []
        self._ahead: ReadAhead[SourceFile] | None = None
        """The first build's reads of the next pending files (:mod:`.readahead`)."""
        self._tailers: OrderedDict[str, OpenedSession] = OrderedDict()
        """The writer's open readers of files that changed lately (at most :data:`TAILERS`)."""
        self.bytes_read = 0
        """Bytes of session files the writer read to index them (whole files and grown tails)."""
        self.on_tail: Callable[[str, int, bytes], None] | None = None
        """Called from the writer thread with what a kept reader read of a grown file (path,
        file offset, complete lines), for the daemon's other readers of the file (the usage
        records): a file nobody has open is read once."""
        self._building = False
        self.progress: tuple[int, int] | None = None
        """``(done, total)`` while a build runs, else ``None``."""
        self.ready = threading.Event()
        """Set once the index file is open and the first look at the files is done (the build
        they need may still be running: :attr:`progress`)."""
        self._stopped = False
        self._submitted = 0
        """Events queued (by the event loop's thread)..."""
        self._applied = 0
        """...and applied and committed by the writer: when equal, a query need not wait for it."""

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Open the index and start the writer thread, which begins with a full look (the build)."""
        self._thread = threading.Thread(target=self._run, name="sessiond-search", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the writer soon: it finishes the file it is reading, skips whatever is still
        queued (a restart compares every file's signature again, so nothing is lost) and closes
        the database. A daemon stops in seconds even while a followed file keeps growing."""
        if self._thread is not None:
            self._stopped = True
            self._queue.put(None)
            self._hurry.set()
            self._thread.join(timeout=CLOSE_WAIT_S)
            self._thread = None
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def rebuild(self) -> None:
        """Throw the index away and build it again (``sessiond search --rebuild``)."""
        self._submitted += 1
        self._queue.put("rebuild")

    # ------------------------------------------------------------------ events (event loop)

    def appended(
        self, path: str, entries: list[Any], leaf: Any, name: str | None, expected_size: int | None
    ) -> None:
        """Entries were appended to ``path`` (by this daemon, or read from another writer)."""
        self._submitted += 1
        self._queue.put(_Append(path, entries, leaf if type(leaf) is str else None, name, expected_size))

    def follows(self, path: str) -> bool:
        """Whether the writer keeps a reader of ``path`` (its growth is read from where it was
        left, and handed to :attr:`on_tail`). A hint: the reader may go before it is used."""
        return path in self._tailers

    def changed(self, path: str) -> None:
        """``path`` may have changed in any way (grown, rewritten, created, deleted)."""
        self._submitted += 1
        self._queue.put(path)

    def removed(self, path: str) -> None:
        self._submitted += 1
        self._queue.put(path)

    def rescan(self, root: str, files: Callable[[], Iterable[SourceFile]]) -> None:
        """The sessions of ``root`` may have changed in any way: the writer lists them with
        ``files`` (in its thread), reads the changed ones again and forgets the ones gone
        (what a commit to OpenCode's database means: no file tells which session it touched)."""
        self._submitted += 1
        self._queue.put(_Rescan(root, files))

    # ------------------------------------------------------------------ queries (any thread)

    def flush(self, *, sync: bool = False, timeout: float = 30.0) -> None:
        """Wait until the writer applied what was queued before (and, with ``sync``, looked at
        every file's signature)."""
        if self._thread is None or (not sync and self._applied >= self._submitted and self.ready.is_set()):
            return  # nothing queued is still unwritten: no round trip through the writer thread
        done = threading.Event()
        self._queue.put(_Barrier(done, sync))
        self._hurry.set()
        done.wait(timeout)

    def search(
        self,
        *,
        match: str | None,
        needle: str | None,
        filters: Filters,
        offset: int,
        limit: int,
        sync: bool = False,
    ) -> Page:
        self.flush(sync=sync)
        self.ready.wait(30)
        with self._reader_lock:
            if self._reader is None:
                self._reader = connect(self.path, reader=True)
            try:
                return ix.search(
                    self._reader,
                    match=match,
                    needle=needle,
                    filters=filters,
                    offset=offset,
                    limit=limit,
                    branch_cache=self._branches,
                )
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("fts5:"):
                    # query.py quotes every term, so this is not expected; still the client's query
                    raise InvalidArgumentError(f"the query cannot be run ({exc})", field="query") from None
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                log.warning("search index %s failed a query (%s): rebuilding it", self.path, exc)
                self._reader.close()
                self._reader = None
                self._queue.put("rebuild")
                return Page()

    # ------------------------------------------------------------------ the writer thread

    def _run(self) -> None:
        try:
            self._open()
            self._look()
            self.ready.set()  # from here a query knows what the first build has left (progress)
            while not self._stopped:
                self._step()
        except Exception:  # the daemon goes on without search rather than dying with it
            log.exception("search index writer stopped")
        finally:
            self.ready.set()
            self._stop_read_ahead()
            self._drop_tailers()
            if self._db is not None:
                self._db.close()
            self._drain_barriers()

    def _open(self) -> None:
        self._db = open_index(self.path)

    def _drain_barriers(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Barrier):
                item.done.set()

    def _step(self) -> None:
        block = not self._pending
        items: list[Any] = []
        with contextlib.suppress(queue.Empty):
            items.append(self._queue.get(block=block, timeout=None if block else 0))
        if items and block and items[0] is not None and not isinstance(items[0], _Barrier):
            # Collect for BATCH_WAIT_S unless a barrier or the end is queued meanwhile. Cleared
            # after the wait: whatever set it was queued before it was set, and is taken below.
            self._hurry.wait(BATCH_WAIT_S)
            self._hurry.clear()
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        failure = self._apply_batch(items)
        if failure is None or self._stopped:
            return
        log.warning("search index %s failed (%s): rebuilding it from the sessions", self.path, failure)
        self._reset()
        for item in items:
            if isinstance(item, _Barrier):
                item.done.set()

    def _apply_batch(self, items: list[Any]) -> sqlite3.DatabaseError | None:
        """Apply a batch; the error that makes the index look damaged, or None. A busy file
        ("database is locked": another process on it, a checkpoint) is not damage: the batch was
        rolled back whole, so it is tried again a few times first."""
        for attempt in range(LOCKED_RETRIES + 1):
            try:
                try:
                    self._apply(items)
                    if self._pending:
                        self._build_slice()
                    return None
                except sqlite3.DatabaseError:
                    # rolled back: what kept readers read is not in the index, so they go (the
                    # files they followed are read whole when the batch is tried again)
                    self._drop_tailers()
                    raise
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == LOCKED_RETRIES or self._stopped:
                    return exc
                log.info("search index %s busy (%s): trying the batch again", self.path, exc)
                time.sleep(0.05 * (attempt + 1))
            except sqlite3.DatabaseError as exc:
                return exc
        return None

    def _apply(self, items: list[Any]) -> None:
        db = self._db
        assert db is not None
        barriers: list[_Barrier] = []
        paths: list[str] = []
        db.execute("BEGIN")
        try:
            for item in _coalesced(items):
                if self._stopped and item is not None:
                    continue  # closing: only the end marker is still to be handled
                if item is None:
                    self._stopped = True
                elif item == "rebuild":
                    db.execute("COMMIT")
                    self._reset()
                    fresh = self._db
                    assert fresh is not None
                    db = fresh
                    db.execute("BEGIN")
                elif isinstance(item, _Barrier):
                    barriers.append(item)
                elif isinstance(item, _Append):
                    self._apply_append(db, item, paths)
                elif isinstance(item, _Rescan):
                    self._rescan(db, item)
                else:
                    paths.append(item)
                # In order: a rewrite reported before an append must be read before the append
                # records the file's new signature (or the rewrite would look indexed).
                while paths:
                    self._reindex(db, paths.pop(0))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._applied += sum(1 for item in items if isinstance(item, (_Append, _Rescan, str)))
        for barrier in barriers:
            if barrier.sync and not self._building:  # during the first build: answer from it
                self._look()
                while self._pending:
                    self._build_slice()
            barrier.done.set()

    def _apply_append(self, db: sqlite3.Connection, item: _Append, paths: list[str]) -> None:
        sig = None
        if item.expected_size is not None:
            now = stat_signature(item.path)
            if now is not None and now.size == item.expected_size:
                sig = now
        self._drop_tailer(item.path)  # an open session feeds it now: a kept reader falls behind
        if not ix.add_entries(db, item.path, item.entries, item.leaf, item.name, sig):
            paths.append(item.path)  # not indexed yet (new, or excluded): read it whole

    def _rescan(self, db: sqlite3.Connection, item: _Rescan) -> None:
        try:
            files = list(item.files())
        except Exception as exc:  # an unreadable database: what is indexed of it stays
            log.info("search: cannot list the sessions of %s (%s)", item.root, exc)
            return
        seen: set[str] = set()
        for file in files:
            sig = self._signature(file)
            if sig is None or self._excluded(file):
                continue
            seen.add(file.path)
            if ix.stored_signature(db, file.path) != sig:
                self._read(db, file, sig)
        for (path,) in db.execute("SELECT path FROM files WHERE root = ?", (item.root,)).fetchall():
            if path not in seen:
                ix.remove_file(db, path)

    def _signature(self, file: SourceFile) -> Signature | None:
        return file.signature if file.signature is not None else self.source.signature(file.path)

    def _excluded(self, file: SourceFile, cwd: str | None = None) -> bool:
        for pattern in self.exclude:
            if pattern == file.root or fnmatch.fnmatch(file.path, pattern):
                return True
            if cwd and (fnmatch.fnmatch(cwd, pattern) or fnmatch.fnmatch(cwd + "/", pattern)):
                return True
        return False

    def _reindex(self, db: sqlite3.Connection, path: str) -> None:
        """Bring one path's rows in line with the file: nothing when its signature did not
        move, its grown tail when it only grew (:meth:`_read_tail`), else read whole."""
        file = self.source.classify(path)
        sig = None if file is None else self._signature(file)
        if file is None or sig is None or self._excluded(file):
            self._drop_tailer(path)
            ix.remove_file(db, path)
            return
        stored = ix.stored_signature(db, path)
        if stored == sig:
            return
        if stored is not None and self._read_tail(db, path, stored, sig):
            return
        self._read(db, file, sig, keep=True)

    def _read_tail(self, db: sqlite3.Connection, path: str, stored: Signature, sig: Signature) -> bool:
        """Index what a file kept open by the writer grew by; ``False`` when it must be read
        whole instead: no reader kept, the file replaced or shrunk, its indexed bytes changed
        (the CRC of the 4 KiB before the indexed size), or its reader says so."""
        tailer = self._tailers.get(path)
        if tailer is None:
            return False
        grown = stored.size >= 0 and stored.ino == sig.ino and sig.size >= stored.size
        if not grown or not _tail_unchanged(path, stored):
            self._drop_tailer(path)
            return False
        try:
            result = tailer.ingest()
        except Exception as exc:  # the reader's failure: read the file whole (which says why)
            log.info("search: cannot follow %s (%s); reading it again", path, exc)
            result = None
        if result is None or result.reload_required is not None:
            self._drop_tailer(path)
            return False
        self._tailers.move_to_end(path)
        self.bytes_read += result.bytes_read
        data, start = getattr(result, "data", None), getattr(result, "start", -1)
        if self.on_tail is not None and data and start >= 0:
            self.on_tail(path, start, data)
        leaf = tailer.leaf_id if type(tailer.leaf_id) is str else None
        if not ix.add_entries(db, path, list(result.entries), leaf, tailer.name, sig):
            self._drop_tailer(path)
            return False
        return True

    def _drop_tailer(self, path: str) -> None:
        tailer = self._tailers.pop(path, None)
        if tailer is not None:
            tailer.close()

    def _drop_tailers(self) -> None:
        while self._tailers:
            self._tailers.popitem(last=False)[1].close()

    def _read(self, db: sqlite3.Connection, file: SourceFile, sig: Signature, *, keep: bool = False) -> int:
        """Index a file whole. ``keep``: its reader stays open as one of the writer's
        :data:`TAILERS` (a file an event reported changing is likely to grow again)."""
        self._drop_tailer(file.path)
        keep = keep and os.path.isfile(file.path)  # a file (a database's session is read whole)
        try:
            session = self.source.open(file, follow=keep)
        except Exception as exc:  # a reader's failure is that file's, never the engine's
            log.info("search: cannot read %s (%s); not indexed", file.path, exc)
            ix.remove_file(db, file.path)
            return 0
        self.bytes_read += sig.size
        try:
            meta = self._meta(file, *ix.session_fields(session))
            if meta is None:
                ix.remove_file(db, file.path)
                return 0
            added = ix.replace_file(db, meta, sig, session.entries())
        except BaseException:
            session.close()
            raise
        if keep:
            self._tailers[file.path] = session
            while len(self._tailers) > TAILERS:
                self._tailers.popitem(last=False)[1].close()
        else:
            session.close()
        return added

    def _read_ahead(self, file: SourceFile) -> ReadFile | None:
        """What :meth:`_read` makes of a pending file, without the database (the read-ahead
        thread's work; ``None``: it is gone)."""
        path = file.path
        sig = self.source.signature(path)
        if sig is None:
            return None
        session = self.source.open(file)
        try:
            fields = ix.session_fields(session)
            docs, nodes = ix.file_docs(session.entries())
        finally:
            session.close()
        made = self._read_file(file, sig, *fields, docs, nodes)
        if made.meta is not None:
            made.prepared = ix.prepare(made.docs)
        return made

    def _read_file(
        self,
        file: SourceFile,
        sig: Signature,
        session_id: str,
        cwd: str,
        name: str,
        leaf: str | None,
        docs: list[Doc],
        nodes: list[tuple[str, str | None]],
        prepared: ix.Prepared | None = None,
    ) -> ReadFile:
        """A read-ahead's result (in this process or the worker's): ``meta`` ``None`` when the
        file is excluded by its cwd."""
        meta = self._meta(file, session_id, cwd, name, leaf)
        if meta is None:
            return ReadFile(file.path, sig, None, [], [])
        return ReadFile(file.path, sig, meta, docs, nodes, prepared)

    def _meta(
        self, file: SourceFile, session_id: str, cwd: str, name: str, leaf: str | None
    ) -> FileMeta | None:
        """A file's row besides its texts (:func:`.index.session_fields`), ``None`` when its cwd
        is excluded."""
        if self._excluded(file, cwd):
            return None
        return FileMeta(file.path, file.root, file.agent, session_id, cwd, name, leaf)

    def _insert_read(self, db: sqlite3.Connection, read: ReadFile) -> None:
        self._drop_tailer(read.path)
        self.bytes_read += read.sig.size
        if read.meta is None:
            ix.remove_file(db, read.path)
        else:
            ix.replace_docs(db, read.meta, read.sig, read.docs, read.nodes, read.prepared)

    def _start_read_ahead(
        self, files: list[SourceFile], changed: list[tuple[SourceFile, int]]
    ) -> ReadAhead[SourceFile]:
        """The build's read-ahead: in a process of its own (:mod:`.producer`) when the source
        reads its files with :mod:`.readers` and there is enough to read, else a thread."""
        agents: frozenset[str] = getattr(self.source, "worker_agents", frozenset())
        if sum(size for file, size in changed if file.agent in agents) >= WORKER_MIN_BYTES:
            from .producer import WORKERS, WorkerReadAhead  # noqa: PLC0415 - only a build needs it

            try:
                return WorkerReadAhead(files, self._read_file, agents, WORKERS)
            except OSError as exc:
                log.warning("search: cannot start the build's reading process (%s)", exc)
        return ReadAhead(files, self._read_ahead)

    def _stop_read_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None

    def _look(self) -> None:
        """Compare every file with the index: forget what went, queue what changed (oldest first)."""
        db = self._db
        assert db is not None
        stored = ix.signatures(db)
        cwds = dict(db.execute("SELECT path, cwd FROM files").fetchall())
        seen: set[str] = set()
        changed: list[tuple[int, SourceFile]] = []
        sizes: list[tuple[SourceFile, int]] = []
        for file in self.source.files():
            sig = self._signature(file)
            if sig is None or self._excluded(file, cwds.get(file.path)):
                continue  # not seen: what the index holds of it goes (an exclude added since)
            seen.add(file.path)
            if stored.get(file.path) != sig:
                changed.append((sig.mtime, file))
                sizes.append((file, sig.size))
        gone = [p for p in stored if p not in seen]
        if gone:
            db.execute("BEGIN")
            for path in gone:
                ix.remove_file(db, path)
            db.execute("COMMIT")
        changed.sort(key=lambda x: x[0])
        self._pending = [f for _, f in reversed(changed)]  # popped from the end: oldest first
        self._stop_read_ahead()
        if len(self._pending) > 1:
            self._ahead = self._start_read_ahead(list(reversed(self._pending)), sizes)
        self._building = bool(self._pending)
        merging(db, building=self._building)
        self.progress = (0, len(self._pending)) if self._pending else None
        if self._pending:
            log.info("search: indexing %d session files", len(self._pending))

    def _build_slice(self) -> None:
        db = self._db
        assert db is not None
        deadline = time.monotonic() + BUILD_SLICE_S
        done = 0
        db.execute("BEGIN")
        try:
            with ix.deferred_vocab(db):
                while self._pending and time.monotonic() < deadline and not self._stopped:
                    if done and not self._queue.empty():  # events first (after one file: no starving)
                        break
                    done += 1
                    file = self._pending.pop()
                    ahead = (
                        None if self._ahead is None else self._ahead.take(file.path, lambda: self._stopped)
                    )
                    sig = self.source.signature(file.path)  # now, not when it was listed
                    if sig is None:
                        ix.remove_file(db, file.path)
                    elif ix.stored_signature(db, file.path) == sig:  # an event read it already
                        pass
                    elif ahead is not None and ahead.sig == sig:  # read ahead, and unchanged since
                        self._insert_read(db, ahead)
                    else:
                        self._read(db, file, sig)
                    if self.progress is not None:
                        self.progress = (self.progress[0] + 1, self.progress[1])
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        if self.progress is not None and self.on_progress is not None:
            self.on_progress(*self.progress)
        if not self._pending:
            self._stop_read_ahead()
            if self._building:
                log.info("search: index built (%d session files)", self.progress[1] if self.progress else 0)
                merging(db, building=False)
                self._optimize()  # still "indexing" meanwhile: the CLI's bar waits for it too
            self._building = False
            self.progress = None

    def _optimize(self) -> None:
        """Merge each FTS5 index into one segment after a build.

        A build commits every :data:`BUILD_SLICE_S`, and every commit leaves FTS5 a segment;
        a query then walks each term's list in all of them. Queries keep reading the previous
        snapshot meanwhile (WAL); the log is truncated afterwards (it held a copy of the index).
        """
        db = self._db
        assert db is not None
        started = time.monotonic()
        for table in ("words", "vgrams"):
            db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        db.executescript("PRAGMA incremental_vacuum;")  # stepped to the end: every free page
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        log.info("search: index optimized in %.1f s", time.monotonic() - started)

    def _reset(self) -> None:
        """Start over from an empty index (corrupt, or asked to)."""
        self._stop_read_ahead()
        self._drop_tailers()
        if self._db is not None:
            self._db.close()
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        discard(self.path)
        self._open()
        self._look()
