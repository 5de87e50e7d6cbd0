"""The vocabulary's counts: one upsert of every token of a batch (``json_each``) writes the same
rows, ids and trigram entries as one upsert per token (still the way for what JSON cannot
carry)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import orjson
import pytest

from sessiond.search import index as ix
from sessiond.search.database import open_index

BATCHES: list[dict[str, int]] = [
    {"alpha": 2, "123": 1, "beta": 1, "日本語": 3, "x9z": 1},
    {"beta": 4, "gamma": 1, "123": 2, "0042": 1, "ünï": 2},
    {},
    {"alpha": 1, "delta": 7, "0042": 3},
]


def _rows(db: sqlite3.Connection) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    vocab = db.execute("SELECT id, tok, typeof(tok), n FROM vocab ORDER BY id").fetchall()
    grams = db.execute("SELECT rowid, tok FROM vgrams ORDER BY rowid").fetchall()
    return vocab, grams


def _apply(db: sqlite3.Connection, batches: list[dict[str, int]]) -> None:
    for counts in batches:
        db.execute("BEGIN")
        ix._add_tokens(db, counts)
        db.execute("COMMIT")


def test_one_upsert_per_batch_writes_what_one_per_token_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_once = open_index(tmp_path / "a" / "index.sqlite3")
    _apply(at_once, BATCHES)
    per_token = open_index(tmp_path / "b" / "index.sqlite3")

    def refuse(value: object) -> bytes:
        raise TypeError("the per-token way")

    monkeypatch.setattr(orjson, "dumps", refuse)
    _apply(per_token, BATCHES)
    assert _rows(at_once) == _rows(per_token)
    vocab, grams = _rows(at_once)
    totals = sum((Counter(b) for b in BATCHES), Counter())
    assert {tok: n for _, tok, _, n in vocab} == dict(totals)
    assert {kind for _, _, kind, _ in vocab} == {"text"}  # "123" stays a text, not a number
    assert [tok for _, tok in grams] == [tok for _, tok, _, _ in vocab]


def test_a_builds_deferred_counter_is_written_whole(tmp_path: Path) -> None:
    """A build sums its files' counts in a ``Counter`` (``deferred_vocab``) and writes it once."""
    db = open_index(tmp_path / "index.sqlite3")
    _apply(db, [dict(Counter({"plain": 2, "words": 1}) + Counter({"plain": 1}))])
    _apply(db, [Counter({"plain": 1, "more": 4})])
    vocab, _ = _rows(db)
    assert [(tok, n) for _, tok, _, n in vocab] == [("plain", 4), ("words", 1), ("more", 4)]
