"""Each indexed file's entries (their ids, in order) and their parents, a few compact rows a file.

A hit names its entry, and says whether the entry is on its session's current branch (the
parents walked up from the leaf); an append must know which of its entries the file holds
already. Kept as a row per entry (``(fid, entry_id, parent_id)``) that was 0.14x the indexed
text, and ``docs`` repeated the entry id with an index by file and entry id (another 0.10x +
0.05x). Now a file's entries are a list: ``docs.ent`` is an entry's place in it, and the list
is stored as a few ``nodes`` rows per file (one per insert: the whole file when it is read, the
new entries of each append), each a JSON array of ``[id, parent, first, count, …]`` where a
parent that is the entry before (most of them: a session is one chain) is ``0`` and ``first``,
``count`` are the row ids of the entry's texts in ``docs`` (``first`` as a difference from the
entry before's; ``count`` -1: not consecutive, found by a scan of the file's texts), zlib-
compressed when that is smaller. An entry sent again (an append and a read of the file both
had it) has its texts replaced by those ids: its file's texts are not indexed by entry. A
file read again replaces its rows; a file appended to many times has its rows joined into one
every :data:`MAX_CHUNKS` appends (cost per append: 1/64 of re-packing the file).

Read only for the few files a page of hits is in (cached by the query connection while the file
does not change), for ``onBranch`` in a file that is not one chain (``files.tip``), and by an
append (which entries of it are there already).
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

KEPT: Final = 8
"""Files whose entries the writer keeps decoded (see :func:`for_append`)."""
MAX_CHUNKS: Final = 64
"""Rows a file's entries may take before an append joins them into one."""
_RAW, _ZLIB = b"r", b"z"
_SAME: Final = 0
"""A parent that is the entry before it (in the file's order)."""
_NONE: Final = (0, 0)


@dataclass(slots=True)
class FileNodes:
    """A file's entries: ids in their order (an entry sent again keeps its place), each one's
    parent (the last one sent), and how many rows hold them."""

    ids: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    parents: dict[str, str | None] = field(default_factory=dict)
    texts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Each entry's texts: the first one's row id and how many (-1: not consecutive)."""
    last: str | None = None
    """The last id written (what the next row's ``0`` parents refer to)."""
    chunks: int = 0

    def add(self, nodes: list[tuple[str, str | None]], texts: dict[str, tuple[int, int]]) -> None:
        for entry_id, parent in nodes:
            if entry_id not in self.index:
                self.index[entry_id] = len(self.ids)
                self.ids.append(entry_id)
            self.parents[entry_id] = parent
            self.texts[entry_id] = texts.get(entry_id, _NONE)
            self.last = entry_id

    def branch(self, leaf: str | None) -> set[str]:
        """The entry ids from ``leaf`` up to the root (a parent cycle ends the walk)."""
        seen: set[str] = set()
        current = leaf
        while current is not None and current not in seen:
            seen.add(current)
            current = self.parents.get(current)
        return seen


def pack(
    nodes: list[tuple[str, str | None]], texts: dict[str, tuple[int, int]], previous: str | None
) -> bytes:
    """One row's data: ``nodes`` following ``previous`` (the file's last id written, or None),
    with their texts' row ids."""
    flat: list[Any] = []
    at = 0
    for entry_id, parent in nodes:
        first, count = texts.get(entry_id, _NONE)
        if not count:
            first = at
        flat += (entry_id, _SAME if parent == previous else parent, first - at, count)
        at = first
        previous = entry_id
    raw = orjson.dumps(flat)
    packed = zlib.compress(raw, 6)
    return _ZLIB + packed if len(packed) < len(raw) else _RAW + raw


def _unpack(data: bytes) -> list[Any]:
    body = zlib.decompress(data[1:]) if data[:1] == _ZLIB else data[1:]
    flat: list[Any] = orjson.loads(body)
    return flat


def load(db: sqlite3.Connection, fid: int) -> FileNodes:
    """The entries of file ``fid`` as its rows say (none: an empty list)."""
    out = FileNodes()
    ids, index, parents, texts = out.ids, out.index, out.parents, out.texts
    previous: str | None = None
    # FileNodes.add's loop inlined: the first append to a big file after a start decodes all
    # of it here (16,500 entries in 2 rows: 27 -> 19 ms)
    for (data,) in db.execute("SELECT data FROM nodes WHERE fid = ? ORDER BY id", (fid,)):
        flat = _unpack(data)
        out.chunks += 1
        at = 0
        for i in range(0, len(flat), 4):
            entry_id, parent, delta, count = flat[i : i + 4]
            if entry_id not in index:
                index[entry_id] = len(ids)
                ids.append(entry_id)
            parents[entry_id] = previous if parent == _SAME else parent
            at += delta
            texts[entry_id] = (at, count) if count else _NONE
            previous = entry_id
    out.last = previous
    return out


def write(
    db: sqlite3.Connection,
    fid: int,
    known: FileNodes,
    new: list[tuple[str, str | None]],
    texts: dict[str, tuple[int, int]],
) -> None:
    """Store ``new`` entries of file ``fid`` whose stored entries are ``known`` (updated here),
    with their texts (:attr:`FileNodes.texts`; an entry not there has none): one more row, or,
    past :data:`MAX_CHUNKS`, all of them again in one."""
    if not new:
        return
    try:
        _write(db, fid, known, new, texts)
    except BaseException:
        _KEPT.files.pop(fid, None)  # ``known`` may be half updated
        raise
    _after_write(db, fid, known)


def _write(
    db: sqlite3.Connection,
    fid: int,
    known: FileNodes,
    new: list[tuple[str, str | None]],
    texts: dict[str, tuple[int, int]],
) -> None:
    if known.chunks + 1 > MAX_CHUNKS:
        db.execute("DELETE FROM nodes WHERE fid = ?", (fid,))
        known.add(new, texts)
        rewritten = [(entry_id, known.parents[entry_id]) for entry_id in known.ids]
        db.execute("INSERT INTO nodes(fid, data) VALUES (?, ?)", (fid, pack(rewritten, known.texts, None)))
        known.chunks = 1
        known.last = rewritten[-1][0]
    else:
        db.execute("INSERT INTO nodes(fid, data) VALUES (?, ?)", (fid, pack(new, texts, known.last)))
        known.add(new, texts)
        known.chunks += 1


class _Kept(threading.local):
    """The writer's decoded files, per thread: its connection and, per fid, the file's entries
    with the state of its rows they were read at (highest row id, row count)."""

    def __init__(self) -> None:
        self.db: sqlite3.Connection | None = None
        self.files: OrderedDict[int, tuple[tuple[int, int], FileNodes]] = OrderedDict()


_KEPT = _Kept()


def _state(db: sqlite3.Connection, fid: int) -> tuple[int, int]:
    top, count = db.execute(
        "SELECT coalesce(max(id), 0), count(*) FROM nodes WHERE fid = ?", (fid,)
    ).fetchone()
    return int(top), int(count)


def for_append(db: sqlite3.Connection, fid: int) -> FileNodes:
    """File ``fid``'s entries for an append (then :func:`write`): kept decoded between appends
    (a file of 5,000 entries took 1.5 ms to decode, more than an append's whole budget), and
    checked against its rows' state first: a batch rolled back, or rows written another way,
    make it read again."""
    kept = _KEPT
    if kept.db is not db:
        kept.db, kept.files = db, OrderedDict()
    state = _state(db, fid)
    found = kept.files.get(fid)
    if found is not None and found[0] == state:
        kept.files.move_to_end(fid)
        return found[1]
    nodes = load(db, fid)
    kept.files[fid] = (state, nodes)
    while len(kept.files) > KEPT:
        kept.files.popitem(last=False)
    return nodes


def _after_write(db: sqlite3.Connection, fid: int, nodes: FileNodes) -> None:
    kept = _KEPT
    if kept.db is db and fid in kept.files:
        kept.files[fid] = (_state(db, fid), nodes)
