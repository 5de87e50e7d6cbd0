"""The query language: whatever a person types is either refused with -32602 naming ``query``
or run by FTS5 without an error — never an SQLite error (fuzzed), and the terms mean what
docs/search.md says."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiond.errors import InvalidArgumentError
from sessiond.search import index as ix
from sessiond.search.database import open_index
from sessiond.search.index import FileMeta, Filters, Signature
from sessiond.search.query import decode_cursor, encode_cursor, substring_needle, words_match
from tests.search.conftest import user_entry

TEXTS = {
    "a": "the parse_leaf_id helper walks the tree",
    "b": "Parsing the café menu, then the leaf",
    "c": "flaky test in the tree walker",
    "d": "leaf id parsed from the header",
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = Path(tmp_path_factory.mktemp("q")) / "index.sqlite3"
    conn = open_index(path)
    meta = FileMeta("/x.jsonl", "sessiond", "pi", "s1", "/p", "t", "d")
    conn.execute("BEGIN")
    ix.replace_file(conn, meta, Signature(1, 1, 1, 1), [user_entry(k, v) for k, v in TEXTS.items()])
    conn.execute("COMMIT")
    yield conn
    conn.close()


def _ids(db: sqlite3.Connection, query: str, substring: bool = False) -> set[str]:
    page = ix.search(
        db,
        match=None if substring else words_match(query),
        needle=substring_needle(query) if substring else None,
        filters=Filters(),
        offset=0,
        limit=50,
    )
    return {h.entry_id for h in page.hits}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tree", {"a", "c"}),
        ("leaf tree", {"a"}),
        ('"leaf id"', {"a", "d"}),  # parse_leaf_id holds the words leaf id in order
        ("pars*", {"a", "b", "d"}),
        ("cafe", {"b"}),  # accents ignored
        ("tree -flaky", {"a"}),
        ('leaf -"leaf id"', {"b"}),
        ("TREE", {"a", "c"}),
    ],
)
def test_words_mode(db: sqlite3.Connection, query: str, expected: set[str]) -> None:
    assert _ids(db, query) == expected


def test_substring_mode_and_snippets(db: sqlite3.Connection) -> None:
    assert _ids(db, "_leaf_i", substring=True) == {"a"}
    assert _ids(db, "PARSE", substring=True) == {"a", "d"}  # "Parsing" has no "parse"
    page = ix.search(db, match=None, needle="leaf_id", filters=Filters(), offset=0, limit=5)
    assert page.hits[0].snippet.count("\x02") == 1 and "\x02leaf_id\x03" in page.hits[0].snippet
    words = ix.search(db, match=words_match("walks"), needle=None, filters=Filters(), offset=0, limit=5)
    assert "\x02walks\x03" in words.hits[0].snippet
    assert words.hits[0].on_branch is False  # leaf "d" has no parent: "a" is not on its branch


def test_cursor_round_trip() -> None:
    assert decode_cursor(encode_cursor(40)) == 40
    for bad in ("", "xyz", encode_cursor(1)[:-2] + "!!"):
        with pytest.raises(InvalidArgumentError) as caught:
            decode_cursor(bad)
        assert caught.value.field == "cursor"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc \"*-()^:+.NEAR_OR AND\\'{}[]é0\tЖ日%😀")), max_size=30))
def test_no_query_reaches_sqlite_as_an_error(db: sqlite3.Connection, query: str) -> None:
    for substring in (False, True):
        try:
            _ids(db, query, substring)
        except InvalidArgumentError as exc:
            assert exc.field == "query"
