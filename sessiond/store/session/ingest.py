"""A Pi session's file: the journal it is read through, and growth written by someone else.

Another program (Pi itself, a second sessiond, an editor) may append to a session file.
:meth:`FollowedSession.ingest` indexes the complete lines appended since the last known end
of the file, extending the cached context like an own append would; a write first catches
up the same way (:meth:`FollowedSession._catch_up`), so the daemon's entry never hangs below
a stale leaf. A file that shrank, was replaced or deleted cannot be followed: the caller is
told to reload it.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import SessionChangedError
from ...formats.pi import LoadDiagnostics, paused_gc, scan_lines
from ...model import entries as E
from ...model.js import UNDEFINED
from ..index import SessionIndex
from ..journal import Journal
from .context import CachedContext


@dataclass(slots=True)
class IngestResult:
    """What :meth:`Session.ingest` found after the last known end of the file."""

    entries: list[Any] = field(default_factory=list)
    """New full entries, in file order."""
    bytes_read: int = 0
    partial_tail: bool = False
    """A last line without its newline was left for later."""
    reload_required: str | None = None
    """Why the file cannot be followed incrementally (truncated, replaced, deleted)."""
    data: bytes | None = None
    """The complete lines read, exactly the file's bytes from :attr:`start` (``None``: not
    kept, e.g. a line over the limit stood in by a placeholder): the daemon hands them to the
    other readers of the file (the usage records) so that a growth is read once."""
    start: int = -1
    """The file offset of :attr:`data`'s first byte."""


class FollowedSession(CachedContext):
    """A Pi session file read through its journal, following what others append to it."""

    def __init__(
        self,
        path: Path,
        index: SessionIndex,
        journal: Journal | None,
        diagnostics: LoadDiagnostics,
        scan_end: int = 0,
    ) -> None:
        super().__init__(path, index)
        self._journal = journal
        self.diagnostics = diagnostics
        self._scan_end = scan_end
        if journal is not None:
            index.read_body = journal.pread
        self._tail_start = -1  # offset of an unterminated last line indexed at open, if any
        self.external_backlog: list[Any] = []
        """Entries another program appended that a write indexed before announcing them."""

    def close(self) -> None:
        with self._lock:
            if self._journal is not None:
                self._journal.close()
            super().close()

    def _body_reader(self) -> Callable[[int, int], bytes] | None:
        journal = self._journal
        if journal is None or journal.broken:
            return None
        try:
            return journal.reader().pread
        except OSError:  # (closed: no descriptor to duplicate)
            return None

    def file_size(self) -> int | None:
        """Bytes of the file as far as this session has read or written it (None: no file yet)."""
        return None if self._journal is None else self._journal.size

    @property
    def flushed(self) -> bool:
        """Whether the file exists (Pi's first-flush rule may still be holding entries)."""
        return self._journal is not None

    def _catch_up(self) -> None:
        """Before writing (under the lock): index what another program appended meanwhile.

        Without this an external append would be skipped by the index (the journal adopts the
        new end of file) and the daemon's entry would hang below a stale leaf. What is read here
        waits in :attr:`external_backlog` for the owner to announce it. A line another program
        is writing right now (no newline yet, file touched within the last second) is not cut
        off: the write is refused and can be retried.
        """
        journal = self._journal
        if journal is None or journal.broken:
            return  # (a broken journal refuses the write itself)
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise SessionChangedError(str(self.path), "the file was deleted") from None
        if st.st_size == self._scan_end and st.st_size == journal.size:
            return
        result = self.ingest()
        if result.reload_required is not None:
            raise SessionChangedError(str(self.path), result.reload_required)
        self.external_backlog.extend(result.entries)
        if result.partial_tail and time.time() - st.st_mtime < 1.0:
            raise SessionChangedError(
                str(self.path), "another program is writing a line to it right now; retry"
            )

    def take_external(self) -> list[Any]:
        """Entries another program appended that a write indexed first (see :meth:`_catch_up`)."""
        with self._lock:
            backlog, self.external_backlog = self.external_backlog, []
            return backlog

    def ingest(self) -> IngestResult:
        """Index complete lines another program appended since the last known end of file.

        A last line without its newline is left alone until it completes. A file that shrank,
        was replaced or deleted cannot be followed: ``reload_required`` says why.
        """
        with self._lock:
            result = IngestResult()
            if self._journal is None:
                return result
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                result.reload_required = "the file was deleted"
                return result
            fst = self._journal.fstat()
            if (st.st_ino, st.st_dev) != (fst.st_ino, fst.st_dev):
                result.reload_required = "the file was replaced"
                return result
            if st.st_size < self._scan_end:
                result.reload_required = "the file was truncated"
                return result
            if st.st_size == self._scan_end:
                return result
            start = self._scan_end
            data = self._journal.pread(start, st.st_size - start)
            result.bytes_read = len(data)
            if self._tail_start >= 0:
                # A line without newline was indexed at open; its newline may have arrived now.
                if data[:1] == b"\n":
                    data = data[1:]
                    start += 1
                    self._tail_start = -1
                else:
                    result.reload_required = "the unterminated last line was extended"
                    return result
            cut = data.rfind(b"\n") + 1
            complete, rest = data[:cut], data[cut:]
            diag = LoadDiagnostics()
            with paused_gc():
                for offset, length, value in scan_lines(io.BytesIO(complete), diag, start):
                    if type(value) is dict and value.get("type") == E.HEADER:
                        self.diagnostics.extra_headers += 1
                        continue
                    if type(value) is dict:
                        # Like an own append: the cached context grows instead of being rebuilt.
                        is_new_id = value.get("id", UNDEFINED) not in self._index.tree
                        light = self._index.add(value, offset, length, keep=True, preview_later=True)
                        self._extend_light_context(value.get("parentId"), light, is_new_id, value)
                    else:
                        self._index.add(value, offset, length)
                        self._projection = None
                        self._light_ctx = None
                    result.entries.append(value)
            self.diagnostics.blank_lines += diag.blank_lines
            self.diagnostics.unparsable_lines += diag.unparsable_lines
            self.diagnostics.falsy_lines += diag.falsy_lines
            self._scan_end = start + len(complete)
            result.data, result.start = complete, start
            result.partial_tail = bool(rest)
            self._journal.observe_external_growth(self._scan_end, ends_with_newline=True)
            return result
