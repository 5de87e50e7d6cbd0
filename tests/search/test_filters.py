"""Filters on a hit's file (cwd, agent, root, session) give the same hits, in the same order,
whether the query walks every match of the words (the plain plan) or asks the word index for the
row-id ranges of the files the filter leaves (the plan of a selective filter): files read whole
and files appended to later, so that their rows interleave, role and time filters beside."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.search import index as ix
from sessiond.search.database import open_index
from sessiond.search.index import FileMeta, Filters, Signature
from sessiond.search.query import words_match

WORDS = ["heron", "otter", "lynx", "marten", "stoat"]
FILES = 30


def _entry(eid: str, role: str, day: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": None,
        "timestamp": f"2026-03-{day:02d}T10:00:00Z",
        "message": {"role": role, "content": text, "timestamp": 1},
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    rng = random.Random(26)
    conn = open_index(Path(tmp_path_factory.mktemp("f")) / "index.sqlite3")
    conn.execute("BEGIN")
    counter = 0

    def entries(n: int) -> list[dict[str, Any]]:
        nonlocal counter
        out = []
        for _ in range(n):
            counter += 1
            text = " ".join(rng.choices(WORDS, k=3))
            out.append(_entry(f"e{counter}", rng.choice(["user", "assistant"]), rng.randint(1, 28), text))
        return out

    for n in range(FILES):
        agent, cwd = ["pi", "codex"][n % 2], f"/work/p{n % 7}"
        meta = FileMeta(f"/s/{n}.jsonl", f"r{n % 3}", agent, f"s{n}", cwd, "", None)
        ix.replace_file(conn, meta, Signature(n, 1, 1, 1), entries(rng.randint(0, 40)))
    for _ in range(60):  # appends: the files' rows interleave
        n = rng.randrange(FILES)
        ix.add_entries(conn, f"/s/{n}.jsonl", entries(rng.randint(1, 5)), None, None, None)
    conn.execute("COMMIT")
    yield conn
    conn.close()


def _hits(db: sqlite3.Connection, word: str, filters: Filters) -> list[tuple[str, str]]:
    page = ix.search(db, match=words_match(word), needle=None, filters=filters, offset=0, limit=200)
    assert not page.cut
    return [(h.session_id, h.entry_id) for h in page.hits]


FILTERS = [
    Filters(cwd="/work/p3"),
    Filters(cwd="/work/p3", since_ms=1772755200000),  # 2026-03-06
    Filters(cwd="/work", role="user"),  # every file: the plain plan either way
    Filters(session_id="s4"),
    Filters(session_id="s4", until_ms=1773100800000, role="assistant"),
    Filters(agent="codex", root="r1"),
    Filters(cwd="/nowhere"),
]


@pytest.mark.parametrize("filters", FILTERS, ids=repr)
@pytest.mark.parametrize("word", WORDS[:3])
def test_ranged_plan_equals_the_plain_plan(
    db: sqlite3.Connection, filters: Filters, word: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranged = _hits(db, word, filters)
    monkeypatch.setattr(ix, "RANGED_FILES", -1)  # never ranged
    plain = _hits(db, word, filters)
    assert ranged == plain
    if filters.cwd != "/nowhere":
        assert plain, "a filter that finds nothing proves nothing"


def test_the_ranged_plan_is_taken(db: sqlite3.Connection) -> None:
    budget = ix._Budget(10)
    assert ix._ranged_matches(db, words_match("heron"), Filters(cwd="/work/p3"), budget) is not None
    assert ix._ranged_matches(db, words_match("heron"), Filters(cwd="/work"), budget) is None
