"""The session registry in-process, with fake peers: opening, users, closing, telling, summarizers.

A socket adds nothing to these rules (the RPC tests cover the same methods end to end); here
each one is driven directly, including the interleavings a socket makes hard to arrange.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from sessiond.errors import SessionNotFoundError, SummarizerUnavailableError
from sessiond.model import entries as E
from sessiond.service.hub import LIST_TOPIC
from sessiond.service.peer import ERROR, WARNING
from sessiond.service.service import Service
from tests.builders import assistant, user
from tests.service.peers import FakePeer, make_service

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("service_backend")]


async def new(service: Service, peer: FakePeer, subscribe: bool = False) -> str:
    return (await service.new_session(peer, "/work/project", subscribe=subscribe)).sessionId


async def grow(service: Service, peer: FakePeer, session_id: str, turns: int = 3) -> None:
    """Turns big enough for a compaction that keeps 10 tokens to have something to summarise."""
    for turn in range(turns):
        await service.append(peer, session_id, [{"type": "message", "message": user(f"ask {turn}")}])
        message = assistant("x " * 4000, total=9000)
        await service.append(peer, session_id, [{"type": "message", "message": message}])


# ---------------------------------------------------------------------------- opening and closing


async def test_concurrent_opens_of_one_session_make_one_host(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    first = FakePeer()
    sid = await new(service, first)
    await service.append(first, sid, [{"type": "message", "message": user("hello")}])
    service.release(first)
    assert sid not in service.hosts
    opened: list[Any] = []
    service.registry.on_open.append(opened.append)

    peers = [FakePeer() for _ in range(5)]
    hosts = await asyncio.gather(*(service.registry.host(sid, p) for p in peers))

    assert all(h is hosts[0] for h in hosts)
    assert opened == [hosts[0]], "the file is read once, however many ask at once"
    assert hosts[0].users == {p.id for p in peers}
    assert hosts[0].session.entry_count == 1
    service.close_all()


async def test_a_session_stays_open_while_a_user_or_a_pin_holds_it(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    registry = service.registry
    writer, reader = FakePeer(), FakePeer()
    sid = await new(service, writer)
    await service.append(writer, sid, [{"type": "message", "message": user("hello")}])
    await service.load(reader, sid, subscribe=True)
    host = service.hosts[sid]
    assert host.users == {writer.id, reader.id}

    await service.close(writer, sid)
    assert service.hosts.get(sid) is host  # the reader still uses it
    await service.unsubscribe(reader, sid)
    assert service.hosts.get(sid) is host  # unsubscribing is not closing
    pin = registry.pin(host)  # what a running compaction does
    await service.close(reader, sid)
    assert service.hosts.get(sid) is host
    assert host.users == {pin}

    registry.unpin(host, pin)
    assert sid not in service.hosts
    # closing a session that is not open is not an error; one that does not exist is
    await service.close(reader, sid)
    with pytest.raises(SessionNotFoundError):
        await service.close(reader, "no-such-session")


async def test_a_connection_going_away_closes_only_what_nobody_else_uses(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    leaving, staying = FakePeer(), FakePeer()
    mine = await new(service, leaving, subscribe=True)
    shared = await new(service, leaving, subscribe=True)
    await service.load(staying, shared, subscribe=True)

    service.release(leaving)

    assert mine not in service.hosts
    assert service.hosts[shared].users == {staying.id}
    assert leaving.id not in service.clients
    assert not service.hub.is_subscribed(shared, leaving)
    before = len(leaving.updates)
    await service.append(staying, shared, [{"type": "message", "message": user("still here")}])
    assert len(leaving.updates) == before
    assert "entries_appended" in staying.kinds(shared)
    service.close_all()


async def test_dropping_a_host_runs_the_close_hooks_then_forgets_only_the_open_one(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    registry = service.registry
    calls: list[tuple[str, str]] = []
    registry.on_close.append(lambda h: calls.append(("close", h.id)))
    registry.on_forget.append(lambda sid: calls.append(("forget", sid)))
    peer = FakePeer()
    sid = await new(service, peer)
    await service.append(peer, sid, [{"type": "message", "message": user("hello")}])
    stale = service.hosts[sid]

    registry.drop_host(stale)
    assert calls == [("close", sid), ("forget", sid)]
    assert sid not in service.hosts

    fresh = await registry.host(sid, peer)
    calls.clear()
    registry.drop_host(stale)  # an old host of the same id (a late background task's)
    assert calls == [("close", sid)], "the open host's state must not be forgotten"
    assert service.hosts[sid] is fresh
    service.close_all()


async def test_host_at_finds_an_open_session_by_its_file(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid = await new(service, peer)
    await service.append(peer, sid, [{"type": "message", "message": user("hello")}])
    path = service.hosts[sid].session.path
    assert service.host_at(path) is service.hosts[sid]
    assert service.host_at(path.parent / "." / path.name) is service.hosts[sid]
    assert service.host_at(path.with_name("other.jsonl")) is None
    service.close_all()


async def test_deleting_an_open_session_closes_it_for_everyone_and_forgets_it(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    owner, watcher = FakePeer(), FakePeer()
    sid = await new(service, owner)
    await grow(service, owner, sid)
    await service.configure(owner, sid, 200_000)
    assert (await service.compactor.prepare(owner, sid, 10, None, None)).prepared
    await service.file_history.list(owner, sid)
    await service.load(watcher, sid, subscribe=True)
    assert sid in service.compactor._preparations and sid in service.file_history._open

    result = await service.delete(owner, sid)

    assert Path(result.trashedPath).is_file()
    assert sid not in service.hosts
    assert sid not in service.compactor._preparations
    assert sid not in service.settings._cache
    assert sid not in service.file_history._open
    assert watcher.kinds(sid)[-1] == "resync_required"
    with pytest.raises(SessionNotFoundError):
        await service.load(owner, sid, subscribe=False)
    service.close_all()


# ---------------------------------------------------------------------------- telling people


async def test_tell_reaches_each_user_and_subscriber_of_the_session_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service = make_service(tmp_path)
    writer, watching_writer, elsewhere, lister = FakePeer(), FakePeer(), FakePeer(), FakePeer()
    sid = await new(service, writer)
    await service.load(watching_writer, sid, subscribe=True)
    await new(service, elsewhere, subscribe=True)
    service.subscribe_list(lister)
    service.registry.pin(service.hosts[sid])  # an internal user: nobody to tell

    with caplog.at_level(logging.INFO, logger="sessiond.service"):
        service.tell(sid, WARNING, "the disk is full")

    text = f"session {sid}: the disk is full"
    assert writer.logs == [(WARNING, text)]
    assert watching_writer.logs == [(WARNING, text)]
    assert elsewhere.logs == [] and lister.logs == []
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, text)]
    assert service.hub.subscriber_count(LIST_TOPIC) == 1
    service.close_all()


async def test_a_failed_background_compaction_is_told_to_the_sessions_clients(tmp_path: Path) -> None:
    async def refuse(method: str, params: Any) -> Any:
        return {"summary": "", "stopReason": "error", "errorMessage": "the model is overloaded"}

    service = make_service(tmp_path)
    agent, other = FakePeer(summarizer=True, answer=refuse), FakePeer()
    sid = await new(service, agent, subscribe=True)
    await new(service, other)
    await grow(service, agent, sid)
    await service.compactor.update_settings(agent, sid, {"keepRecentTokens": 10})
    host = service.hosts[sid]

    run = service.compactor.spawn(host, "threshold")
    assert run is not None and run.task is not None
    await run.task

    assert [m for m, _ in agent.requests][:1] == ["compaction/summarize"]
    assert len(agent.logs) == 1
    level, text = agent.logs[0]
    assert level == WARNING
    assert text.startswith(f"session {sid}: threshold compaction failed") and "overloaded" in text
    assert other.logs == []
    statuses = [u["status"] for s, u in agent.updates if u["sessionUpdate"] == "compaction_update"]
    assert statuses == ["in_progress", "failed"]
    assert all(u >= 0 for u in host.users), "the compaction's pin is gone"
    assert not any(e.get("type") == E.COMPACTION for e in host.session.entries())
    service.close_all()


# ---------------------------------------------------------------------------- the summarizing client


async def test_the_summarizing_client_is_the_requester_if_it_can_else_the_oldest_capable_user(
    tmp_path: Path,
) -> None:
    service = make_service(tmp_path)
    registry = service.registry
    plain = FakePeer()
    older, newer, outsider = FakePeer(summarizer=True), FakePeer(summarizer=True), FakePeer(summarizer=True)
    sid = await new(service, plain)
    host = service.hosts[sid]
    assert registry.summarizing_client(host) is None
    registry.pin(host)  # pins are not clients

    await service.load(newer, sid, subscribe=False)  # arrives first, but connected later
    await service.load(older, sid, subscribe=False)
    await new(service, outsider)

    assert registry.summarizing_client(host) is older
    assert registry.summarizing_client(host, newer) is newer
    assert registry.summarizing_client(host, plain) is older  # the requester cannot summarise
    assert registry.summarizing_client(host, outsider) is older  # not a client of this session
    service.release(older)
    assert registry.summarizing_client(host) is newer
    service.release(newer)
    assert registry.summarizing_client(host, plain) is None
    service.close_all()


async def test_a_compaction_run_asks_the_sessions_summarizing_client(tmp_path: Path) -> None:
    async def summarise(method: str, params: Any) -> Any:
        return {"summary": "## Goal\nthe agent's own summary"}

    service = make_service(tmp_path)
    agent = FakePeer(summarizer=True, answer=summarise)
    sid = await new(service, agent, subscribe=True)
    await grow(service, agent, sid)
    progress: list[tuple[str, int | None]] = []

    result = await service.compactor.run(
        agent, sid, keep_recent=10, progress=lambda m, p: progress.append((m, p))
    )

    assert result.summarizer == "client"
    assert agent.requests, "the client was asked"
    for method, params in agent.requests:  # the history, and the split turn's beginning if any
        assert method == "compaction/summarize"
        assert params["sessionId"] == sid and params["compactionId"] == result.compactionId
    written = service.hosts[sid].session.get(result.entryId)
    assert written is not None
    assert written["type"] == E.COMPACTION and "the agent's own summary" in written["summary"]
    statuses = [u["status"] for s, u in agent.updates if u["sessionUpdate"] == "compaction_update"]
    assert statuses == ["in_progress", "completed"]
    assert progress[0] == ("Preparing the compaction", 0)
    assert progress[-1] == ("Writing the checkpoint", 95)
    assert sum("with the client summarizer" in m for m, _ in progress) == len(agent.requests)
    service.close_all()


async def test_asking_for_a_client_summarizer_without_one_fails_and_leaves_nothing_armed(
    tmp_path: Path,
) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid = await new(service, peer)
    await grow(service, peer, sid)
    count = service.hosts[sid].session.entry_count

    with pytest.raises(SummarizerUnavailableError):
        await service.compactor.run(peer, sid, keep_recent=10, summarizer="client")

    host = service.hosts[sid]
    assert host.session.entry_count == count
    assert host.users == {peer.id}
    assert sid not in service.compactor.running
    await service.close(peer, sid)
    assert sid not in service.hosts


async def test_a_reopen_after_a_failed_flush_is_told_and_served(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid = await new(service, peer, subscribe=True)
    await service.append(peer, sid, [{"type": "message", "message": user("hello")}])
    host = service.hosts[sid]
    failed = host.writer()
    changed: list[str] = []
    service.registry.on_changed.append(lambda h: changed.append(h.id))

    assert host.on_broken is not None
    await host.on_broken(failed)

    assert host.session is not failed
    assert host.session.entry_count == failed.entry_count
    assert changed == [sid]
    assert [level for level, _ in peer.logs] == [WARNING]
    assert "resync_required" in peer.kinds(sid)
    # a second report of the same failure (another append waiting on that flush) does nothing
    await host.on_broken(failed)
    assert changed == [sid] and len(peer.logs) == 1
    # and the fresh session takes writes
    await service.append(peer, sid, [{"type": "message", "message": user("again")}])
    assert host.session.entry_count == failed.entry_count + 1
    service.close_all()


async def test_a_reopen_that_cannot_read_the_file_says_so(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid = await new(service, peer)
    await service.append(peer, sid, [{"type": "message", "message": user("hello")}])
    host = service.hosts[sid]
    failed = host.writer()
    failed.path.unlink()

    assert host.on_broken is not None
    await host.on_broken(failed)

    assert host.session is failed
    ((level, text),) = peer.logs
    assert level == ERROR and "cannot be reloaded" in text
    service.close_all()
