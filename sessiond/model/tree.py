"""The session tree: every entry of every branch, indexed by id, with a movable leaf.

The file is a ledger in append order; ``parentId`` links turn it into a tree and the leaf
selects one root-to-leaf path (the branch). This index answers the tree questions Pi's
``SessionManager`` answers (``getEntry``, ``getBranch``, ``getChildren``, ``getTree``, labels)
with Pi's results, including its treatment of odd files: duplicate ids (the last one wins),
orphans and self-parents (roots), lines without ids.

Unlike Pi, nothing here can hang or overflow the stack on a bad file: every walk is a loop,
and a walk that meets an entry twice (a ``parentId`` cycle) stops there and records the cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from . import entries as E
from .js import UNDEFINED, date_ms, get, key, truthy


@dataclass(slots=True, eq=False)
class TreeNode:
    """One node of :meth:`SessionTree.tree`; ``children`` are sorted oldest first."""

    entry: Any
    children: list[TreeNode] = field(default_factory=list)
    label: Any = UNDEFINED
    label_timestamp: Any = UNDEFINED


@dataclass(slots=True)
class TreeDiagnostics:
    """What is wrong with a tree, so a client can show it instead of failing on it."""

    duplicate_ids: dict[str, int] = field(default_factory=dict)
    """id -> number of lines carrying it (the last line wins)."""
    orphans: list[Any] = field(default_factory=list)
    """ids of entries whose ``parentId`` names no entry (they become roots)."""
    self_parents: list[Any] = field(default_factory=list)
    """ids of entries that are their own parent (roots, as in Pi)."""
    cycles: list[list[Any]] = field(default_factory=list)
    """``parentId`` cycles, each as the ids on it; their entries are in no root's subtree."""
    entries_without_id: int = 0
    """lines that parsed but carry no usable id (non-objects, or objects without ``id``)."""

    def as_json(self) -> dict[str, Any]:
        """The fields as ``inspect`` reports them (beside the file's own diagnostics)."""
        return {
            "duplicateIds": self.duplicate_ids,
            "orphans": self.orphans,
            "selfParents": self.self_parents,
            "cycles": self.cycles,
            "entriesWithoutId": self.entries_without_id,
        }


class SessionTree:
    """Index over the non-header lines of a session (Pi's ``byId``, labels and leaf)."""

    __slots__ = ("_by_id", "_children", "_label_ts", "_labels", "entries", "leaf_id")

    def __init__(self, entries: list[Any]) -> None:
        self.entries: list[Any] = entries
        """Non-header lines in file order, duplicates included (Pi's ``getEntries()``)."""
        by_id: dict[Hashable, Any] = {}
        labels: dict[Hashable, Any] = {}
        label_ts: dict[Hashable, Any] = {}
        leaf: Any = None
        for entry in entries:
            if type(entry) is dict:
                eid = entry.get("id", UNDEFINED)
                by_id[eid if type(eid) is str else key(eid)] = entry
                leaf = eid
                if entry.get("type") == E.LABEL:
                    target = key(entry.get("targetId", UNDEFINED))
                    label = entry.get("label", UNDEFINED)
                    if truthy(label):
                        labels[target] = label
                        label_ts[target] = entry.get("timestamp", UNDEFINED)
                    else:
                        labels.pop(target, None)
                        label_ts.pop(target, None)
            else:
                by_id[UNDEFINED] = entry
                leaf = UNDEFINED
        self._by_id = by_id
        self._labels = labels
        self._label_ts = label_ts
        self._children: dict[Hashable, list[Any]] | None = None
        self.leaf_id: Any = leaf
        """Id of the current leaf: after loading, the id of the last line (any type)."""

    # ------------------------------------------------------------------ lookups

    def __len__(self) -> int:
        """Distinct ids (Pi's ``getEntryCount()``)."""
        return len(self._by_id)

    def __contains__(self, entry_id: object) -> bool:
        return key(entry_id) in self._by_id

    @property
    def lookup(self) -> Callable[[Hashable], Any | None]:
        """``get`` for a string id, without the call around it (the light index's hot path)."""
        return self._by_id.get

    def get(self, entry_id: Any) -> Any | None:
        """The entry with this id (the last line carrying it), or ``None``."""
        return self._by_id.get(key(entry_id))

    def ids(self) -> Iterator[Any]:
        """Distinct ids, in the order each was first seen."""
        for entry in self._by_id.values():
            yield get(entry, "id")

    def label(self, entry_id: Any) -> Any:
        """The label on an entry (``UNDEFINED`` when none)."""
        return self._labels.get(key(entry_id), UNDEFINED)

    def label_timestamp(self, entry_id: Any) -> Any:
        return self._label_ts.get(key(entry_id), UNDEFINED)

    def labels(self) -> dict[Hashable, tuple[Any, Any]]:
        """Every resolved label as ``key(targetId) -> (label, timestamp)``, in set order."""
        return {k: (v, self._label_ts.get(k, UNDEFINED)) for k, v in self._labels.items()}

    def children(self, parent: Any) -> list[Any]:
        """Entries whose ``parentId`` is ``parent``, one per id, in first-seen order."""
        if self._children is None:
            index: dict[Hashable, list[Any]] = {}
            for entry in self._by_id.values():
                index.setdefault(key(get(entry, "parentId")), []).append(entry)
            self._children = index
        return list(self._children.get(key(parent), ()))

    # ------------------------------------------------------------------ moving the leaf

    def set_leaf(self, entry_id: Any) -> None:
        """Pi's ``branch(id)``: raises :class:`KeyError` for an unknown id."""
        if key(entry_id) not in self._by_id:
            raise KeyError(entry_id)
        self.leaf_id = entry_id

    def reset_leaf(self) -> None:
        """Pi's ``resetLeaf()``: the next entry becomes a new root."""
        self.leaf_id = None

    def add(self, entry: Any) -> None:
        """Index a line appended after loading; it becomes the leaf, as in Pi. O(1)."""
        self.entries.append(entry)
        if type(entry) is not dict:
            self._by_id[UNDEFINED] = entry
            self.leaf_id = UNDEFINED
            return
        eid = entry.get("id", UNDEFINED)
        k = key(eid)
        replaced = self._by_id.get(k)
        self._by_id[k] = entry
        self.leaf_id = eid
        if self._children is not None:
            if replaced is not None:
                self._children = None  # a duplicate id moves a node: rebuild lazily
            else:
                self._children.setdefault(key(entry.get("parentId", UNDEFINED)), []).append(entry)
        if entry.get("type") == E.LABEL:
            target = key(entry.get("targetId", UNDEFINED))
            if truthy(entry.get("label", UNDEFINED)):
                self._labels[target] = entry["label"]
                self._label_ts[target] = entry.get("timestamp", UNDEFINED)
            else:
                self._labels.pop(target, None)
                self._label_ts.pop(target, None)

    def reparent(self, entry_id: Any, parent: Any) -> None:
        """Another agent's reader moved an entry (its ``parentId`` is now ``parent``): the light
        entry is updated in place. Unknown ids are ignored."""
        entry = self._by_id.get(key(entry_id))
        if type(entry) is not dict:
            return
        entry["parentId"] = parent
        self._children = None

    # ------------------------------------------------------------------ paths

    def branch(self, from_id: Any = UNDEFINED) -> list[Any]:
        """Root-to-entry path ending at ``from_id`` (default: the leaf). Unknown id -> ``[]``."""
        start = self.leaf_id if from_id is UNDEFINED or from_id is None else from_id
        if not truthy(start):
            return []
        current = self._by_id.get(key(start))
        return self._walk_up(current)

    def context_path(self, leaf_id: Any = UNDEFINED) -> list[Any]:
        """The path context is built from (Pi's ``buildSessionPath``).

        ``None`` selects nothing; an unknown or absent leaf falls back to the *last line of
        the file*, which is how Pi treats a leaf it cannot find (unlike :meth:`branch`).
        """
        leaf_id = self.leaf_id if leaf_id is UNDEFINED else leaf_id
        if leaf_id is None:
            return []
        leaf = self._by_id.get(key(leaf_id)) if truthy(leaf_id) else None
        if leaf is None:
            leaf = self.entries[-1] if self.entries else None
        return self._walk_up(leaf)

    def _walk_up(self, start: Any) -> list[Any]:
        """Root -> ``start``. Every step but the first is the entry an id names, so a path
        without a cycle holds at most one entry more than there are ids: a walk that goes on
        longer has met a cycle and is made again, stopping where it repeats (a set of every
        entry seen made the walk of a 50,000-entry branch twice as slow)."""
        path: list[Any] = []
        append = path.append
        by_id = self._by_id
        current = start
        for _ in range(len(by_id) + 2):
            if current is None:
                break
            append(current)
            parent = current.get("parentId", UNDEFINED) if type(current) is dict else UNDEFINED
            if type(parent) is str:  # the usual case, without a call per step
                if not parent:
                    break
                current = by_id.get(parent)
                continue
            if not truthy(parent):
                break
            current = by_id.get(key(parent))
        else:
            return self._walk_up_cycle(start)
        path.reverse()
        return path

    def _walk_up_cycle(self, current: Any) -> list[Any]:
        path: list[Any] = []
        seen: set[int] = set()
        by_id = self._by_id
        while current is not None:
            marker = id(current)
            if marker in seen:
                break  # a parentId cycle: stop at the first repeated entry
            seen.add(marker)
            path.append(current)
            parent = current.get("parentId", UNDEFINED) if type(current) is dict else UNDEFINED
            if type(parent) is str:  # the usual case, without a call per step
                if not parent:
                    break
                current = by_id.get(parent)
                continue
            if not truthy(parent):
                break
            current = by_id.get(key(parent))
        path.reverse()
        return path

    # ------------------------------------------------------------------ the whole tree

    def tree(self) -> list[TreeNode]:
        """Pi's ``getTree()``: roots in file order, children sorted by timestamp.

        A root is an entry whose parent is ``null``, itself, or unknown. With duplicate ids a
        node can be reached twice (Pi shows it twice too); a cycle through duplicates is cut.
        """
        nodes: dict[Hashable, TreeNode] = {}
        for entry in self.entries:
            k = key(get(entry, "id"))
            nodes[k] = TreeNode(entry, [], self._labels.get(k, UNDEFINED), self._label_ts.get(k, UNDEFINED))
        roots: list[TreeNode] = []
        for entry in self.entries:
            eid = get(entry, "id")
            node = nodes[key(eid)]
            parent = get(entry, "parentId")
            if parent is None or key(parent) == key(eid):
                roots.append(node)
                continue
            parent_node = nodes.get(key(parent))
            if parent_node is not None:
                parent_node.children.append(node)
            else:
                roots.append(node)
        stack = list(roots)
        sorted_nodes: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in sorted_nodes:
                continue
            sorted_nodes.add(id(node))
            if len(node.children) > 1:
                node.children.sort(key=_BY_TIMESTAMP)
            stack.extend(node.children)
        return roots

    def diagnostics(self) -> TreeDiagnostics:
        """Duplicate ids, orphans, self-parents, cycles and id-less lines, found in O(n)."""
        diag = TreeDiagnostics()
        counts: dict[Hashable, int] = {}
        for entry in self.entries:
            eid = get(entry, "id")
            if type(eid) is not str:
                diag.entries_without_id += 1
            k = key(eid)
            counts[k] = counts.get(k, 0) + 1
        for entry in self._by_id.values():
            eid = get(entry, "id")
            k = key(eid)
            if counts.get(k, 0) > 1:
                diag.duplicate_ids[str(eid)] = counts[k]
            parent = get(entry, "parentId")
            if parent is None or parent is UNDEFINED:
                continue
            if key(parent) == k:
                diag.self_parents.append(eid)
            elif key(parent) not in self._by_id:
                diag.orphans.append(eid)
        diag.cycles = self._find_cycles()
        return diag

    def _find_cycles(self) -> list[list[Any]]:
        """Cycles of the parent function over distinct ids (self-parents excluded)."""
        state: dict[Hashable, int] = {}  # 1 = on the current walk, 2 = done
        cycles: list[list[Any]] = []
        by_id = self._by_id
        for start in by_id:
            if start in state:
                continue
            walk: list[Hashable] = []
            k: Hashable | None = start
            while k is not None and k not in state:
                state[k] = 1
                walk.append(k)
                parent = get(by_id[k], "parentId")
                if parent is None or parent is UNDEFINED:
                    k = None
                    break
                pk = key(parent)
                if pk == k or pk not in by_id:
                    k = None
                    break
                k = pk
            if k is not None and state.get(k) == 1:
                at = walk.index(k)
                cycles.append([get(by_id[c], "id") for c in walk[at:]])
            for w in walk:
                state[w] = 2
        return cycles


def _compare_timestamps(a: TreeNode, b: TreeNode) -> int:
    """``new Date(a) - new Date(b)`` as a sort comparator; NaN compares equal, as in V8."""
    d = date_ms(get(a.entry, "timestamp")) - date_ms(get(b.entry, "timestamp"))
    if d != d or d == 0:
        return 0
    return -1 if d < 0 else 1


_BY_TIMESTAMP = cmp_to_key(_compare_timestamps)


def count_nodes(roots: Iterable[TreeNode]) -> int:
    """Nodes reachable from ``roots``, counting a node once per path to it (Pi's tree walk)."""
    sizes: dict[int, int] = {}
    on_stack: set[int] = set()
    total = 0
    for root in roots:
        stack: list[tuple[TreeNode, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            nid = id(node)
            if i == 0:
                if nid in sizes:
                    continue
                on_stack.add(nid)
            if i < len(node.children):
                stack.append((node, i + 1))
                child = node.children[i]
                cid = id(child)
                if cid not in sizes and cid not in on_stack:
                    stack.append((child, 0))
                continue
            on_stack.discard(nid)
            sizes[nid] = 1 + sum(sizes.get(id(c), 0) for c in node.children)
        total += sizes[id(root)]
    return total
