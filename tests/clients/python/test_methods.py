"""Every typed method against the real daemon: a scenario per protocol method, results typed.

The test is parametrised over ``METHODS``: a method added to the protocol without a scenario
here (and a typed method in the client) fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import SessiondClient
from sessiond_client.errors import InvalidRequest, LeafMismatch
from sessiond_protocol import METHODS
from sessiond_protocol import methods as M
from sessiond_protocol.models import MessageSpec
from tests.builders import assistant, user
from tests.clients.python.conftest import session_with_turns, stop_cleanly
from tests.harness.calls import msg
from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio


@dataclass
class World:
    client: SessiondClient
    tmp: Path

    async def chat(self, cwd: str = "/work/proj") -> tuple[str, str, str]:
        """A saved session with one prompt and one answer: (sessionId, user entry, assistant entry)."""
        c = self.client
        sid = (await c.session_new(cwd=cwd)).sessionId
        first = await c.append(sid, [msg(user("Add tests")), msg(assistant("Added them.", total=40))])
        return sid, first.entryIds[0], first.entryIds[1]


Scenario = Callable[[World], Awaitable[Any]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(method: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[method] = fn
        return fn

    return register


@scenario("initialize")
async def _initialize(w: World) -> Any:
    with pytest.raises(InvalidRequest, match="already initialized"):
        await w.client.initialize()  # open() did it; the daemon refuses a second one
    result = w.client.initialize_result
    assert result is not None and "session/append" in result.capabilities.model_dump()["methods"]
    return result


@scenario("shutdown")
async def _shutdown(w: World) -> Any:
    # Typed as returning object so that the test below checks at run time that it returns None.
    shutdown: Callable[[], Awaitable[object]] = w.client.shutdown
    result = await shutdown()
    with pytest.raises(InvalidRequest, match="shutting down"):
        await w.client.session_list()
    return result


@scenario("daemon/status")
async def _daemon_status(w: World) -> Any:
    created = await w.client.session_new(cwd=w.tmp, subscribe=True)
    result = await w.client.daemon_status()
    assert result.pid > 0 and result.uptimeSeconds >= 0 and result.protocolVersion == 1
    assert created.sessionId in [s.sessionId for s in result.sessions]
    me = [c for c in result.clients if c.current]
    assert len(me) == 1 and me[0].subscriptions == [created.sessionId]
    return result


@scenario("session/new")
async def _new(w: World) -> Any:
    result = await w.client.session_new(cwd=w.tmp, session_id="my-session-1", subscribe=True)
    assert result.sessionId == "my-session-1" and result.cwd == str(w.tmp)
    assert "my-session-1" in w.client.subscriptions
    return result


@scenario("session/load")
async def _load(w: World) -> Any:
    sid, _, answer = await w.chat()
    result = await w.client.session_load(sid, subscribe=True, work_done_token="load-1")
    assert result.leafId == answer and result.saved and result.entryCount == 2
    return result


@scenario("session/list")
async def _list(w: World) -> Any:
    sid, _, _ = await w.chat(cwd="/work/listed")
    result = await w.client.session_list(cwd="/work/listed", limit=10)
    assert [s.sessionId for s in result.sessions] == [sid]
    assert [s.sessionId async for s in w.client.iter_sessions(cwd="/work/listed", page_size=1)] == [sid]
    return result


@scenario("search/query")
async def _search(w: World) -> Any:
    sid, prompt, _ = await w.chat(cwd="/work/searched")
    result = await w.client.search_query("tests", cwd="/work/searched", role="user", work_done_token="s-1")
    assert [(h.sessionId, h.entryId) for h in result.hits] == [(sid, prompt)] and result.total == 1
    assert "\x02tests\x03" in result.hits[0].snippet.lower() and result.hits[0].onBranch
    return result


async def _subscribed_then(w: World, leave: Callable[[str], Awaitable[Any]]) -> Any:
    """A subscribed session that ``leave`` ends: the client forgets the subscription."""
    sid, _, _ = await w.chat()
    await w.client.session_subscribe(sid)
    result = await leave(sid)
    assert sid not in w.client.subscriptions
    return result


@scenario("session/close")
async def _close(w: World) -> Any:
    return await _subscribed_then(w, w.client.session_close)


@scenario("session/delete")
async def _delete(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.session_delete(sid)
    assert Path(result.trashedPath).exists()
    return result


@scenario("session/subscribe")
async def _subscribe(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.session_subscribe(sid)
    assert result.sessionId == sid and sid in w.client.subscriptions
    return result


@scenario("session/unsubscribe")
async def _unsubscribe(w: World) -> Any:
    return await _subscribed_then(w, w.client.session_unsubscribe)


@scenario("session/append")
async def _append(w: World) -> Any:
    c = w.client
    sid = (await c.session_new(cwd="/work/proj")).sessionId
    # expect_leaf_id=None: "append only if there is no leaf yet" (null, not omitted).
    first = await c.append(sid, [MessageSpec.model_validate(msg(user("one")))], expect_leaf_id=None)
    with pytest.raises(LeafMismatch) as exc:
        await c.append(sid, [msg(user("two"))], expect_leaf_id=None)
    assert exc.value.current_leaf_id == first.leafId
    # parent_id=None: a new root.
    result = await c.session_append(sid, [msg(user("again"))], parent_id=None, durability="fsync")
    branch = await c.tree_branch(sid, full=True)
    assert branch.entryIds == [result.leafId]
    return result


@scenario("session/tail")
async def _tail(w: World) -> Any:
    sid, _prompt, answer = await w.chat()
    result = await w.client.session_tail(sid, limit=1)
    assert [e.model_dump()["id"] for e in result.entries] == [answer] and result.exact  # open: exact
    return result


@scenario("session/entries")
async def _entries(w: World) -> Any:
    sid, prompt, answer = await w.chat()
    result = await w.client.session_entries(sid, limit=1)
    assert [e.model_dump()["id"] for e in result.entries] == [prompt] and result.nextOffset == 1
    after = await w.client.session_entries(sid, after_id=prompt)
    assert [e.model_dump()["id"] for e in after.entries] == [answer]
    return result


@scenario("session/setName")
async def _set_name(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.session_set_name(sid, "Auth rewrite")
    assert result.name == "Auth rewrite"
    return result


@scenario("session/fork")
async def _fork(w: World) -> Any:
    sid, prompt, _ = await w.chat()
    result = await w.client.session_fork(sid, prompt, position="at")
    assert result.sessionId != sid and result.leafId is not None
    return result


@scenario("session/export")
async def _export(w: World) -> Any:
    sid, _, answer = await w.chat()
    result = await w.client.session_export(sid)
    assert result.sessionId != sid and result.source["sessionId"] == sid
    assert result.source["leafId"] == answer and result.entryCount >= 3
    return result


@scenario("session/configure")
async def _configure(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.session_configure(sid, context_window=64000)
    assert result.contextWindow == 64000
    assert (await w.client.context_usage(sid)).size == 64000
    return result


@scenario("tree/get")
async def _tree(w: World) -> Any:
    sid, prompt, answer = await w.chat()
    result = await w.client.tree_get(sid, work_done_token=7)
    assert [n.id for n in result.nodes] == [prompt, answer] and result.leafId == answer
    return result


@scenario("tree/branch")
async def _branch(w: World) -> Any:
    sid, prompt, answer = await w.chat()
    result = await w.client.tree_branch(sid, entry_id=answer, full=True)
    assert result.entryIds == [prompt, answer] and result.entries is not None
    return result


@scenario("tree/navigate")
async def _navigate(w: World) -> Any:
    sid, prompt, _ = await w.chat()
    result = await w.client.tree_navigate(sid, prompt, summary="Tried the first approach.")
    assert result.moved and result.editorText == "Add tests" and result.summaryEntryId is not None
    return result


@scenario("tree/label")
async def _label(w: World) -> Any:
    sid, prompt, _ = await w.chat()
    result = await w.client.tree_label(sid, prompt, "checkpoint")
    cleared = await w.client.tree_label(sid, prompt, None)  # null clears it
    assert cleared.entryId != result.entryId
    return result


@scenario("context/get")
async def _context(w: World) -> Any:
    sid, prompt, answer = await w.chat()
    result = await w.client.context_get(sid)
    assert [m.entryId for m in result.messages] == [prompt, answer]
    assert (await w.client.context(sid, leaf_id=prompt)).entryIds == [prompt]
    return result


@scenario("context/usage")
async def _usage(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.context_usage(sid)
    assert result.used is not None and result.estimator
    return result


@scenario("context/edit")
async def _edit(w: World) -> Any:
    sid, prompt, _ = await w.chat()
    result = await w.client.context_edit(sid, prompt, {"content": "Add unit tests"})
    context = await w.client.context_get(sid)
    assert context.messages[0].message.model_dump()["content"] == "Add unit tests"
    return result


@scenario("compaction/prepare")
async def _prepare(w: World) -> Any:
    sid = await session_with_turns(w.client, 4)
    result = await w.client.compaction_prepare(sid, keep_recent_tokens=300)
    assert result.prepared and result.preparationId and result.conversation
    return result


@scenario("compaction/commit")
async def _commit(w: World) -> Any:
    sid = await session_with_turns(w.client, 4)
    prepared = await w.client.compaction_prepare(sid)
    assert prepared.tokensBefore is not None
    result = await w.client.compaction_commit(
        sid,
        "## Goal\nFix the bugs.",
        prepared.firstKeptEntryId,
        prepared.tokensBefore,
        preparation_id=prepared.preparationId,
    )
    assert result.firstKeptEntryId == prepared.firstKeptEntryId
    return result


@scenario("compaction/run")
async def _run(w: World) -> Any:
    sid = await session_with_turns(w.client, 4)
    result = await w.client.compaction_run(sid, summarizer="extractive", custom_instructions="the bugs")
    assert result.summarizer == "extractive" and "## Goal" in result.summary
    return result


@scenario("compaction/cancel")
async def _cancel(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.compaction_cancel(sid)
    assert result.cancelled is False
    return result


@scenario("compaction/microcompact")
async def _microcompact(w: World) -> Any:
    sid = await session_with_turns(w.client, 4)
    result = await w.client.compaction_microcompact(sid, keep_recent=1, tools=["read"], dry_run=True)
    assert len(result.cleared) == 3 and result.entryIds == []
    return result


@scenario("compaction/snip")
async def _snip(w: World) -> Any:
    sid = await session_with_turns(w.client, 2)
    branch = await w.client.tree_branch(sid)
    # The whole first turn (a call and its result stay together).
    result = await w.client.compaction_snip(sid, branch.entryIds[0], branch.entryIds[3], dry_run=True)
    assert result.hidden == branch.entryIds[:4] and result.entryIds == []
    return result


@scenario("compaction/settings")
async def _settings(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.compaction_settings(sid, set={"reserveTokens": 8000})
    assert result.reserveTokens == 8000
    assert (await w.client.compaction_settings(sid)).reserveTokens == 8000
    return result


async def _workspace(w: World) -> tuple[str, str, Path]:
    """A session whose cwd is a real directory, a prompt checkpointed, ``a.txt`` edited after it."""
    ws = w.tmp / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text("one\n")
    c = w.client
    sid = (await c.session_new(cwd=ws)).sessionId
    prompt = (await c.append(sid, [msg(user("edit a.txt"))])).leafId
    await c.file_history_checkpoint(sid, prompt)
    await c.file_history_track(sid, "a.txt")
    (ws / "a.txt").write_text("two\n")
    await c.file_history_track(sid, "a.txt", phase="after")
    return sid, prompt, ws


@scenario("fileHistory/track")
async def _track(w: World) -> Any:
    sid, prompt, ws = await _workspace(w)
    result = await w.client.file_history_track(sid, ws / "a.txt", message_id=prompt)
    assert result.path == "a.txt" and result.messageId == prompt
    return result


@scenario("fileHistory/checkpoint")
async def _checkpoint(w: World) -> Any:
    sid, _, _ = await _workspace(w)
    prompt = (await w.client.append(sid, [msg(user("next"))])).leafId
    result = await w.client.file_history_checkpoint(sid, prompt)
    assert result.files == 1 and result.changed == 1
    return result


@scenario("fileHistory/list")
async def _fh_list(w: World) -> Any:
    sid, _, _ = await _workspace(w)
    result = await w.client.file_history_list(sid)
    assert result.tracked == ["a.txt"] and len(result.checkpoints) == 1
    return result


@scenario("fileHistory/diff")
async def _diff(w: World) -> Any:
    sid, prompt, _ = await _workspace(w)
    result = await w.client.file_history_diff(sid, prompt, path="a.txt")
    assert result.added == 1 and result.removed == 1
    return result


@scenario("fileHistory/rewind")
async def _rewind(w: World) -> Any:
    sid, prompt, ws = await _workspace(w)
    dry = await w.client.file_history_rewind(sid, prompt, dry_run=True)
    assert dry.dryRun and (ws / "a.txt").read_text() == "two\n"
    result = await w.client.file_history_rewind(sid, prompt)
    assert (ws / "a.txt").read_text() == "one\n" and result.undoId is not None
    return result


@scenario("stats/query")
async def _stats_query(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.stats_query(group_by="session", session_id=sid, timezone="UTC")
    assert len(result.pricesAsOf) == 10 and all(r.period == sid for r in result.rows)
    return result


@scenario("stats/subscribe")
async def _stats_subscribe(w: World) -> Any:
    sid, _, _ = await w.chat()
    result = await w.client.stats_subscribe(session_id=sid, timezone="UTC")
    assert result.sessionId == sid and result.session is not None and result.today.totalTokens >= 0
    return result


@scenario("stats/unsubscribe")
async def _stats_unsubscribe(w: World) -> Any:
    await w.client.stats_subscribe()
    return await w.client.stats_unsubscribe()


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("typed"))
    try:
        yield d
    finally:
        stop_cleanly(d)


@pytest.fixture
async def world(shared_daemon: Daemon, tmp_path: Path) -> AsyncIterator[World]:
    c = await SessiondClient.connect(socket=shared_daemon.socket, start=False)
    try:
        yield World(c, tmp_path)
    finally:
        with contextlib.suppress(Exception):
            await c.close()


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_every_method_through_the_typed_client(method: str, world: World) -> None:
    assert method in SCENARIOS, f"no scenario for {method}: add one (and the typed method)"
    result = await SCENARIOS[method](world)
    expected = METHODS[method].result
    if expected is None:
        assert result is None
    else:
        assert type(result) is expected, f"{method} returned {type(result).__name__}"


def test_the_models_are_the_protocol_ones() -> None:
    assert METHODS["session/new"].result is M.NewResult
