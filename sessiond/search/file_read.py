"""A session file read for indexing alone: what the engine needs of an opened session (its
``OpenedSession`` without ``ingest``), made by the light readers of :mod:`.claude_file` and
:mod:`.codex_file` (the engine opens the daemon's own session for a file it keeps following)."""

from __future__ import annotations

from typing import Any


class FileRead:
    """A session's id, cwd, name, entries (in file order) and leaf, as the daemon's session of
    the same file gives them."""

    def __init__(self, session_id: str, cwd: str, name: str | None, entries: list[Any], leaf: Any) -> None:
        self.id = session_id
        self.cwd = cwd
        self.name = name
        self._entries = entries
        self.leaf_id = leaf

    def entries(self) -> list[Any]:
        return self._entries

    def close(self) -> None:
        self._entries = []


def leaf_or_last(entries: list[Any], leaf: Any) -> Any:
    """``leaf`` when an entry has that id, else the last entry's id (``None``: no entries): the
    leaf the daemon's Claude Code and Codex sessions serve for the same file."""
    if leaf is not None and any(type(e) is dict and e.get("id") == leaf for e in entries):
        return leaf
    return entries[-1].get("id") if entries else None
