"""A first build's slice (one transaction, up to ``BUILD_SLICE_S``) ends after the file it is
inserting when an event comes in: events go first, and a long slice (fewer vocabulary upserts
and FTS5 segments per build) does not delay them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sessiond.search import engine as engine_module
from sessiond.search.database import BUILD_MERGING, STEADY_MERGING, connect, merging
from sessiond.search.engine import SearchEngine
from sessiond.search.index import Signature

from .test_producer import FILES, FixtureSource


class EventDuringBuild(FixtureSource):
    """Queues an event (a change of a path no root holds) as the build's first file is taken."""

    def __init__(self) -> None:
        self.engine: SearchEngine | None = None
        self.sent = False

    def signature(self, path: str) -> Signature | None:
        engine = self.engine
        if engine is not None and engine.progress is not None and not self.sent:
            self.sent = True  # the build is on (its look at every file is done): an event now
            engine.changed("/nowhere/not-a-session.jsonl")
        return super().signature(path)


def test_an_event_ends_the_build_slice(tmp_path: Path) -> None:
    source = EventDuringBuild()
    slices: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "WORKER_MIN_BYTES", 1 << 60)  # the read-ahead thread
        _build(tmp_path / "index.sqlite3", source, lambda done, total: slices.append((done, total)))
    assert source.sent
    assert slices[0] == (1, len(FILES))  # the event came in during the first file: it went next
    assert slices[-1] == (len(FILES), len(FILES))


def _merging(path: Path) -> dict[str, int]:
    """The FTS5 settings of the word index, after checking the trigram index has the same."""
    db = connect(path, readonly=True)
    try:
        words, grams = (
            dict(db.execute(f"SELECT k, v FROM {table}_config WHERE k != 'version'").fetchall())
            for table in ("words", "vgrams")
        )
    finally:
        db.close()
    assert words == grams
    return words


def _build(path: Path, source: FixtureSource, on_progress: Callable[[int, int], None]) -> None:
    """Build ``path`` from ``source`` (told of the engine, if it asks), ``on_progress`` after
    each slice."""
    engine = SearchEngine(path, source)
    if isinstance(source, EventDuringBuild):
        source.engine = engine
    engine.on_progress = on_progress
    engine.start()
    try:
        engine.flush()
        deadline = time.monotonic() + 120  # only a bound for "it finished at all"
        while engine.progress is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        engine.flush()
    finally:
        engine.close()


def _merging_seen(path: Path) -> list[dict[str, int]]:
    """Build ``path`` from the fixtures: the merge settings seen after each slice."""
    seen: list[dict[str, int]] = []
    _build(path, FixtureSource(), lambda done, total: seen.append(_merging(path)))
    return seen


def test_a_build_merges_in_bigger_steps_and_then_goes_back_to_fts5s_defaults(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "WORKER_MIN_BYTES", 1 << 60)
        during = _merging_seen(path)
    assert during and all(seen == dict(BUILD_MERGING) for seen in during)
    assert _merging(path) == dict(STEADY_MERGING)


def test_a_build_that_stopped_half_way_gets_its_settings_back_at_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "WORKER_MIN_BYTES", 1 << 60)
        _merging_seen(path)
        db = connect(path)
        merging(db, building=True)  # what a build killed half way leaves
        db.close()
        assert _merging(path) == dict(BUILD_MERGING)
        assert _merging_seen(path) == []  # nothing changed: no build
    assert _merging(path) == dict(STEADY_MERGING)


def test_the_settings_are_written_only_when_they_change(tmp_path: Path) -> None:
    """With watching off every query looks at the files first (``_look``): it must not write the
    settings each time."""
    db = connect(tmp_path / "index.sqlite3")
    try:
        db.executescript(
            "CREATE VIRTUAL TABLE words USING fts5(text); CREATE VIRTUAL TABLE vgrams USING fts5(tok);"
        )
        merging(db, building=False)
        written = db.total_changes
        merging(db, building=False)
        assert db.total_changes == written
        merging(db, building=True)
        assert db.total_changes > written
    finally:
        db.close()
