"""A first build's per-file work is written for speed (one loop over a file's entries, the
per-text steps of :func:`.index.prepare` inline); here it must equal its definition written
plainly, on every session of tests/fixtures read as the build reads it (every agent's reader,
Pi's files of older versions too), and on entries that repeat an id or carry snippet markers:

* :func:`.extract.file_docs` is :func:`entry_docs` and :func:`parent_of` below of the last
  line of each id, in the order of those last lines (Pi's rule);
* :func:`.index.prepare` gives each text without snippet markers, whether the word tokenizer
  sees only its ASCII words (:func:`.blocks.plain`), the texts cut into blocks
  (:func:`.blocks.split`, :func:`.blocks.pack`) and their tokens' counts.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from sessiond.search import blocks
from sessiond.search.extract import Doc, _found, file_docs, timestamp_ms
from sessiond.search.index import END, START, prepare
from sessiond.search.readers import open_for_index

from .conftest import user_entry

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SESSIONS = sorted(FIXTURES.rglob("*.jsonl"))


def _agent(path: Path) -> str:
    parts = path.relative_to(FIXTURES).parts
    if parts[0] == "claude-code" or path.name.startswith("claude-code"):
        return "claude-code"
    return "codex" if parts[0] == "codex" else "pi"


def entry_docs(entry: Any) -> list[Doc]:
    """The searchable texts of one entry (none for headers, model changes and the like)."""
    if type(entry) is not dict or type(entry.get("id")) is not str:
        return []
    ts = timestamp_ms(entry.get("timestamp"))
    return [Doc(entry["id"], r, k, text, ts) for r, k, text in _found(entry) if text and not text.isspace()]


def parent_of(entry: Any) -> str | None:
    parent = entry.get("parentId") if type(entry) is dict else None
    return parent if type(parent) is str else None


def _file_docs_by_definition(entries: list[Any]) -> tuple[list[Doc], list[tuple[str, str | None]]]:
    last: dict[str, Any] = {}
    for entry in entries:
        if type(entry) is dict and type(entry.get("id")) is str:
            last.pop(entry["id"], None)
            last[entry["id"]] = entry
    docs = [doc for entry in last.values() for doc in entry_docs(entry)]
    return docs, [(eid, parent_of(entry)) for eid, entry in last.items()]


def _prepared_by_definition(docs: list[Doc]) -> tuple[Any, ...]:
    texts = [d.text.replace(START, " ").replace(END, " ") for d in docs]
    encoded = [blocks.encode(t) for t in texts]
    parts = [(start, part) for start, part in blocks.split(0, encoded)]
    return texts, [blocks.plain(t) for t in texts], parts, blocks.token_counts(encoded)


def _check(entries: list[Any]) -> None:
    docs, nodes = file_docs(entries)
    assert (docs, nodes) == _file_docs_by_definition(entries)
    assert all(type(d) is Doc for d in docs)
    texts, plain, packed, tokens = prepare(docs)
    unpacked = []
    for start, data in packed:
        body, starts = blocks.unpack(data)
        unpacked.append((start, [body[a:b] for a, b in itertools.pairwise(starts)]))
    assert (texts, plain, unpacked, tokens) == _prepared_by_definition(docs)


def test_there_are_sessions_of_every_agent() -> None:
    assert {_agent(p) for p in SESSIONS} == {"claude-code", "codex", "pi"}


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_sessions_docs_and_prepared_texts_follow_their_definition(path: Path) -> None:
    session = open_for_index(_agent(path), path)
    try:
        _check(list(session.entries()))
    finally:
        session.close()


def test_a_repeated_id_is_its_last_line_and_markers_are_taken_out() -> None:
    entries: list[Any] = [
        user_entry("a", "first \x02words\x03 here"),
        user_entry("b", "second", "a"),
        user_entry("a", "first again, later", "b"),
        {"type": "message", "id": "c", "parentId": 7, "message": {"role": "assistant", "content": "x"}},
        {"type": "label", "id": "d", "label": "   "},
        "not an entry",
        {"id": 5},
    ]
    _check(entries)
    _, nodes = file_docs(entries)
    assert [n for n, _ in nodes] == ["b", "a", "c", "d"]
    assert nodes[2] == ("c", None)
    assert prepare(file_docs([entries[0]])[0]).texts == ["first  words  here"]
