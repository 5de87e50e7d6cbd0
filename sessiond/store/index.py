"""The lazy index of a session file: what navigation needs in memory, bodies on demand.

Opening a 50 MB session must not hold 50 MB of parsed messages. Each line is parsed once,
reduced to a *light entry* — a dict with only the fields the tree, the context settings and
the choice of context entries read (type, id, parentId, timestamp, the message's role and
model, labels, ``firstKeptEntryId``, targets) — and dropped. Per line the index also keeps
the byte offset and length, and a one-line preview for tree views. Full entries are read back
with ``pread`` when a projection needs them, through a small cache bounded in bytes.

An append indexes only what an ordering or a check needs at once (the light entry, the tree,
the offset); the preview of an appended entry is made when a tree view first asks, from the
body the append left in the cache (or the file, if the cache was dropped meanwhile).

Light entries are plain dicts with Pi's key names, so the pure model (tree, settings,
``context_entries``) runs on them unchanged; only :meth:`SessionIndex.full` gives bodies.
"""

from __future__ import annotations

import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Final

from ..formats.pi import LoadDiagnostics, check_header, paused_gc, scan_lines
from ..model import entries as E
from ..model.js import UNDEFINED, key
from ..model.js_json import parse
from ..model.preview import entry_preview
from ..model.tree import SessionTree
from .memory import BUDGET, Holder, MemoryBudget
from .packed import PackedStrings

DEFAULT_CACHE_BYTES: Final = 16 * 1024 * 1024
_BATCH_MIN: Final = 32
"""Paths at least this long read their uncached bodies in spans, not one ``pread`` each."""
_SPAN_GAP: Final = 64 * 1024
_SPAN_MAX: Final = 8 * 1024 * 1024
_REPORT_BYTES: Final = 256 * 1024
_KEEP_READ: Final = 128
"""A :meth:`SessionIndex.path_reader` read of at most this many lines is kept in the cache."""

_LIGHT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    E.THINKING_LEVEL_CHANGE: ("thinkingLevel",),
    E.MODEL_CHANGE: ("provider", "modelId"),
    E.COMPACTION: ("firstKeptEntryId",),
    E.BRANCH_SUMMARY: ("fromId",),
    E.LABEL: ("targetId", "label"),
    E.SESSION_INFO: ("name",),
    E.CONTEXT_EDIT: ("targetId",),
    E.CUSTOM: ("customType",),
    E.CUSTOM_MESSAGE: ("customType",),
}
_MESSAGE: Final = E.MESSAGE
_ABSENT: Final = object()
"""A field an entry does not have (``dict.get``'s default where ``None`` is a value)."""
_NON_NULL: Final[dict[str, Any]] = {}
"""Stands for a ``context_edit`` replacement that is not ``null`` in a light entry."""


_ID_FIELDS: Final = frozenset(("parentId", "firstKeptEntryId", "fromId", "targetId"))
"""Light fields that name another entry: they share the string of that entry's id."""


class LightMaker:
    """Reduces full entries to light ones, sharing strings and message summaries between them.

    A field naming another entry (``parentId``, targets) takes the string object of that
    entry's own id, found in the tree the light entries go into, so an id is stored once
    however many entries name it, without a table of every id on the side. Other short
    values (types, labels, model names) repeat and are shared through a small table; ids are
    unique per entry and kept as parsed, and a timestamp is shared only with the entry before
    it (a table of every timestamp would cost more than it saves when they are unique).
    """

    def __init__(self, tree: SessionTree | None = None) -> None:
        self._messages: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
        self._strings: dict[str, str] = {}
        self._tree = tree
        self._named = None if tree is None else tree.lookup
        self._last_ts: Any = None

    def intern(self, value: Any) -> Any:
        """One string object per distinct value (for values that repeat)."""
        if type(value) is str:
            return self._strings.setdefault(value, value)
        return value

    def _ref(self, value: Any) -> Any:
        """The id string of the entry ``value`` names, when the tree has it."""
        if type(value) is str and self._tree is not None:
            target = self._tree.get(value)
            if type(target) is dict:
                own = target.get("id")
                if own == value:
                    return own
        return value

    def __call__(self, entry: Any) -> Any:
        # One lookup per field (a sentinel for "absent"), no call for the common fields: run
        # for every line by Session.open (issue 30).
        if type(entry) is not dict:
            return entry  # non-object lines are tiny and kept as they are
        light: dict[str, Any] = {}
        field = entry.get
        t = field("type", _ABSENT)
        if t is not _ABSENT:
            light["type"] = self._strings.setdefault(t, t) if type(t) is str else t
        value = field("id", _ABSENT)
        if value is not _ABSENT:
            light["id"] = value
        value = field("parentId", _ABSENT)
        if value is not _ABSENT:
            if type(value) is str and self._named is not None:  # _ref, inlined
                target = self._named(value)
                if type(target) is dict:
                    own = target.get("id")
                    if own == value:
                        value = own
                light["parentId"] = value
            else:
                light["parentId"] = self._ref(value)
        ts = field("timestamp", _ABSENT)
        if ts is not _ABSENT:
            if ts == self._last_ts and type(ts) is str:
                ts = self._last_ts  # entries written in the same second or millisecond
            light["timestamp"] = self._last_ts = ts
        if t == _MESSAGE:
            message = field("message", _ABSENT)
            if type(message) is dict:  # _message, inlined for the usual case
                field = message.get
                cache_key = (field("role", _ABSENT), field("provider", _ABSENT), field("model", _ABSENT))
                try:
                    summary = self._messages.get(cache_key)
                except TypeError:
                    summary = None
                light["message"] = summary if summary is not None else self._message(message)
            elif message is not _ABSENT:
                light["message"] = message
        elif type(t) is str:
            for name in _LIGHT_FIELDS.get(t, ()):
                if name in entry:
                    value = entry[name]
                    light[name] = self._ref(value) if name in _ID_FIELDS else self.intern(value)
            if t == E.CONTEXT_EDIT and "replacement" in entry:
                light["replacement"] = None if entry["replacement"] is None else _NON_NULL
        return light

    def _message(self, message: Any) -> Any:
        """``{role, provider, model}`` (those present), one shared dict per distinct summary."""
        if type(message) is not dict:
            return message
        field = message.get
        role, provider, model = field("role", _ABSENT), field("provider", _ABSENT), field("model", _ABSENT)
        cache_key = (role, provider, model)
        shared = True
        try:
            summary = self._messages.get(cache_key)
        except TypeError:  # an object or array where a string belongs: not shared
            summary, shared = None, False
        if summary is None:
            summary = {}
            if role is not _ABSENT:
                summary["role"] = role
            if provider is not _ABSENT:
                summary["provider"] = provider
            if model is not _ABSENT:
                summary["model"] = model
            if shared:
                self._messages[cache_key] = summary
        return summary


class _BodyCache:
    """Recently used full entries, bounded by the size of their lines and by their age.

    What it holds counts against the process's :class:`~sessiond.store.memory.MemoryBudget`,
    which can drop it whole; entries not used for the budget's idle time leave on their own
    (a session that is appended to all day keeps only its recent bodies).
    """

    def __init__(self, budget: int, holder: Holder | None = None) -> None:
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[int, tuple[Any, int, float]] = OrderedDict()
        self._holder = holder
        self._reported = 0
        self._reported_at = 0.0

    def get(self, pos: int) -> Any | None:
        item = self._items.get(pos)
        if item is None:
            return None
        self._items[pos] = (item[0], item[1], time.monotonic())
        self._items.move_to_end(pos)
        self._report()
        return item[0]

    def put(self, pos: int, entry: Any, size: int) -> None:
        if size > self.budget:
            return
        now = time.monotonic()
        old = self._items.pop(pos, None)
        if old is not None:
            self.used -= old[1]
        self._items[pos] = (entry, size, now)
        self.used += size
        items = self._items
        stale = now - (BUDGET.idle if self._holder is None else self._holder.idle)
        while items and (self.used > self.budget or next(iter(items.values()))[2] < stale):
            _, (_, freed, _) = items.popitem(last=False)
            self.used -= freed
        self._report(now)

    def take(self, positions: list[int], out: list[Any], missing: list[tuple[int, int]]) -> None:
        """:meth:`get` of many positions at once (one clock read, one report): what is held goes
        to ``out`` at the same index, what is not to ``missing`` as ``(position, index)``."""
        items = self._items
        if not items:
            missing.extend((pos, i) for i, pos in enumerate(positions))
            return
        now = time.monotonic()
        move = items.move_to_end
        for i, pos in enumerate(positions):
            item = items.get(pos)
            if item is None:
                missing.append((pos, i))
                continue
            items[pos] = (item[0], item[1], now)
            move(pos)
            out[i] = item[0]
        self._report(now)

    def forget(self, pos: int) -> None:
        old = self._items.pop(pos, None)
        if old is not None:
            self.used -= old[1]

    def clear(self) -> None:
        """Drop every body (the memory budget's call: no lock is taken)."""
        self._items = OrderedDict()
        self.used = 0

    def _report(self, now: float | None = None) -> None:
        """Tell the budget (at most once a second unless the size moved by 256 KiB)."""
        holder = self._holder
        if holder is None:
            return
        now = time.monotonic() if now is None else now
        if abs(self.used - self._reported) < _REPORT_BYTES and now - self._reported_at < 1.0:
            return
        self._reported, self._reported_at = self.used, now
        holder.hold(self.used)


class SessionIndex:
    """Light entries in file order, their tree, and where each full entry can be read."""

    def __init__(
        self, header: dict[str, Any], cache_bytes: int = DEFAULT_CACHE_BYTES, budget: MemoryBudget = BUDGET
    ) -> None:
        self.header = header
        self.budget = budget
        self.tree = SessionTree([])
        self.light = LightMaker(self.tree)
        self.offsets = array("q")
        """Byte offset of each line, ``-1`` for an entry held only in memory (not yet written)."""
        self.lengths = array("q")
        self._previews = PackedStrings()
        """A one-line preview per line, for tree views without reading bodies; the entries
        after the last one it holds were appended and are previewed when first asked."""
        self._pos_by_key: dict[Hashable, int] = {}
        self._resident: dict[int, Any] = {}
        self._holder = budget.holder("bodies", self._drop_bodies, str(header.get("id")))
        self._cache = _BodyCache(cache_bytes, self._holder)
        self.read_body: Callable[[int, int], bytes] | None = None
        """How to read ``length`` bytes at ``offset`` of the file (set by the owner)."""
        self.decode: Callable[[bytes], Any] = parse
        """A line of the file as a full entry (another agent's reader converts its records)."""
        self.session_name: Any = UNDEFINED
        """The latest ``session_info`` name in file order (``UNDEFINED`` when none was set)."""
        self.closed = False

    # ------------------------------------------------------------------ building

    @classmethod
    def from_lines(
        cls, lines: Iterable[bytes], source: str, cache_bytes: int = DEFAULT_CACHE_BYTES
    ) -> tuple[SessionIndex, LoadDiagnostics]:
        """Index a v3 file read line by line. The header must be valid (Pi's rule)."""
        diag = LoadDiagnostics()
        scanned = scan_lines(lines, diag)
        with paused_gc():
            first = next(scanned, None)
            if first is None:
                check_header(None, source, diag.physical_lines)
                raise AssertionError("unreachable")
            index = cls(check_header(first[2], source, 1), cache_bytes)
            index._add_read(scanned, diag)
        return index, diag

    def _add_read(self, scanned: Iterable[tuple[int, int, Any]], diag: LoadDiagnostics) -> None:
        """:meth:`add` of every line read from the file, in one loop (the lookups hoisted and
        the common case inlined: ``Session.open`` of 50,000 lines spent a third of its time in
        the calls, issue 30). A header line after the first is counted, not indexed."""
        light_of, preview, previews = self.light, entry_preview, self._previews.append
        offsets, lengths = self.offsets.append, self.lengths.append
        by_key, tree_add = self._pos_by_key, self.tree.add
        header, info = E.HEADER, E.SESSION_INFO
        pos = len(self.offsets)
        for offset, length, value in scanned:
            if type(value) is dict:
                t = value.get("type")
                if t == header:
                    diag.extra_headers += 1
                    continue
                if t == info:
                    self.session_name = value.get("name", UNDEFINED)
                light = light_of(value)
                eid = light.get("id", UNDEFINED)
                by_key[eid if type(eid) is str else key(eid)] = pos
            else:
                light = value
                by_key[key(UNDEFINED)] = pos
            previews(preview(value))
            offsets(offset)
            lengths(length)
            tree_add(light)
            pos += 1

    def add(
        self, entry: Any, offset: int, length: int, *, keep: bool = False, preview_later: bool = False
    ) -> Any:
        """Index one entry; ``offset = -1`` keeps it in memory (a session not yet written).

        ``keep`` puts the full entry in the body cache (what was just appended is what the
        next context build reads). ``preview_later`` (a written line, whose body reads back
        as ``entry``) leaves its preview to the first tree view.
        """
        pos = len(self.offsets)
        light = self.light(entry)
        if not preview_later or offset < 0:
            if len(self._previews) < pos:
                self._preview_pending()
            self._previews.append(entry_preview(entry))
        self.offsets.append(offset)
        self.lengths.append(length)
        if type(entry) is dict and entry.get("type") == E.SESSION_INFO:
            self.session_name = entry.get("name", UNDEFINED)
        self._pos_by_key[key(light.get("id", UNDEFINED) if type(light) is dict else UNDEFINED)] = pos
        self.tree.add(light)
        if offset < 0:
            self._resident[pos] = entry
        elif keep:
            self._cache.put(pos, entry, length)
        return light

    def mark_written(self, first_pos: int, offsets: list[tuple[int, int]]) -> None:
        """Entries held in memory were written; record where, and let the cache own them."""
        for i, (offset, length) in enumerate(offsets):
            pos = first_pos + i
            self.offsets[pos] = offset
            self.lengths[pos] = length
            entry = self._resident.pop(pos, None)
            if entry is not None:
                self._cache.put(pos, entry, length)

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def previews(self) -> PackedStrings:
        """A one-line preview per line, in file order (appended entries previewed now)."""
        if len(self._previews) < len(self.offsets):
            self._preview_pending()
        return self._previews

    def _preview_pending(self) -> None:
        """Preview the appended entries not previewed yet, reading their bodies like a path."""
        start = len(self._previews)
        for entry in self._full_positions(list(range(start, len(self.offsets)))):
            self._previews.append(entry_preview(entry))

    def position(self, light: Any) -> int:
        """File-order position of the line a light entry from the tree stands for."""
        k = key(light.get("id", UNDEFINED)) if type(light) is dict else UNDEFINED
        return self._pos_by_key[k]

    def full_at(self, pos: int) -> Any:
        """The full entry at a file-order position (read from disk if not cached)."""
        entry = self._resident.get(pos)
        if entry is not None:
            return entry
        entry = self._cache.get(pos)
        if entry is not None:
            return entry
        if self.read_body is None:
            raise RuntimeError("the index has no file to read bodies from")
        offset, length = self.offsets[pos], self.lengths[pos]
        entry = self.decode(self.read_body(offset, length))
        self._cache.put(pos, entry, length)
        return entry

    def full(self, light: Any) -> Any:
        """The full entry a light entry stands for (non-object lines are their own full form)."""
        if type(light) is not dict:
            return light
        return self.full_at(self.position(light))

    def full_path(self, path: list[Any]) -> list[Any]:
        """The full entries of a path; what is not cached is read in few large reads."""
        return self.full_path_sized(path)[0]

    def full_path_sized(self, path: list[Any]) -> tuple[list[Any], int]:
        """:meth:`full_path`, and the length of the lines its entries come from (what a
        projection of them holds, for the memory budget), from one lookup of each position."""
        at, positions = self._positions(path)
        lengths = self.lengths
        size = sum(lengths[pos] for pos in positions)
        if len(path) < _BATCH_MIN or self.read_body is None:
            return [self.full(e) for e in path], size
        out: list[Any] = list(path)  # non-object lines are their own full form
        for i, entry in zip(at, self._full_positions(positions), strict=True):
            out[i] = entry
        return out, size

    def _positions(self, path: list[Any]) -> tuple[list[int], list[int]]:
        """The indexes in ``path`` of its light entries (objects) and their file positions
        (:meth:`position` inlined: a long path looks up tens of thousands)."""
        at: list[int] = []
        positions: list[int] = []
        by_key = self._pos_by_key
        for i, light in enumerate(path):
            if type(light) is dict:
                eid = light.get("id", UNDEFINED)
                at.append(i)
                positions.append(by_key[eid if type(eid) is str else key(eid)])
        return at, positions

    def _full_positions(self, positions: list[int]) -> list[Any]:
        """The full entries at file positions; what is not cached is read in few large reads."""
        if len(positions) < _BATCH_MIN or self.read_body is None:
            return [self.full_at(pos) for pos in positions]
        out: list[Any] = [None] * len(positions)
        missing: list[tuple[int, int]] = []  # (file position, index in out)
        resident = self._resident
        if resident:
            uncached: list[tuple[int, int]] = []
            for i, pos in enumerate(positions):
                entry = resident.get(pos)
                if entry is None:
                    uncached.append((pos, i))
                else:
                    out[i] = entry
            if uncached:
                found: list[Any] = [None] * len(uncached)
                self._cache.take([pos for pos, _ in uncached], found, missing)
                missing = [uncached[j] for _, j in missing]
                for (_, i), entry in zip(uncached, found, strict=True):
                    if entry is not None:
                        out[i] = entry
        else:
            self._cache.take(positions, out, missing)
        if missing:
            missing.sort()
            # What the cache would only take in to evict again before this read ends (a context
            # larger than the cache: 30 MB of bodies through a 16 MiB cache) is not put in it.
            lengths, budget = self.lengths, self._cache.budget
            room, keep_from = budget, len(missing)
            while keep_from > 0:
                length = lengths[missing[keep_from - 1][0]]
                if length <= budget:  # (a line larger than the whole cache is never put)
                    if length > room:
                        break
                    room -= length
                keep_from -= 1
            with paused_gc():
                for run in self._spans(missing):
                    self._read_span(run, out, missing[keep_from][0] if keep_from < len(missing) else None)
        return out

    def _spans(self, missing: list[tuple[int, int]]) -> Iterator[list[tuple[int, int]]]:
        """Runs of positions close enough in the file to read with one ``pread``."""
        run: list[tuple[int, int]] = []
        start = end = 0
        for item in missing:
            offset, length = self.offsets[item[0]], self.lengths[item[0]]
            # A line before the run's end starts a new run: a reader whose entries are not in
            # file order (Claude Code: a repeated uuid is indexed where it was first seen, read
            # at its last line) would otherwise slice outside the bytes read.
            if run and (offset < end or offset - end > _SPAN_GAP or offset + length - start > _SPAN_MAX):
                yield run
                run = []
            if not run:
                start = offset
            run.append(item)
            end = offset + length
        if run:
            yield run

    def _read_span(
        self,
        run: list[tuple[int, int]],
        out: list[Any],
        cache_from: int | None = -1,
        read: Callable[[int, int], bytes] | None = None,
    ) -> None:
        """Read and decode a run; cache the entries at file positions from ``cache_from`` on
        (``None``: none of them; the default: all). ``read`` replaces :attr:`read_body`."""
        read = self.read_body if read is None else read
        assert read is not None
        first, last = run[0][0], run[-1][0]
        start = self.offsets[first]
        data = read(start, self.offsets[last] + self.lengths[last] - start)
        decode, offsets, lengths, put = self.decode, self.offsets, self.lengths, self._cache.put
        for pos, i in run:
            offset, length = offsets[pos] - start, lengths[pos]
            entry = decode(data[offset : offset + length])
            if cache_from is not None and pos >= cache_from:
                put(pos, entry, length)
            out[i] = entry

    def path_reader(
        self, path: list[Any], read: Callable[[int, int], bytes], lock: AbstractContextManager[Any]
    ) -> Callable[[list[int]], list[Any]]:
        """The full entries of ``path`` (light entries) by their index in it, read when asked.

        For a reader that outlives the moment it was made (a compaction preparation parses
        the messages it summarises when they are first used): lines are located under
        ``lock`` (the session's) when asked, each where the light entry it stands for was
        read from (a later line with the same id changes nothing); bodies come from the
        body cache, else are read through ``read`` (the caller's own descriptor of the file,
        so this works after the session closed) in runs of neighbouring lines. A few entries
        read at once (a walk over the newest ones) are put in the cache, a bulk read is not.
        """
        by_key, offsets, lights = self._pos_by_key, self.offsets, self.tree.entries

        def position(light: dict[str, Any]) -> int:
            eid = light.get("id", UNDEFINED)
            pos = by_key.get(eid if type(eid) is str else key(eid), -1)
            if pos < 0 or lights[pos] is not light:  # a later line took the id: look back
                pos = next(p for p in range(len(lights) - 1, -1, -1) if lights[p] is light)
            return pos

        def load(indexes: list[int]) -> list[Any]:
            out: list[Any] = [None] * len(indexes)
            missing: list[tuple[int, int]] = []  # (file position, index in out)
            with lock:
                for k, i in enumerate(indexes):
                    light = path[i]
                    if type(light) is not dict:
                        out[k] = light  # a non-object line is its own full form
                        continue
                    pos = position(light)
                    if offsets[pos] < 0:
                        out[k] = self.full_at(pos)  # not written yet: held in memory
                    else:
                        missing.append((pos, k))
                if missing and not self.closed:
                    found: list[Any] = [None] * len(missing)
                    uncached: list[tuple[int, int]] = []
                    self._cache.take([pos for pos, _ in missing], found, uncached)
                    for (_, k), entry in zip(missing, found, strict=True):
                        if entry is not None:
                            out[k] = entry
                    missing = [missing[j] for _, j in uncached]
            if not missing:
                return out
            missing.sort()
            with paused_gc():
                for run in self._spans(missing):
                    self._read_span(run, out, None, read)
            if len(missing) <= _KEEP_READ:
                with lock:
                    if not self.closed:
                        for pos, k in missing:
                            self._cache.put(pos, out[k], self.lengths[pos])
            return out

        return load

    def spans(self, positions: list[int]) -> Iterator[tuple[int, list[tuple[int, int]]]]:
        """Runs of file positions close enough to read with one ``pread``: ``(first offset,
        [(position, index in positions)...])`` (for readers of other formats' records)."""
        missing = sorted(((pos, i) for i, pos in enumerate(positions)), key=lambda m: self.offsets[m[0]])
        for run in self._spans(missing):
            yield self.offsets[run[0][0]], run

    @property
    def cache_bytes_used(self) -> int:
        return self._cache.used

    # ------------------------------------------------------------------ changes to entries already indexed

    def forget_body(self, pos: int) -> None:
        """The full entry at ``pos`` changed (read or converted anew next time)."""
        self._cache.forget(pos)

    def refresh(self, pos: int, entry: Any) -> None:
        """The full entry at ``pos`` is now ``entry`` (same line, converted anew): redo what
        the index derived from it (the preview)."""
        previews = self.previews  # the pending ones from the bodies they were added with
        self._cache.forget(pos)
        previews[pos] = entry_preview(entry)

    def _drop_bodies(self) -> None:
        self._cache.clear()

    def close(self) -> None:
        """The session is closed: what the cache holds no longer counts against the budget."""
        self.closed = True
        self._cache.clear()
        self._holder.close()
