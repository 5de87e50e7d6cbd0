"""Unified diffs between two states of a file (``fileHistory/diff``).

Text: ``difflib`` with 3 lines of context, headers ``a/<key>`` and ``b/<key>`` (``/dev/null``
for a missing side), git's ``\\ No newline at end of file`` marker, and ``+``/``-`` line counts.
Binary (a NUL byte in the first 8 KiB, or not valid UTF-8): no text, sizes only. Either side
larger than ``max_bytes`` (4 MiB by default): "too large", sizes only, nothing read into memory.
A symlink's content is its target, as git shows it.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from typing import Any, Final

from .blobs import Blobs
from .errors import BlobCorruptError, FileChangedError, FileHistoryError
from .states import FileState, content_key
from .workspace import Workspace

MAX_BYTES: Final = 4 * 1024 * 1024
BINARY_SNIFF: Final = 8 * 1024
NO_NEWLINE: Final = "\\ No newline at end of file\n"


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str
    old: FileState
    new: FileState | None
    """None: the path cannot be read now (refused, unreadable): whether it changed is unknown."""
    diff: str | None
    """The unified diff ("" when the contents are equal); None when binary, too large or failed."""
    added: int = 0
    removed: int = 0
    binary: bool = False
    too_large: bool = False
    error: str | None = None
    """Why no diff could be made (a path refused, a backup missing, ...)."""

    @property
    def changed(self) -> bool | None:
        return None if self.new is None else self.old != self.new

    @property
    def old_size(self) -> int:
        return _size(self.old)

    @property
    def new_size(self) -> int | None:
        return None if self.new is None else _size(self.new)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "changed": self.changed,
            "binary": self.binary,
            "tooLarge": self.too_large,
            "added": self.added,
            "removed": self.removed,
            "diff": self.diff,
            "oldSize": self.old_size,
            "newSize": self.new_size,
            "from": self.old.to_json(),
            "to": None if self.new is None else self.new.to_json(),
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def _size(state: FileState) -> int:
    if state.kind == "file":
        return state.size or 0
    if state.kind == "symlink":
        return len((state.target or "").encode())
    return 0


def _header(key: str, state: FileState, prefix: str) -> str:
    return "/dev/null" if state.kind == "missing" else f"{prefix}/{key.lstrip('/')}"


def _content(key: str, state: FileState, blobs: Blobs, workspace: Workspace) -> bytes:
    """The bytes of ``state`` (its size is known to be within the cap): from the blob store,
    else — a state just read from the disk is only hashed — from the file, checked by hash."""
    if state.kind == "missing":
        return b""
    if state.kind == "symlink":
        return (state.target or "").encode()
    assert state.blob is not None and state.size is not None
    if blobs.has(state.blob):
        with blobs.open(state.blob) as f:
            data = f.read(state.size + 1)
        if hashlib.sha256(data).hexdigest() != state.blob:
            raise BlobCorruptError(state.blob, "its content does not match its name")
        return data
    try:
        with workspace.open_file(key) as f:
            data = f.read(state.size + 1)
    except FileHistoryError:
        data = b""
    if hashlib.sha256(data).hexdigest() != state.blob:
        raise FileChangedError(key, f"content {state.blob} is neither backed up nor on the disk (any more)")
    return data


def _is_binary(data: bytes) -> bool:
    if b"\0" in data[:BINARY_SNIFF]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _lines(text: str) -> list[str]:
    """Split on ``\\n`` only (``str.splitlines`` would also split on form feeds, ``\\r``, ...)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unified_diff(key: str, old: FileState, new: FileState, a: str, b: str) -> tuple[str, int, int]:
    """The diff text of ``a`` -> ``b`` and its added and removed line counts."""
    out: list[str] = []
    added = removed = 0
    for line in difflib.unified_diff(
        _lines(a), _lines(b), _header(key, old, "a"), _header(key, new, "b"), n=3, lineterm="\n"
    ):
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n")
            out.append(NO_NEWLINE)
    return "".join(out), added, removed


def diff_states(
    key: str,
    old: FileState,
    new: FileState,
    blobs: Blobs,
    workspace: Workspace,
    *,
    max_bytes: int = MAX_BYTES,
) -> FileDiff:
    """The diff of ``key`` from ``old`` (e.g. a checkpoint's state) to ``new`` (e.g. the disk).

    A side whose content is not in ``blobs`` is read from the disk through ``workspace`` and
    must hash to the state's blob (else ``error``).
    """
    if content_key(old) == content_key(new):
        return FileDiff(key, old, new, "")
    if _size(old) > max_bytes or _size(new) > max_bytes:
        return FileDiff(key, old, new, None, too_large=True)
    try:
        a = _content(key, old, blobs, workspace)
        b = _content(key, new, blobs, workspace)
    except FileHistoryError as exc:
        return FileDiff(key, old, new, None, error=exc.message)
    if _is_binary(a) or _is_binary(b):
        return FileDiff(key, old, new, None, binary=True)
    text, added, removed = unified_diff(key, old, new, a.decode(), b.decode())
    return FileDiff(key, old, new, text, added=added, removed=removed)
