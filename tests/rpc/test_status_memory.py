"""``daemon/status`` shows the memory budget: its settings, what sessions hold under it, and
evictions, through the real daemon.

Two sessions whose contexts do not both fit in a small budget: reading the second context
makes the budget drop the first one's, which status must show as an eviction, with the bytes
held now attributed to the session that holds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import assistant, user
from tests.harness.daemon import start_daemon

pytestmark = pytest.mark.anyio

BUDGET_BYTES = 1024 * 1024


def _session(status: dict[str, Any], sid: str) -> dict[str, Any]:
    return next(s for s in status["sessions"] if s["sessionId"] == sid)


async def test_status_reports_the_budget_what_is_held_and_evictions(tmp_path: Path) -> None:
    config = "[memory]\nbudget_mb = 1\nidle_seconds = 3600\n"
    daemon = start_daemon(tmp_path, config=config)
    try:
        client = await daemon.client()
        sids = []
        for n in range(2):
            sid = (await client.request("session/new", {"cwd": str(tmp_path)}))["sessionId"]
            sids.append(sid)
            for batch in range(6):  # ~20 KB a message: ~720 KB of lines per session
                messages = [user(f"ask {n}.{batch}.{i} " + "q" * 20_000) for i in range(3)]
                messages += [assistant("a " * 10_000) for _ in range(3)]
                entries = [{"type": "message", "message": m} for m in messages]
                await client.request("session/append", {"sessionId": sid, "entries": entries})
        first, second = sids

        before = await client.request("daemon/status", {})
        memory = before["memory"]
        assert memory["budgetBytes"] == BUDGET_BYTES and memory["idleSeconds"] == 3600
        assert memory["rssBytes"] > 10 * 1024 * 1024
        assert _session(before, first)["entries"] == 36 and _session(before, second)["entries"] == 36
        evictions = memory["evictions"]

        await client.request("context/get", {"sessionId": first})
        status = await client.request("daemon/status", {})
        held_first = _session(status, first)["heldBytes"]
        assert held_first > 500 * 1024, status  # its whole context is held parsed
        assert status["memory"]["heldByKind"].get("context", 0) >= held_first - status["memory"][
            "heldByKind"
        ].get("bodies", 0)
        assert status["memory"]["heldBytes"] == sum(s["heldBytes"] for s in status["sessions"])

        await client.request("context/get", {"sessionId": second})  # both do not fit: first goes
        after = await client.request("daemon/status", {})
        assert after["memory"]["evictions"] > evictions
        assert _session(after, second)["heldBytes"] > 500 * 1024
        assert _session(after, first)["heldBytes"] < held_first
        assert after["memory"]["heldBytes"] <= BUDGET_BYTES + _session(after, second)["heldBytes"]
        await client.close()
    finally:
        assert daemon.stop() == 0, daemon.log_text()
