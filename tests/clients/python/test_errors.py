"""The daemon's error answers raise the exception class of their code, with their details."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sessiond_client import RpcError, SessiondClient
from sessiond_client import errors as E
from sessiond_protocol import ErrorCode
from tests.builders import assistant, user
from tests.clients.python.conftest import session_with_turns, stop_cleanly
from tests.harness.calls import msg
from tests.harness.daemon import start_daemon

pytestmark = pytest.mark.anyio


async def test_error_answers_are_typed(client: SessiondClient) -> None:
    c = client
    with pytest.raises(E.SessionNotFound) as missing:
        await c.session_load("no-such-session")
    assert missing.value.session_id == "no-such-session" and missing.value.method == "session/load"
    assert isinstance(missing.value, RpcError) and missing.value.code == ErrorCode.SESSION_NOT_FOUND

    sid = (await c.session_new(cwd="/work/proj", session_id="errors-1")).sessionId
    with pytest.raises(E.SessionExists):
        await c.session_new(cwd="/work/proj", session_id="errors-1")
    change = await c.append(sid, [{"type": "model_change", "provider": "anthropic", "modelId": "claude"}])
    with pytest.raises(E.NotSaved):  # no file before the first user/assistant message
        await c.session_fork(sid, change.leafId, position="at")
    first = await c.append(sid, [msg(user("one")), msg(assistant("two", total=20))])

    with pytest.raises(E.EntryNotFound) as entry:
        await c.tree_branch(sid, entry_id="nope")
    assert entry.value.entry_id == "nope" and isinstance(entry.value, E.NotFound)

    with pytest.raises(E.LeafMismatch) as leaf:
        await c.append(sid, [msg(user("three"))], expect_leaf_id=first.entryIds[0])
    assert leaf.value.current_leaf_id == first.leafId

    await c.tree_navigate(sid, None)  # before the first entry: nothing is on the branch
    with pytest.raises(E.NotOnBranch):
        await c.context_edit(sid, first.entryIds[0], None)

    with pytest.raises(E.InvalidParams) as invalid:  # accepted by the model, refused by the daemon
        await c.compaction_settings(sid, set={"summarizer": "gpt"})
    assert invalid.value.field == "set.summarizer" and not invalid.value.client_side

    with pytest.raises(E.InvalidParams) as local:  # refused before sending
        await c.session_list(limit=5000)
    assert local.value.field == "limit" and local.value.client_side

    with pytest.raises(E.NothingToCompact) as nothing:
        await c.compaction_run(sid)
    assert nothing.value.reason in ("nothing_to_compact", "already_compacted")

    with pytest.raises(E.CheckpointNotFound):
        await c.file_history_diff(sid, first.entryIds[0])

    with pytest.raises(E.MethodNotFound):
        await c.request("session/teleport", {})


async def test_a_stale_preparation(client: SessiondClient) -> None:
    sid = await session_with_turns(client, 4)
    prepared = await client.compaction_prepare(sid)
    assert prepared.tokensBefore is not None
    args = (sid, "## Goal", prepared.firstKeptEntryId, prepared.tokensBefore)
    await client.compaction_commit(*args, preparation_id=prepared.preparationId)
    with pytest.raises(E.PreparationStale):  # already compacted
        await client.compaction_commit(*args, preparation_id=prepared.preparationId)


async def test_read_only_and_overloaded(tmp_path: Path) -> None:
    directory = tmp_path / "pi" / "sessions" / "--w--"
    directory.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "pi-own-1", "timestamp": "2026-01-01T00:00:00.000Z"}
    entry = {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"}
    lines = [{**header, "cwd": "/w"}, {**entry, "message": user("written by Pi")}]
    (directory / "2026-01-01T00-00-00-000Z_pi-own-1.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines)
    )
    daemon = start_daemon(tmp_path, config="[limits]\nmax_in_flight = 1\n")
    release = asyncio.Event()

    async def slow(request: object) -> str:
        await release.wait()
        return "## Goal\nDone."

    c = await SessiondClient.connect(socket=daemon.socket, start=False, summarizer=slow)
    try:
        loaded = await c.session_load("pi-own-1")
        assert loaded.readOnly and loaded.root == "pi"
        with pytest.raises(E.ReadOnly):
            await c.append("pi-own-1", [msg(user("no"))])

        sid = await session_with_turns(c, 6)
        run = asyncio.ensure_future(c.compaction_run(sid, summarizer="client"))
        await asyncio.sleep(0.3)
        with pytest.raises(E.Overloaded) as overloaded:
            await c.context_usage(sid)
        assert overloaded.value.code == ErrorCode.OVERLOADED
        release.set()
        assert (await run).summary.startswith("## Goal\nDone.")
    finally:
        release.set()
        await c.close()
        stop_cleanly(daemon)
