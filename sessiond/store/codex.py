"""A Codex CLI rollout behind sessiond's session API: read-only, followed as it grows.

The tree holds one Pi entry per conversation item of the file (ids ``L<line>``), with the
rolled-back turns as branches and the leaf where Codex resumes; the context is the history
Codex resumes with (:mod:`sessiond.formats.codex.thread`). Growth is followed by parsing only
the new lines and replaying them onto the thread: a rollout is append-only, so nothing read
before changes. A file that shrank or was replaced is reopened by the follower.

A Codex 0.169 fork keeps no copy of its parent's history (``history_mode: "paginated"``,
``history_base {thread_id, end_byte_offset}``): :func:`load_history_base` reads the parent's
rollout up to that offset (and the grandparent's, when the parent is such a fork too) once,
when the fork is opened, and :func:`replay` feeds it before the fork's own records.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Final

from ..formats.codex import Rollout, Thread, extend_rollout, origin, parse_rollout
from ..formats.codex.records import SESSION_META, Record
from ..formats.lines import OversizedLine
from ..model.js import key
from .bounded import BoundedLines, describe_plain
from .foreign import ForeignSession, foreign_header, grown_to
from .regular import open_regular, read_regular
from .session import IngestResult

READ_ONLY: Final = "it is a Codex CLI rollout; sessiond never writes another agent's file"
INDEX_FILE: Final = "session_index.jsonl"


def is_codex_rollout(path: str | os.PathLike[str]) -> bool:
    """Whether a file starts like a Codex rollout (its first record; at most 1 MiB is read)."""
    from ..formats.codex.records import looks_like_rollout  # noqa: PLC0415

    try:
        head = read_regular(path, 1 << 20)
    except OSError:
        return False
    return looks_like_rollout(head)


def codex_home_of(path: Path) -> Path | None:
    """``$CODEX_HOME`` for a rollout under ``<home>/sessions`` or ``<home>/archived_sessions``."""
    for parent in Path(path).parents:
        if parent.name in ("sessions", "archived_sessions"):
            return parent.parent
    return None


_TITLES: dict[Path, tuple[tuple[int, int, int], dict[str, str]]] = {}
"""Each Codex home's ``session_index.jsonl`` parsed, with the inode, size and mtime it had."""
_SETTLED_NS: Final = 2_000_000_000
"""How old an index's mtime must be for its parse to be kept: a file written again within the
clock's granularity could keep its size and mtime (git's "racily clean" files)."""


def read_title(path: Path, session_id: str | None) -> str | None:
    """The thread's name from ``session_index.jsonl`` next to its sessions directory.

    The index is parsed once per change, not once per rollout: a first build reads every rollout
    of a home, and each read it whole again (the reads of a home of N named threads grew as N²)."""
    from ..formats.codex import parse_session_index  # noqa: PLC0415 (keeps the import local to titles)

    home = codex_home_of(path)
    if home is None or session_id is None:
        return None
    index = home / INDEX_FILE
    try:
        st = os.stat(index)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = _TITLES.get(index)
        if cached is not None and cached[0] == stamp:
            return cached[1].get(session_id)
        data = index.read_bytes()
    except OSError:
        return None
    titles = parse_session_index(data)
    if time.time_ns() - st.st_mtime_ns > _SETTLED_NS:
        _TITLES[index] = (stamp, titles)
    return titles.get(session_id)


class _Diagnostics:
    """What ``session/load`` reports for a rollout."""

    def __init__(self, session: CodexSession) -> None:
        self.session = session

    def as_json(self) -> dict[str, Any]:
        s = self.session
        return {
            "format": "codex",
            "load": s.rollout.diagnostics.as_json(),
            "replay": s.thread.diagnostics.as_json(),
            "codex": origin(s.rollout),
            "tokenUsage": s.token_usage(),
            "historyBase": s.base_info,
        }


class CodexSession(ForeignSession):
    format_name = "Codex"

    def __init__(self, path: Path, rollout: Rollout, inode: int | None, title: str | None = None) -> None:
        self._skip_scanned: int | None = None
        """The unterminated tail is over the line limit: scanned for its end up to here."""
        sid = rollout.session_id or _id_from_name(path)
        meta = rollout.meta or {}
        ts = meta.get("timestamp")
        header = foreign_header(
            sid,
            ts if type(ts) is str else (rollout.records[0].timestamp if rollout.records else ""),
            rollout.cwd,
        )
        super().__init__(path, header, READ_ONLY)
        self.rollout = rollout
        self.thread = Thread()
        self.title = title
        self._inode = inode
        self.diagnostics = _Diagnostics(self)  # type: ignore[assignment]
        self.base, self.base_info = load_history_base(path, rollout.meta)
        self._add_entries(replay(self.thread, rollout.records, self.base), self.thread.leaf_id)
        self._thread_leaf = self.thread.leaf_id

    @classmethod
    def open(cls, path: Path, **_: Any) -> CodexSession:
        path = Path(path)
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            lines = BoundedLines(f.fileno(), 0, st.st_size, describe_plain)
            pieces = list(lines)
        rollout = parse_rollout(b"".join(pieces), str(path))
        _bounded(rollout, lines, pieces, st.st_size)
        session = cls(path, rollout, st.st_ino, read_title(path, rollout.session_id))
        session._skip_scanned = lines.skip_scanned
        return session

    # ------------------------------------------------------------------ reads

    @property
    def name(self) -> str | None:
        return self.title

    def file_size(self) -> int | None:
        return self.rollout.bytes_read

    def native_context_window(self) -> int | None:
        return self.thread.window

    def token_usage(self) -> dict[str, Any] | None:
        info = self.thread.token_info
        if info is None:
            return None
        return {"total": info.total, "last": info.last, "modelContextWindow": info.window, "line": info.line}

    def _messages_at(self, leaf: Any) -> list[tuple[str, dict[str, Any]]]:
        if key(leaf) == key(self._thread_leaf):
            return self.thread.context()
        if leaf is None:
            return []
        place = _place_of(leaf)
        if place is None or leaf not in self._index.tree:
            return []
        # Another point of the file: the history Codex had right after that line.
        depth, line = place
        records = self.rollout.records
        base = self.base
        if depth:  # a line of the history a fork inherited
            base = [
                (p, recs if len(p) > depth else _records_through(recs, line))
                for p, recs in base
                if len(p) >= depth
            ]
            records = records[:1] if records and records[0].type == SESSION_META else []
        else:
            records = _records_through(records, line)
        thread = Thread(self.thread.provider)
        replay(thread, records, base)
        return thread.context()

    # ------------------------------------------------------------------ following

    def ingest(self) -> IngestResult:
        """Read the lines appended since the last read and replay them onto the thread."""
        with self._lock:
            result = IngestResult()
            start = self.rollout.bytes_read
            size = grown_to(self.path, self._inode, start, result)
            if size is None or size == start:
                return result
            skipped = self._skip_scanned is not None
            with open_regular(self.path) as f:
                lines = BoundedLines(f.fileno(), start, size, describe_plain, skip_scanned=self._skip_scanned)
                pieces = list(lines)
            self._skip_scanned = lines.skip_scanned
            result.bytes_read = size - start
            before = len(self.rollout.records)
            data = b"".join(pieces)
            if not skipped and not any(type(p) is OversizedLine for p in pieces):
                result.data, result.start = data, start
            extend_rollout(self.rollout, data)
            _bounded(self.rollout, lines, pieces, size)
            result.partial_tail = self.rollout.diagnostics.torn_tail
            new_records = self.rollout.records[before:]
            if not new_records:
                return result
            # The agent is writing: its leaf is where the conversation continues.
            entries = self.thread.feed(new_records)
            self._thread_leaf = self.thread.leaf_id
            self._add_entries(entries, self._thread_leaf)
            if self.title is None:
                self.title = read_title(self.path, self.rollout.session_id)
            result.entries.extend(entries)
            return result


def _bounded(rollout: Rollout, lines: BoundedLines, pieces: list[bytes], size: int) -> None:
    """What the rollout read from ``lines``: the file offset reached (not the placeholders'
    bytes), the lines left out, and whether a line is still being written."""
    rollout.bytes_read = lines.pos
    rollout.diagnostics.oversized_lines += sum(1 for p in pieces if type(p) is OversizedLine)
    rollout.diagnostics.torn_tail = lines.pos < size


def _place_of(entry_id: Any) -> tuple[int, int] | None:
    """``(depth, line)`` of an entry id ``B…BL<line>``: depth 0 is the rollout's own line, 1 a
    line of the parent's rollout a fork inherited, 2 of the grandparent's, …"""
    if type(entry_id) is not str:
        return None
    rest = entry_id.lstrip("B")
    if rest.startswith("L") and rest[1:].isdigit():
        return len(entry_id) - len(rest), int(rest[1:])
    return None


Base = list[tuple[str, list[Record]]]
"""The history a fork inherited: ``(id prefix, records)`` groups, the oldest ancestor first."""
MAX_FORK_DEPTH: Final = 32
_THREAD_ID: Final = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")


def replay(thread: Thread, records: list[Record], base: Base) -> list[dict[str, Any]]:
    """Feed a rollout's records to ``thread``, a fork's inherited history first.

    The fork's own ``session_meta`` comes first (its provider and instructions), then each
    ancestor's records (entry ids ``B…L<line>``), then the rest of the fork's own records.
    """
    if not base:
        return thread.feed(records)
    head = records[:1] if records and records[0].type == SESSION_META else []
    entries = thread.feed(head)
    for prefix, group in base:
        thread.id_prefix = prefix
        entries.extend(thread.feed(group))
    thread.id_prefix = ""
    entries.extend(thread.feed(records[len(head) :]))
    return entries


def _history_base(meta: dict[str, Any] | None) -> tuple[str, int] | None:
    """``(thread id, end byte offset)`` of a paginated fork's inherited history, else None."""
    if meta is None or meta.get("history_mode") != "paginated":
        return None
    base = meta.get("history_base")
    if type(base) is not dict:
        return None
    tid, end = base.get("thread_id"), base.get("end_byte_offset")
    if type(tid) is not str or not tid or type(end) is not int or end < 0:
        return None
    return tid, end


def find_rollout(home: Path, thread_id: str) -> Path | None:
    """The rollout of ``thread_id`` under a Codex home (``sessions/`` first, then archived)."""
    if not _THREAD_ID.fullmatch(thread_id):  # a name from the file: never a path or a pattern
        return None
    for directory in (home / "sessions", home / "archived_sessions"):
        if directory.is_dir():
            for found in sorted(directory.rglob(f"rollout-*-{thread_id}.jsonl")):
                return found
    return None


def load_history_base(path: Path, meta: dict[str, Any] | None) -> tuple[Base, dict[str, Any] | None]:
    """What a paginated fork (Codex 0.169 ``codex exec fork``) inherited, and how it was found.

    Such a fork stores no copy of its parent's history: its ``session_meta`` says
    ``history_mode: "paginated"`` and ``history_base {thread_id, end_byte_offset}``, and Codex
    resumes it with the parent rollout's records up to that offset (the parent may be a fork
    too). The parent is found by thread id under the same Codex home.
    """
    found = _history_base(meta)
    if found is None:
        return [], None
    info: dict[str, Any] = {"threadId": found[0], "endByteOffset": found[1], "found": False}
    base: Base = []
    prefix = "B"
    seen = {(meta or {}).get("id")}
    current = Path(path)
    while found is not None and len(base) < MAX_FORK_DEPTH:
        tid, end = found
        home = codex_home_of(current)
        parent = find_rollout(home, tid) if home is not None and tid not in seen else None
        if parent is None:
            info.setdefault("missing", tid)
            break
        seen.add(tid)
        try:
            with open_regular(parent) as f:  # never blocks on a FIFO
                data = f.read(end)
        except OSError:
            info.setdefault("missing", tid)
            break
        if not base:
            info["path"] = str(parent)
            info["found"] = True
        rollout = parse_rollout(data, str(parent))
        base.insert(0, (prefix, rollout.records))
        prefix = "B" + prefix
        current = parent
        found = _history_base(rollout.meta)
    info["ancestors"] = len(base)
    return base, info


def _records_through(records: list[Record], line: int) -> list[Record]:
    lo, hi = 0, len(records)
    while lo < hi:
        mid = (lo + hi) // 2
        if records[mid].line <= line:
            lo = mid + 1
        else:
            hi = mid
    return records[:lo]


def _id_from_name(path: Path) -> str:
    """A rollout without ``session_meta``: the uuid at the end of its name, else the name."""
    stem = Path(path).stem
    tail = stem[-36:]
    return tail if len(tail) == 36 and tail.count("-") == 4 else stem


__all__ = [
    "READ_ONLY",
    "CodexSession",
    "codex_home_of",
    "find_rollout",
    "is_codex_rollout",
    "load_history_base",
    "read_title",
    "replay",
]
