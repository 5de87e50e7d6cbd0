"""The order of a words query's hits: bm25, then the newest text, then the text read last —
the same whether the query has filters (its matches joined to their times in SQL) or not (the
times read only for the scores that tie with the page's, :func:`sessiond.search.index._unfiltered_page`)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiond.search import index as ix
from sessiond.search.database import open_index
from sessiond.search.index import FileMeta, Filters, Signature
from sessiond.search.query import words_match
from tests.search.conftest import user_entry

# Few distinct texts, many times each, at shuffled times: most scores tie with many others.
TEXTS = (
    "deploy the release",
    "deploy the release branch today",
    "deploy",
    "rollback the deploy of the release",
    "the release notes mention deploy twice: deploy",
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = Path(tmp_path_factory.mktemp("rank")) / "index.sqlite3"
    conn = open_index(path)
    rng = random.Random(7)
    conn.execute("BEGIN")
    for f in range(4):
        entries = []
        for i in range(60):
            stamp = f"2026-03-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"
            entries.append(user_entry(f"e{f}-{i}", rng.choice(TEXTS), None, stamp))
        meta = FileMeta(f"/s{f}.jsonl", "sessiond", "pi", f"s{f}", "/p", "t", None)
        ix.replace_file(conn, meta, Signature(f, 1, 1, 1), entries)
    conn.execute("COMMIT")
    yield conn
    conn.close()


def _order(
    db: sqlite3.Connection, query: str, filters: Filters, offset: int, limit: int
) -> tuple[int, list[str]]:
    page = ix.search(db, match=words_match(query), needle=None, filters=filters, offset=offset, limit=limit)
    return page.total, [f"{h.session_id}/{h.entry_id}" for h in page.hits]


EVERYTHING = Filters(since_ms=0)  # matches every text, through the joined plan


@pytest.mark.parametrize("query", ["deploy", "release", '"the release"', "deploy release"])
def test_pages_without_filters_are_ordered_as_with_them(db: sqlite3.Connection, query: str) -> None:
    total, everything = _order(db, query, EVERYTHING, 0, 1000)
    assert total == len(everything) > 100
    for offset, limit in [(0, 1), (0, 7), (3, 20), (40, 13), (97, 50), (total - 1, 5), (total, 5)]:
        assert _order(db, query, Filters(), offset, limit) == (total, everything[offset : offset + limit])


def test_equal_scores_go_newest_first(db: sqlite3.Connection) -> None:
    page = ix.search(db, match=words_match("deploy"), needle=None, filters=Filters(), offset=0, limit=200)
    by_score: dict[str, list[int]] = {}
    texts = {(h.session_id, h.entry_id): h for h in page.hits}
    assert len(texts) == 200
    for h in page.hits:
        by_score.setdefault(h.snippet, []).append(h.timestamp_ms)
    assert any(len(stamps) > 10 for stamps in by_score.values())
    for stamps in by_score.values():  # the same text: the same score, newest first
        assert stamps == sorted(stamps, reverse=True)
