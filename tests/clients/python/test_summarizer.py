"""``compaction/summarize`` answered by the client's summarizer, and cancellation of requests."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiond_client import SessiondClient
from sessiond_client.errors import CompactionRunning, RequestCancelled, SummarizerUnavailable
from sessiond_protocol.notifications import CompactionUpdate, SummarizeParams, SummarizeResult
from tests.clients.python.conftest import session_with_turns
from tests.harness.daemon import Daemon
from tests.harness.fixtures import SharedDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """One daemon for the file's tests (each test compacts sessions of its own, and closes its
    summarizing client; ``shared_daemon``
    checks that none leaves a connection behind); a test that configures its daemon starts its own."""
    return shared_daemon


def last_line(path: str) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(Path(path).read_bytes().splitlines()[-1])
    return entry


class Hanging:
    """A summarizer whose model never answers (until released); it notes being cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.release = asyncio.Event()
        self.requests: list[SummarizeParams] = []

    async def __call__(self, request: SummarizeParams) -> str:
        self.requests.append(request)
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return "## Goal\nReleased."


def record_answers(client: SessiondClient) -> list[dict[str, Any]]:
    """Every response the transport reads (also those to requests nobody awaits any more)."""
    seen: list[dict[str, Any]] = []
    raw = client.raw
    dispatch = raw._dispatch

    def spy(message: Any) -> None:
        if isinstance(message, dict) and "id" in message and "method" not in message:
            seen.append(message)
        dispatch(message)

    raw._dispatch = spy  # type: ignore[method-assign]  # the spy wraps this instance's bound method
    return seen


async def test_the_registered_summarizer_writes_the_summary(daemon: Daemon) -> None:
    c = SessiondClient.unix(socket=daemon.socket, start=False)
    asked: list[SummarizeParams] = []

    @c.summarizer
    async def summarize(request: SummarizeParams) -> SummarizeResult:
        asked.append(request)
        return SummarizeResult.model_validate(
            {"summary": f"## Goal\nFix the bugs ({request.kind}).", "usage": {"totalTokens": 120}}
        )

    async with c:
        sid = await session_with_turns(c, 6)
        loaded = await c.session_load(sid)
        async with c.updates(sid) as updates:
            result = await c.compaction_run(sid, summarizer="client", custom_instructions="the bugs")
            done = await updates.wait_for(
                lambda e: isinstance(e.update, CompactionUpdate) and e.update.status == "completed",
                timeout=10,
            )
        assert isinstance(done.update, CompactionUpdate) and done.update.entryId == result.entryId
    assert result.summarizer == "client"
    assert asked and asked[0].sessionId == sid and asked[0].compactionId == result.compactionId
    assert asked[0].kind == "history" and asked[0].prompt.endswith("Additional focus: the bugs")
    written = last_line(loaded.path)
    assert written["type"] == "compaction" and written["summary"].startswith(
        "## Goal\nFix the bugs (history)."
    )
    assert written["usage"]["totalTokens"] == 120 * len(asked)


async def test_plain_function_summarizers_run_in_a_thread(daemon: Daemon) -> None:
    threads: list[str] = []

    def summarize(request: SummarizeParams) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"summary": "## Goal\nFrom a thread."}

    async with await SessiondClient.connect(socket=daemon.socket, start=False, summarizer=summarize) as c:
        sid = await session_with_turns(c, 6)
        result = await c.compaction_run(sid, summarizer="client")
    assert result.summary.startswith("## Goal\nFrom a thread.")
    assert threads and threading.main_thread().name not in threads


async def test_no_summarizer_no_capability(client: SessiondClient) -> None:
    sid = await session_with_turns(client, 6)
    with pytest.raises(SummarizerUnavailable):
        await client.compaction_run(sid, summarizer="client")
    with pytest.raises(RuntimeError, match="before connecting"):
        client.on_summarize(lambda request: "late")


async def test_cancelling_the_task_cancels_a_running_compaction(daemon: Daemon) -> None:
    agent = Hanging()
    c = await SessiondClient.connect(socket=daemon.socket, start=False, summarizer=agent)
    try:
        sid = await session_with_turns(c, 6)
        path = (await c.session_load(sid)).path
        size = Path(path).stat().st_size
        answers = record_answers(c)
        async with c.updates(sid) as updates:
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(c.compaction_run, sid, summarizer="client"))
                with anyio.fail_after(10):
                    await agent.started.wait()
                with pytest.raises(CompactionRunning):  # a second one while the first runs
                    await c.compaction_run(sid, summarizer="client")
                tg.cancel_scope.cancel()  # -> $/cancelRequest for the compaction/run
            cancelled = await updates.wait_for(
                lambda e: isinstance(e.update, CompactionUpdate) and e.update.status == "cancelled",
                timeout=10,
            )
        assert isinstance(cancelled.update, CompactionUpdate)
        assert "nothing was written" in (cancelled.update.error or "")
        with anyio.fail_after(10):
            await agent.cancelled.wait()  # the daemon sent $/cancelRequest for its summarize request
        assert c.raw.cancelled_requests
        with anyio.fail_after(10):
            while not any(a.get("error", {}).get("code") == -32800 for a in answers):
                await anyio.sleep(0.02)
        assert Path(path).stat().st_size == size  # nothing written
        # Nothing is left armed: the next compaction runs normally.
        agent.release.set()
        result = await c.compaction_run(sid, summarizer="client")
        assert last_line(path)["id"] == result.entryId
    finally:
        agent.release.set()
        await c.close()


async def test_asyncio_cancellation_and_timeouts_cancel_too(daemon: Daemon) -> None:
    agent = Hanging()
    c = await SessiondClient.connect(socket=daemon.socket, start=False, summarizer=agent)
    try:
        sid = await session_with_turns(c, 6)
        run = asyncio.ensure_future(c.compaction_run(sid, summarizer="client"))
        await asyncio.wait_for(agent.started.wait(), 10)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        await asyncio.wait_for(agent.cancelled.wait(), 10)
        # A request_timeout cancels the same way, as TimeoutError.
        agent.started.clear()
        agent.cancelled.clear()
        c.request_timeout = 0.5
        with pytest.raises(TimeoutError):
            await c.compaction_run(sid, summarizer="client")
        await asyncio.wait_for(agent.cancelled.wait(), 10)
        c.request_timeout = None
        assert (await c.compaction_cancel(sid)).cancelled is False  # nothing left running
    finally:
        agent.release.set()
        await c.close()


async def test_compaction_cancel_from_elsewhere_raises_request_cancelled(daemon: Daemon) -> None:
    agent = Hanging()
    c = await SessiondClient.connect(socket=daemon.socket, start=False, summarizer=agent)
    other = await SessiondClient.connect(socket=daemon.socket, start=False)
    try:
        sid = await session_with_turns(c, 6)
        run = asyncio.ensure_future(c.compaction_run(sid, summarizer="client"))
        await asyncio.wait_for(agent.started.wait(), 10)
        assert (await other.compaction_cancel(sid)).cancelled
        with pytest.raises(RequestCancelled) as exc:
            await run
        assert exc.value.code == -32800 and exc.value.method == "compaction/run"
    finally:
        agent.release.set()
        await other.close()
        await c.close()
