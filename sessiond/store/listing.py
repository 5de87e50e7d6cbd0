"""Listing sessions: Pi's ``SessionManager.list`` / ``listAll`` summaries, with an incremental cache.

What a listing shows for each file is exactly what Pi 1.6.0's ``buildSessionInfo`` derives
(docs/pi-format.md §3.4), because Pi and sessiond share the store and must agree on it:

* Lines are split the way Node's ``readline`` splits them (``crlfDelay: Infinity``): on
  ``\\n``, ``\\r\\n`` **and a lone** ``\\r`` (the loader splits on ``\\n`` only). Blank lines,
  lines ``JSON.parse`` rejects and falsy values (``null``, ``0``, ``false``, ``""``) are skipped.
* The first remaining value must have ``type: "session"``; otherwise the file is not listed.
  Unlike the loader (and :func:`read_header`), the listing does **not** check that the header's
  ``id`` is a string, and it has no 1 MiB limit on where the header may be.
* ``name`` is the latest ``session_info`` entry's ``name.trim()``, ``None`` when that is empty
  or absent (an explicit clear).
* ``modified`` is the latest user/assistant activity (``message.timestamp`` when it is a number,
  else ``Date(entry.timestamp)``) if that is > 0, else the header timestamp (when it is a
  string), else the file's mtime. ``created`` is ``Date(header.timestamp)``, possibly invalid.
* ``message_count`` counts every ``message`` entry (all roles, all branches);
  ``first_message`` is the text of the first user message with non-empty text (text blocks
  joined with ``" "``), else ``"(no messages)"``.
* Where Pi's code throws a ``TypeError`` on odd content (a ``message`` entry without a
  message object, a user/assistant ``content`` that is neither a string nor an array, a
  ``null`` content block, a ``session_info`` name that is neither a string nor null), Pi drops
  the whole session from its listing. sessiond lists it: the odd entry still counts as a
  message but gives no text, and an odd name is ignored. A session must not vanish from the
  list because one of its lines is malformed.

Pi's ``allMessagesText`` (all user/assistant text, for its search box) is not computed: it is
as large as the transcript and nothing in sessiond uses it.

Listing never writes to a session file and never creates a directory (Pi's ``list(cwd)``
creates the per-cwd directory as a side effect). The only thing it may write is the optional
cache file of a :class:`ListingCache` created with a path.

Incremental cache
-----------------
Session files are append-only, so a :class:`ListingCache` keeps, per file, its identity
``(st_dev, st_ino, st_size, st_mtime_ns)`` and the summary folded over every *complete* line
(the state after the last line terminator, and that byte offset). On the next listing:

* identity unchanged: the cached summary, without opening the file;
* same device and inode, larger size, and the first 64 bytes and the 32 bytes before the
  stored offset unchanged: only the bytes after the offset are read and folded in (a file
  rewritten in place *and* grown with only its middle changed would go unnoticed: session
  files are append-only, and Pi's only in-place rewrite, the v1/v2 migration, changes the
  header line);
* anything else (shrunk, rewritten, replaced, same size with a new mtime): a full rescan.

An unterminated last line is folded into the reported summary but not into the stored state,
so it is read again (completed) next time. A file already known not to be a session stays so
while it only grows: it is not read again.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from ..model.js import UNDEFINED, date_ms, to_string, trim, truthy
from ..model.js_json import JSONParseError, parse
from .layout import StoreLayout, encode_cwd
from .regular import open_regular_fd, read_regular

__all__ = [
    "MAX_HEADER_SCAN_BYTES",
    "NO_MESSAGES",
    "CacheStats",
    "ListingCache",
    "SessionInfo",
    "iso_string",
    "list_dir",
    "list_sessions",
    "read_header",
    "scan_session",
]

MAX_HEADER_SCAN_BYTES: Final = 1024 * 1024
"""Pi's bound for header discovery (``readSessionHeader``)."""

NO_MESSAGES: Final = "(no messages)"

_READ_CHUNK: Final = 4 * 1024 * 1024
_CHECK_BYTES: Final = 32
"""How many bytes before the stored offset must be unchanged for an incremental scan."""
_HEAD_BYTES: Final = 64
"""How many bytes at the start of the file (within the stored offset) must be unchanged too."""

_CACHE_FORMAT: Final = "sessiond-listing-cache"
_CACHE_VERSION: Final = 2
"""Bump when the folded state or the listing rules change: older cache files are then ignored."""

_SUFFIX: Final = ".jsonl"
_EXPORT_MARKER: Final = "sessiond.export"
"""``store/export.py``'s first entry (not imported: export imports the session layer)."""
_HEADER_KEYS: Final = ("id", "cwd", "parentSession", "timestamp")


# --------------------------------------------------------------------------- the summary


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of a listing (Pi's ``SessionInfo`` without ``allMessagesText``)."""

    path: str
    id: Any
    """The header's ``id``: a string in every real file (the listing does not check it)."""
    cwd: str
    """The header's ``cwd`` when it is a string, else ``""``."""
    name: str | None
    parent_session_path: Any
    """The header's ``parentSession`` (a path string) or ``None`` when absent."""
    created_ms: float
    """``Date(header.timestamp)`` in ms; NaN when invalid."""
    modified_ms: float
    """Latest activity (see the module docs) in ms; NaN only for absurd message timestamps."""
    message_count: int
    first_message: str
    export_of: str | None = None
    """The id of the session this one is an export of (its first entry is ``sessiond.export``;
    sessiond's own field, not Pi's), else ``None``."""
    bad_lines: int = 0
    """Non-blank lines that are not JSON, skipped (Pi skips them silently; ``doctor`` tells)."""

    def to_json(self) -> dict[str, Any]:
        """camelCase, dates as ``toISOString()`` strings (``None`` when invalid), like Pi's JSON."""
        return {
            "path": self.path,
            "id": self.id,
            "cwd": self.cwd,
            "name": self.name,
            "parentSessionPath": self.parent_session_path,
            "created": iso_string(self.created_ms),
            "modified": iso_string(self.modified_ms),
            "messageCount": self.message_count,
            "firstMessage": self.first_message,
        }


def iso_string(ms: float) -> str | None:
    """``new Date(ms).toJSON()``: ``toISOString()`` or ``None`` for an invalid time.

    Years outside 0..9999 are written with a sign and six digits, as JavaScript does.
    """
    if ms != ms or abs(ms) > 8.64e15:
        return None
    ms = int(ms)
    days, rem = divmod(ms, 86_400_000)
    y, m, d = _civil_from_days(days)
    hh, rem = divmod(rem, 3_600_000)
    mi, rem = divmod(rem, 60_000)
    ss, mss = divmod(rem, 1000)
    year = f"{y:04d}" if 0 <= y <= 9999 else f"{'-' if y < 0 else '+'}{abs(y):06d}"
    return f"{year}-{m:02d}-{d:02d}T{hh:02d}:{mi:02d}:{ss:02d}.{mss:03d}Z"


def _civil_from_days(z: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of day ``z`` since 1970-01-01 (any sign)."""
    z += 719468
    era = z // 146097  # floor division: no adjustment for negative days
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


# --------------------------------------------------------------------------- folding lines

_NEED_HEADER: Final = 0
_OPEN: Final = 1
_DEAD: Final = 2


@dataclass(slots=True)
class _Fold:
    """Pi's per-file listing state after some prefix of the lines."""

    status: int = _NEED_HEADER
    header: dict[str, Any] = field(default_factory=dict)
    """The header fields the summary uses (only those present in the file)."""
    name: str | None = None
    last_activity: float | None = None
    message_count: int = 0
    first_message: str = ""
    export_of: str | None = None
    entries: int = 0
    """Entries folded after the header (only whether the first one is an export marker matters)."""
    bad_lines: int = 0

    def copy(self) -> _Fold:
        return _Fold(
            self.status,
            self.header,  # never mutated after the header line
            self.name,
            self.last_activity,
            self.message_count,
            self.first_message,
            self.export_of,
            self.entries,
            self.bad_lines,
        )

    def feed(self, entry: Any) -> None:
        """Fold one parsed, truthy line into the state (leniently where Pi would throw)."""
        is_obj = type(entry) is dict
        if self.status == _NEED_HEADER:
            if is_obj and entry.get("type") == "session":
                self.header = {k: entry[k] for k in _HEADER_KEYS if k in entry}
                self.status = _OPEN
            else:
                self.status = _DEAD
            return
        if not is_obj:
            return  # a truthy non-object: `.type` is undefined
        etype = entry.get("type")
        self.entries += 1
        if self.entries == 1 and etype == "custom" and entry.get("customType") == _EXPORT_MARKER:
            source = entry.get("data")
            source = source.get("source") if type(source) is dict else None
            sid = source.get("sessionId") if type(source) is dict else None
            self.export_of = sid if type(sid) is str else None
            return
        if etype == "session_info":
            name = entry.get("name", UNDEFINED)
            if name is None or name is UNDEFINED:
                self.name = None
            elif type(name) is str:
                self.name = trim(name) or None
            # any other name: Pi throws (name.trim is not a function); it is ignored here
            return
        if etype != "message":
            return
        self.message_count += 1
        message = entry.get("message", UNDEFINED)
        if type(message) is not dict:  # a null/missing message makes Pi throw; it only counts here
            return
        role = message.get("role")
        if type(role) is not str or "content" not in message or role not in ("user", "assistant"):
            return
        ts = message.get("timestamp")
        if type(ts) is int or type(ts) is float:
            activity: float = float(ts)
        else:
            activity = date_ms(entry.get("timestamp", UNDEFINED))
        if activity == activity:  # not NaN
            prev = self.last_activity
            self.last_activity = max(0.0 if prev is None else prev, activity)
        content = message["content"]
        if role == "user" and not self.first_message:
            self.first_message = _text_content(content)

    # ---- persistence

    def to_json(self) -> dict[str, Any]:
        return {
            "s": self.status,
            "h": self.header,
            "n": self.name,
            "t": self.last_activity,
            "c": self.message_count,
            "f": self.first_message,
            "x": self.export_of,
            "e": self.entries,
            "b": self.bad_lines,
        }

    @staticmethod
    def from_json(obj: Any) -> _Fold:
        if type(obj) is not dict:
            raise ValueError("fold")
        status, header, name = obj["s"], obj["h"], obj["n"]
        t, count, first = obj["t"], obj["c"], obj["f"]
        export_of, entries, bad = obj["x"], obj["e"], obj["b"]
        if status not in (_NEED_HEADER, _OPEN, _DEAD) or type(status) is not int:
            raise ValueError("status")
        if type(header) is not dict or not set(header) <= set(_HEADER_KEYS):
            raise ValueError("header")
        if not (name is None or type(name) is str) or type(first) is not str:
            raise ValueError("strings")
        if not (t is None or type(t) in (int, float)) or type(count) is not int or count < 0:
            raise ValueError("numbers")
        if (
            not (export_of is None or type(export_of) is str)
            or type(entries) is not int
            or type(bad) is not int
        ):
            raise ValueError("export")
        t_ms = None if t is None else float(t)
        return _Fold(status, header, name, t_ms, count, first, export_of, entries, bad)


def _text_content(content: Any) -> str:
    """Pi's ``extractTextContent``: a string as is; text blocks joined with a space."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""  # Pi throws (content.filter is not a function)
    parts: list[str] = []
    for block in content:
        if type(block) is dict and block.get("type") == "text":
            text = block.get("text")
            parts.append(text if type(text) is str else "" if text is None else to_string(text))
    return " ".join(parts)


def _parse_value(raw: bytes) -> Any:
    """``parseSessionEntryLine``: the parsed value, or None for blank/unparsable lines."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _parse_slow(raw)


def _parse_slow(raw: bytes) -> Any:
    """What orjson refuses: blank lines, junk, and the JSON only JavaScript accepts."""
    text = raw.decode("utf-8", "replace")
    if not trim(text):
        return None
    try:
        return parse(text)
    except JSONParseError:
        return None


def _fold_block(fold: _Fold, block: bytes) -> None:
    """Fold every line of ``block`` (complete lines; split on ``\\n``, ``\\r\\n`` and ``\\r``)."""
    if b"\r" in block:
        # Splitting "\r\n" into two terminators only adds an empty line, which is skipped.
        block = block.replace(b"\r", b"\n")
    loads = orjson.loads
    feed = fold.feed
    for line in block.split(b"\n"):
        if not line:
            continue
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            value = _parse_slow(line)
            if value is None and line.strip():
                fold.bad_lines += 1
        if type(value) is dict or truthy(value):
            feed(value)
            if fold.status == _DEAD:
                return


# --------------------------------------------------------------------------- reading files


@dataclass(slots=True)
class _Record:
    """What the cache knows about one file."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    offset: int
    """End of the last complete line folded into ``fold``."""
    check: bytes
    """The (up to) :data:`_CHECK_BYTES` bytes before ``offset``."""
    head: bytes
    """The first (up to) :data:`_HEAD_BYTES` bytes of the file, within ``offset``."""
    fold: _Fold
    """State after the complete lines."""
    final: _Fold | None
    """State including the unterminated last line, when there is one (else ``fold``)."""

    def same_file(self, st: os.stat_result) -> bool:
        return (
            self.size == st.st_size
            and self.mtime_ns == st.st_mtime_ns
            and self.ino == st.st_ino
            and self.dev == st.st_dev
        )

    def info(self, path: str) -> SessionInfo | None:
        return _info(path, self.fold if self.final is None else self.final, self.mtime_ns)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dev": self.dev,
            "ino": self.ino,
            "size": self.size,
            "mtimeNs": self.mtime_ns,
            "offset": self.offset,
            "check": self.check.hex(),
            "head": self.head.hex(),
            "fold": self.fold.to_json(),
        }
        if self.final is not None:
            out["final"] = self.final.to_json()
        return out

    @staticmethod
    def from_json(obj: Any) -> _Record:
        if type(obj) is not dict:
            raise ValueError("record")
        ints = [obj["dev"], obj["ino"], obj["size"], obj["mtimeNs"], obj["offset"]]
        if any(type(v) is not int or v < 0 for v in ints):
            raise ValueError("ints")
        dev, ino, size, mtime_ns, offset = ints
        check, head = bytes.fromhex(obj["check"]), bytes.fromhex(obj["head"])
        if offset > size or len(check) != min(offset, _CHECK_BYTES) or len(head) != min(offset, _HEAD_BYTES):
            raise ValueError("offset")
        final = _Fold.from_json(obj["final"]) if "final" in obj else None
        return _Record(dev, ino, size, mtime_ns, offset, check, head, _Fold.from_json(obj["fold"]), final)

    def continues_in(self, fd: int, st: os.stat_result, stats: CacheStats) -> bool:
        """Is the open file (``st``) this record's file, grown by appending?"""
        if st.st_dev != self.dev or st.st_ino != self.ino or st.st_size <= self.size:
            return False
        stats.bytes_read += len(self.check) + len(self.head)
        return (
            _read_at(fd, self.offset - len(self.check), len(self.check)) == self.check
            and _read_at(fd, 0, len(self.head)) == self.head
        )


def _mtime_ms(mtime_ns: int) -> float:
    """``stats.mtime.getTime()``: Node's ``sec * 1e3 + nsec / 1e6`` (doubles), then truncated."""
    sec, nsec = divmod(mtime_ns, 1_000_000_000)
    return date_ms(sec * 1e3 + nsec / 1e6)


def _info(path: str, fold: _Fold, mtime_ns: int) -> SessionInfo | None:
    if fold.status != _OPEN:
        return None
    h = fold.header
    cwd = h.get("cwd")
    ts = h.get("timestamp", UNDEFINED)
    created = date_ms(ts)
    last = fold.last_activity
    if last is not None and last > 0:
        modified = date_ms(last)
    elif type(ts) is str and created == created:
        modified = created
    else:
        modified = _mtime_ms(mtime_ns)
    return SessionInfo(
        path=path,
        id=h.get("id"),
        cwd=cwd if type(cwd) is str else "",
        name=fold.name,
        parent_session_path=h.get("parentSession"),
        created_ms=created,
        modified_ms=modified,
        message_count=fold.message_count,
        first_message=fold.first_message or NO_MESSAGES,
        export_of=fold.export_of,
        bad_lines=fold.bad_lines,
    )


def _read_at(fd: int, offset: int, length: int) -> bytes:
    """Up to ``length`` bytes at ``offset`` (fewer only at end of file). Tests count these."""
    chunks: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, min(length, _READ_CHUNK), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _open_regular(path: str) -> tuple[int, os.stat_result] | None:
    """Open a regular file for reading (symlinks followed); None for anything else.

    ``O_NONBLOCK`` keeps a FIFO named ``*.jsonl`` from hanging the listing (a regular file
    ignores the flag).
    """
    try:
        fd = open_regular_fd(path)  # counts what it refuses
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    return fd, st


def _scan(
    fd: int, st: os.stat_result, start: int, fold: _Fold, check: bytes, head: bytes, stats: CacheStats
) -> _Record:
    """Fold the lines from ``start`` to the size in ``st`` into ``fold`` (mutated).

    ``check`` and ``head`` are the continuity bytes of the part before ``start``.
    """
    size = st.st_size
    pos = start
    carry = b""
    last_end = start  # end offset of the last complete line
    while pos < size and fold.status != _DEAD:
        data = _read_at(fd, pos, min(_READ_CHUNK, size - pos))
        if not data:
            size = pos  # shrunk while being read: remember what was seen, rescan next time
            break
        stats.bytes_read += len(data)
        pos += len(data)
        buf = carry + data if carry else data
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1
        if cut:
            block = buf[:cut]
            _fold_block(fold, block)
            last_end = pos - (len(buf) - cut)
            check = block[-_CHECK_BYTES:] if cut >= _CHECK_BYTES else (check + block)[-_CHECK_BYTES:]
            if len(head) < _HEAD_BYTES:
                head = (head + block[:_HEAD_BYTES])[:_HEAD_BYTES]
            carry = buf[cut:]
        else:
            carry = buf
    final: _Fold | None = None
    if carry and fold.status != _DEAD:
        final = fold.copy()
        _fold_block(final, carry)
    return _Record(st.st_dev, st.st_ino, size, st.st_mtime_ns, last_end, check, head, fold, final)


def _refresh(path: str, prev: _Record | None, stats: CacheStats) -> _Record | None:
    """The up-to-date record of ``path``: reused, extended or rebuilt. None if unreadable."""
    if prev is not None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        if prev.same_file(st):
            stats.hits += 1
            return prev
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        if prev is not None and prev.continues_in(fd, st, stats):
            stats.incremental += 1
            if prev.fold.status == _DEAD:
                return _Record(
                    st.st_dev,
                    st.st_ino,
                    st.st_size,
                    st.st_mtime_ns,
                    prev.offset,
                    prev.check,
                    prev.head,
                    prev.fold,
                    None,
                )
            return _scan(fd, st, prev.offset, prev.fold.copy(), prev.check, prev.head, stats)
        stats.full += 1
        return _scan(fd, st, 0, _Fold(), b"", b"", stats)
    except OSError:
        return None
    finally:
        os.close(fd)


def scan_session(path: str | os.PathLike[str]) -> SessionInfo | None:
    """Pi's listing summary of one file, read in full; None when Pi would not list it."""
    p = os.fspath(path)
    record = _refresh(p, None, CacheStats())
    return None if record is None else record.info(p)


def read_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Pi's bounded header discovery (``readSessionHeader``, used by find-by-id / most-recent).

    Lines split on ``\\n`` only; blank, unparsable and falsy lines are skipped; the first
    remaining value must be ``{type: "session", id: <string>}``. The header line must end
    within the first :data:`MAX_HEADER_SCAN_BYTES` bytes (or the file must end there): a file
    whose header lies beyond is not *discovered* (None), although a full load
    (:func:`sessiond.formats.pi.load_session`, like Pi's ``open``) still opens it, and the
    listing (which has no bound) still lists it. Unreadable files give None.
    """
    try:
        data = read_regular(path, MAX_HEADER_SCAN_BYTES + 1)
    except OSError:
        return None
    within = data[:MAX_HEADER_SCAN_BYTES]
    start = 0
    while True:
        nl = within.find(b"\n", start)
        if nl < 0:
            break
        found = _header_candidate(within[start:nl])
        if found is not None:
            return found or None
        start = nl + 1
    if len(data) > MAX_HEADER_SCAN_BYTES:
        return None  # the scan limit was reached without a header
    return _header_candidate(data[start:]) or None


def _header_candidate(raw: bytes) -> dict[str, Any] | None:
    """None: keep scanning; ``{}``: a non-header value (stop); else the header."""
    value = _parse_value(raw)
    if not truthy(value):
        return None
    if type(value) is dict and value.get("type") == "session" and type(value.get("id")) is str:
        return value
    return {}


# --------------------------------------------------------------------------- the cache


@dataclass(slots=True)
class CacheStats:
    """Counters since the cache was created (or :meth:`ListingCache.reset_stats`)."""

    hits: int = 0
    """Files reported from the cache without being opened."""
    incremental: int = 0
    """Files of which only the appended bytes were read."""
    full: int = 0
    """Files read from the start."""
    bytes_read: int = 0


class ListingCache:
    """Per-file folded listing state, reused across listings (see the module docs).

    With ``path``, the cache is loaded from that JSON file (a missing, corrupt or
    incompatible file is ignored) and :meth:`save` writes it back atomically (temp file +
    ``os.replace``, mode 0600). ``list_sessions`` / ``list_dir`` save after each listing that
    changed something when ``autosave`` is true. Not thread-safe: use one per thread or lock.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, autosave: bool = True) -> None:
        self.path = None if path is None else Path(path)
        self.autosave = autosave
        self.stats = CacheStats()
        self._records: dict[str, _Record] = {}
        self._dirty = False
        if self.path is not None:
            self._load()

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str | os.PathLike) and os.fspath(path) in self._records

    def reset_stats(self) -> None:
        self.stats = CacheStats()

    def clear(self) -> None:
        self._dirty = self._dirty or bool(self._records)
        self._records.clear()

    def info(self, path: str | os.PathLike[str]) -> SessionInfo | None:
        """The listing summary of one file, read only as far as needed."""
        p = os.fspath(path)
        prev = self._records.get(p)
        record = _refresh(p, prev, self.stats)
        if record is None:
            if prev is not None:
                del self._records[p]
                self._dirty = True
            return None
        if record is not prev:
            self._records[p] = record
            self._dirty = True
        return record.info(p)

    def prune(self, directories: Iterable[str], keep: set[str]) -> None:
        """Forget files directly in ``directories`` that are not in ``keep``."""
        dirs = set(directories)
        stale = [p for p in self._records if os.path.dirname(p) in dirs and p not in keep]
        for p in stale:
            del self._records[p]
        self._dirty = self._dirty or bool(stale)

    def cached_dirs(self) -> set[str]:
        return {os.path.dirname(p) for p in self._records}

    # ---- persistence

    def save(self) -> bool:
        """Write the cache file if there is one and something changed; True if written.

        Failures (read-only store, full disk) are swallowed: the cache is an optimisation.
        """
        if self.path is None or not self._dirty:
            return False
        doc = {
            "format": _CACHE_FORMAT,
            "version": _CACHE_VERSION,
            "files": {p: r.to_json() for p, r in self._records.items()},
        }
        data = json.dumps(doc, separators=(",", ":")).encode()
        target = self.path
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                os.fchmod(fd, 0o600)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return False
        self._dirty = False
        return True

    def _load(self) -> None:
        assert self.path is not None
        try:
            doc = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return
        if (
            type(doc) is not dict
            or doc.get("format") != _CACHE_FORMAT
            or doc.get("version") != _CACHE_VERSION
        ):
            return
        files = doc.get("files")
        if type(files) is not dict:
            return
        for p, obj in files.items():
            try:
                self._records[p] = _Record.from_json(obj)
            except (KeyError, TypeError, ValueError):
                continue  # one bad record does not spoil the others


# --------------------------------------------------------------------------- listings


def _jsonl_files(directory: str) -> list[str]:
    """Paths of the ``*.jsonl`` names in ``directory`` (unsorted); [] if it cannot be read."""
    try:
        with os.scandir(directory) as it:
            return [os.path.join(directory, e.name) for e in it if e.name.endswith(_SUFFIX)]
    except OSError:
        return []


def _sort(infos: list[SessionInfo]) -> list[SessionInfo]:
    """``modified`` descending; ties by file name, then path, descending (code-point order).

    Pi breaks ties by its scan order (``localeCompare`` of names, descending, for one
    directory); a NaN ``modified`` (which makes Pi's comparator inconsistent) sorts last here.
    """
    infos.sort(key=lambda i: (os.path.basename(i.path), i.path), reverse=True)
    infos.sort(key=lambda i: (1, 0.0) if i.modified_ms != i.modified_ms else (0, -i.modified_ms))
    return infos


def _summaries(directories: list[str], cache: ListingCache | None) -> list[SessionInfo]:
    infos: list[SessionInfo] = []
    seen: set[str] = set()
    for d in directories:
        for p in _jsonl_files(d):
            seen.add(p)
            info = cache.info(p) if cache is not None else scan_session(p)
            if info is not None:
                infos.append(info)
    if cache is not None:
        cache.prune(directories, seen)
    return infos


def list_dir(directory: str | os.PathLike[str], cache: ListingCache | None = None) -> list[SessionInfo]:
    """Every session in one flat directory (Pi's ``listAll(dir)`` / ``list(cwd, dir)`` without
    the cwd filter), newest first. Never raises for unreadable files or directories."""
    d = os.fspath(directory)
    infos = _sort(_summaries([d], cache))
    if cache is not None and cache.autosave:
        cache.save()
    return infos


def list_sessions(
    layout: StoreLayout, cwd: str | None = None, cache: ListingCache | None = None
) -> list[SessionInfo]:
    """Sessions of one cwd (Pi's ``list(cwd)``) or, with ``cwd=None``, of the whole store
    (Pi's ``listAll()``), newest first (ties: see :func:`_sort`)."""
    return list_sessions_in(layout.sessions_dir, cwd, cache)


def list_sessions_in(
    sessions_dir: str | os.PathLike[str], cwd: str | None = None, cache: ListingCache | None = None
) -> list[SessionInfo]:
    """:func:`list_sessions` for any directory laid out like Pi's ``sessions`` directory.

    With a cwd, only its ``--<encoded cwd>--`` directory is read, whatever the headers say
    (the directory is not created when missing). Without, every directory named ``--*--``
    (symlinks followed) is read; Pi reads every subdirectory, but a sessiond store holds no
    others. Unreadable files and directories are skipped.
    """
    root = os.fspath(sessions_dir)
    if cwd is not None:
        dirs = [os.path.join(root, encode_cwd(cwd))]
    else:
        dirs = []
        try:
            with os.scandir(root) as it:
                for e in it:
                    name = e.name
                    if len(name) >= 4 and name.startswith("--") and name.endswith("--"):
                        with contextlib.suppress(OSError):
                            if e.is_dir():
                                dirs.append(e.path)
        except OSError:
            pass
        dirs.sort()
    infos = _summaries(dirs, cache)
    if cache is not None:
        if cwd is None:  # forget directories that disappeared
            gone = {d for d in cache.cached_dirs() if os.path.dirname(d) == root} - set(dirs)
            cache.prune(gone, set())
        if cache.autosave:
            cache.save()
    return _sort(infos)
