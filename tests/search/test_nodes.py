"""A file's entries as the index keeps them (sessiond/search/nodes.py): a few compact rows per
file that give each entry its place (what ``docs.ent`` refers to) and its parent (``onBranch``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sessiond.search import index as ix
from sessiond.search import nodes
from sessiond.search.database import open_index
from sessiond.search.extract import Doc
from sessiond.search.index import FileMeta, Filters, Signature
from tests.search.conftest import user_entry


def _hits(db: sqlite3.Connection, word: str) -> dict[str, bool]:
    page = ix.search(db, match=f'"{word}"', needle=None, filters=Filters(), offset=0, limit=200)
    return {h.entry_id: h.on_branch for h in page.hits}


def test_entries_keep_their_place_and_last_parent(tmp_path: Path) -> None:
    db = open_index(tmp_path / "index.sqlite3")
    try:
        known = nodes.FileNodes()
        db.execute("BEGIN")
        texts = {"a": (10, 2), "c": (12, 1), "d": (13, -1)}
        nodes.write(db, 7, known, [("a", None), ("b", "a"), ("c", "b"), ("d", "a")], texts)
        # b sent again: a new parent, texts now
        nodes.write(db, 7, known, [("e", "d"), ("b", "e"), ("f", None)], {"b": (20, 3), "f": (23, 1)})
        db.execute("COMMIT")
        loaded = nodes.load(db, 7)
        assert loaded.ids == ["a", "b", "c", "d", "e", "f"] == known.ids
        assert loaded.parents == {"a": None, "b": "e", "c": "b", "d": "a", "e": "d", "f": None}
        assert loaded.texts == known.texts
        assert loaded.texts == {
            "a": (10, 2),
            "b": (20, 3),
            "c": (12, 1),
            "d": (13, -1),
            "e": (0, 0),
            "f": (23, 1),
        }
        assert loaded.branch("c") == {"c", "b", "e", "d", "a"}
        assert nodes.load(db, 8).ids == []
    finally:
        db.close()


def test_rows_are_joined_past_the_limit_and_places_stay(tmp_path: Path) -> None:
    db = open_index(tmp_path / "index.sqlite3")
    try:
        known = nodes.FileNodes()
        db.execute("BEGIN")
        parent: str | None = None
        for i in range(nodes.MAX_CHUNKS + 5):
            nodes.write(db, 1, known, [(f"e{i}", parent)], {f"e{i}": (100 + 2 * i, 2)})
            parent = f"e{i}"
        db.execute("COMMIT")
        rows = db.execute("SELECT count(*) FROM nodes WHERE fid = 1").fetchone()[0]
        assert rows == 5  # joined into one at MAX_CHUNKS + 1, then four more
        loaded = nodes.load(db, 1)
        assert loaded.ids == [f"e{i}" for i in range(nodes.MAX_CHUNKS + 5)]
        assert loaded.branch(parent) == set(loaded.ids)
        assert loaded.texts == {f"e{i}": (100 + 2 * i, 2) for i in range(nodes.MAX_CHUNKS + 5)}
    finally:
        db.close()


def test_a_rolled_back_append_is_not_remembered(tmp_path: Path) -> None:
    """The writer keeps files' entries decoded between appends; a batch rolled back must not
    leave its entries in what it keeps (the next append would give wrong places)."""
    db = open_index(tmp_path / "index.sqlite3")
    try:
        db.execute("BEGIN")
        nodes.write(db, 1, nodes.for_append(db, 1), [("a", None)], {})
        db.execute("COMMIT")
        db.execute("BEGIN")
        nodes.write(db, 1, nodes.for_append(db, 1), [("x", "a")], {})
        db.execute("ROLLBACK")
        db.execute("BEGIN")
        kept = nodes.for_append(db, 1)
        assert kept.ids == ["a"]
        nodes.write(db, 1, kept, [("b", "a")], {})
        db.execute("COMMIT")
        assert nodes.load(db, 1).ids == ["a", "b"]
    finally:
        db.close()


def test_many_appends_and_a_fork_through_the_index(tmp_path: Path) -> None:
    """Hits name their entries and say onBranch right after more appends than a file keeps rows
    for, entries sent again, and a fork that leaves a branch behind."""
    db = open_index(tmp_path / "index.sqlite3")
    path = "/s.jsonl"
    try:
        db.execute("BEGIN")
        ix.replace_file(
            db,
            FileMeta(path, "sessiond", "pi", "s", "/p", "t", "r0"),
            Signature(1, 1, 1, 1),
            [user_entry("r0", parent=None, text="alpha")],
        )
        db.execute("COMMIT")
        parent = "r0"
        for i in range(nodes.MAX_CHUNKS + 3):
            entry = user_entry(f"m{i}", parent=parent, text=f"alpha beta{i}")
            db.execute("BEGIN")
            ix.add_entries(db, path, [entry], entry["id"], None, Signature(1, 2 + i, 1, 1))  # type: ignore[arg-type]
            db.execute("COMMIT")
            parent = f"m{i}"
        # m3 sent again (a read that included it), then a fork from m1: the leaf moves there
        db.execute("BEGIN")
        ix.add_entries(
            db,
            path,
            [user_entry("m3", parent="m2", text="alpha gamma")],
            parent,
            None,
            Signature(1, 200, 1, 1),
        )
        ix.add_entries(
            db, path, [user_entry("f0", parent="m1", text="alpha delta")], "f0", None, Signature(1, 201, 1, 1)
        )
        db.execute("COMMIT")
        hits = _hits(db, "alpha")
        assert len(hits) == nodes.MAX_CHUNKS + 5
        assert {e for e, on in hits.items() if on} == {"r0", "m0", "m1", "f0"}
        assert _hits(db, "gamma") == {"m3": False}
        assert _hits(db, "beta3") == {}
        assert _hits(db, "beta4") == {"m4": False}
    finally:
        db.close()


def test_an_entry_whose_texts_are_not_in_one_run_is_replaced_whole(tmp_path: Path) -> None:
    """A producer giving an entry's texts apart (another entry's between them): sent again, the
    entry's texts are found by a scan of its file's, and all of them go."""
    db = open_index(tmp_path / "index.sqlite3")
    path = "/s.jsonl"
    try:
        docs = [
            Doc("a", "user", "text", "apple one", 1),
            Doc("b", "user", "text", "banana", 1),
            Doc("a", "assistant", "thinking", "apple two", 1),
        ]
        db.execute("BEGIN")
        meta = FileMeta(path, "sessiond", "pi", "s", "/p", "t", None)
        ix.replace_docs(db, meta, Signature(1, 1, 1, 1), docs, [("a", None), ("b", "a")])
        db.execute("COMMIT")
        assert nodes.load(db, 1).texts["a"][1] == -1
        db.execute("BEGIN")
        ix.add_entries(
            db, path, [user_entry("a", parent=None, text="cherry")], "b", None, Signature(1, 2, 1, 1)
        )
        db.execute("COMMIT")
        assert _hits(db, "apple") == {}
        assert set(_hits(db, "cherry")) == {"a"} and set(_hits(db, "banana")) == {"b"}
    finally:
        db.close()


def test_texts_of_an_entry_left_out_of_the_nodes(tmp_path: Path) -> None:
    """A producer that gives an entry's texts but not the entry: it is listed all the same (its
    hits name it), and sent again its old texts go."""
    db = open_index(tmp_path / "index.sqlite3")
    path = "/s.jsonl"
    try:
        docs = [Doc("a", "user", "text", "apple", 1), Doc("b", "user", "text", "banana", 1)]
        db.execute("BEGIN")
        meta = FileMeta(path, "sessiond", "pi", "s", "/p", "t", None)
        ix.replace_docs(db, meta, Signature(1, 1, 1, 1), docs, [("a", None)])
        db.execute("COMMIT")
        assert set(_hits(db, "banana")) == {"b"}
        db.execute("BEGIN")
        ix.add_entries(
            db, path, [user_entry("b", parent="a", text="cherry")], "b", None, Signature(1, 2, 1, 1)
        )
        db.execute("COMMIT")
        assert _hits(db, "banana") == {}
        assert _hits(db, "cherry") == {"b": True} and set(_hits(db, "apple")) == {"a"}
    finally:
        db.close()
