"""The file history's exception types (docs/file-history.md).

Each carries what a client needs to explain it (which path, which blob, why) in ``data`` and
its JSON-RPC code in ``error_code``, like the types of :mod:`sessiond.errors` (those about one
path share :class:`~sessiond.errors.PathError`; a storage error unless a type says
otherwise). A rewind does not raise these per file: it reports them as the file's ``status``
and ``reason`` and goes on with the others.
"""

from __future__ import annotations

from typing import Any

from sessiond_protocol.errors import ErrorCode

from ..errors import CheckpointNotFoundError, PathError, SessiondError

__all__ = [
    "BlobCorruptError",
    "BlobMissingError",
    "CheckpointNotFoundError",
    "FileAccessError",
    "FileChangedError",
    "FileHistoryError",
    "InvalidSnapshotError",
    "PathRefusedError",
    "RewindOrderError",
    "RootChangedError",
]


class FileHistoryError(SessiondError):
    """Base of the file history's own errors."""

    error_code = ErrorCode.STORAGE_ERROR


class PathRefusedError(PathError, FileHistoryError):
    """A path sessiond will not read or write: outside the session's cwd and configured roots, a
    directory on the way that is a symlink, a symlink where a file is to be written, a directory
    or a device where a file is expected. Never overridden, not even by ``force``."""

    error_code = ErrorCode.PATH_REFUSED
    template = "Refused {path!r}: {reason}"


class RootChangedError(PathRefusedError):
    """The directory a root's path leads to now is not the one the file history was recorded in
    (replaced by a symlink to another directory, deleted and created again, re-pointed): writing
    there would put one directory's contents into another. Refused like any path, never forced.

    ``recorded``/``current`` are ``{"dev", "ino"}`` (``recorded`` is None for snapshots written
    before identities were recorded; ``current`` None when the root cannot be reached)."""

    def __init__(
        self,
        root: str,
        reason: str,
        recorded: dict[str, int] | None,
        current: dict[str, int] | None,
    ) -> None:
        super().__init__(root, reason, recorded=recorded, current=current)
        self.recorded = recorded
        self.current = current


class FileAccessError(PathError, FileHistoryError):
    """The operating system refused to read or write a user's file (permissions, I/O, space)."""

    template = "Cannot access {path!r}: {reason}"

    def __init__(self, path: str, reason: str, errno: int | None = None) -> None:
        super().__init__(path, reason, errno=errno)
        self.errno = errno


class FileChangedError(PathError, FileHistoryError):
    """A file was not in the state an operation was planned against (someone changed it since);
    nothing was written from the plan."""

    template = "{path!r} changed: {reason}"


class BlobMissingError(FileHistoryError):
    """A snapshot refers to a blob the session's store does not hold."""

    def __init__(self, sha: str) -> None:
        super().__init__(f"Backup {sha} is missing from the file history", blob=sha)
        self.sha = sha


class BlobCorruptError(FileHistoryError):
    """A blob whose content no longer hashes to its name (nothing was written from it)."""

    def __init__(self, sha: str, reason: str) -> None:
        super().__init__(f"Backup {sha} is damaged: {reason}", blob=sha, reason=reason)
        self.sha = sha
        self.reason = reason


class InvalidSnapshotError(FileHistoryError):
    """Snapshot data (or a blob id in it) that does not have the documented shape."""

    def __init__(self, reason: str, **data: Any) -> None:
        super().__init__(f"Invalid file-history snapshot: {reason}", reason=reason, **data)
        self.reason = reason


class RewindOrderError(FileHistoryError):
    """``execute`` called on a plan whose undo snapshot was never built (``undo_data`` first):
    a bug in the caller, so a client that meets it is answered with an internal error."""

    error_code = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
