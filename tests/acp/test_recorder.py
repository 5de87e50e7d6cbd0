"""The recorder against the real daemon: what the relay reports while the writer cannot run
is merged into few ``session/append`` calls, in order, and nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiond.acp.link import DaemonLink
from sessiond.acp.recorder import MERGE_ENTRIES, Recorder
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


async def test_updates_reported_back_to_back_are_merged_into_few_appends_in_order(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in daemon.env.items():  # the daemon's store, as `sessiond acp` would see it
        monkeypatch.setenv(key, value)
    recorder = Recorder(DaemonLink(None, daemon.socket, start=False))
    recorder.start()
    recorder.session_started("merge-test", str(tmp_path), "new", {})
    # No await in between: the writer cannot run meanwhile. A prompt (two entries), 150 plan
    # updates (two each: the raw update, then acp.plan), the answer (the raw chunk, the message).
    recorder.prompt({"sessionId": "merge-test", "prompt": [{"type": "text", "text": "plan it"}]}, size=100)
    steps = 150
    for i in range(steps):
        plan = {"sessionUpdate": "plan", "entries": [{"content": f"step {i}", "status": "pending"}]}
        recorder.update({"sessionId": "merge-test", "update": plan}, size=100)
    said = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Planned."}}
    recorder.update({"sessionId": "merge-test", "update": said}, size=100)
    recorder.turn_ended({"sessionId": "merge-test"}, {"stopReason": "end_turn"})
    await recorder.drain()
    # The connection, the session's start, then 304 entries in appends of at most 200.
    assert MERGE_ENTRIES == 200
    assert recorder.written == 2 + 2
    await recorder.close()

    client = await daemon.client()
    try:
        page = await client.request("session/entries", {"sessionId": "merge-test", "limit": 1000})
    finally:
        await client.close()
    plans = [e["data"]["entries"][0]["content"] for e in page["entries"] if e.get("customType") == "acp.plan"]
    assert plans == [f"step {i}" for i in range(steps)]
    raw = [e for e in page["entries"] if e.get("customType") == "acp.updates"]
    assert len(raw) == steps + 1
    kinds = [e.get("customType") or e["message"]["role"] for e in page["entries"]]
    assert kinds == [
        "acp.session",
        "acp.prompt",
        "user",
        *["acp.updates", "acp.plan"] * steps,
        "acp.updates",
        "assistant",
    ]
