"""The first build's read-ahead: the next session files read, and their texts made, in a second
thread while the writer thread inserts the previous ones.

A first build is two kinds of work of about the same size: Python reading and parsing session
files into texts, and SQLite's FTS5 inserts. ``sqlite3`` lets go of Python's GIL while a
statement runs, so the two overlap when they run in two threads: the writer's inserts of one
file run beside the parsing of the next ones (on a machine with a core to spare, the build's
wall time drops by the shorter of the two). The read-ahead holds at most :data:`DEPTH` files'
texts, so memory stays bounded by the largest files.

It only reads: what it made is used by the writer when the file's signature is still the one
it read (``ReadFile.sig``); otherwise, or when it failed, the writer reads the file itself.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from .extract import Doc
from .index import FileMeta, Prepared, Signature

DEPTH: Final = 2
"""Files read ahead of the writer at most."""
_POLL_S: Final = 0.1


class _File(Protocol):
    @property
    def path(self) -> str: ...


F = TypeVar("F", bound=_File)


@dataclass(slots=True)
class ReadFile:
    """A session file read ahead: its signature before the read, its row (``None``: excluded
    by its cwd), its texts and parent links, and what of its insert needs no database."""

    path: str
    sig: Signature
    meta: FileMeta | None
    docs: list[Doc]
    nodes: list[tuple[str, str | None]]
    prepared: Prepared | None = None


class ReadAhead(Generic[F]):
    """Reads ``files`` in this order with ``read`` in its own thread; :meth:`take` hands the
    reads out in the same order."""

    def __init__(self, files: list[F], read: Callable[[F], ReadFile | None]) -> None:
        self._files = files
        self._read = read
        self._queue: queue.Queue[tuple[str, ReadFile | None]] = queue.Queue(DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sessiond-search-read", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for file in self._files:
            if self._stop.is_set():
                return
            path = file.path
            try:
                result = self._read(file)
            except Exception:  # the writer reads the file itself, and logs why it cannot
                result = None
            while not self._stop.is_set():
                try:
                    self._queue.put((path, result), timeout=_POLL_S)
                    break
                except queue.Full:
                    continue

    def take(self, path: str, stopped: Callable[[], bool]) -> ReadFile | None:
        """The read of ``path``, the next file in order; ``None``: read it yourself (not read,
        or the engine is stopping). Out of order (not expected), the read-ahead stops."""
        while not stopped():
            try:
                got, result = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    return None
                continue
            if got == path:
                return result
            self.close()
            return None
        return None

    def close(self) -> None:
        """Stop reading (the thread ends after the file it is reading; nothing waits for it)."""
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
