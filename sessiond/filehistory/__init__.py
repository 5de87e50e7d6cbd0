"""File history: per-session backups of the files an agent edits, and safe rewinds.

The contract is docs/file-history.md. :class:`BlobStore` keeps contents (:class:`SharedBlobs`: in a store
other daemons share, with the local directory as its cache), :class:`Workspace` is
the only code touching the user's files (no symlink below a root is ever followed),
:class:`FileHistory` replays snapshot data and plans and carries out rewinds, ``diff_states``
renders diffs. No daemon code here: :mod:`sessiond.service.filehistory` wires it in.
"""

from __future__ import annotations

from .blobs import Blobs, BlobStore, hash_fd
from .diff import MAX_BYTES, FileDiff, diff_states
from .errors import (
    BlobCorruptError,
    BlobMissingError,
    CheckpointNotFoundError,
    FileAccessError,
    FileChangedError,
    FileHistoryError,
    InvalidSnapshotError,
    PathRefusedError,
    RewindOrderError,
    RootChangedError,
)
from .history import INITIAL, FileAction, FileHistory, RewindPlan, RewindResult, parse_snapshot, totals
from .shared import RemoteBlobs, SharedBlobs, copy_blobs
from .states import MISSING, FileState, content_key, same_state
from .workspace import Located, RootId, Workspace

__all__ = [
    "INITIAL",
    "MAX_BYTES",
    "MISSING",
    "BlobCorruptError",
    "BlobMissingError",
    "BlobStore",
    "Blobs",
    "CheckpointNotFoundError",
    "FileAccessError",
    "FileAction",
    "FileChangedError",
    "FileDiff",
    "FileHistory",
    "FileHistoryError",
    "FileState",
    "InvalidSnapshotError",
    "Located",
    "PathRefusedError",
    "RemoteBlobs",
    "RewindOrderError",
    "RewindPlan",
    "RewindResult",
    "RootChangedError",
    "RootId",
    "SharedBlobs",
    "Workspace",
    "content_key",
    "copy_blobs",
    "diff_states",
    "hash_fd",
    "parse_snapshot",
    "same_state",
    "totals",
]
