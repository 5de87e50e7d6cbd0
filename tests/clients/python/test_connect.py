"""Connecting (the store's socket, starting the daemon, TCP with the token, a spawned stdio
server) and reconnecting after the daemon was killed."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sessiond_client import RECONNECTED, ConnectionClosed, DaemonUnavailable, SessiondClient, socket_path
from sessiond_client.errors import InvalidRequest
from sessiond_protocol.notifications import EntriesAppended, ResyncRequired, SessionUpdate, StatsUpdate
from tests.builders import assistant, usage, user
from tests.clients.python.conftest import daemon_env, session_with_turns, stop_cleanly
from tests.clients.python.test_summarizer import Hanging
from tests.harness.calls import msg
from tests.harness.daemon import start_daemon

pytestmark = pytest.mark.anyio


def has_session_tokens(total: int) -> Callable[[SessionUpdate], bool]:
    def check(event: SessionUpdate) -> bool:
        update = event.update
        return isinstance(update, StatsUpdate) and getattr(update.session, "totalTokens", None) == total

    return check


def is_reconnect(event: SessionUpdate) -> bool:
    return isinstance(event.update, ResyncRequired) and event.update.reason == RECONNECTED


def stop_started(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(timeout=10) == 0
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_starts_the_daemon_of_the_store_when_none_runs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with pytest.raises(DaemonUnavailable):
        await SessiondClient.connect(store, start=False)
    c = await SessiondClient.connect(store, daemon_env=daemon_env(tmp_path))
    process = c.daemon_process
    try:
        assert process is not None and process.poll() is None
        assert socket_path(store) == store / "run" / "sessiond.sock" and socket_path(store).is_socket()
        sid = (await c.session_new(cwd="/work/proj")).sessionId
        await c.append(sid, [msg(user("hi"))])
        # A second client finds the running daemon and starts nothing.
        async with await SessiondClient.connect(store) as second:
            assert second.daemon_process is None
            assert (await second.session_load(sid)).entryCount == 1
    finally:
        await c.close()
        stop_started(process)
    assert "listening on" in (store / "daemon.log").read_text()


async def test_tcp_with_the_token_file(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, "--tcp", "127.0.0.1:0")
    assert daemon.tcp is not None
    try:
        port = daemon.tcp[1]
        async with await SessiondClient.connect_tcp("127.0.0.1", port, store=daemon.store) as c:
            assert (await c.session_new(cwd="/work/proj")).sessionId
        with pytest.raises(InvalidRequest, match="Authentication failed"):
            await SessiondClient.connect_tcp("127.0.0.1", port, token="wrong")
    finally:
        stop_cleanly(daemon)


async def test_spawn_a_stdio_server(tmp_path: Path) -> None:
    store = tmp_path / "store"
    c = await SessiondClient.spawn(store=store, env=daemon_env(tmp_path), framing="ndjson")
    try:
        sid = (await c.session_new(cwd="/work/proj", subscribe=True)).sessionId
        async with c.updates(sid) as updates:
            await c.append(sid, [msg(user("over stdio"))])
            assert isinstance((await updates.wait_for(EntriesAppended, timeout=5)).update, EntriesAppended)
        process = c.raw._process
    finally:
        await c.close()
    assert process is not None and process.returncode == 0
    assert list((store / "sessions").rglob("*.jsonl"))


async def test_without_reconnect_a_lost_connection_ends_everything(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    c = await SessiondClient.connect(socket=daemon.socket, start=False)
    sid = (await c.session_new(cwd="/work/proj", subscribe=True)).sessionId
    updates = c.updates(sid)
    daemon.process.kill()
    daemon.process.wait()
    with pytest.raises(ConnectionClosed):
        await updates.next(timeout=10)
    with pytest.raises(ConnectionClosed):
        await c.session_load(sid)
    assert not c.connected
    await c.close()


async def test_reconnect_after_the_daemon_was_killed(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    agent = Hanging()
    c = await SessiondClient.connect(
        socket=daemon.socket, start=False, reconnect=True, reconnect_timeout=30, summarizer=agent
    )
    reconnected = asyncio.Event()
    c.on_reconnect(reconnected.set)
    restarted = None
    try:
        sid = await session_with_turns(c, 6)
        async with c.updates(sid) as updates, c.updates() as everything:
            # A request in flight when the daemon dies fails with ConnectionClosed.
            in_flight = asyncio.ensure_future(c.compaction_run(sid, summarizer="client"))
            await asyncio.wait_for(agent.started.wait(), 10)
            daemon.process.send_signal(signal.SIGKILL)
            daemon.process.wait()
            with pytest.raises(ConnectionClosed):
                await in_flight
            assert not c.connected
            # A new daemon on the same store and socket path (the stale socket is still there).
            restarted = start_daemon(tmp_path)
            assert restarted.socket == daemon.socket
            resync = await updates.wait_for(is_reconnect, timeout=30)
            assert resync.sessionId == sid
            assert (await everything.wait_for(is_reconnect, timeout=5)).sessionId == sid
            await asyncio.wait_for(reconnected.wait(), 5)
            assert c.connected and c.reconnects == 1 and sid in c.subscriptions
            # The subscription continues on the new daemon (it was re-subscribed).
            appended = await c.append(sid, [msg(user("after the restart"))])
            event = await updates.wait_for(EntriesAppended, timeout=10)
            assert isinstance(event.update, EntriesAppended) and event.update.entryIds == appended.entryIds
            # And the summarizer was declared again: the daemon asks this client.
            agent.release.set()
            result = await c.compaction_run(sid, summarizer="client")
            assert result.summary.startswith("## Goal\nReleased.")
    finally:
        agent.release.set()
        await c.close()
        if restarted is not None:
            stop_cleanly(restarted)


async def test_reconnect_starts_the_daemon_again_when_allowed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    c = await SessiondClient.connect(store, reconnect=True, daemon_env=daemon_env(tmp_path))
    first = c.daemon_process
    assert first is not None
    try:
        sid = (await c.session_new(cwd="/work/proj", subscribe=True)).sessionId
        await c.append(sid, [msg(user("before"))])
        await c.stats_subscribe(session_id=sid, timezone="UTC")
        async with c.updates(sid) as updates:
            first.kill()
            first.wait()
            await updates.wait_for(is_reconnect, timeout=30)
            assert c.daemon_process is not None and c.daemon_process is not first
            reply = assistant("priced", model="claude-sonnet-4-5") | {"usage": usage(700, inp=200, out=500)}
            await c.append(sid, [msg(user("after")), msg(reply)])
            assert isinstance((await updates.wait_for(EntriesAppended, timeout=10)).update, EntriesAppended)
            assert (await c.session_load(sid)).entryCount == 3
            # the stats subscription was made again: the response's usage arrives as stats_update
            # (a generous bound: "it happened at all" on a loaded machine)
            stats = await updates.wait_for(has_session_tokens(700), timeout=60)
            assert isinstance(stats.update, StatsUpdate) and stats.sessionId == sid
    finally:
        await c.close()
        with contextlib.suppress(Exception):
            stop_started(c.daemon_process)


async def test_reconnect_gives_up_after_its_timeout(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    c = await SessiondClient.connect(socket=daemon.socket, start=False, reconnect=True, reconnect_timeout=0.5)
    updates = c.updates()
    daemon.process.kill()
    daemon.process.wait()
    with pytest.raises(ConnectionClosed, match="could not reconnect"):
        await updates.next(timeout=10)
    with pytest.raises(ConnectionClosed):
        await c.session_list()
    await c.close()
