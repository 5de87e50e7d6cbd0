"""A Codex CLI rollout behind sessiond's session API: read-only, followed as it grows.

The tree holds one Pi entry per conversation item of the file (ids ``L<line>``), with the
rolled-back turns as branches and the leaf where Codex resumes; the context is the history
Codex resumes with (:mod:`sessiond.formats.codex.thread`). Growth is followed by parsing only
the new lines and replaying them onto the thread: a rollout is append-only, so nothing read
before changes. A file that shrank or was replaced is reopened by the follower.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from ..formats.codex import Rollout, Thread, extend_rollout, origin, parse_rollout
from ..formats.codex.records import Record
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


def read_title(path: Path, session_id: str | None) -> str | None:
    """The thread's name from ``session_index.jsonl`` next to its sessions directory."""
    from ..formats.codex import parse_session_index  # noqa: PLC0415 (keeps the import local to titles)

    home = codex_home_of(path)
    if home is None or session_id is None:
        return None
    try:
        data = (home / INDEX_FILE).read_bytes()
    except OSError:
        return None
    return parse_session_index(data).get(session_id)


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
        self._add_entries(self.thread.feed(rollout.records), self.thread.leaf_id)
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
        line = _line_of(leaf)
        if line is None or leaf not in self._index.tree:
            return []
        # Another point of the file: the history Codex had right after that line.
        thread = Thread(self.thread.provider)
        thread.feed(_records_through(self.rollout.records, line))
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
            with open_regular(self.path) as f:
                lines = BoundedLines(f.fileno(), start, size, describe_plain, skip_scanned=self._skip_scanned)
                pieces = list(lines)
            self._skip_scanned = lines.skip_scanned
            result.bytes_read = size - start
            before = len(self.rollout.records)
            extend_rollout(self.rollout, b"".join(pieces))
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


def _line_of(entry_id: Any) -> int | None:
    if type(entry_id) is str and entry_id.startswith("L") and entry_id[1:].isdigit():
        return int(entry_id[1:])
    return None


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


__all__ = ["READ_ONLY", "CodexSession", "codex_home_of", "is_codex_rollout", "read_title"]
