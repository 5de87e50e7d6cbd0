"""Preparing a compaction right after ``Session.open`` reads entries lazily, and decides the same.

A session opened from its file holds light entries; its first ``prepare`` reads only what the
decision looks at (``sessiond.compaction.lazy``) and parses the messages to summarise when they
are first used. Everything it returns must be what the projection parsed at once gives: the
same cut, ``tokensBefore``, previous summary, messages (in full), file lists and serialization.
Checked on generated Pi sessions (the differential generator's: branches, compactions of every
kind, system messages, custom messages, branch summaries, duplicate ids, junk lines) with
several ``keepRecentTokens``, once through ``Session`` and once on the lazy projection itself
against ``project_entries``, including every count it answers without reading.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from sessiond.compaction.lazy import LazyEntries, LazyProjection, lazy_projection
from sessiond.compaction.prepare import CompactionPreparation, CompactionSettings, NoCompaction, _for_summary
from sessiond.formats.pi import encode_line
from sessiond.model.projection import Projection, context_entries, context_settings, project_entries
from sessiond.store.session import Session
from tests.oracle.generate_sessions import generate
from tests.oracle.mutations import mutate

SEEDS = range(300, 340)
KEEPS = (200, 1500, 6000, 20000)


def _session_file(tmp_path: Path, seed: int) -> Path:
    rng = random.Random(seed)
    text = generate(rng, seed)
    if seed % 4 == 3:
        text = mutate(text, rng)
    path = tmp_path / f"gen-{seed}.jsonl"
    path.write_text(text, encoding="utf-8")
    Session.open(path).close()  # a v1/v2 file is migrated once, so both opens read the same bytes
    return path


def _same_number(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _compare(lazy: CompactionPreparation, eager: CompactionPreparation) -> None:
    # What the lazy preparation counted from light entries, before reading anything.
    assert lazy.history_length == len(eager.messages_to_summarize)
    assert lazy.turn_prefix_length == len(eager.turn_prefix_messages)
    assert lazy.first_kept_entry_id == eager.first_kept_entry_id
    assert lazy.first_kept_index == eager.first_kept_index
    assert lazy.is_split_turn == eager.is_split_turn
    assert _same_number(lazy.tokens_before, eager.tokens_before)
    assert lazy.previous_summary == eager.previous_summary
    assert lazy.messages_to_summarize == eager.messages_to_summarize
    assert lazy.turn_prefix_messages == eager.turn_prefix_messages
    for name in ("read", "written", "edited"):
        assert list(getattr(lazy.file_ops, name)) == list(getattr(eager.file_ops, name))
    assert lazy.serialized_history() == eager.serialized_history()
    assert lazy.serialized_turn_prefix() == eager.serialized_turn_prefix()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_first_prepare_after_open_decides_what_a_parsed_context_decides(
    tmp_path: Path, seed: int
) -> None:
    path = _session_file(tmp_path, seed)
    lazy_taken = 0
    for keep in KEEPS:
        settings = CompactionSettings(True, 16384, keep)
        with Session.open(path) as fresh, Session.open(path) as parsed:
            parsed.context()  # a held projection: the preparation reads it, parsed at once
            eager = parsed.prepare_compaction(settings)
            lazy = fresh.prepare_compaction(settings)
        # (both sessions are closed now: the lazy one still reads its messages, through a
        # descriptor of its own)
        if isinstance(eager, NoCompaction):
            assert lazy == eager
            continue
        assert isinstance(lazy, CompactionPreparation)
        lazy_taken += isinstance(lazy.projected, LazyEntries)
        _compare(lazy, eager)
    has_edit = '"type":"context_edit"' in path.read_text(encoding="utf-8")
    if not has_edit:
        assert lazy_taken or all(
            isinstance(
                Session.open(path).prepare_compaction(CompactionSettings(True, 16384, k)), NoCompaction
            )
            for k in KEEPS
        )


def test_most_generated_sessions_take_the_lazy_path(tmp_path: Path) -> None:
    """The comparison above is not vacuous: without a context edit the lazy path is taken."""
    lazy = prepared = 0
    for seed in SEEDS:
        path = _session_file(tmp_path, seed)
        with Session.open(path) as session:
            prep = session.prepare_compaction(CompactionSettings(True, 16384, 1500))
        if isinstance(prep, CompactionPreparation):
            prepared += 1
            lazy += isinstance(prep.projected, LazyEntries)
    assert prepared >= 20 and lazy >= prepared // 3, (prepared, lazy)


def _light_and_full(path: Path) -> tuple[Session, list[Any], list[Any]]:
    session = Session.open(path)
    light_path = session.index.tree.context_path()
    ctx = context_entries(light_path, unique_ids=True)
    return session, light_path, ctx


@pytest.mark.parametrize("seed", SEEDS)
def test_the_lazy_projection_is_the_projection(tmp_path: Path, seed: int) -> None:
    path = _session_file(tmp_path, seed)
    session, light_path, ctx = _light_and_full(path)
    with session:
        full = session.index.full_path(ctx)
        eager = project_entries(full, context_settings(light_path))
        reader = session._body_reader()
        assert reader is not None
        lazy = lazy_projection(
            list(ctx), context_settings(light_path), session.index.path_reader(ctx, reader, session._lock)
        )
        if lazy is None:
            assert any(type(e) is dict and e.get("type") == "context_edit" for e in ctx)
            return
        assert isinstance(lazy, LazyProjection)
        rng = random.Random(seed)
        n = len(eager.entries)
        # counts first (nothing read), then reads in a scattered order, then everything
        assert len(lazy.entries) == n and len(lazy.messages) == len(eager.messages)
        for _ in range(20):
            start, end = sorted((rng.randint(0, n), rng.randint(0, n)))
            assert lazy.entries.summarized_count(start, end) == len(_for_summary(eager.entries[start:end]))
        for _ in range(10):
            if eager.messages:
                j = rng.randrange(len(eager.messages))
                assert lazy.messages[j] == eager.messages[j]
                assert lazy.messages[j - len(eager.messages)] == eager.messages[j]
                assert lazy.messages[j:] == eager.messages[j:]
            if n:
                i = rng.randrange(n)
                assert lazy.entries[i] == eager.entries[i]
        assert list(lazy.messages) == eager.messages
        assert list(lazy.entries) == eager.entries
        assert lazy.settings == eager.settings
        assert isinstance(eager, Projection)


def test_a_line_appended_after_the_preparation_under_a_summarised_id_changes_nothing(tmp_path: Path) -> None:
    """The lazy reader reads the line each light entry came from, not the newest with its id."""
    session = Session.create(tmp_path, "/work")
    for i in range(30):
        session.append_message(
            {"role": "user", "content": [{"type": "text", "text": f"q{i} " + "x" * 400}], "timestamp": i}
        )
        session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"a{i} " + "y" * 400}],
                "timestamp": i,
                "stopReason": "stop",
            }
        )
    path = session.path
    session.close()
    settings = CompactionSettings(True, 16384, 800)
    with Session.open(path) as reference:
        reference.context()
        expected = reference.prepare_compaction(settings)
    assert isinstance(expected, CompactionPreparation)
    with Session.open(path) as s:
        prep = s.prepare_compaction(settings)
        assert isinstance(prep, CompactionPreparation) and isinstance(prep.projected, LazyEntries)
        first = s.branch()[1]
        # Another program appends a line reusing the id of a summarised entry.
        clash = {
            **first,
            "message": {"role": "user", "content": [{"type": "text", "text": "CLASH"}], "timestamp": 99},
        }
        with path.open("ab") as f:
            f.write(encode_line(clash))
        s.ingest()
        now = s.get(first["id"])
        assert now is not None and now["message"]["content"][0]["text"] == "CLASH"
        _compare(prep, expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_tree_path_finds_the_same_context_entries_from_the_compaction_back(
    tmp_path: Path, seed: int
) -> None:
    """``context_entries(unique_ids=True)``, which the session's light context uses, against
    Pi's search by id from the root, on every leaf of the generated tree."""
    path = _session_file(tmp_path, seed)
    with Session.open(path) as session:
        tree = session.index.tree
        for eid in list(tree.ids())[::7]:
            branch = tree.context_path(eid)
            assert context_entries(branch, unique_ids=True) == context_entries(branch)
