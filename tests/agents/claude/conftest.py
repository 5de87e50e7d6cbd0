"""The shared scripted run (:mod:`.scenario`): started once per test session, skipped when the
agent cannot run here (not installed, not root, no ``setpriv``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.agents.claude.agent import ClaudeHome, why_not_runnable
from tests.agents.claude.scenario import Scenario, run_scenario
from tests.agents.claude.standin import StandIn


@pytest.fixture(scope="session")
async def scenario(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Scenario]:
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    with StandIn() as standin, ClaudeHome(standin) as home:
        sc = await run_scenario(tmp_path_factory.mktemp("claude-daemon"), standin, home)
        try:
            yield sc
        finally:
            assert sc.daemon.stop() == 0, sc.daemon.log_text()[-3000:]
