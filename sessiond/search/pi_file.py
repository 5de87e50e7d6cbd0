"""A Pi v3 session file read for indexing alone: one ``orjson.loads`` per line, nothing else.

Opening it as a :class:`~sessiond.store.session.Session` builds the light index, previews and
the tree the daemon needs to serve it — three quarters of the time of a first build, none of it
needed to index text. A v3 file's lines are its entries already (the last line carrying an id
is the entry; the last entry is the leaf: a leaf move is a marker entry appended below its
target). Older versions need Pi's migration (ids assigned), so :func:`read_pi_v3` returns
``None`` for them and the caller opens them the usual way. Unreadable lines are skipped, as Pi's
loader skips them; an incomplete last line (being written) waits for its newline.

:meth:`PiFile.ingest` reads on from the end of the last complete line (what the engine does
when a file nobody has open grows): the work is the growth's, not the file's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ..store.foreign import grown_to
from ..store.regular import open_regular
from ..store.session import IngestResult


class PiFile:
    """What the engine reads of a session (``OpenedSession``), from a v3 file's lines."""

    def __init__(
        self, path: Path, header: dict[str, Any], entries: list[Any], inode: int, read_end: int
    ) -> None:
        self.path = path
        self.header = header
        self._entries = entries
        self._inode = inode
        self._read_end = read_end
        """The end of the last complete line read (where :meth:`ingest` goes on)."""
        self.id = str(header.get("id") or "")
        cwd = header.get("cwd")
        self.cwd = cwd if type(cwd) is str else ""
        self.name: str | None = None
        self.leaf_id: Any = None
        self._take(entries)

    def _take(self, entries: list[Any]) -> None:
        for entry in entries:
            if type(entry) is not dict:
                continue
            if type(entry.get("id")) is str:
                self.leaf_id = entry["id"]
            if entry.get("type") == "session_info":
                name = entry.get("name")
                self.name = (name.strip() or None) if type(name) is str else None

    def entries(self) -> list[Any]:
        return self._entries

    def ingest(self) -> IngestResult:
        """The entries of the complete lines appended since the last read; ``reload_required``
        when the file was deleted, replaced or truncated (it must be read whole again)."""
        result = IngestResult()
        size = grown_to(self.path, self._inode, self._read_end, result)
        if size is None or size == self._read_end:
            return result
        with open_regular(self.path) as f:
            f.seek(self._read_end)
            data = f.read(size - self._read_end)
        result.bytes_read = len(data)
        end = data.rfind(b"\n") + 1
        result.partial_tail = end < len(data)
        result.entries = _parse_lines(data[:end])
        result.data, result.start = data[:end], self._read_end  # handed to the usage records
        self._read_end += end
        self._take(result.entries)
        return result

    def close(self) -> None:
        self._entries = []


def _parse_lines(data: bytes) -> list[Any]:
    entries: list[Any] = []
    for raw in data.splitlines():
        try:
            entries.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
    return entries


def read_pi_v3(path: Path) -> PiFile | None:
    """The file's header and entries if it is a v3 Pi session, else ``None``."""
    with open_regular(path) as f:  # never blocks on a FIFO (an OSError, like a missing file)
        inode = os.fstat(f.fileno()).st_ino
        data = f.read()
    end = data.rfind(b"\n")
    if end < 0:
        return None
    first = data.find(b"\n")
    try:
        header = orjson.loads(data[:first])
    except orjson.JSONDecodeError:
        return None
    if type(header) is not dict or header.get("type") != "session" or header.get("version") != 3:
        return None
    return PiFile(Path(path), header, _parse_lines(data[first + 1 : end + 1]), inode, end + 1)
