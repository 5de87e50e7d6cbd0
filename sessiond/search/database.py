"""The search index's SQLite file: where it lives, its schema and version, its modes.

One file, ``<store root>/search/index.sqlite3`` (the directory 0700, the file 0600: it holds
copies of people's conversations, as the store does; SQLite gives its ``-wal`` and ``-shm``
files the database's mode), in WAL mode so queries read while the writer thread writes.

Tables: ``files`` (one row per indexed session file: root, agent, session id, cwd, title, leaf,
the file's inode, size, mtime and a CRC-32 of its last 4 KiB when it was read, which is how
a restart knows what did not change; ``lo``/``hi``, the lowest and highest row id of its
texts: a filter on files walks the word index over those spans only; ``tip``, its last entry
when its entries form one chain from a root, in order: a hit in a file whose leaf is its tip is
on the current branch without walking the file's parents), ``docs`` (one narrow
row per searchable text of an entry: its file, time, its entry's place in the file's list of
entries (``ent``: the entry id is kept once, in ``nodes``), role and kind (no column type:
known names are kept as a small integer, :mod:`.index`), and whether the
text's words are only its ASCII letters and digits (:func:`.blocks.plain`) — what every
match is joined with, so it stays small enough to be cached),
``blocks`` (the texts themselves, many to a compressed row: :mod:`.blocks`; read through the
``texts`` view only for the page's snippets, substring checks and deletions), ``nodes``
(each file's entries in order with their parents, a few compact rows per file: :mod:`.nodes`;
read for the files of a page of hits, and by appends), ``words``, an FTS5 index over
``texts.text`` (external content :mod:`.index` keeps in step with the texts in bulk:
unicode61, accents removed; no prefix indexes: they made it 2.5 times bigger and its build
twice as slow for prefix queries that take 1-2 ms without them), ``vocab`` (each distinct
token of the texts with how often they hold it) and ``vgrams`` (a trigram index over the
tokens, ``detail=none``, ``columnsize=0``: substring mode asks it with LIKE for the tokens
that can hold the query, then the word index for the texts holding those tokens).

Version 7 replaced the trigram index over every text (version 6's ``grams``: 0.61x the text,
two thirds of SQLite's build work) by the one over the vocabulary, and the ``texts`` table (a
row per text: 1.18x the text) by compressed blocks; version 6 had moved the text out of
``docs``, and added ``files.lo``/``hi``/``tip``; the size each part takes is in
docs/search.md. Version 8 keeps entry ids once: version 7 had them in ``docs`` (with an index
of ``docs`` by file and entry id, 0.10x the text) and in ``nodes``, a row per entry with its
parent's id (0.14x); a file's texts are now found by its ``lo``/``hi`` span, an entry's (sent
again) by its place within that span. Its blocks hold 32 KiB of text (16 before).

A file SQLite cannot read, or one written by another schema version, is moved aside and built
again, with one log line saying why: the index is a cache of the sessions, never a source.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path
from typing import Final

from ..store.private import private_dir
from . import blocks

log = logging.getLogger("sessiond.search")

SCHEMA_VERSION: Final = 8
"""``PRAGMA user_version`` of the index this code writes; any other value is rebuilt."""
APPLICATION_ID: Final = 0x53534458
"""``PRAGMA application_id`` ("SSDX"): tells our index from any other SQLite file."""
FILE_NAME: Final = "index.sqlite3"

_SCHEMA: Final = """
CREATE TABLE files(
    fid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT NOT NULL,
    leaf TEXT,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime INTEGER NOT NULL,
    tail INTEGER NOT NULL,
    lo INTEGER,
    hi INTEGER,
    tip TEXT
);
CREATE INDEX files_session ON files(session_id);
CREATE TABLE docs(
    id INTEGER PRIMARY KEY,
    fid INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    ent INTEGER NOT NULL,
    role NOT NULL,
    kind NOT NULL,
    plain INTEGER NOT NULL
);
CREATE TABLE blocks(
    id INTEGER PRIMARY KEY,
    fid INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX blocks_file ON blocks(fid);
CREATE VIEW texts(id, text) AS
    SELECT d.id, sd_text(b.id, b.data, d.id) FROM docs d
    JOIN blocks b ON b.id = (SELECT max(id) FROM blocks WHERE id <= d.id);
CREATE TABLE vocab(
    id INTEGER PRIMARY KEY,
    tok TEXT NOT NULL UNIQUE,
    n INTEGER NOT NULL
);
CREATE TABLE nodes(
    id INTEGER PRIMARY KEY,
    fid INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX nodes_file ON nodes(fid);
CREATE VIRTUAL TABLE words USING fts5(
    text, content='texts', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE vgrams USING fts5(
    tok, content='vocab', content_rowid='id', tokenize='trigram', detail='none', columnsize=0
);
"""


BUILD_MERGING: Final = (("automerge", 16), ("crisismerge", 64), ("hashsize", 16 << 20))
"""The word index's FTS5 settings while a build inserts (see :func:`merging`)."""
STEADY_MERGING: Final = (("automerge", 4), ("crisismerge", 16), ("hashsize", 1 << 20))
"""FTS5's own defaults: what appends and queries run with once a build is done."""


def merging(db: sqlite3.Connection, *, building: bool) -> None:
    """Set how the FTS5 indexes flush and merge their segments: for a build, or steady.

    FTS5 turns the postings it holds in memory into a new segment at each commit and whenever
    they pass ``hashsize`` (1 MiB), and merges a level's segments once ``automerge`` (4) of
    them are there: a build's postings were written about four times over (flushes of 1 MiB
    every few hundred texts, then merges of merges), and its final ``optimize`` once more.
    With one segment per commit of a build slice and merges of 16, the build's inserts took
    a quarter less of the writer's CPU (the 1 GiB benchmark's inserts replayed alone: 21.7 →
    16.6 s on average, 5 and 4 runs) for the same index after ``optimize``; a query during
    the build reads at most 16 segments a level. The vocabulary's trigram index, which gets
    the new tokens of each build slice, likewise (its inserts 1.40 → 1.13 s). The settings
    are kept in the index (``words_config``, ``vgrams_config``): a build that stopped half
    way leaves them, and the next start sets them again for what it has left to build, or
    back to steady when nothing is left."""
    for table in ("words", "vgrams"):
        stored = dict(db.execute(f"SELECT k, v FROM {table}_config").fetchall())
        for key, value in BUILD_MERGING if building else STEADY_MERGING:
            if stored.get(key) != value:  # a query with watching off looks first: no write then
                db.execute(f"INSERT INTO {table}({table}, rank) VALUES (?, ?)", (key, value))


class IndexUnusable(Exception):
    """The file is not an index this code can use (corrupt, foreign, another version)."""


def _private_file(path: Path) -> None:
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def connect(path: Path, *, readonly: bool = False, reader: bool = False) -> sqlite3.Connection:
    """A connection in the index's settings (autocommit off: the caller commits batches).

    ``reader``: the queries' connection beside the writer thread's. It sets nothing that needs a
    write lock (the journal mode and auto-vacuum are the writer's), and refuses writes: a pragma
    that briefly took the write lock made the writer's transaction fail "database is locked",
    which it took for a damaged index."""
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
    else:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 5000")
    if reader:
        db.execute("PRAGMA query_only = 1")
    elif not readonly:
        # Takes effect on a new, empty file only (before WAL mode writes its first page): pages
        # the build's merged-away FTS5 segments held are then given back (incremental_vacuum).
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA cache_size = -16000")
    blocks.register(db)
    return db


def _check(db: sqlite3.Connection) -> None:
    """Raise :class:`IndexUnusable` unless ``db`` is an index of :data:`SCHEMA_VERSION`."""
    try:
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise IndexUnusable(f"SQLite cannot read it ({exc})") from None
    if app != APPLICATION_ID:
        raise IndexUnusable("it is not a sessiond search index")
    if version != SCHEMA_VERSION:
        raise IndexUnusable(f"it has schema version {version}, this sessiond writes {SCHEMA_VERSION}")
    if not {"files", "docs", "blocks", "vocab", "nodes", "words", "vgrams"} <= tables:
        raise IndexUnusable("tables are missing")


def discard(path: Path) -> None:
    """Remove the index file and SQLite's companions (a rebuild starts from nothing)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def open_index(path: Path) -> sqlite3.Connection:
    """The index at ``path``, created if missing, rebuilt (with a log line) if unusable."""
    existed = path.exists() and path.stat().st_size > 0
    _private_file(path)
    db: sqlite3.Connection | None = None
    if existed:
        try:
            db = connect(path)
            _check(db)
            return db
        except (IndexUnusable, sqlite3.DatabaseError) as exc:
            if db is not None:
                db.close()
            log.warning("search index %s is unusable (%s): rebuilding it from the sessions", path, exc)
            discard(path)
            _private_file(path)
    db = connect(path)
    try:
        db.executescript(_SCHEMA)
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db
