"""The collector's thresholds: raised by ``sessiond serve``, left alone by the library."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond import cli
from sessiond.rpc import server
from sessiond.service.collector import YOUNG_THRESHOLD, tune_for_daemon


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*before)


def test_tune_raises_the_young_threshold_only(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 7, 9)
    tune_for_daemon()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 7, 9)


def test_serve_tunes_the_collector_before_serving(
    thresholds: tuple[int, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int, int]] = []

    def fake_serve(config: Any, **_: Any) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(server, "serve", fake_serve)
    assert cli.main(["serve", "--store", str(tmp_path / "store"), "--socket", str(tmp_path / "s.sock")]) == 0
    assert seen == [(YOUNG_THRESHOLD, 10, 10)]


def test_the_library_keeps_pythons_defaults(thresholds: tuple[int, int, int], tmp_path: Path) -> None:
    from sessiond.store.session import Session  # noqa: PLC0415

    session = Session.create(tmp_path, "/cwd")
    session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert gc.get_threshold() == thresholds
