"""Tree index: branches, the tree view, labels, and bad files that must not hang us."""

from __future__ import annotations

import time

from sessiond.model.js import UNDEFINED
from sessiond.model.tree import SessionTree, count_nodes
from tests.builders import Ledger


def _entry(
    eid: object, parent: object, ts: str = "2026-01-01T00:00:00.000Z", **extra: object
) -> dict[str, object]:
    return {"type": "custom", "customType": "t", "id": eid, "parentId": parent, "timestamp": ts, **extra}


def test_branch_follows_parent_links_from_the_leaf() -> None:
    s = Ledger()
    u1 = s.user("one")
    a1 = s.assistant("two")
    s.user("three")
    s.branch(a1)
    u3 = s.user("three again")
    tree = s.tree()
    assert [e["id"] for e in tree.branch()] == [u1, a1, u3]
    assert tree.branch("nope") == []
    assert tree.leaf_id == u3


def test_leaf_after_load_is_the_last_line_whatever_its_type() -> None:
    s = Ledger()
    u1 = s.user("hi")
    s.assistant("hello")
    s.branch(u1)
    lbl = s.label(u1, "start")
    tree = SessionTree(list(s.entries))
    assert tree.leaf_id == lbl


def test_get_tree_roots_children_and_labels() -> None:
    s = Ledger()
    u1 = s.user("root")
    a1 = s.assistant("a")
    s.user("b1")
    s.branch(a1)
    s.user("b2")
    s.label(a1, "fork-point")
    tree = s.tree()
    roots = tree.tree()
    assert [n.entry["id"] for n in roots] == [u1]
    a_node = roots[0].children[0]
    assert a_node.label == "fork-point"
    assert len(a_node.children) == 2
    assert count_nodes(roots) == len(s.entries)


def test_labels_last_wins_and_clear() -> None:
    s = Ledger()
    u1 = s.user("x")
    s.label(u1, "a")
    s.label(u1, "b")
    tree = s.tree()
    assert tree.label(u1) == "b"
    s.label(u1)  # clearing: no label key
    assert "label" not in s.entries[-1]
    assert s.tree().label(u1) is UNDEFINED


def test_children_sorted_by_timestamp_and_invalid_timestamps_compare_equal() -> None:
    entries = [
        _entry("r", None, "2026-01-01T00:00:00.000Z"),
        _entry("c3", "r", "2026-01-01T00:00:03.000Z"),
        _entry("c1", "r", "2026-01-01T00:00:01.000Z"),
        _entry("c2", "r", "2026-01-01T00:00:02.000Z"),
    ]
    root = SessionTree(entries).tree()[0]
    assert [c.entry["id"] for c in root.children] == ["c1", "c2", "c3"]
    bad = [_entry("r", None), _entry("x", "r", "garbage"), _entry("y", "r", "also garbage")]
    assert [c.entry["id"] for c in SessionTree(bad).tree()[0].children] == ["x", "y"]


def test_orphans_and_self_parents_are_roots_and_reported() -> None:
    entries = [_entry("a", None), _entry("b", "missing"), _entry("c", "c"), _entry("d", "b")]
    tree = SessionTree(entries)
    assert [n.entry["id"] for n in tree.tree()] == ["a", "b", "c"]
    diag = tree.diagnostics()
    assert diag.orphans == ["b"]
    assert diag.self_parents == ["c"]
    assert diag.cycles == []


def test_duplicate_ids_last_wins_and_are_reported() -> None:
    entries = [_entry("a", None), _entry("b", "a", note=1), _entry("b", "a", note=2)]
    tree = SessionTree(entries)
    assert len(tree) == 2
    b = tree.get("b")
    assert b is not None and b["note"] == 2
    assert tree.diagnostics().duplicate_ids == {"b": 2}
    # Pi's getTree shows the (last) node once per line that carries its id.
    assert count_nodes(tree.tree()) == 3


def test_parent_cycles_terminate_and_are_reported() -> None:
    entries = [_entry("a", "c"), _entry("b", "a"), _entry("c", "b"), _entry("x", None), _entry("y", "b")]
    tree = SessionTree(entries)
    tree.set_leaf("y")
    started = time.monotonic()
    branch = tree.branch()
    assert [e["id"] for e in branch] == ["c", "a", "b", "y"]  # stops at the first repeat
    assert tree.context_path("c")[-1]["id"] == "c"
    roots = tree.tree()
    assert [n.entry["id"] for n in roots] == ["x"]  # cycle members are in no root's subtree
    assert sorted(tree.diagnostics().cycles[0]) == ["a", "b", "c"]
    assert time.monotonic() - started < 5


def test_cycle_through_duplicate_ids_does_not_hang_tree_building() -> None:
    # A(root), B(child of A), A' (duplicate id A, child of B): node A now has parent B.
    entries = [_entry("A", None), _entry("B", "A"), _entry("A", "B")]
    tree = SessionTree(entries)
    roots = tree.tree()
    assert count_nodes(roots) >= 1
    assert tree.branch("A")[-1]["id"] == "A"


def test_context_path_falls_back_to_last_entry_for_unknown_leaf() -> None:
    s = Ledger()
    s.user("x")
    last = s.assistant("y")
    tree = s.tree()
    assert [e["id"] for e in tree.context_path("unknown")][-1] == last
    assert tree.branch("unknown") == []
    assert tree.context_path(None) == []


def test_lines_without_ids_behave_like_pi() -> None:
    entries = [_entry("a", None), {"type": "custom", "customType": "x"}]
    tree = SessionTree(entries)
    assert tree.leaf_id is UNDEFINED
    assert tree.branch() == []  # getBranch(undefined) is empty
    assert [e.get("customType") for e in tree.context_path()] == ["x"]  # falls back to the last line
    assert tree.diagnostics().entries_without_id == 1


def test_200k_linear_branch_without_recursion() -> None:
    entries = [_entry(f"e{i}", f"e{i - 1}" if i else None) for i in range(200_000)]
    tree = SessionTree(entries)
    assert len(tree.branch()) == 200_000
    roots = tree.tree()
    assert count_nodes(roots) == 200_000
    assert tree.diagnostics().cycles == []


def test_children_lookup() -> None:
    s = Ledger()
    u1 = s.user("x")
    a = s.assistant("a")
    s.branch(u1)
    b = s.assistant("b")
    tree = s.tree()
    assert [e["id"] for e in tree.children(u1)] == [a, b]
    assert [e["id"] for e in tree.children(None)] == [u1]
