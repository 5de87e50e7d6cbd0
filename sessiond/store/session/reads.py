"""The reads every session answers from its light index: identity, entries, branches, the tree.

Shared by sessiond's own Pi sessions and by other agents' transcripts (a Claude Code
session builds the same kind of index over its converted entries), so the two agree on
what ``tree/get``, ``session/entries`` and an entry lookup return. Nothing here writes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, TypeVar

from ...model.js import UNDEFINED, get, key, trim
from ...model.tree import SessionTree, TreeNode
from ..index import SessionIndex

T = TypeVar("T")


class IndexedSession:
    """A session read through a :class:`~sessiond.store.index.SessionIndex`. Thread-safe: every
    read that walks more than one structure holds the session's lock."""

    def __init__(self, path: Path, index: SessionIndex) -> None:
        self.path = path
        self._index = index
        self._lock = threading.RLock()
        self.read_only: str | None = None
        """Why sessiond must not write this session (another agent's file), or ``None``."""

    def close(self) -> None:
        """Release what the session holds (its bodies no longer count against the memory budget)."""
        self._index.close()

    def if_free(self, fn: Callable[[], T]) -> T | None:
        """``fn()`` holding the session's lock, at once, when no other thread holds it; else
        ``None`` without calling it. What the event loop calls a session's method through when
        it must not wait for another thread's long read (the follower's ingest of a small
        growth: see ``Follower._follow``)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return fn()
        finally:
            self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def header(self) -> dict[str, Any]:
        return self._index.header

    @property
    def id(self) -> str:
        sid: str = self._index.header["id"]
        return sid

    @property
    def cwd(self) -> str:
        cwd = self._index.header.get("cwd")
        return cwd if type(cwd) is str else ""

    @property
    def tree(self) -> SessionTree:
        """The tree over *light* entries (use :meth:`get` for full ones)."""
        return self._index.tree

    @property
    def index(self) -> SessionIndex:
        return self._index

    @property
    def leaf_id(self) -> Any:
        return self._index.tree.leaf_id

    @property
    def entry_count(self) -> int:
        return len(self._index.tree)

    @property
    def name(self) -> str | None:
        """The latest ``session_info`` name in file order (an empty one clears it)."""
        name = self._index.session_name
        if type(name) is str and trim(name):
            return trim(name)
        return None

    def get(self, entry_id: Any) -> Any | None:
        """The full entry with this id (the last line carrying it), or ``None``."""
        with self._lock:
            light = self._index.tree.get(entry_id)
            return None if light is None else self._index.full(light)

    def branch(self, from_id: Any = UNDEFINED) -> list[Any]:
        """Full entries root -> ``from_id`` (default: the leaf); ``[]`` for an unknown id."""
        with self._lock:
            return self._index.full_path(self._index.tree.branch(from_id))

    def branch_ids(self, from_id: Any = UNDEFINED) -> list[Any]:
        with self._lock:
            return [get(e, "id") for e in self._index.tree.branch(from_id)]

    def children(self, entry_id: Any) -> list[Any]:
        with self._lock:
            return self._index.full_path(self._index.tree.children(entry_id))

    def tree_view(self) -> dict[str, Any]:
        """``tree/get``'s answer: every entry as a flat node, in file order, and the leaf.

        Flat (parent ids and child counts) rather than nested, so a client can draw a huge
        tree lazily, and with the index's previews so drawing it reads no entry bodies.
        """
        with self._lock:
            index, tree = self._index, self._index.tree
            children: dict[Any, int] = {}
            for light in (tree.get(i) for i in tree.ids()):
                parent_key = key(get(light, "parentId"))
                children[parent_key] = children.get(parent_key, 0) + 1
            nodes = []
            for light, preview in zip(tree.entries, index.previews, strict=True):
                eid = get(light, "id")
                label = tree.label(eid)
                node: dict[str, Any] = {
                    "id": eid,
                    "parentId": get(light, "parentId"),
                    "type": get(light, "type"),
                    "preview": preview,
                    "timestamp": get(light, "timestamp"),
                    "childCount": children.get(key(eid), 0),
                }
                role = get(get(light, "message"), "role")
                if type(role) is str:
                    node["role"] = role
                if type(label) is str:
                    node["label"] = label
                nodes.append(node)
            return {"leafId": tree.leaf_id, "nodes": nodes}

    def tree_nodes(self) -> list[TreeNode]:
        """Pi's ``getTree()`` over light entries."""
        with self._lock:
            return self._index.tree.tree()

    def label(self, entry_id: Any) -> Any:
        return self._index.tree.label(entry_id)

    def entries(self) -> list[Any]:
        """Every non-header line in file order, full (reads the whole file: for small sessions)."""
        with self._lock:
            return [self._index.full_at(i) for i in range(len(self._index))]
