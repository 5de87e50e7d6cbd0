"""Substring mode against a brute-force scan: texts of letters, digits, ASCII separators and
non-ASCII characters (upper and lower case), needles cut out of them or made up — the index
finds exactly the texts a scan finds (ASCII letters in any case, any other character as it is),
whichever plan it takes (a whole token, a token's start or end, a piece inside a token, or a
scan). And a file removed or read again leaves none of its old texts or tokens behind."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiond.search import index as ix
from sessiond.search.database import open_index
from sessiond.search.index import FileMeta, Filters, Signature
from sessiond.search.nodes import load as load_nodes
from sessiond.search.query import ascii_lower
from tests.search.conftest import user_entry

ALPHABET = [*"abceABCE019_-. /:éÉßİ日😀→²ǅ\u0301\ue000", "abc", "Bca", "xyz", "ABCx"]
_text = st.lists(st.sampled_from(ALPHABET), max_size=12).map("".join)


def _index(db: sqlite3.Connection, path: str, texts: list[str]) -> None:
    meta = FileMeta(path, "sessiond", "pi", path, "/p", "t", None)
    db.execute("BEGIN")
    ix.replace_file(db, meta, Signature(1, 1, 1, 1), [user_entry(f"e{i}", t) for i, t in enumerate(texts)])
    db.execute("COMMIT")


def _cut(text: str, start: int, size: int) -> str:
    start %= max(1, len(text))
    return text[start : start + size]


def _found(db: sqlite3.Connection, needle: str) -> set[str]:
    page = ix.search(db, match=None, needle=needle, filters=Filters(), offset=0, limit=200)
    assert not page.cut
    return {h.entry_id for h in page.hits}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_text, min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 30), st.integers(3, 12)), max_size=6),
    st.lists(_text, max_size=4),
)
def test_substring_equals_a_scan(
    texts: list[str], cuts: list[tuple[int, int, int]], made_up: list[str]
) -> None:
    needles = [_cut(texts[i % len(texts)], s, n) for i, s, n in cuts] + made_up
    needles += [n.swapcase() for n in needles]
    with tempfile.TemporaryDirectory() as tmp:
        db = open_index(Path(tmp) / "index.sqlite3")
        try:
            _index(db, "/a.jsonl", texts)
            for needle in needles:
                needle = needle.strip()
                if len(needle) < 3:
                    continue
                want = {f"e{i}" for i, t in enumerate(texts) if ascii_lower(needle) in ascii_lower(t)}
                assert _found(db, needle) == want, (needle, texts)
        finally:
            db.close()


def test_nothing_of_a_removed_file_stays(tmp_path: Path) -> None:
    db = open_index(tmp_path / "index.sqlite3")
    try:
        _index(db, "/a.jsonl", ["capybara habitat", "shared words"])
        _index(db, "/b.jsonl", ["shared words", "okapi"])
        assert _found(db, "pybar") == {"e0"}
        _index(db, "/a.jsonl", ["shared words only"])  # read again: capybara went
        tokens = {t for (t,) in db.execute("SELECT tok FROM vocab")}
        assert tokens == {"shared", "words", "only", "okapi"}
        assert _found(db, "pybar") == set()
        db.execute("BEGIN")
        ix.remove_file(db, "/a.jsonl")
        ix.remove_file(db, "/b.jsonl")
        db.execute("COMMIT")
        for table in ("docs", "blocks", "vocab", "nodes"):
            assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
        assert db.execute("SELECT count(*) FROM vgrams WHERE vgrams MATCH 'sha'").fetchone()[0] == 0
        assert _found(db, "shared") == set()
    finally:
        db.close()


def test_entries_indexed_again_read_their_new_texts(tmp_path: Path) -> None:
    """An entry sent again has its texts replaced: the new ones get the ids of the texts that
    went, and must be read from their own block, not from one the old texts left behind."""
    db = open_index(tmp_path / "index.sqlite3")
    try:
        _index(db, "/a.jsonl", ["first text"])
        for batch in (["e1", "e2"], ["e3", "e4"]):
            db.execute("BEGIN")
            ix.add_entries(db, "/a.jsonl", [user_entry(e, f"old {e} text") for e in batch], None, None, None)
            db.execute("COMMIT")
        db.execute("BEGIN")  # e2 to e4 again, in one batch: their texts get ids from e2's on
        again = [user_entry(e, f"new {e} words") for e in ("e2", "e3", "e4")]
        ix.add_entries(db, "/a.jsonl", again, None, None, None)
        db.execute("COMMIT")
        ids = load_nodes(db, 1).ids  # the file's entries, in order: docs.ent is a place in it
        texts = {
            ids[ent]: text
            for ent, text in db.execute("SELECT d.ent, t.text FROM docs d JOIN texts t ON t.id = d.id")
        }
        assert texts == {
            "e0": "first text",
            "e1": "old e1 text",
            "e2": "new e2 words",
            "e3": "new e3 words",
            "e4": "new e4 words",
        }
        assert _found(db, "new e3") == {"e3"}
        assert _found(db, "old e3") == set()
    finally:
        db.close()


def test_folded_words_are_checked(tmp_path: Path) -> None:
    """The word index folds accents (``abcé`` is the word ``abce`` to it): a text with such a
    letter is checked, never taken as a hit on the word index's say; one whose only non-ASCII
    characters are symbols (``→``: a separator) need not be."""
    db = open_index(tmp_path / "index.sqlite3")
    try:
        _index(db, "/a.jsonl", ["abce", "abcé", "ab→ce", "x abce→y", "ABCE\u0301"])
        assert _found(db, "bce") == {"e0", "e3", "e4"}
        assert _found(db, "bcé") == {"e1"}
        assert _found(db, "abce→") == {"e3"}
    finally:
        db.close()
