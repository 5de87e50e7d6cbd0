"""Content-addressed backups of one session's files (docs/file-history.md, "Blobs").

Layout: ``<store>/file-history/<sessionId>/blobs/<2 hex>/<sha256>``. A blob is written once:
streamed (64 KiB at a time, hashing as it goes) into a temporary file in ``blobs/``, made
read-only, flushed with ``fsync``, then renamed to its name, and the directory flushed too, so a
snapshot entry persisted after ``put_*`` returned never names a blob a crash could lose. Content
already present is not stored again (the temporary file is dropped).

Directories are created ``0o700``: backups hold the user's file contents.

:class:`Blobs` is what the file history needs of a blob store; :class:`BlobStore` (this
module) is the local directory, :class:`~.shared.SharedBlobs` the same directory used as a
cache in front of a store other daemons share (JetStream's object store), chosen by the
session store's backend.
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Final, Protocol, Self

from .errors import BlobCorruptError, BlobMissingError, InvalidSnapshotError, PathRefusedError
from .states import is_sha256

CHUNK: Final = 64 * 1024
"""Bytes read and written at a time: files of any size are streamed, never held in memory."""

_TMP_PREFIX: Final = ".tmp-"
_DIR_MODE: Final = 0o700
_BLOB_MODE: Final = 0o444
_NO_LINK_ERRNOS: Final = frozenset(
    {errno_codes.EXDEV, errno_codes.EPERM, errno_codes.EMLINK, errno_codes.ENOTSUP, errno_codes.EOPNOTSUPP}
)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``write`` until everything is written (a short write is continued)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno_codes.EIO, "write returned 0")
        view = view[n:]


def hash_fd(fd: int) -> tuple[str, int]:
    """SHA-256 and length of what can be read from ``fd`` (from its current offset), streamed."""
    digest = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    size = 0
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            break
        digest.update(view[:n])
        size += n
    return digest.hexdigest(), size


def copy_fd(fd: int, sink: HashingWriter) -> None:
    """Stream what can be read from ``fd`` (from its current offset) into ``sink``."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    while n := os.readv(fd, [buf]):
        sink.write(view[:n])


def fsync_dir(directory: Path | str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Blobs(Protocol):
    """What the file history (snapshots, diffs, rewinds, forks) needs of a blob store. Every
    method blocks (file I/O, a cluster's round trips): callers run them in worker threads."""

    def has(self, sha: str) -> bool:
        """Whether blob ``sha`` can be read (:meth:`open` will not raise :class:`BlobMissingError`)."""
        ...

    def open(self, sha: str) -> BinaryIO:
        """Blob ``sha`` as a file to read (a real file: ``fileno()`` works); :class:`BlobMissingError`
        if the store does not hold it."""
        ...

    def put_fd(self, fd: int) -> tuple[str, int]:
        """Store what can be read from ``fd``; ``(sha256, size)``. Once it returns, the blob is
        as durable as the store makes anything (a snapshot naming it may be persisted)."""
        ...

    def put_file(
        self, path: Path | None, *, dir_fd: int | None = None, name: str | None = None
    ) -> tuple[str, int]: ...

    def put_bytes(self, data: bytes) -> str: ...

    def link_into(self, other: Self, shas: Iterable[str]) -> int:
        """Give ``other`` (a fork's store, of the same kind) the blobs ``shas``; how many were added."""
        ...


class HashingWriter:
    """A file-like sink writing to ``fd`` and hashing on the way (a download into the cache)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.digest.update(data)
        write_all(self.fd, data)
        self.size += len(data)
        return len(data)


class BlobStore:
    """The blobs of one session. Safe to use from several threads and processes at once: a blob
    appears under its name complete or not at all, and two writers of the same content both
    rename identical bytes onto the same name."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        """``<store>/file-history/<sessionId>``"""
        self.blobs_dir = self.directory / "blobs"

    def __repr__(self) -> str:
        return f"BlobStore({str(self.directory)!r})"

    # ------------------------------------------------------------------ naming

    def path(self, sha: str) -> Path:
        """Where blob ``sha`` lives (whether or not it exists). A malformed id is refused, so a
        tampered snapshot cannot name a path outside the store."""
        if not is_sha256(sha):
            raise InvalidSnapshotError("a blob id must be 64 lowercase hex digits", blob=sha)
        return self.blobs_dir / sha[:2] / sha

    def has(self, sha: str) -> bool:
        try:
            st = os.stat(self.path(sha), follow_symlinks=False)
        except FileNotFoundError:
            return False
        return stat.S_ISREG(st.st_mode)

    def open(self, sha: str) -> BinaryIO:
        """Read blob ``sha`` (:class:`BlobMissingError` if the store does not hold it)."""
        try:
            fd = os.open(self.path(sha), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise BlobMissingError(sha) from None
        return open(fd, "rb")

    def __iter__(self) -> Iterator[str]:
        """Every blob id held (in no particular order)."""
        try:
            shards = list(os.scandir(self.blobs_dir))
        except FileNotFoundError:
            return
        for shard in shards:
            if len(shard.name) != 2 or not shard.is_dir(follow_symlinks=False):
                continue
            with os.scandir(shard.path) as entries:
                for entry in entries:
                    if is_sha256(entry.name) and entry.name[:2] == shard.name:
                        yield entry.name

    def stats(self) -> dict[str, int]:
        """``{"count": blobs, "bytes": their total size}``."""
        count = 0
        total = 0
        for sha in self:
            try:
                total += os.stat(self.path(sha), follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
            count += 1
        return {"count": count, "bytes": total}

    # ------------------------------------------------------------------ writing

    def put_file(
        self, path: Path | None, *, dir_fd: int | None = None, name: str | None = None
    ) -> tuple[str, int]:
        """Store the content of a regular file: ``path``, or ``name`` relative to ``dir_fd``.

        Opened with ``O_NOFOLLOW``: a symlink is refused (:class:`PathRefusedError`), so is
        anything that is not a regular file. Returns ``(sha256, size)``.
        """
        where: str | Path
        if path is not None:
            where = path
        elif name is not None:
            where = name
        else:
            raise ValueError("put_file needs a path or a name")
        try:
            fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno_codes.ELOOP:
                raise PathRefusedError(str(where), "is a symlink") from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PathRefusedError(str(where), "is not a regular file")
            return self.put_fd(fd)
        finally:
            os.close(fd)

    def put_fd(self, fd: int) -> tuple[str, int]:
        """Store what can be read from ``fd`` (from its current offset). Returns ``(sha256, size)``."""

        def fill(sink: HashingWriter) -> tuple[str, int]:
            copy_fd(fd, sink)
            return sink.digest.hexdigest(), sink.size

        return self._write(fill)

    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; returns its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        if self._present(sha, len(data)):
            return sha

        def fill(sink: HashingWriter) -> tuple[str, int]:
            write_all(sink.fd, data)  # (hashed above already)
            return sha, len(data)

        self._write(fill)
        return sha

    def put_from(self, sha: str, fill: Callable[[HashingWriter], None]) -> int:
        """Store blob ``sha`` from ``fill``, which writes its bytes (in any number of calls) into
        the writer it is given; kept only if they hash to ``sha`` (else
        :class:`BlobCorruptError`, nothing kept). Returns the size. Like the other writes: temp
        file, read-only, ``fsync``, rename."""
        self.path(sha)  # a malformed id is refused before anything is created

        def checked(sink: HashingWriter) -> tuple[str, int]:
            fill(sink)
            got = sink.digest.hexdigest()
            if got != sha:
                raise BlobCorruptError(sha, f"the {sink.size} bytes received hash to {got}")
            return sha, sink.size

        return self._write(checked)[1]

    def link_into(self, other: BlobStore, shas: Iterable[str]) -> int:
        """Give ``other`` (a fork's store) the blobs ``shas``: hard links, or copies where links
        are impossible (another file system, no link support). Blobs ``other`` already has are
        skipped, and so are blobs this store lacks (the fork is then exactly as restorable as the
        original). Returns how many blobs were added to ``other``."""
        added = 0
        touched: set[Path] = set()
        for sha in sorted(set(shas)):
            if other.has(sha) or not self.has(sha):
                continue
            dst = other.path(sha)
            new_shard = other._ensure_shard(dst.parent)
            try:
                os.link(self.path(sha), dst, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno not in _NO_LINK_ERRNOS:
                    raise
                with self.open(sha) as src:
                    got, _ = other.put_fd(src.fileno())
                if got != sha:
                    with contextlib.suppress(OSError):
                        os.unlink(other.path(got))
                    raise BlobCorruptError(sha, f"its content hashes to {got}") from None
            touched.add(dst.parent)
            if new_shard:
                touched.add(other.blobs_dir)
            added += 1
        for directory in sorted(touched, key=lambda p: len(p.parts), reverse=True):
            fsync_dir(directory)
        return added

    # ------------------------------------------------------------------ internals

    def _write(self, fill: Callable[[HashingWriter], tuple[str, int]]) -> tuple[str, int]:
        """The one way a blob is written, so that every writer is as crash-safe: ``fill`` writes
        the bytes into a temporary file and says ``(sha256, size)``; a blob already present with
        that size is kept (the temporary file is dropped), else the file is made read-only,
        flushed with ``fsync`` and renamed to its name (the directory flushed too). Whatever
        fails, no temporary file stays behind."""
        tmp_fd, tmp = self._create_tmp()
        try:
            try:
                sha, size = fill(HashingWriter(tmp_fd))
                if self._present(sha, size):
                    os.unlink(tmp)
                    return sha, size
                os.fchmod(tmp_fd, _BLOB_MODE)
                os.fsync(tmp_fd)
            finally:
                os.close(tmp_fd)
            self._install(tmp, sha)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return sha, size

    def _create_tmp(self) -> tuple[int, Path]:
        if not self.blobs_dir.is_dir():
            self.blobs_dir.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
        while True:
            tmp = self.blobs_dir / f"{_TMP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            return fd, tmp

    def _present(self, sha: str, size: int) -> bool:
        """Whether a complete blob ``sha`` exists (a blob of another size is damaged: replaced)."""
        try:
            st = os.stat(self.path(sha), follow_symlinks=False)
        except FileNotFoundError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == size

    def _ensure_shard(self, shard: Path) -> bool:
        """Create a shard directory if needed; True when it was created (its parent needs a sync)."""
        if shard.is_dir():
            return False
        self.blobs_dir.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
        try:
            shard.mkdir(mode=_DIR_MODE)
        except FileExistsError:
            return False
        return True

    def _install(self, tmp: Path, sha: str) -> None:
        final = self.path(sha)
        new_shard = self._ensure_shard(final.parent)
        os.rename(tmp, final)
        fsync_dir(final.parent)
        if new_shard:
            fsync_dir(self.blobs_dir)
