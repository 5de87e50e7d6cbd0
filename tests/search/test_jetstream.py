"""The JetStream backend: each daemon indexes what it serves. A session appended through one
JetStream-backed daemon is found by its ``search/query``; a second daemon on the same cluster
finds it too once it serves the session (opened by a client, its appends heard from the
stream), and finds the first daemon's later appends as they arrive.

Real daemons on a real 3-node cluster on loopback (the run's shared one, tests/conftest.py);
skipped when the ``nats`` extra or ``nats-server`` is missing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from sessiond_client.typed import SessiondClient
from tests.conftest import jetstream_config
from tests.harness.daemon import start_daemon

from .conftest import typed_client

pytestmark = pytest.mark.anyio

DEADLINE_S = 60.0
"""A generous bound for "it happened at all" (a loaded 2-core machine), never a latency."""


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


async def _found(client: SessiondClient, word: str, count: int, who: str = "") -> Any:
    started = time.monotonic()
    while True:
        result = await client.search_query(word)
        if result.total >= count and result.indexing is None:
            return result
        assert time.monotonic() - started < DEADLINE_S, f"{who} {word}: {result.total} hits, not {count}"
        await asyncio.sleep(0.05)


async def test_each_daemon_indexes_what_it_serves(tmp_path: Path, nats_cluster: Any) -> None:
    config = jetstream_config(nats_cluster, name=f"SEARCH{time.monotonic_ns() % 10**9}")
    a = start_daemon(tmp_path / "a", config=config)
    b = None
    try:
        b = start_daemon(tmp_path / "b", config=config)
        ca, cb = await typed_client(a), await typed_client(b)
        try:
            sid = (await ca.session_new(cwd="/home/dev/shared")).sessionId
            await ca.session_append(sid, [_user(f"capybara number {i}") for i in range(3)])
            hits = (await _found(ca, "capybara", 3, "a")).hits
            assert {h.sessionId for h in hits} == {sid} and all(h.onBranch for h in hits)

            await cb.session_entries(sid)  # b serves it now (read from the stream)
            hits = (await _found(cb, "capybara", 3, "b")).hits
            assert {h.sessionId for h in hits} == {sid}

            await ca.session_append(sid, [_user("a wombat arrives")])
            hits = (await _found(cb, "wombat", 1)).hits  # heard by b from the stream
            assert [h.sessionId for h in hits] == [sid]
            assert (await _found(ca, "wombat", 1)).total == 1
        finally:
            await ca.close()
            await cb.close()
    finally:
        assert a.stop() == 0, a.log_text()
        if b is not None:
            assert b.stop() == 0, b.log_text()
