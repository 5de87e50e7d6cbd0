"""The append-only writer of one session file.

Rules, in the order a line meets them:

* one ``write()`` per line on an ``O_APPEND`` descriptor, so a line is never interleaved with
  another writer's bytes; a short write is continued, and if the rest cannot be written the
  file is truncated back to where the line began (no half line is left behind);
* a file that does not end with ``\\n`` (a torn tail left by a crash or another program) gets
  one in the same ``write()`` as the next line, so the fragment stays a line of its own and
  the new line starts clean (Pi #8345);
* the file is created exclusively (``O_EXCL``), with everything buffered so far in one write;
* ``buffered`` durability acknowledges after ``write()``; ``fsync`` after ``fdatasync``, with
  **group commit**: appends that are waiting at the same time share one ``fdatasync``;
* a failed ``fdatasync`` breaks the journal for good (the kernel may have dropped the dirty
  pages, so what is on disk is unknown): later writes fail until the session is reopened.

Before each write the file is checked against what the journal last saw (inode and size), so
a file replaced or truncated underneath is noticed instead of written into a ghost.
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import os
import threading
import weakref
from enum import StrEnum
from pathlib import Path

from ..errors import JournalBrokenError, JournalError, SessionChangedError, SessionExistsError
from .regular import open_regular_fd


class Durability(StrEnum):
    BUFFERED = "buffered"
    """Acknowledged once the line is in the kernel (survives a crash of sessiond, not of the OS)."""
    FSYNC = "fsync"
    """Acknowledged once ``fdatasync`` returned (survives power loss)."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    written = 0
    while written < len(data):
        n = os.write(fd, view[written:])
        if n <= 0:
            raise OSError(errno_codes.EIO, "write returned 0")
        written += n


def _link_exclusive(src: Path, dst: Path) -> None:
    """Give ``src`` the name ``dst`` unless ``dst`` exists (``FileExistsError``)."""
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in (
            errno_codes.EPERM,
            errno_codes.ENOTSUP,
            errno_codes.EOPNOTSUPP,
            errno_codes.EMLINK,
        ):
            raise
        # No hard links on this file system: an exclusive rename is not available either, so
        # refuse an existing target first and rename (the window is only another creator).
        if dst.exists():
            raise FileExistsError(errno_codes.EEXIST, "File exists", str(dst)) from None
        os.rename(src, dst)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """Appends lines to one file. Thread-safe: appends serialise, syncs are shared."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        st = os.fstat(fd)
        self._ino = st.st_ino
        self._dev = st.st_dev
        self._size = st.st_size
        self._ends_with_newline = self._size == 0 or os.pread(fd, 1, self._size - 1) == b"\n"
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self._synced = self._size  # what was there before we opened it counts as durable
        self._syncing = False
        self._broken: OSError | None = None
        self.repairs = 0
        """How many torn tails this journal has terminated."""

    # ------------------------------------------------------------------ opening

    @classmethod
    def create(cls, path: Path, initial: bytes, durability: Durability) -> Journal:
        """Create ``path`` exclusively holding ``initial`` (the header and the lines held so far).

        The bytes go to a temporary name first and are then hard-linked into place, so the
        session file appears complete or not at all: a crash can never leave an empty or
        half-written session file behind (an ``O_EXCL`` open followed by a write could).
        """
        if path.exists():
            raise SessionExistsError(str(path))
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.creating")
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise JournalError(
                f"Cannot create session file {path}: {exc.strerror}", str(path), exc.errno
            ) from exc
        try:
            _write_all(fd, initial)
            if durability is Durability.FSYNC:
                os.fdatasync(fd)
            _link_exclusive(tmp, path)
        except FileExistsError:
            os.close(fd)
            _unlink_quietly(tmp)
            raise SessionExistsError(str(path)) from None
        except OSError as exc:
            os.close(fd)
            _unlink_quietly(tmp)
            raise JournalError(
                f"Cannot create session file {path}: {exc.strerror or exc}", str(path), exc.errno
            ) from exc
        _unlink_quietly(tmp)
        if durability is Durability.FSYNC:
            _fsync_dir(path.parent)
        return cls(path, fd)

    @classmethod
    def open(cls, path: Path, *, read_only: bool = False) -> Journal:
        """Open an existing session file for appending (nothing is written until the next append).

        ``read_only`` opens it for reading and following only: an append raises.
        """
        try:
            # never append through a symbolic link: the target may be anywhere; never block on
            # (or append to) a FIFO put in the file's place
            flags = 0 if read_only else os.O_RDWR | os.O_APPEND
            fd = open_regular_fd(path, follow=read_only, flags=flags)
        except OSError as exc:
            raise JournalError(
                f"Cannot open session file {path}: {exc.strerror}", str(path), exc.errno
            ) from exc
        return cls(path, fd)

    def close(self) -> None:
        with self._write_lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    @property
    def size(self) -> int:
        """Bytes in the file as of this journal's last write or check."""
        return self._size

    @property
    def ends_with_newline(self) -> bool:
        return self._ends_with_newline

    @property
    def broken(self) -> bool:
        return self._broken is not None

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes) -> tuple[int, int]:
        """Append ``data`` (whole lines); returns ``(start, end)`` offsets of ``data`` in the file.

        Raises :class:`JournalError` (nothing of ``data`` remains in the file),
        :class:`JournalBrokenError` after an earlier failed sync, or
        :class:`~sessiond.errors.SessionChangedError` if the file was replaced or truncated.
        """
        with self._write_lock:
            if self._broken is not None:
                raise JournalBrokenError(
                    f"Session file {self.path} failed to reach the disk earlier ({self._broken.strerror}); "
                    "reopen the session",
                    str(self.path),
                    self._broken.errno,
                )
            if self._fd < 0:
                raise JournalError(f"Session file {self.path} is closed", str(self.path))
            self._check_file()
            prefix = b"" if self._ends_with_newline else b"\n"
            payload = prefix + data if prefix else data
            start = self._size
            written = 0
            view = memoryview(payload)
            try:
                while written < len(payload):
                    n = os.write(self._fd, view[written:])
                    if n <= 0:
                        raise OSError(errno_codes.EIO, "write returned 0")
                    written += n
            except OSError as exc:
                if written:
                    self._roll_back(start)
                raise JournalError(
                    f"Cannot write to session file {self.path}: {exc.strerror or exc}",
                    str(self.path),
                    exc.errno,
                ) from exc
            if prefix:
                self.repairs += 1
            self._size = start + written
            self._ends_with_newline = payload.endswith(b"\n")
            return start + len(prefix), self._size

    def _roll_back(self, start: int) -> None:
        try:
            os.ftruncate(self._fd, start)
        except OSError as exc:  # cannot even truncate: the file holds a partial line now
            self._broken = exc
            return
        self._size = start

    def _check_file(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise SessionChangedError(str(self.path), "the file was deleted") from None
        if st.st_ino != self._ino or st.st_dev != self._dev:
            raise SessionChangedError(str(self.path), "the file was replaced")
        if st.st_size != self._size:
            if st.st_size < self._size:
                raise SessionChangedError(str(self.path), "the file was truncated")
            # Someone else appended: adopt the new end, and look at its last byte again.
            self._size = st.st_size
            self._ends_with_newline = os.pread(self._fd, 1, st.st_size - 1) == b"\n"

    def observe_external_growth(self, size: int, ends_with_newline: bool) -> None:
        """Adopt a new end of file that an ingest of someone else's appends has read."""
        with self._write_lock:
            self._size = size
            self._ends_with_newline = ends_with_newline

    # ------------------------------------------------------------------ durability

    def sync(self, upto: int) -> None:
        """Return once every byte before offset ``upto`` is on disk (group commit).

        One flush runs at a time. A caller finding none running starts one, covering
        everything written so far; callers arriving meanwhile wait, and the first of them to
        wake starts the next flush, which covers all of them at once.
        """
        upto = min(upto, self._size)
        while True:
            with self._cond:
                while True:
                    if self._broken is not None:
                        raise self._sync_error(self._broken)
                    if self._synced >= upto:
                        return
                    if not self._syncing:
                        break
                    self._cond.wait()
                self._syncing = True
                target = self._size
            try:
                os.fdatasync(self._fd)
            except OSError as exc:
                with self._cond:
                    self._broken = exc
                    self._syncing = False
                    self._cond.notify_all()
                raise self._sync_error(exc) from exc
            with self._cond:
                self._synced = max(self._synced, target)
                self._syncing = False
                self._cond.notify_all()

    def _sync_error(self, exc: OSError) -> JournalBrokenError:
        return JournalBrokenError(
            f"Session file {self.path} could not be flushed to disk: {exc.strerror}",
            str(self.path),
            exc.errno,
        )

    # ------------------------------------------------------------------ reading

    def pread(self, offset: int, length: int) -> bytes:
        return _pread(self._fd, offset, length)

    def reader(self) -> FileReader:
        """A reader of this file with a descriptor of its own (see :class:`FileReader`)."""
        return FileReader(os.dup(self._fd))

    def fstat(self) -> os.stat_result:
        """The open file's status (its inode is the one this journal writes to)."""
        return os.fstat(self._fd)


def _pread(fd: int, offset: int, length: int) -> bytes:
    data = os.pread(fd, length, offset)
    if len(data) == length or not data:
        return data
    parts = [data]  # a short read (signals, huge spans): read on until done or EOF
    got = len(data)
    while got < length:
        more = os.pread(fd, length - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class FileReader:
    """Reads a session file through a duplicate of its journal's descriptor.

    What reads bodies later (a compaction preparation parses the messages it summarises when
    they are first used) must not depend on the session staying open: the duplicate names
    the same file (the same inode, even if the path changed meanwhile) until this reader is
    closed or dropped.
    """

    def __init__(self, fd: int) -> None:
        self._close = weakref.finalize(self, os.close, fd)
        self._fd = fd

    def pread(self, offset: int, length: int) -> bytes:
        return _pread(self._fd, offset, length)

    def close(self) -> None:
        self._close()


if os.environ.get("SESSIOND_FAULTS"):  # test-only fault injection, see faults.py; inert otherwise
    from .faults import install_from_env

    install_from_env(globals())
