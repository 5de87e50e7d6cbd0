"""The usage feed's start: the model registry's head start is not what the records depend on."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import sessiond.service.usage as usage_feed
from sessiond.service.config import load_config
from sessiond.service.service import Service

pytestmark = pytest.mark.anyio


async def test_the_records_are_built_when_the_registry_head_start_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The feed imports the model registry in a thread before its first build. An import that
    fails there (another thread importing the same modules can make Python raise its import
    deadlock error in one of them) used to end the feed's task before the build: ``stats/query``
    then said "indexing" for ever and no ``stats_update`` was sent."""

    def fails(model: str) -> int | None:
        raise ImportError("deadlock detected by _ModuleLock('genai_prices')")

    monkeypatch.setattr(usage_feed, "registry_window", fails)
    env = {"HOME": str(tmp_path / "home")}
    service = Service(load_config(env, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(service.stats.run)
            with anyio.fail_after(30):  # a hang guard, not a timing assertion
                while service.stats.progress is not None or service.stats._index is None:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
        assert "the model registry was not loaded ahead" in caplog.text
    finally:
        service.stats.close()
        service.close_all()
