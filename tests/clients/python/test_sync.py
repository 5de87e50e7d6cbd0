"""The blocking facade: the same typed methods, streams and errors, from plain threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from sessiond_client import SessiondSyncClient, SessionNotFound, connect_sync
from sessiond_client.errors import InvalidParams, SummarizerUnavailable
from sessiond_protocol import methods as M
from sessiond_protocol.notifications import CompactionUpdate, EntriesAppended, SummarizeParams
from tests.builders import assistant, user
from tests.clients.python.conftest import turn
from tests.harness.calls import msg
from tests.harness.daemon import Daemon


def test_calls_streams_and_errors(daemon: Daemon) -> None:
    with connect_sync(socket=daemon.socket, start=False, name="script") as c:
        assert isinstance(c.initialize_result, M.InitializeResult)
        new = c.session_new(cwd="/work/proj", subscribe=True)
        assert isinstance(new, M.NewResult)
        with c.updates(new.sessionId) as updates:
            appended = c.append(new.sessionId, [msg(user("hi")), msg(assistant("hello", total=20))])
            event = updates.wait_for(EntriesAppended, timeout=5)
            assert isinstance(event.update, EntriesAppended) and event.update.entryIds == appended.entryIds
            assert all(e.sessionId == new.sessionId for e in updates.pending())
        context = c.context(new.sessionId)
        assert [m.entryId for m in context.messages] == appended.entryIds
        assert [s.sessionId for s in c.iter_sessions(cwd="/work/proj")] == [new.sessionId]
        with pytest.raises(SessionNotFound):
            c.session_load("missing")
        with pytest.raises(InvalidParams) as exc:
            c.append(new.sessionId, [])
        assert exc.value.client_side and exc.value.field == "entries"
        assert c.request("context/usage", {"sessionId": new.sessionId})["estimator"]
        subscription = c.subscribe(new.sessionId)
        c.session_set_name(new.sessionId, "named")
        assert subscription.next(timeout=5).sessionId == new.sessionId
        subscription.close()
        with pytest.raises(StopIteration):
            subscription.next(timeout=1)
    assert not c.connected
    assert not c._thread.is_alive()
    c.close()  # idempotent


def test_a_plain_function_summarizer_and_a_timeout(daemon: Daemon) -> None:
    gate = threading.Event()
    asked: list[SummarizeParams] = []

    def summarize(request: SummarizeParams) -> str:
        asked.append(request)
        gate.wait(20)
        return "## Goal\nFrom a script."

    c = SessiondSyncClient.connect(socket=daemon.socket, start=False, summarizer=summarize)
    try:
        sid = c.session_new(cwd="/work/proj", subscribe=True).sessionId
        c.compaction_settings(sid, set={"keepRecentTokens": 300})
        for i in range(6):
            c.append(sid, turn(i))
        # A timeout cancels the request: the daemon cancels the compaction.
        c.timeout = 0.5
        with c.updates(sid) as updates:
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                c.compaction_run(sid, summarizer="client")
            assert time.monotonic() - started < 5
            c.timeout = None
            cancelled = updates.wait_for(
                lambda e: isinstance(e.update, CompactionUpdate) and e.update.status == "cancelled",
                timeout=10,
            )
            assert isinstance(cancelled.update, CompactionUpdate)
        gate.set()
        result = c.compaction_run(sid, summarizer="client")
        assert result.summarizer == "client" and result.summary.startswith("## Goal\nFrom a script.")
        assert asked and asked[-1].sessionId == sid
    finally:
        gate.set()
        c.close()


def test_without_a_summarizer(daemon: Daemon, tmp_path: Path) -> None:
    with SessiondSyncClient.connect(socket=daemon.socket, start=False, timeout=10) as c:
        sid = c.session_new(cwd=tmp_path).sessionId
        c.compaction_settings(sid, set={"keepRecentTokens": 300})
        for i in range(6):
            c.append(sid, turn(i))
        with pytest.raises(SummarizerUnavailable):
            c.compaction_run(sid, summarizer="client")
        with pytest.raises(RuntimeError, match="before connecting"):
            c.on_summarize(lambda request: "late")
