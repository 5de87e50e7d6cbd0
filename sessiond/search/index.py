"""Writes and reads of the index file, synchronous: what the writer thread and the queries run.

A session file's rows are replaced whole when the file was read again (rewritten, truncated,
first seen, changed while sessiond was not running) and added to when entries were appended
(an entry id already present is replaced, so a batch seen twice — by an append and by the read
that followed — indexes once). Queries rank by bm25 with recency breaking ties, over at most
:data:`MATCH_CAP` matches (the newest rows first), each query within :data:`QUERY_BUDGET_S`
seconds of SQLite work: what keeps a one-letter prefix over a gigabyte from stalling the daemon.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import orjson

from . import blocks
from . import nodes as entry_nodes
from .extract import ROLES, Doc
from .extract import file_docs as file_docs  # noqa: PLC0414 - the writer's input, made by readers too
from .query import MIN_SUBSTRING, Piece, substring_pieces

MATCH_CAP: Final = 1000
"""Matches a query ranks at most (``total`` is capped there)."""
QUERY_BUDGET_S: Final = 1.0
"""Seconds of SQLite work a query may take before it answers with what it found."""
BRANCH_CACHE: Final = 64
"""Sessions whose current branch (a set of entry ids) a query connection keeps."""
SNIPPET_TOKENS: Final = 16
SNIPPET_CHARS: Final = 160
START, END = "\x02", "\x03"
_STRIP_MARKERS: Final = str.maketrans({START: " ", END: " "})


@dataclass(frozen=True, slots=True)
class Signature:
    """What a file looked like when it was indexed (``size`` -1: read it again). ``tail`` is a
    CRC-32 of its last 4 KiB: a file rewritten to the same size within the clock's granularity
    can get the inode just freed (seen in the property test), and only its bytes tell it."""

    ino: int
    size: int
    mtime: int
    tail: int


@dataclass(slots=True)
class FileMeta:
    path: str
    root: str
    agent: str
    session_id: str
    cwd: str
    title: str
    leaf: str | None


@dataclass(frozen=True, slots=True)
class Filters:
    agent: str | None = None
    root: str | None = None
    cwd: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    role: str | None = None
    session_id: str | None = None


@dataclass(slots=True)
class Hit:
    session_id: str
    entry_id: str
    agent: str
    root: str
    cwd: str
    path: str
    timestamp_ms: int
    role: str
    kind: str
    title: str
    snippet: str
    on_branch: bool


@dataclass(slots=True)
class Page:
    hits: list[Hit] = field(default_factory=list)
    total: int = 0
    next_offset: int | None = None
    cut: bool = False
    """The query used its seconds: the hits are those found until then."""


def first_user_text(docs: Sequence[Doc], limit: int = 80) -> str:
    for doc in docs:
        if doc.role == "user" and doc.kind == "text":
            flat = " ".join(doc.text.split())
            return flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return ""


def signatures(db: sqlite3.Connection) -> dict[str, Signature]:
    return {
        p: Signature(i, s, m, t)
        for p, i, s, m, t in db.execute("SELECT path, ino, size, mtime, tail FROM files")
    }


def stored_signature(db: sqlite3.Connection, path: str) -> Signature | None:
    row = db.execute("SELECT ino, size, mtime, tail FROM files WHERE path = ?", (path,)).fetchone()
    return None if row is None else Signature(*row)


def _fid(db: sqlite3.Connection, path: str) -> int | None:
    row = db.execute("SELECT fid FROM files WHERE path = ?", (path,)).fetchone()
    return None if row is None else int(row[0])


class Prepared(NamedTuple):
    """What the writer inserts of a batch of docs that needs no database (:func:`prepare`):
    made beside the writer by the first build's read-ahead (another process: :mod:`.producer`),
    so the writer's own work is its SQL. Plain values only (it crosses a pipe by ``marshal``)."""

    texts: list[str]
    """Each doc's text without snippet markers."""
    plain: list[bool]
    blocks: list[tuple[int, bytes]]
    """Each block (:func:`.blocks.pack`) with the place of its first text in the batch."""
    tokens: dict[str, int]
    """The texts' token counts (:func:`.blocks.token_counts`)."""


def prepare(docs: Sequence[Doc]) -> Prepared:
    """The database-free part of inserting ``docs`` (in :func:`_insert` when not made before)."""
    texts = [d[3] for d in docs]
    if any(START in t or END in t for t in texts):
        texts = [_unmarked(t) for t in texts]
    # blocks.encode and blocks.plain's ASCII case inline: a first build calls them on every text
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    plain = blocks.plain
    return Prepared(
        texts,
        [True if t.isascii() else plain(t) for t in texts],
        [(start, blocks.pack(part)) for start, part in blocks.split(0, encoded)],
        blocks.token_counts(encoded),
    )


def _insert(
    db: sqlite3.Connection,
    fid: int,
    docs: list[Doc],
    nodes: list[tuple[str, str | None]],
    known: entry_nodes.FileNodes,
    prepared: Prepared | None = None,
) -> None:
    """Add texts and entries to file ``fid`` whose stored entries are ``known`` (updated);
    ``prepared``: :func:`prepare` of ``docs`` made already (else made here)."""
    first = db.execute("SELECT coalesce(max(id), 0) FROM docs").fetchone()[0] + 1 if docs else 0
    text_ids = _text_ids(docs, first)
    listed = {e for e, _ in nodes}
    unlisted = [e for e in text_ids if e not in listed]
    if unlisted:
        # texts whose entry the producer left out of ``nodes`` (file_docs never does): listed
        # (a known one keeps its parent, a new one has none), its texts found by a scan of the
        # file's when it is sent again (it may have texts from other inserts too)
        nodes = nodes + [(e, known.parents.get(e)) for e in unlisted]
        text_ids.update((e, (text_ids[e][0], -1)) for e in unlisted)
    entry_nodes.write(db, fid, known, nodes, text_ids)
    if docs:
        texts, plain, packed, tokens = prepare(docs) if prepared is None else prepared
        place = known.index
        db.executemany(
            "INSERT INTO docs(id, fid, ts, ent, role, kind, plain) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (first + i, fid, d.timestamp_ms, place[d.entry_id], _code(d.role), _code(d.kind), p)
                for i, (d, p) in enumerate(zip(docs, plain, strict=True))
            ],
        )
        db.executemany("INSERT INTO words(rowid, text) VALUES (?, ?)", enumerate(texts, first))
        # Blocks from here up hold only texts gone since (an entry indexed again leaves its
        # block until its file goes), and ids start above every text left: without this, a
        # text given the id after such a block's first would be read from it.
        db.execute("DELETE FROM blocks WHERE id >= ?", (first,))
        db.executemany(
            "INSERT INTO blocks(id, fid, data) VALUES (?, ?, ?)",
            [(first + start, fid, data) for start, data in packed],
        )
        _count_tokens(db, tokens)
        db.execute(
            "UPDATE files SET lo = coalesce(lo, ?), hi = ? WHERE fid = ?", (first, first + len(docs) - 1, fid)
        )


def _text_ids(docs: list[Doc], first: int) -> dict[str, tuple[int, int]]:
    """Each entry's texts as row ids (``docs[i]`` gets ``first + i``): the first and how many,
    -1 when they are not consecutive (a producer that interleaved entries' texts)."""
    out: dict[str, tuple[int, int]] = {}
    for i, d in enumerate(docs):
        found = out.get(d.entry_id)
        if found is None:
            out[d.entry_id] = (first + i, 1)
        elif found[1] > 0 and found[0] + found[1] == first + i:
            out[d.entry_id] = (found[0], found[1] + 1)
        else:
            out[d.entry_id] = (found[0], -1)
    return out


_DEFERRED: dict[int, Counter[str]] = {}
"""Per connection (``id``) inside :func:`deferred_vocab`: token counts not written yet."""


@contextmanager
def deferred_vocab(db: sqlite3.Connection) -> Iterator[None]:
    """Within a transaction: the vocabulary's counts of the texts inserted meanwhile are summed
    and written once, when the block ends without an error (before its commit). The files of a
    build share most of their tokens: one upsert per token per file was a sixth of the build."""
    pending: Counter[str] = Counter()
    _DEFERRED[id(db)] = pending
    try:
        yield
    finally:
        del _DEFERRED[id(db)]
    _add_tokens(db, pending)


def _count_tokens(db: sqlite3.Connection, counts: Mapping[str, int]) -> None:
    """Add the tokens of inserted texts to the vocabulary (or to what :func:`deferred_vocab`
    will write)."""
    pending = _DEFERRED.get(id(db))
    if pending is not None:
        pending.update(counts)
    else:
        _add_tokens(db, counts)


_UPSERT_VOCAB: Final = (
    "INSERT INTO vocab(tok, n) VALUES (?, ?) ON CONFLICT(tok) DO UPDATE SET n = n + excluded.n"
)
_UPSERT_VOCAB_JSON: Final = (
    "INSERT INTO vocab(tok, n) SELECT key, value FROM json_each(?) WHERE true"
    " ON CONFLICT(tok) DO UPDATE SET n = n + excluded.n"
)
""":data:`_UPSERT_VOCAB` for every token at once, the counts as one JSON object (``WHERE true``:
SQLite's rule for an upsert from a ``SELECT``). Tokens are ASCII letters and digits or
non-ASCII text: their keys come back from ``json_each`` exactly as written, in the object's
order (the new tokens get their ids in the same order). ``executemany`` bound each row from
Python and let go of the GIL and took it back around each step: 4.5 µs per token in the
daemon's writer against 1.5 (a batch of appends upserts ~1,500), and every take of the GIL
one more chance to hold up the event loop's thread (docs/append-path.md, fourth pass)."""


def _add_tokens(db: sqlite3.Connection, counts: Mapping[str, int]) -> None:
    """Add counts to the vocabulary, new tokens to its trigram index."""
    if not counts:
        return
    before = db.execute("SELECT coalesce(max(id), 0) FROM vocab").fetchone()[0]
    try:
        packed = orjson.dumps(counts)
    except TypeError:  # a token with a lone surrogate (JSON cannot carry it), or not a dict
        db.executemany(_UPSERT_VOCAB, counts.items())
    else:
        db.execute(_UPSERT_VOCAB_JSON, (packed,))
    db.execute("INSERT INTO vgrams(rowid, tok) SELECT id, tok FROM vocab WHERE id > ?", (before,))


def _uncount_tokens(db: sqlite3.Connection, counts: Mapping[str, int]) -> None:
    """Take the tokens of deleted texts off the vocabulary: a token no text holds any more
    goes (a deleted session leaves nothing behind, not even its words)."""
    if not counts:
        return
    pending = _DEFERRED.get(id(db))
    if pending:  # written first: a count taken off must be there
        _add_tokens(db, pending)
        pending.clear()
    db.executemany("UPDATE vocab SET n = n - ? WHERE tok = ?", [(n, t) for t, n in counts.items()])
    gone: list[tuple[int, str]] = []
    toks = list(counts)
    for i in range(0, len(toks), 500):
        part = toks[i : i + 500]
        gone += db.execute(
            f"SELECT id, tok FROM vocab WHERE tok IN ({','.join('?' * len(part))}) AND n <= 0", part
        ).fetchall()
    if gone:
        db.executemany("INSERT INTO vgrams(vgrams, rowid, tok) VALUES ('delete', ?, ?)", gone)
        db.executemany("DELETE FROM vocab WHERE id = ?", [(i,) for i, _ in gone])


_NAMES: Final = (*ROLES, "text", "thinking", "toolCall", "error", "summary", "title", "label")
"""Roles and kinds a ``docs`` row keeps as their index here (a byte, where the name took 4-17:
a sixth of the row); any other name is kept as it is."""
_CODES: Final = {name: i for i, name in enumerate(_NAMES)}


def _code(name: str) -> int | str:
    return _CODES.get(name, name)


def _name(code: int | str) -> str:
    return _NAMES[code] if type(code) is int else str(code)


def _unmarked(text: str) -> str:
    """The text without the snippet markers (they would fake highlights); ``translate`` only
    when one is there: it costs 4% of a build on texts that never hold one."""
    return text.translate(_STRIP_MARKERS) if START in text or END in text else text


def _delete_docs(db: sqlite3.Connection, where: str, args: tuple[Any, ...]) -> None:
    """Remove docs, their word-index rows (external content: FTS5 is told the old text) and
    their tokens' counts. ``where`` is on ``docs``. Their blocks stay until their file goes
    (:func:`_delete_file_rows`): an entry indexed again leaves its old text in its block."""
    old = db.execute(
        f"SELECT id, text FROM texts WHERE id IN (SELECT id FROM docs WHERE {where})", args
    ).fetchall()
    if old:
        db.executemany("INSERT INTO words(words, rowid, text) VALUES ('delete', ?, ?)", old)
        _uncount_tokens(db, blocks.token_counts(blocks.encode(t) for _, t in old))
    db.execute(f"DELETE FROM docs WHERE {where}", args)


_FILE_DOCS: Final = (
    "id IN (SELECT d.id FROM blocks b JOIN docs d ON d.id >= b.id AND d.id < "
    "coalesce((SELECT min(n.id) FROM blocks n WHERE n.id > b.id), 1 << 62) WHERE b.fid = ? AND d.fid = ?)"
)
"""``docs`` of a file (its fid twice), found through its blocks: ``docs`` has no index by file
or entry (version 7's, by file and entry id, was 0.10x the text). A live text lies in the
block with the greatest id not above its own, written by the same insert, so of its file; the
rows between a file's blocks and the next blocks are its texts (or ones gone). ``files.lo``/
``hi`` would bound them too, but a file appended to after others were read spans theirs."""


def _delete_file_rows(db: sqlite3.Connection, fid: int) -> None:
    """Everything the index holds of a file's texts and entries (its ``files`` row stays)."""
    _delete_docs(db, _FILE_DOCS, (fid, fid))
    db.execute("DELETE FROM blocks WHERE fid = ?", (fid,))
    db.execute("DELETE FROM nodes WHERE fid = ?", (fid,))


_FILE_COLUMNS: Final = (
    "root",
    "agent",
    "session_id",
    "cwd",
    "title",
    "leaf",
    "ino",
    "size",
    "mtime",
    "tail",
    "lo",
    "hi",
    "tip",
)
_UPSERT_FILE: Final = (
    f"INSERT INTO files(path, {', '.join(_FILE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(_FILE_COLUMNS) + 1))}) "
    f"ON CONFLICT(path) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _FILE_COLUMNS)}"
)
"""One statement for a file's row, new or read again (its ``fid`` stays: its nodes and docs
were removed first)."""


def replace_file(db: sqlite3.Connection, meta: FileMeta, sig: Signature, entries: Iterable[Any]) -> int:
    """Index a session file whole (its previous rows, if any, go first). Returns the docs added."""
    return replace_docs(db, meta, sig, *file_docs(entries))


def session_fields(session: Any) -> tuple[str, str, str, str | None]:
    """A read session's id, cwd, name and leaf as a file's row keeps them (the writer's own
    read, the read-ahead thread and the build's reading processes take them alike)."""
    leaf = session.leaf_id if type(session.leaf_id) is str else None
    return str(session.id), session.cwd or "", session.name or "", leaf


def replace_docs(
    db: sqlite3.Connection,
    meta: FileMeta,
    sig: Signature,
    docs: list[Doc],
    nodes: list[tuple[str, str | None]],
    prepared: Prepared | None = None,
) -> int:
    """:func:`replace_file` with the entries' texts made already (:func:`file_docs`), and
    maybe what of them needs no database (:func:`prepare`)."""
    title = meta.title or first_user_text(docs)
    fid = _fid(db, meta.path)
    if fid is not None:
        _delete_file_rows(db, fid)
    db.execute(
        _UPSERT_FILE,
        (
            meta.path,
            meta.root,
            meta.agent,
            meta.session_id,
            meta.cwd,
            title,
            meta.leaf,
            *_sig_values(sig),
            None,  # lo and hi: set as its texts are inserted
            None,
            chain_tip(nodes, None),
        ),
    )
    if fid is None:
        fid = _fid(db, meta.path)
        assert fid is not None
    _insert(db, fid, docs, nodes, entry_nodes.FileNodes(), prepared)
    return len(docs)


def chain_tip(nodes: Sequence[tuple[str, str | None]], start: str | None) -> str | None:
    """The last entry of ``nodes`` when each one's parent is the entry before it (the first
    one's, ``start``: ``None`` for a file's first entries), else ``None``. A file that is one
    chain has every entry on the branch that ends at its tip: most sessions, never rewound nor
    forked, whose hits then need no walk up their file's parents (1-1.3 ms a file of 1,000
    entries, 20-45 ms for a first page of hits in as many files)."""
    previous = start
    for entry_id, parent in nodes:
        if parent != previous:
            return None
        previous = entry_id
    return previous


def _sig_values(sig: Signature) -> tuple[int, int, int, int]:
    return sig.ino, sig.size, sig.mtime, sig.tail


def add_entries(
    db: sqlite3.Connection,
    path: str,
    entries: list[Any],
    leaf: str | None,
    name: str | None,
    sig: Signature | None,
) -> bool:
    """Index entries appended to an indexed file; ``False`` when the file is not indexed (the
    caller reads it whole instead). ``sig`` (the file as it is now) or ``None``: the stored one
    is marked stale, so the next look at the file reads it again."""
    row = db.execute("SELECT fid, size, title, tip FROM files WHERE path = ?", (path,)).fetchone()
    if row is None:
        return False
    fid, size, title, tip = row
    docs, nodes = file_docs(entries)
    known = entry_nodes.for_append(db, fid)
    present = [known.texts[e] for e, _ in nodes if e in known.index]
    if any(count < 0 for _, count in present):  # seen already, texts not in one run: a scan
        places = [known.index[e] for e, _ in nodes if e in known.index]
        marks = ",".join("?" * len(places))
        _delete_docs(db, f"{_FILE_DOCS} AND ent IN ({marks})", (fid, fid, *places))
    elif present:  # seen already (a read of the file that included it): its texts' row ids
        ids = [i for first, count in present for i in range(first, first + count)]
        if ids:
            _delete_docs(db, f"id IN ({','.join('?' * len(ids))}) AND fid = ?", (*ids, fid))
    _insert(db, fid, docs, nodes, known)
    if nodes:  # still one chain only if these go on from its tip
        tip = None if present or tip is None else chain_tip(nodes, tip)
    if name:
        title = name
    elif not title:
        title = first_user_text(docs)
    # a stale signature stays stale (size -1): the file must be read whole first
    ino, size, mtime, tail = (-1, -1, -1, -1) if sig is None or size < 0 else _sig_values(sig)
    db.execute(
        "UPDATE files SET leaf = ?, title = ?, ino = ?, size = ?, mtime = ?, tail = ?, tip = ? WHERE fid = ?",
        (leaf, title, ino, size, mtime, tail, tip, fid),
    )
    return True


def remove_file(db: sqlite3.Connection, path: str) -> None:
    fid = _fid(db, path)
    if fid is None:
        return
    _delete_file_rows(db, fid)
    db.execute("DELETE FROM files WHERE fid = ?", (fid,))


def remove_session(db: sqlite3.Connection, session_id: str) -> None:
    for (path,) in db.execute("SELECT path FROM files WHERE session_id = ?", (session_id,)).fetchall():
        remove_file(db, path)


# ---------------------------------------------------------------------- queries


def _file_filter_sql(f: Filters) -> tuple[str, list[Any]]:
    """The filters on a hit's file (``files f``): agent, root, cwd, session."""
    sql: list[str] = []
    args: list[Any] = []
    if f.agent is not None:
        sql.append("f.agent = ?")
        args.append(f.agent)
    if f.root is not None:
        sql.append("f.root = ?")
        args.append(f.root)
    if f.cwd is not None:
        cwd = f.cwd.rstrip("/") or "/"
        sql.append("(f.cwd = ? OR substr(f.cwd, 1, ?) = ?)")
        prefix = cwd if cwd.endswith("/") else cwd + "/"
        args += [cwd, len(prefix), prefix]
    if f.session_id is not None:
        sql.append("f.session_id = ?")
        args.append(f.session_id)
    return "".join(f" AND {s}" for s in sql), args


def _doc_filter_sql(f: Filters) -> tuple[str, list[Any]]:
    """The filters on a hit's text (``docs d``): role, since, until."""
    sql: list[str] = []
    args: list[Any] = []
    if f.role is not None:
        sql.append("d.role = ?")
        args.append(_code(f.role))
    if f.since_ms is not None:
        sql.append("d.ts >= ?")
        args.append(f.since_ms)
    if f.until_ms is not None:
        sql.append("d.ts <= ?")
        args.append(f.until_ms)
    return "".join(f" AND {s}" for s in sql), args


def _filter_sql(f: Filters) -> tuple[str, list[Any]]:
    file_where, file_args = _file_filter_sql(f)
    doc_where, doc_args = _doc_filter_sql(f)
    return file_where + doc_where, file_args + doc_args


class _Budget:
    """A progress handler interrupting SQLite once a query has used its seconds."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.expired = False

    def __call__(self) -> int:
        if time.monotonic() > self.deadline:
            self.expired = True
            return 1
        return 0


def _matches(db: sqlite3.Connection, sql: str, args: list[Any], budget: _Budget) -> list[tuple[Any, ...]]:
    db.set_progress_handler(budget, 4000)
    rows: list[tuple[Any, ...]] = []
    try:
        cur = db.execute(sql, args)
        while True:
            chunk = cur.fetchmany(256)
            if not chunk:
                break
            rows += chunk
    except sqlite3.OperationalError:
        if not budget.expired:
            raise
    finally:
        db.set_progress_handler(None, 0)
    return rows


_HIT_COLUMNS: Final = "d.id, d.ts, d.fid"
RANGED_FILES: Final = 500
"""A filter on the hit's file (cwd, agent, root, session) that leaves at most this many files,
and at most a fifth of them, is run file by file (:func:`_ranged_matches`)."""


def _ranged_matches(
    db: sqlite3.Connection, match: str, filters: Filters, budget: _Budget
) -> list[Any] | None:
    """A words query under a selective file filter, asked of the word index one span of row ids
    at a time; ``None`` when the filter is not selective enough (the caller scans instead).

    The plain plan walks the word's matches newest first and looks up each one's file until a
    page is full: for a common word in a small project that is every match of the word (73 ms
    on the 1 GiB benchmark). A file's texts get consecutive row ids when it is read (and later
    appends more runs of them; ``files.lo``/``hi`` bound them all), so the files the filter
    leaves span few ranges of row ids, and FTS5 seeks to a rowid range without reading the rest
    of the word's list. Ranges are merged where they overlap, walked newest first, each still
    checked against the filters (a range may hold another file's appended texts).

    The ranges are walked without ``bm25``, which is then computed in one more statement for
    the matches found: ``bm25`` first counts the texts holding each term over the whole index
    (its IDF), once per statement, and with one statement per range that count was most of the
    query (35 ranges, 17 ms, on the 1 GiB benchmark)."""
    file_where, file_args = _file_filter_sql(filters)
    if not file_where:
        return None
    found = db.execute(f"SELECT fid, lo, hi FROM files f WHERE 1{file_where}", file_args).fetchall()
    if len(found) > RANGED_FILES or len(found) * 5 > db.execute("SELECT count(*) FROM files").fetchone()[0]:
        return None
    fids = [fid for fid, _, _ in found]
    spans = sorted((lo, hi) for _, lo, hi in found if lo is not None)
    if not spans:
        return []
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    marks = ",".join("?" * len(fids))
    doc_where, doc_args = _doc_filter_sql(filters)
    sql = (
        f"SELECT {_HIT_COLUMNS} FROM words JOIN docs d ON d.id = words.rowid "
        f"WHERE words MATCH ? AND words.rowid BETWEEN ? AND ? AND d.fid IN ({marks}){doc_where} "
        "ORDER BY words.rowid DESC LIMIT ?"
    )
    rows: list[Any] = []
    for lo, hi in reversed(merged):
        rows += _matches(db, sql, [match, lo, hi, *fids, *doc_args, MATCH_CAP - len(rows)], budget)
        if len(rows) >= MATCH_CAP or budget.expired:
            break
    if not rows or budget.expired:
        return [(*r, 0.0) for r in rows]
    ids = [r[0] for r in rows]
    # ``+rowid``: checked on each row of the span, not handed to FTS5 (which would run the
    # whole query once per listed id, counting the IDF each time)
    scores = dict(
        _matches(
            db,
            f"SELECT rowid, bm25(words) FROM words WHERE words MATCH ? AND rowid BETWEEN ? AND ? "
            f"AND +rowid IN ({','.join('?' * len(ids))})",
            [match, min(ids), max(ids), *ids],
            budget,
        )
    )
    return [(*r, scores.get(r[0], 0.0)) for r in rows]


def _ranked_key(row: tuple[Any, ...]) -> tuple[float, int, int]:
    """A words hit ``(id, ts, fid, bm25)``'s place: best score first, then newest, then last read."""
    return (row[3], -row[1], -row[0])


def _unfiltered_page(
    db: sqlite3.Connection, match: str, offset: int, limit: int, budget: _Budget
) -> tuple[int, list[Any]]:
    """How many texts a words query without filters ranks, and its page, ordered by
    :func:`_ranked_key` as the filtered queries are, with fewer rows read.

    The matches are ranked by ``bm25`` alone, without joining each to its ``docs`` row for
    its time (a quarter of a phrase query on the 1 GiB benchmark: ~2 ms for 1,000 matches):
    times are read only for the rows whose score ties with one of the page's, the only ones
    whose order they can change (texts of equal score — the same short text sent again, say —
    go newest first). A row with no ``docs`` row (none in one snapshot) is left out."""
    sql = "SELECT rowid, bm25(words) FROM words WHERE words MATCH ? ORDER BY rowid DESC LIMIT ?"
    scored = _matches(db, sql, [match, MATCH_CAP], budget)
    if offset >= len(scored):
        return len(scored), []
    scored.sort(key=lambda r: r[1])
    lo, hi = offset, min(offset + limit, len(scored)) - 1
    while lo > 0 and scored[lo - 1][1] == scored[offset][1]:
        lo -= 1
    while hi + 1 < len(scored) and scored[hi + 1][1] == scored[hi][1]:
        hi += 1
    tied = scored[lo : hi + 1]
    placed = {
        int(r[0]): r[1:]
        for r in db.execute(
            f"SELECT id, ts, fid FROM docs WHERE id IN ({','.join('?' * len(tied))})", [r[0] for r in tied]
        )
    }
    rows = [(i, *placed[i], score) for i, score in tied if i in placed]
    rows.sort(key=_ranked_key)
    missing = len(tied) - len(rows)
    return len(scored) - missing, rows[offset - lo : offset - lo + limit]


def search(
    db: sqlite3.Connection,
    *,
    match: str | None,
    needle: str | None,
    filters: Filters,
    offset: int,
    limit: int,
    budget_s: float = QUERY_BUDGET_S,
    branch_cache: dict[tuple[Any, ...], Any] | None = None,
) -> Page:
    """One page of hits: ``match`` (an FTS5 expression, words mode) or ``needle`` (substring).

    Its statements read one snapshot (one read transaction): a file read again meanwhile
    gets new row ids, and a later statement of the same query must not see them (seen in the
    property test: hits that vanished between the match and their details)."""
    db.execute("BEGIN")
    try:
        return _search(
            db,
            match=match,
            needle=needle,
            filters=filters,
            offset=offset,
            limit=limit,
            budget_s=budget_s,
            branch_cache=branch_cache,
        )
    finally:
        if db.in_transaction:
            db.execute("COMMIT")


def _search(
    db: sqlite3.Connection,
    *,
    match: str | None,
    needle: str | None,
    filters: Filters,
    offset: int,
    limit: int,
    budget_s: float = QUERY_BUDGET_S,
    branch_cache: dict[tuple[Any, ...], Any] | None = None,
) -> Page:
    where, args = _filter_sql(filters)
    file_where = _file_filter_sql(filters)[0]
    budget = _Budget(budget_s)
    if match is not None and not where:
        total, chosen = _unfiltered_page(db, match, offset, limit, budget)
    else:
        if match is not None:
            ranged = _ranged_matches(db, match, filters, budget)
            if ranged is not None:
                rows = ranged
            else:
                files = " JOIN files f ON f.fid = d.fid" if file_where else ""
                sql = (
                    f"SELECT {_HIT_COLUMNS}, bm25(words) FROM words JOIN docs d ON d.id = words.rowid"
                    f"{files} WHERE words MATCH ?{where} ORDER BY words.rowid DESC LIMIT ?"
                )
                rows = _matches(db, sql, [match, *args, MATCH_CAP], budget)
            rows.sort(key=_ranked_key)
        else:
            assert needle is not None
            rows = _substring_matches(db, needle, filters, budget)
            rows.sort(key=lambda r: (-r[1], -r[0]))
        total, chosen = len(rows), rows[offset : offset + limit]
    page = Page(total=total, cut=budget.expired)
    if offset + limit < total:
        page.next_offset = offset + limit
    if not chosen:
        return page
    ids = [int(r[0]) for r in chosen]
    marks = ",".join("?" * len(ids))
    if match is not None:
        snippets = dict(
            db.execute(
                f"SELECT rowid, snippet(words, 0, ?, ?, '…', {SNIPPET_TOKENS}) FROM words "
                f"WHERE words MATCH ? AND rowid IN ({marks})",
                [START, END, match, *ids],
            ).fetchall()
        )
    else:
        assert needle is not None
        texts = dict(db.execute(f"SELECT id, text FROM texts WHERE id IN ({marks})", ids).fetchall())
        snippets = {i: substring_snippet(t, needle) for i, t in texts.items()}
    details = {
        int(r[0]): r[1:]
        for r in db.execute(
            "SELECT d.id, d.ent, d.role, d.kind, f.session_id, f.agent, f.root, f.cwd, f.path, "
            "f.title, f.leaf, f.ino, f.size, f.mtime, f.tail, f.tip "
            f"FROM docs d JOIN files f ON f.fid = d.fid WHERE d.id IN ({marks})",
            ids,
        )
    }
    branches: dict[int, set[str]] = {}
    entries: dict[int, _FileCache] = {}
    for doc_id, ts, fid, *_ in chosen:
        info = details.get(int(doc_id))
        if info is None:
            continue
        (ent, role, kind, session_id, agent, root, cwd, path, title, leaf, ino, size, mtime, tail, tip) = info
        known = entries.get(fid)
        if known is None:
            known = entries[fid] = _file_nodes(db, (fid, ino, size, mtime, tail), branch_cache)
        entry_id = known.nodes.ids[ent]
        if leaf is not None and leaf == tip:  # one chain, its leaf at the end: all of it
            branches.setdefault(fid, _WHOLE_FILE)
        elif fid not in branches:
            if known.leaf != leaf or known.branch is None:
                known.leaf, known.branch = leaf, known.nodes.branch(leaf)
            branches[fid] = known.branch
        page.hits.append(
            Hit(
                session_id,
                entry_id,
                agent,
                root,
                cwd,
                path,
                int(ts),
                _name(role),
                _name(kind),
                title,
                snippets.get(doc_id, ""),
                branches[fid] is _WHOLE_FILE or entry_id in branches[fid],
            )
        )
    return page


_PLAIN: Final = re.compile(r"[0-9A-Za-z]+")
MAX_TOKENS: Final = 256
"""Vocabulary tokens a substring query asks the word index for at most (one OR of them); a
piece held by more (``ing``) is common, and so are the texts holding it: they are walked
newest first instead, each checked, until :data:`MATCH_CAP` are found."""


def _substring_matches(db: sqlite3.Connection, needle: str, filters: Filters, budget: _Budget) -> list[Any]:
    """The texts holding ``needle`` (ASCII case ignored), newest first, at most
    :data:`MATCH_CAP`: candidates from the word index for the vocabulary tokens that can hold
    the query's rarest piece, each checked against its text; or, when no piece narrows the
    search enough, every text (newest first, within the query's seconds)."""
    where, args = _filter_sql(filters)
    files = " JOIN files f ON f.fid = d.fid" if _file_filter_sql(filters)[0] else ""
    best: list[str] | None = None
    fewest = 0
    words: list[str] = []
    for piece in substring_pieces(needle):
        if len(piece.gram) < MIN_SUBSTRING:
            if piece.starts and piece.ends and _PLAIN.fullmatch(piece.text):
                words.append(f'"{piece.text}"')  # a short word the query holds whole (a.b.c)
            continue
        found = _tokens(db, piece)
        if found is None:
            continue
        toks, held = found
        if not toks:
            return []  # no token holds this piece: no text holds the query
        if best is None or held < fewest:
            best, fewest = toks, held
    if best is not None:
        words.append("(" + " OR ".join(f'"{t}"' for t in best) + ")")  # tokens hold no ASCII punctuation
    if words:
        match = " AND ".join(words)
        # A plain text (blocks.plain: its words are runs of its ASCII letters and digits, as
        # written) that the word index finds for a token holding a query of ASCII letters and
        # digits only holds the query: the query lies inside one of the token's words, and the
        # text holds that word. Only the others are read and checked (a block to decompress
        # each: 70% of a query whose candidates were all checked).
        plain = _PLAIN.fullmatch(needle) is not None
        sql = (
            f"SELECT {_HIT_COLUMNS} FROM words JOIN docs d ON d.id = words.rowid{files} "
            "WHERE words MATCH ? AND CASE WHEN d.plain AND ? THEN 1 "
            f"ELSE instr(lower((SELECT text FROM texts WHERE id = d.id)), lower(?)) > 0 END{where} "
            "ORDER BY words.rowid DESC LIMIT ?"
        )
        return _matches(db, sql, [match, plain, needle, *args, MATCH_CAP], budget)
    sql = (
        f"SELECT {_HIT_COLUMNS} FROM docs d{files} JOIN texts t ON t.id = d.id "
        f"WHERE instr(lower(t.text), lower(?)) > 0{where} ORDER BY d.id DESC LIMIT ?"
    )
    return _matches(db, sql, [needle, *args, MATCH_CAP], budget)


def _tokens(db: sqlite3.Connection, piece: Piece) -> tuple[list[str], int] | None:
    """The vocabulary tokens that can hold ``piece`` where the query holds it, and how many
    texts hold them (a bound on the candidates); ``None`` when more than :data:`MAX_TOKENS`."""
    if piece.starts and piece.ends:  # a whole token
        row = db.execute("SELECT n FROM vocab WHERE tok = ?", (piece.text,)).fetchone()
        return ([], 0) if row is None else ([piece.text], int(row[0]))
    toks: list[str] = []
    held = 0
    cur = db.execute(
        "SELECT v.tok, v.n FROM vgrams JOIN vocab v ON v.id = vgrams.rowid WHERE vgrams.tok LIKE ?",
        (f"%{piece.gram}%",),
    )
    for tok, n in cur:
        if piece.text not in tok:
            continue
        if piece.starts and not tok.startswith(piece.text):
            continue
        if piece.ends and not tok.endswith(piece.text):
            continue
        if len(toks) >= MAX_TOKENS:
            return None
        toks.append(tok)
        held += n
    return toks, held


_WHOLE_FILE: Final[set[str]] = set()
"""Stands for every entry of a file that is one chain ending at its leaf (:func:`chain_tip`)."""


@dataclass(slots=True)
class _FileCache:
    """A file's entries as a query connection keeps them (see :func:`_file_nodes`), with the
    branch of the last leaf asked."""

    nodes: entry_nodes.FileNodes
    leaf: str | None = None
    branch: set[str] | None = None


def _file_nodes(
    db: sqlite3.Connection, key: tuple[int, int, int, int, int], cache: dict[tuple[Any, ...], Any] | None
) -> _FileCache:
    """A file's entries, from ``cache`` while the file's signature is the same (``key``: its
    fid, inode, size, mtime and tail; its rows change only with it, and a stale signature, size
    -1, is never cached)."""
    size = key[2]
    found = None if cache is None or size < 0 else cache.get(key)
    if isinstance(found, _FileCache):
        return found
    made = _FileCache(entry_nodes.load(db, key[0]))
    if cache is not None and size >= 0:
        if len(cache) >= BRANCH_CACHE:
            cache.pop(next(iter(cache)))
        cache[key] = made
    return made


def substring_snippet(text: str, needle: str, width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first occurrence of ``needle``, every occurrence in it
    marked (ASCII case ignored, as the query did)."""
    low, want = _ascii_lower(text), _ascii_lower(needle)
    first = low.find(want)
    if first < 0:
        return _flat(text[:width])
    start = max(0, first - (width - len(needle)) // 2)
    end = min(len(text), start + max(width, len(needle)))
    out: list[str] = ["…" if start > 0 else ""]
    i = start
    while i < end:
        j = low.find(want, i, end)
        if j < 0 or j + len(want) > end:
            out.append(_flat(text[i:end]))
            break
        out += [_flat(text[i:j]), START, text[j : j + len(want)], END]
        i = j + len(want)
    if end < len(text):
        out.append("…")
    return "".join(out)


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


_SPACES: Final = re.compile(r"\s+")


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text)
