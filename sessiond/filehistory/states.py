"""File states: what a path held at a point in time (docs/file-history.md, "File state").

``{"kind": "file", "blob": sha256, "mode": 420, "size": n}``, ``{"kind": "symlink", "target":
"..."}`` or ``{"kind": "missing"}``. A state read from the disk without storing its content
still names the content's SHA-256 in ``blob`` (the blob store may not hold it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, TypeGuard

from .errors import InvalidSnapshotError

Kind: TypeAlias = Literal["file", "symlink", "missing"]

SHA256_RE: Final = re.compile(r"[0-9a-f]{64}")
MISSING_KEY: Final = "missing"
SYMLINK_PREFIX: Final = "symlink:"


def is_sha256(value: object) -> bool:
    """A blob id: 64 lowercase hex digits (anything else could name a path outside the store)."""
    return isinstance(value, str) and SHA256_RE.fullmatch(value) is not None


def is_utf8(text: str) -> bool:
    """Whether ``text`` survives JSON (names read with ``surrogateescape`` from undecodable bytes do not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class FileState:
    kind: Kind
    blob: str | None = None
    """SHA-256 of the content (files only)."""
    mode: int | None = None
    """Permission bits, ``stat.S_IMODE`` (files only)."""
    size: int | None = None
    """Bytes (files only)."""
    target: str | None = None
    """What the link points to, as ``readlink`` returns it (symlinks only)."""

    def __post_init__(self) -> None:
        if self.kind == "file":
            if not is_sha256(self.blob):
                raise InvalidSnapshotError("a file state needs a sha256 blob", blob=self.blob)
            if not _is_int(self.mode) or not 0 <= self.mode <= 0o7777:
                raise InvalidSnapshotError("a file state needs a mode in 0..0o7777", mode=self.mode)
            if not _is_int(self.size) or self.size < 0:
                raise InvalidSnapshotError("a file state needs a size >= 0", size=self.size)
            if self.target is not None:
                raise InvalidSnapshotError("a file state has no target")
        elif self.kind == "symlink":
            if not isinstance(self.target, str) or not self.target or "\0" in self.target:
                raise InvalidSnapshotError("a symlink state needs a non-empty target", target=self.target)
            if not is_utf8(self.target):
                raise InvalidSnapshotError("a symlink target must be valid UTF-8", target=repr(self.target))
            if self.blob is not None or self.mode is not None or self.size is not None:
                raise InvalidSnapshotError("a symlink state has only a target")
        elif self.kind == "missing":
            if self.blob is not None or self.mode is not None or self.size is not None or self.target:
                raise InvalidSnapshotError("a missing state has no fields")
        else:
            raise InvalidSnapshotError(f"unknown state kind {self.kind!r}", kind=self.kind)

    @classmethod
    def file(cls, blob: str, mode: int, size: int) -> FileState:
        return cls("file", blob=blob, mode=mode, size=size)

    @classmethod
    def symlink(cls, target: str) -> FileState:
        return cls("symlink", target=target)

    def to_json(self) -> dict[str, Any]:
        """The spec's JSON form, exactly (no other keys)."""
        if self.kind == "file":
            return {"kind": "file", "blob": self.blob, "mode": self.mode, "size": self.size}
        if self.kind == "symlink":
            return {"kind": "symlink", "target": self.target}
        return {"kind": "missing"}

    @classmethod
    def from_json(cls, data: object) -> FileState:
        """Parse and validate a state; unknown extra keys are ignored (newer writers)."""
        if not isinstance(data, Mapping):
            raise InvalidSnapshotError("a file state must be an object", state=data)
        kind = data.get("kind")
        if kind == "file":
            return cls("file", blob=data.get("blob"), mode=data.get("mode"), size=data.get("size"))
        if kind == "symlink":
            return cls("symlink", target=data.get("target"))
        if kind == "missing":
            return MISSING
        raise InvalidSnapshotError(f"unknown state kind {kind!r}", kind=kind)

    @property
    def action(self) -> Literal["write", "delete", "symlink"]:
        """What a rewind does to make a path hold this state."""
        if self.kind == "file":
            return "write"
        if self.kind == "symlink":
            return "symlink"
        return "delete"


MISSING: Final = FileState("missing")


def content_key(state: FileState) -> str:
    """The ``seen`` value of a state: the blob's sha256, ``"symlink:<target>"`` or ``"missing"``.

    Modes are not part of it: a ``chmod`` is not someone else's work to protect.
    """
    if state.kind == "file":
        assert state.blob is not None
        return state.blob
    if state.kind == "symlink":
        return SYMLINK_PREFIX + (state.target or "")
    return MISSING_KEY


def same_state(a: FileState, b: FileState) -> bool:
    """Whether a path holding ``a`` already is in state ``b`` (content, kind, and a file's mode)."""
    return content_key(a) == content_key(b) and (a.kind != "file" or a.mode == b.mode)
