"""Subscriptions as async iterators of typed updates: per session, all, notifications."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import anyio
import pytest

from sessiond_client import SessiondClient, Subscription
from sessiond_client.typed import QUEUE_OVERFLOW
from sessiond_protocol.notifications import (
    EntriesAppended,
    LabelUpdate,
    LeafChanged,
    Progress,
    ResyncRequired,
    SessionInfoUpdate,
    SessionListUpdate,
    SessionUpdate,
    UsageUpdate,
)
from tests.builders import assistant, user
from tests.clients.python.conftest import stop_cleanly
from tests.harness.calls import msg
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.fixtures import SharedDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """One daemon for the file's tests (each test subscribes to sessions of its own; ``shared_daemon``
    checks that none leaves a connection behind); a test that configures its daemon starts its own."""
    return shared_daemon


async def test_updates_of_one_session_are_typed(client: SessiondClient) -> None:
    sid = (await client.session_new(cwd="/work/proj", subscribe=True)).sessionId
    other = (await client.session_new(cwd="/work/proj", subscribe=True)).sessionId
    async with client.updates(sid) as updates, client.updates() as everything:
        appended = await client.append(sid, [msg(user("hi")), msg(assistant("hello", total=30))])
        await client.append(other, [msg(user("elsewhere"))])
        await client.session_set_name(sid, "Greeting")
        await client.tree_label(sid, appended.entryIds[0], "start")
        await client.tree_navigate(sid, appended.entryIds[0])
        kinds = []
        async for event in updates:
            assert isinstance(event, SessionUpdate) and event.sessionId == sid
            kinds.append(type(event.update))
            if isinstance(event.update, LeafChanged):
                break
        first = await everything.next(timeout=5)
        seen = {first.sessionId} | {e.sessionId for e in everything.pending()}
    assert kinds[0] is EntriesAppended
    assert {EntriesAppended, UsageUpdate, SessionInfoUpdate, LabelUpdate, LeafChanged} <= set(kinds)
    assert seen == {sid, other}


async def test_subscribe_returns_a_stream_that_misses_nothing(daemon: Daemon) -> None:
    async with (
        await SessiondClient.connect(socket=daemon.socket, start=False) as writer,
        await SessiondClient.connect(socket=daemon.socket, start=False) as reader,
    ):
        sid = (await writer.session_new(cwd="/work/proj")).sessionId
        await writer.append(sid, [msg(user("one"))])
        subscription = await reader.subscribe(sid)
        assert isinstance(subscription, Subscription) and subscription.info.entryCount == 1
        async with subscription:
            appended = await writer.append(sid, [msg(user("two"))])
            event = await subscription.wait_for(EntriesAppended, timeout=5)
            assert isinstance(event.update, EntriesAppended)
            assert event.update.entryIds == appended.entryIds and not event.update.external
        assert sid in reader.subscriptions
        await reader.session_unsubscribe(sid)
        assert sid not in reader.subscriptions


async def test_list_subscription_and_progress_notifications(tmp_path: Path) -> None:
    (tmp_path / "pi" / "sessions").mkdir(parents=True)
    daemon = start_daemon(tmp_path)
    client = await SessiondClient.connect(socket=daemon.socket, start=False)
    try:
        await _list_and_progress(client, daemon)
    finally:
        await client.close()
        stop_cleanly(daemon)


async def _list_and_progress(client: SessiondClient, daemon: Daemon) -> None:
    async with (
        client.notifications("$/progress") as progress,
        client.progress("tok-1") as typed,
        client.progress("other") as others,
        client.updates() as updates,
    ):
        await client.session_list(subscribe=True, work_done_token="tok-1")
        begin = await progress.next(timeout=5)
        assert isinstance(begin.params, Progress) and begin.params.token == "tok-1"
        assert begin.params.value.kind == "begin"
        # The typed stream of that token: Progress models, begin ... end.
        kinds = [(await typed.next(timeout=5)).value.kind]
        while kinds[-1] != "end":
            kinds.append((await typed.next(timeout=5)).value.kind)
        assert kinds[0] == "begin" and set(kinds) <= {"begin", "report", "end"}
        assert others.pending() == []
        # Pi writes a session of its own: list subscribers hear of it.
        directory = Path(daemon.env["PI_CODING_AGENT_DIR"]) / "sessions" / "--w--"
        directory.mkdir()
        header = {"type": "session", "version": 3, "id": "pi-new-1", "timestamp": "2026-01-01T00:00:00.000Z"}
        entry = {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"}
        lines = [{**header, "cwd": "/w"}, {**entry, "message": user("hi from Pi")}]
        (directory / "2026-01-01T00-00-00-000Z_pi-new-1.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines)
        )
        event = await updates.wait_for(SessionListUpdate, timeout=15)
        assert isinstance(event.update, SessionListUpdate) and event.sessionId == "pi-new-1"
        assert event.update.change in ("added", "updated")


async def test_a_slow_reader_gets_a_resync_instead_of_unbounded_memory(daemon: Daemon) -> None:
    async with await SessiondClient.connect(socket=daemon.socket, start=False, queue_size=3) as c:
        sid = (await c.session_new(cwd="/work/proj", subscribe=True)).sessionId
        async with c.updates(sid) as updates:
            for i in range(5):
                await c.append(sid, [msg(user(f"m{i}"))])
            await c.session_set_name(sid, "last")
            with anyio.fail_after(5):
                while True:
                    event = await updates.next()
                    if isinstance(event.update, ResyncRequired):
                        break
            assert event.update.reason == QUEUE_OVERFLOW


async def test_streams_end_when_the_client_closes_and_are_dropped_when_unused(daemon: Daemon) -> None:
    c = await SessiondClient.connect(socket=daemon.socket, start=False)
    stream = c.updates()
    forgotten = c.updates("x")
    del forgotten
    gc.collect()
    assert len(c._streams) == 1
    await c.close()
    assert [e async for e in stream] == []
    assert [e async for e in c.updates()] == []  # created after close: ends at once
