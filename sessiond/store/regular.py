"""Opening a file that must be a regular file: never blocking, never anything else.

Session files are found by name (``*.jsonl``) in directories other programs write: Claude Code's
project directories, Codex's rollouts, the store. Any of them may be a FIFO, a device or a socket
under that name. A plain ``open`` of a FIFO blocks until a writer comes, which hung one worker
thread per request (and the daemon's exit, which waits for its threads). So every such file is
opened with ``O_NONBLOCK`` (which a regular file ignores), and the *open descriptor* is checked
with ``fstat`` (checking the path first would race with a rename): anything but a regular file is
closed at once, counted in :data:`COUNTS` (``daemon/status`` reports it), and refused with
:class:`NotRegularFileError`, an ``OSError`` — so every caller that already skips an unreadable
file skips this one the same way.

``follow=False`` adds ``O_NOFOLLOW``: a symbolic link is refused before its target is opened
(:class:`SymlinkRefusedError`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegularFileError(OSError):
    """A session file name that names a FIFO, a device, a socket or a directory."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file (a {kind})", os.fspath(path))
        self.kind = kind


class SymlinkRefusedError(OSError):
    """A symbolic link where a file of sessiond's own must be (opened with ``O_NOFOLLOW``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.ELOOP, "the session file is a symbolic link", os.fspath(path))


class _Counts:
    """What was skipped since the daemon started (read by ``daemon/status``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.not_regular = 0
        self.oversized_lines = 0

    def add_not_regular(self) -> None:
        with self._lock:
            self.not_regular += 1

    def add_oversized(self, n: int = 1) -> None:
        with self._lock:
            self.oversized_lines += n


COUNTS = _Counts()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def open_regular_fd(path: str | os.PathLike[str], *, follow: bool = True, flags: int = 0) -> int:
    """A descriptor of the regular file at ``path`` (blocking mode restored), or an ``OSError``:
    :class:`NotRegularFileError`, :class:`SymlinkRefusedError` (``follow=False``), or the open's.

    ``flags`` are added to ``O_RDONLY | O_NONBLOCK | O_CLOEXEC`` (e.g. ``O_RDWR | O_APPEND`` in
    place of read-only: ``O_RDONLY`` is 0)."""
    open_flags = _FLAGS | flags | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, open_flags)
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP and os.path.islink(path):
            raise SymlinkRefusedError(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing without a reader
            COUNTS.add_not_regular()
            raise NotRegularFileError(path, "FIFO") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            COUNTS.add_not_regular()
            raise NotRegularFileError(path, _kind(mode))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike[str], *, follow: bool = True) -> BinaryIO:
    """:func:`open_regular_fd` as a binary file object, for reading."""
    return os.fdopen(open_regular_fd(path, follow=follow), "rb")


def read_regular(path: str | os.PathLike[str], limit: int = -1) -> bytes:
    """The bytes of a regular file (at most ``limit``), never blocking on anything else."""
    with open_regular(path) as f:
        return f.read(limit)


__all__ = [
    "COUNTS",
    "NotRegularFileError",
    "SymlinkRefusedError",
    "open_regular",
    "open_regular_fd",
    "read_regular",
]
