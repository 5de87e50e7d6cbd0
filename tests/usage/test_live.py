"""``stats_update`` through a real daemon: an appended response changes it (issue 27, "Live").

Two ways usage arrives: the daemon's own append (``session/append`` to a store session) and
another agent appending a response to a followed Claude Code transcript. Each test measures the
time from the write to the notification and prints it (``-s``); the 1 s goal is reported, not
asserted (timings belong in benchmarks/).
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.builders import assistant
from tests.conftest import CLAUDE_FIXTURES
from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio

SESSION = "29ccd257-68b1-427f-ae5f-6524b7cb6f20"
SOURCE = CLAUDE_FIXTURES / "ccl-2.1.17"


async def built(client: Any) -> None:
    """Wait for the daemon's first read of every root (``indexing`` null)."""
    for _ in range(600):
        answer = await client.request("stats/query", {"groupBy": "daily", "timezone": "UTC"})
        if answer["indexing"] is None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the first build did not finish")


async def stats_update(client: Any, envelope_id: str, done: Any, timeout: float = 20) -> dict[str, Any]:
    async for update in client.updates(envelope_id, timeout=timeout):
        if update.get("sessionUpdate") == "stats_update" and done(update):
            found: dict[str, Any] = update
            return found
    raise AssertionError("no stats_update")


def _reply(text: str, usage: dict[str, int]) -> dict[str, Any]:
    """A Pi assistant message with ``usage``, stamped now (what the daemon's own appends carry)."""
    return {
        **assistant(text, model="claude-sonnet-4-5"),
        "usage": usage,
        "timestamp": int(time.time() * 1000),
    }


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


async def test_an_external_append_to_a_followed_claude_transcript_changes_stats_update(
    tmp_path: Path,
) -> None:
    project = tmp_path / "claude" / "projects" / "-work-proj"
    shutil.copytree(SOURCE, project)
    daemon: Daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        await built(client)
        first = await client.request("stats/subscribe", {"sessionId": SESSION, "timezone": "UTC"})
        before = first["session"]
        assert before["cacheReadTokens"] == 236968 + 36009, "the transcript's records (main and sub-agent)"
        line = {
            "type": "assistant",
            "sessionId": SESSION,
            "uuid": str(uuid.uuid4()),
            "parentUuid": None,
            "timestamp": now_iso(),
            "cwd": "/work/proj",
            "requestId": "req_live",
            "message": {
                "id": f"msg_live_{uuid.uuid4().hex}",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5",
                "content": [{"type": "text", "text": "done"}],
                "usage": {
                    "input_tokens": 7,
                    "output_tokens": 1234,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 0,
                },
            },
        }
        written = time.monotonic()
        with open(project / f"{SESSION}.jsonl", "ab") as f:
            f.write(orjson.dumps(line) + b"\n")
        update = await stats_update(
            client, SESSION, lambda u: u["session"]["outputTokens"] == before["outputTokens"] + 1234
        )
        latency = time.monotonic() - written
        print(f"\nexternal append -> stats_update: {latency * 1000:.0f} ms")
        assert update["sessionId"] == SESSION
        assert update["today"]["outputTokens"] >= 1234 and update["today"]["cost"] is not None
        assert update["session"]["inputTokens"] == before["inputTokens"] + 7
    finally:
        daemon.stop()


async def test_an_own_append_changes_stats_update(tmp_path: Path) -> None:
    daemon: Daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        sid = (await client.request("session/new", {"cwd": "/work/proj"}))["sessionId"]
        await built(client)
        first = await client.request("stats/subscribe", {"sessionId": sid})
        assert first["session"]["totalTokens"] == 0 and first["session"]["cost"] == 0.0
        message = _reply(
            "hi", {"input": 10, "output": 500, "cacheRead": 2000, "cacheWrite": 100, "totalTokens": 2610}
        )
        written = time.monotonic()
        await client.request(
            "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": message}]}
        )
        update = await stats_update(client, sid, lambda u: u["session"]["outputTokens"] == 500)
        latency = time.monotonic() - written
        print(f"\nown append -> stats_update: {latency * 1000:.0f} ms")
        session = update["session"]
        assert (session["inputTokens"], session["cacheReadTokens"], session["cacheCreationTokens"]) == (
            10,
            2000,
            100,
        )
        # claude-sonnet-4-5 from the registry: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million
        assert session["cost"] == pytest.approx((10 * 3 + 500 * 15 + 2000 * 0.3 + 100 * 3.75) / 1e6)
        assert update["today"]["outputTokens"] >= 500
        await client.request("stats/unsubscribe", {})
    finally:
        daemon.stop()


async def test_a_query_right_after_an_own_append_counts_it(tmp_path: Path) -> None:
    """With nobody subscribed the feed takes changes in only every ``QUIET_THROTTLE`` seconds:
    ``stats/query`` takes in what is pending first, so each answer counts every append made
    before it (without that, these queries come within milliseconds and miss them)."""
    daemon: Daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        sid = (await client.request("session/new", {"cwd": "/work/proj"}))["sessionId"]
        await built(client)
        for n in range(1, 4):
            message = _reply(
                f"reply {n}",
                {"input": 10, "output": 500, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 510},
            )
            await client.request(
                "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": message}]}
            )
            answer = await client.request(
                "stats/query", {"groupBy": "session", "sessionId": sid, "timezone": "UTC"}
            )
            assert answer["totals"]["outputTokens"] == 500 * n
            assert answer["totals"]["inputTokens"] == 10 * n
    finally:
        daemon.stop()
