"""Compaction through the real daemon: summarizers, policy, cancellation, micro-compaction.

The tests talk to ``sessiond serve`` on a temporary store over its socket with the real client;
summaries come from a client answering ``compaction/summarize``, a configured command, a fake
OpenAI-compatible model on 127.0.0.1, or the built-in extractive summarizer. The tests with the
default configuration share one daemon (``shared_daemon``: each works on sessions of its own and
leaves no connection behind, so no summarizing client of one test is seen by another); those that
configure the daemon start their own.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sessiond.compaction.micro import PLACEHOLDER
from sessiond.compaction.policy import OVERFLOW_FAILED
from sessiond_client import Client, RpcError
from sessiond_protocol import ErrorCode
from tests.builders import assistant, tool_result, user
from tests.harness.calls import call, msg
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.fixtures import SharedDaemon
from tests.service.fake_model import FakeModel, Reply, completion

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """The file's one daemon (the tests are independent of each other: module docstring)."""
    return shared_daemon


OVERFLOW = "prompt is too long: 213462 tokens > 200000 maximum"


def lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_bytes().split(b"\n") if x]


def now(message: dict[str, Any]) -> dict[str, Any]:
    """The message stamped with the current time (the policy ignores answers older than a checkpoint)."""
    return {**message, "timestamp": int(time.time() * 1000)}


def failed_answer(error: str = OVERFLOW) -> dict[str, Any]:
    return msg(now(assistant(stop="error", error=error)))


def turn(i: int, *, total: int = 0, size: int = 400) -> list[dict[str, Any]]:
    """A user request, an assistant reading a file, the result, and the answer."""
    body = f"line {i} " * (size // 7)
    return [
        msg(now(user(f"Request {i}: please look at src/mod{i}.py and fix the bug"))),
        msg(now(assistant(f"Reading mod{i}", calls=[("read", {"path": f"src/mod{i}.py"})]))),
        msg(now(tool_result(body, "call_0", "read"))),
        msg(now(assistant(f"Fixed the bug in src/mod{i}.py by checking for None.", total=total))),
    ]


async def session_with_turns(client: Client, n: int, **settings: Any) -> tuple[str, str]:
    created = await call(client, "session/new", {"cwd": "/work/proj", "subscribe": True})
    sid = created["sessionId"]
    await call(
        client, "compaction/settings", {"sessionId": sid, "set": {"keepRecentTokens": 300, **settings}}
    )
    for i in range(n):
        await call(client, "session/append", {"sessionId": sid, "entries": turn(i)})
    return sid, created["path"]


async def until(client: Client, sid: str, predicate: Any, timeout: float = 15) -> dict[str, Any]:
    async for update in client.updates(sid, timeout=timeout):
        if predicate(update):
            return update
    raise AssertionError("unreachable")


def compaction_update(status: str) -> Any:
    return lambda u: u["sessionUpdate"] == "compaction_update" and u["status"] == status


class SummarizerClient:
    """A client that answers ``compaction/summarize`` like an agent with its own model."""

    def __init__(self, client: Client, text: str = "## Goal\nFix the bugs.") -> None:
        self.client = client
        self.text = text
        self.requests: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.started = asyncio.Event()
        client.on_request("compaction/summarize", self.answer)

    async def answer(self, params: dict[str, Any]) -> Any:
        self.requests.append(params)
        self.started.set()
        await self.release.wait()
        return {"summary": self.text, "usage": {"input": 100, "output": 20, "totalTokens": 120}}


# --------------------------------------------------------------------------- manual runs


async def test_run_with_a_client_summarizer(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    sid, path = await session_with_turns(client, 6)
    result = await call(client, "compaction/run", {"sessionId": sid, "customInstructions": "the bugs"})
    assert result["summarizer"] == "client"
    request = agent.requests[0]
    prepared_split = len(agent.requests) == 2
    assert [r["kind"] for r in agent.requests] == ["history", "turn_prefix"][: len(agent.requests)]
    assert request["sessionId"] == sid
    assert request["compactionId"] == result["compactionId"]
    assert "<conversation>\n[User]: Request 0" in request["prompt"]
    assert request["prompt"].endswith("Additional focus: the bugs")
    assert request["maxTokens"] == int(0.8 * 16384)
    written = lines(path)[-1]
    assert written["type"] == "compaction" and written["id"] == result["entryId"]
    separator = (
        "\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nFix the bugs." if prepared_split else ""
    )
    assert written["summary"].startswith(f"## Goal\nFix the bugs.{separator}\n\n<read-files>\nsrc/mod0.py")
    assert written["firstKeptEntryId"] == result["firstKeptEntryId"]
    assert written["usage"]["totalTokens"] == 120 * len(agent.requests)  # summed over the calls
    assert result["tokensAfter"] < result["tokensBefore"]
    context = await call(client, "context/get", {"sessionId": sid})
    assert context["messages"][0]["message"]["role"] == "compactionSummary"
    assert context["messages"][1]["entryId"] == result["firstKeptEntryId"]
    seen = [u for u in _drain_updates(client, sid) if u["sessionUpdate"] == "compaction_update"]
    assert [u["status"] for u in seen] == ["in_progress", "completed"]
    assert seen[1]["entryId"] == result["entryId"] and seen[1]["summary"] == written["summary"]
    await client.close()


def _drain_updates(client: Client, sid: str) -> list[dict[str, Any]]:
    return [
        p["update"]
        for method, p in client.drain_notifications()
        if method == "session/update" and p["sessionId"] == sid
    ]


async def test_extractive_is_the_default_summarizer(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path = await session_with_turns(client, 6)
    result = await call(client, "compaction/run", {"sessionId": sid})
    assert result["summarizer"] == "extractive"
    summary = lines(path)[-1]["summary"]
    for heading in ("## Goal", "## Progress", "## Next Steps", "## Critical Context"):
        assert heading in summary
    assert "src/mod0.py" in summary
    await client.close()


async def test_nothing_to_compact_and_already_compacted(daemon: Daemon) -> None:
    client = await daemon.client()
    created = await call(client, "session/new", {"cwd": "/work/proj"})
    sid = created["sessionId"]
    await call(
        client, "session/append", {"sessionId": sid, "entries": [msg(user("hi")), msg(assistant("hello"))]}
    )
    prepared = await call(client, "compaction/prepare", {"sessionId": sid})
    assert prepared == {
        "prepared": False,
        "reason": "nothing_to_compact",
        "message": "Nothing to compact (session too small)",
    }
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/run", {"sessionId": sid})
    assert exc.value.code == ErrorCode.NOTHING_TO_COMPACT and exc.value.data["reason"] == "nothing_to_compact"
    sid2, _ = await session_with_turns(client, 6)
    await call(client, "compaction/run", {"sessionId": sid2})
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/run", {"sessionId": sid2})
    assert exc.value.code == ErrorCode.NOTHING_TO_COMPACT and exc.value.data["reason"] == "already_compacted"
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/run", {"sessionId": "0000-missing"})
    assert exc.value.code == ErrorCode.SESSION_NOT_FOUND
    await client.close()


async def test_second_compaction_updates_the_previous_summary(daemon: Daemon) -> None:
    """The seed's example: C1, then U8..A11; the second run summarises C1's kept messages."""
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client, "## Goal\nFirst checkpoint.")
    sid, path = await session_with_turns(client, 6)
    first = await call(client, "compaction/run", {"sessionId": sid})
    kept_before = first["firstKeptEntryId"]
    for i in range(6, 12):
        await call(client, "session/append", {"sessionId": sid, "entries": turn(i)})
    prepared = await call(client, "compaction/prepare", {"sessionId": sid})
    assert (
        prepared["prepared"]
        and prepared["previousSummary"]
        == lines(path)[[e.get("id") for e in lines(path)].index(first["entryId"])]["summary"]
    )
    entries = {e["id"]: e for e in lines(path)[1:]}
    # The first kept message of C1 is now summarised (it became old), after the previous summary.
    assert prepared["messagesToSummarize"][0] == entries[kept_before]["message"]
    assert "<previous-summary>\n## Goal\nFirst checkpoint." in prepared["prompts"]["history"]
    agent.text = "## Goal\nSecond checkpoint."
    second = await call(client, "compaction/run", {"sessionId": sid})
    history = [r for r in agent.requests if r["kind"] == "history"][-1]
    assert history["previousSummary"].startswith("## Goal\nFirst checkpoint.")
    assert history["conversation"] == prepared["conversation"]
    context = await call(client, "context/get", {"sessionId": sid})
    assert context["messages"][0]["message"]["summary"].startswith("## Goal\nSecond checkpoint.")
    assert context["messages"][1]["entryId"] == second["firstKeptEntryId"]
    await client.close()


# --------------------------------------------------------------------------- commit


async def test_prepare_then_commit_and_stale_preparations(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path = await session_with_turns(client, 6)
    prepared = await call(client, "compaction/prepare", {"sessionId": sid})
    assert prepared["prepared"] and prepared["conversation"].startswith("[User]: Request 0")
    assert prepared["readFiles"][0] == "src/mod0.py"
    assert prepared["prompts"]["systemPrompt"].startswith("You write context checkpoints.")
    # The branch grows while the agent summarises: the commit still fits.
    await call(client, "session/append", {"sessionId": sid, "entries": [msg(user("one more"))]})
    committed = await call(
        client,
        "compaction/commit",
        {
            "sessionId": sid,
            "preparationId": prepared["preparationId"],
            "summary": "## Goal\nMine.",
            "firstKeptEntryId": prepared["firstKeptEntryId"],
            "tokensBefore": prepared["tokensBefore"],
        },
    )
    written = lines(path)[-1]
    assert written["id"] == committed["entryId"] and written["summary"] == "## Goal\nMine."
    assert written["details"] == {
        "readFiles": prepared["readFiles"],
        "modifiedFiles": prepared["modifiedFiles"],
    }
    size = Path(path).stat().st_size
    with pytest.raises(RpcError) as exc:  # used up: the session was compacted since
        await client.request(
            "compaction/commit",
            {
                "sessionId": sid,
                "preparationId": prepared["preparationId"],
                "summary": "again",
                "firstKeptEntryId": prepared["firstKeptEntryId"],
                "tokensBefore": 1,
            },
        )
    assert exc.value.code == ErrorCode.PREPARATION_STALE
    assert Path(path).stat().st_size == size
    await client.close()


async def test_commit_refuses_a_moved_branch_and_bad_input(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path = await session_with_turns(client, 6)
    prepared = await call(client, "compaction/prepare", {"sessionId": sid})
    tree = await call(client, "tree/branch", {"sessionId": sid})
    await call(client, "tree/navigate", {"sessionId": sid, "targetId": tree["entryIds"][-3]})
    size = Path(path).stat().st_size
    params = {
        "sessionId": sid,
        "preparationId": prepared["preparationId"],
        "summary": "s",
        "firstKeptEntryId": prepared["firstKeptEntryId"],
        "tokensBefore": 10,
    }
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/commit", params)
    assert exc.value.code == ErrorCode.PREPARATION_STALE and "moved" in exc.value.message
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/commit", {**params, "firstKeptEntryId": tree["entryIds"][0]})
    assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == "firstKeptEntryId"
    with pytest.raises(RpcError) as exc:
        await client.request(
            "compaction/commit", {**params, "preparationId": None, "firstKeptEntryId": "nope"}
        )
    assert exc.value.code == ErrorCode.ENTRY_NOT_FOUND
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/commit", {**params, "summary": ""})
    assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == "summary"
    assert Path(path).stat().st_size == size
    await client.close()


# --------------------------------------------------------------------------- settings


async def test_settings_get_set_and_validation(daemon: Daemon) -> None:
    client = await daemon.client()
    created = await call(client, "session/new", {"cwd": "/work/proj"})
    sid = created["sessionId"]
    got = await call(client, "compaction/settings", {"sessionId": sid})
    assert (got["enabled"], got["reserveTokens"], got["keepRecentTokens"]) == (True, 16384, 20000)
    assert got["microcompact"]["keepRecent"] == 3 and got["summarizer"] == "auto"
    changed = await call(
        client,
        "compaction/settings",
        {
            "sessionId": sid,
            "set": {
                "reserveTokens": 8000,
                "contextWindow": 64000,
                "modelOverrides": {"anthropic/claude": {"keepRecentTokens": 5000}},
                "microcompact": {"keepRecent": 5},
            },
        },
    )
    assert changed["reserveTokens"] == 8000 and changed["contextWindow"] == 64000
    assert changed["microcompact"]["keepRecent"] == 5
    await call(client, "session/append", {"sessionId": sid, "entries": [msg(user("x")), msg(assistant("y"))]})
    got = await call(client, "compaction/settings", {"sessionId": sid})
    assert got["effective"] == {
        "reserveTokens": 8000,
        "keepRecentTokens": 5000,
        "contextWindow": 64000,
        "model": {"provider": "anthropic", "modelId": "claude"},
    }
    usage = await call(client, "context/usage", {"sessionId": sid})
    assert usage["size"] == 64000  # one setting, seen by usage too
    for bad, field in [
        ({"reserveTokens": -1}, "set.reserveTokens"),
        ({"enabled": "yes"}, "set.enabled"),
        ({"modelOverrides": {"a/b": {"windowSize": 3}}}, "set.modelOverrides.a/b.windowSize"),
        ({"summarizer": "gpt"}, "set.summarizer"),
        ({"bogus": 1}, "set.bogus"),
        ({"microcompact": {"keepRecent": 0}}, "set.microcompact.keepRecent"),
    ]:
        with pytest.raises(RpcError) as exc:
            await client.request("compaction/settings", {"sessionId": sid, "set": bad})
        assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == field, bad
    assert (await call(client, "compaction/settings", {"sessionId": sid}))["reserveTokens"] == 8000
    reset = await call(client, "compaction/settings", {"sessionId": sid, "set": {"reserveTokens": None}})
    assert reset["reserveTokens"] == 16384
    await client.close()


# --------------------------------------------------------------------------- policy


async def test_threshold_compaction_with_a_client_summarizer(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    sid, path = await session_with_turns(client, 5, contextWindow=4000, reserveTokens=1000)
    assert not agent.requests
    # The provider reports 3500 tokens of context: above 4000 - 1000.
    await call(client, "session/append", {"sessionId": sid, "entries": turn(5, total=3500)})
    done = await until(client, sid, compaction_update("completed"))
    assert done["reason"] == "threshold" and done["willRetry"] is False
    asked = len(agent.requests)
    assert asked in (1, 2)  # a history summary, and a turn prefix when the cut splits a turn
    written = [e for e in lines(path) if e.get("type") == "compaction"]
    assert [e["id"] for e in written] == [done["entryId"]]
    usage = await call(client, "context/usage", {"sessionId": sid})
    assert usage["source"] == "estimate" and usage["used"] < 3000
    # Below the threshold now: the next answer does not compact again.
    await call(client, "session/append", {"sessionId": sid, "entries": turn(6, total=1200)})
    await asyncio.sleep(0.3)
    assert len(agent.requests) == asked
    await client.close()


async def test_threshold_off_when_disabled(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    sid, _ = await session_with_turns(client, 5, contextWindow=4000, reserveTokens=1000, enabled=False)
    await call(client, "session/append", {"sessionId": sid, "entries": turn(5, total=3900)})
    await asyncio.sleep(0.3)
    assert not agent.requests
    await client.close()


async def test_overflow_recovery_compacts_once_then_gives_up(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    sid, path = await session_with_turns(client, 6)
    await call(client, "session/append", {"sessionId": sid, "entries": [msg(user("Next: refactor"))]})
    failed = await call(client, "session/append", {"sessionId": sid, "entries": [failed_answer()]})
    failed_id = failed["entryIds"][0]
    started = await until(client, sid, compaction_update("in_progress"))
    assert started["reason"] == "overflow" and started["willRetry"] is True
    done = await until(client, sid, compaction_update("completed"))
    assert done["willRetry"] is True and done["compactionId"] == started["compactionId"]
    entries = lines(path)
    edit = next(e for e in entries if e.get("type") == "context_edit")
    assert edit["targetId"] == failed_id and edit["replacement"] is None
    assert entries[-1]["type"] == "compaction" and entries[-1]["parentId"] == edit["id"]
    context = await call(client, "context/get", {"sessionId": sid})
    assert failed_id not in [m["entryId"] for m in context["messages"]]  # the failed attempt is omitted
    # The retry overflows again: one compact-and-retry per recovery window.
    await call(client, "session/append", {"sessionId": sid, "entries": [failed_answer()]})
    gave_up = await until(client, sid, compaction_update("failed"))
    assert gave_up["error"] == OVERFLOW_FAILED and gave_up["willRetry"] is False
    asked = len(agent.requests)
    assert sum(e.get("type") == "compaction" for e in lines(path)) == 1
    # A new user message opens a new window: the next overflow is recovered again.
    await call(client, "session/append", {"sessionId": sid, "entries": turn(20)[:1]})
    for i in range(21, 25):
        await call(client, "session/append", {"sessionId": sid, "entries": turn(i)})
    await call(client, "session/append", {"sessionId": sid, "entries": [failed_answer()]})
    again = await until(client, sid, compaction_update("completed"))
    assert again["reason"] == "overflow" and again["willRetry"] is True
    assert len(agent.requests) > asked
    await client.close()


async def test_rate_limits_are_not_overflows(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    sid, path = await session_with_turns(client, 6)
    error = "429 rate limit: too many tokens per minute"
    await call(client, "session/append", {"sessionId": sid, "entries": [failed_answer(error)]})
    await asyncio.sleep(0.3)
    assert not agent.requests and not any(e.get("type") == "context_edit" for e in lines(path))
    await client.close()


# --------------------------------------------------------------------------- concurrency


async def test_cancel_mid_summary_writes_nothing(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    agent.release.clear()  # the model is "thinking" until cancelled
    sid, path = await session_with_turns(client, 6)
    size = Path(path).stat().st_size
    run = asyncio.ensure_future(client.request("compaction/run", {"sessionId": sid}))
    await asyncio.wait_for(agent.started.wait(), 10)
    with pytest.raises(RpcError) as exc:  # a second one while the first runs
        await client.request("compaction/run", {"sessionId": sid})
    assert exc.value.code == ErrorCode.COMPACTION_RUNNING
    request_id = max(client._pending)  # the id of the running compaction/run
    await client.notify("$/cancelRequest", {"id": request_id})
    with pytest.raises(RpcError) as exc:
        await run
    assert exc.value.code == ErrorCode.REQUEST_CANCELLED
    cancelled = await until(client, sid, compaction_update("cancelled"))
    assert "nothing was written" in cancelled["error"]
    for _ in range(50):
        if client.cancelled_requests:
            break
        await asyncio.sleep(0.02)
    assert client.cancelled_requests, "the summarizing client was told to stop"
    assert Path(path).stat().st_size == size
    # Nothing is left armed: the next compaction runs normally.
    agent.release.set()
    result = await call(client, "compaction/run", {"sessionId": sid})
    assert lines(path)[-1]["id"] == result["entryId"]
    await client.close()


async def test_cancel_a_background_compaction(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    agent.release.clear()
    sid, path = await session_with_turns(client, 5, contextWindow=4000, reserveTokens=1000)
    await call(client, "session/append", {"sessionId": sid, "entries": turn(5, total=3500)})
    await asyncio.wait_for(agent.started.wait(), 10)
    size = Path(path).stat().st_size
    cancelled = await call(client, "compaction/cancel", {"sessionId": sid})
    assert cancelled["cancelled"] is True
    update = await until(client, sid, compaction_update("cancelled"))
    assert update["compactionId"] == cancelled["compactionId"]
    assert Path(path).stat().st_size == size
    assert (await call(client, "compaction/cancel", {"sessionId": sid}))["cancelled"] is False
    await client.close()


async def test_entries_appended_while_summarizing_stay_in_the_kept_range(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    agent.release.clear()
    sid, path = await session_with_turns(client, 6)
    run = asyncio.ensure_future(call(client, "compaction/run", {"sessionId": sid}))
    await asyncio.wait_for(agent.started.wait(), 10)
    other = await daemon.client()
    late = await call(other, "session/append", {"sessionId": sid, "entries": turn(99)})
    agent.release.set()
    result = await run
    written = lines(path)[-1]
    assert written["id"] == result["entryId"] and written["parentId"] == late["leafId"]
    context = await call(client, "context/get", {"sessionId": sid})
    ids = [m["entryId"] for m in context["messages"]]
    assert ids[0] == result["entryId"] and ids[-4:] == late["entryIds"]
    await other.close()
    await client.close()


async def test_a_branch_moved_while_summarizing_fails_stale(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    agent = SummarizerClient(client)
    agent.release.clear()
    sid, path = await session_with_turns(client, 6)
    branch = await call(client, "tree/branch", {"sessionId": sid})
    run = asyncio.ensure_future(client.request("compaction/run", {"sessionId": sid}))
    await asyncio.wait_for(agent.started.wait(), 10)
    await call(client, "tree/navigate", {"sessionId": sid, "targetId": branch["entryIds"][2]})
    size = Path(path).stat().st_size
    agent.release.set()
    with pytest.raises(RpcError) as exc:
        await run
    assert exc.value.code == ErrorCode.PREPARATION_STALE
    failed = await until(client, sid, compaction_update("failed"))
    assert "moved" in failed["error"]
    assert Path(path).stat().st_size == size
    await client.close()


async def test_summaries_that_fail_pi_checks_are_refused(daemon: Daemon) -> None:
    client = await daemon.client(summarizer=True)
    answers: list[Any] = [
        {"summary": "cut", "stopReason": "length"},
        {"content": [{"type": "toolCall", "id": "1", "name": "read", "arguments": {}}]},
        {"summary": "  "},
        {"summary": "", "stopReason": "error", "errorMessage": "overloaded"},
    ]

    async def answer(params: dict[str, Any]) -> Any:
        return answers.pop(0)

    client.on_request("compaction/summarize", answer)
    sid, path = await session_with_turns(client, 6)
    size = Path(path).stat().st_size
    messages = []
    for _ in range(4):
        with pytest.raises(RpcError) as exc:
            await client.request("compaction/run", {"sessionId": sid})
        assert exc.value.code == ErrorCode.SUMMARY_REFUSED
        messages.append(exc.value.message)
    assert messages == [
        "Summarization failed: generation hit the token cap and the summary is incomplete",
        "Summarization attempted to call a tool",
        "Summarization failed: the summarizer returned no text",
        "Summarization failed: overloaded",
    ]
    assert Path(path).stat().st_size == size
    await client.close()


async def test_a_hanging_client_summarizer_times_out(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, config="[summarizer]\ntimeout = 0.5\n")
    try:
        client = await daemon.client(summarizer=True)
        agent = SummarizerClient(client)
        agent.release.clear()
        sid, path = await session_with_turns(client, 6)
        size = Path(path).stat().st_size
        with pytest.raises(RpcError) as exc:
            await client.request("compaction/run", {"sessionId": sid})
        assert (
            exc.value.code == ErrorCode.SUMMARY_REFUSED and "did not answer within 0.5 s" in exc.value.message
        )
        assert Path(path).stat().st_size == size
        failed = await until(client, sid, compaction_update("failed"))
        assert "did not answer" in failed["error"]
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_client_summarizer_required_but_missing(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, _ = await session_with_turns(client, 6)
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/run", {"sessionId": sid, "summarizer": "client"})
    assert exc.value.code == ErrorCode.SUMMARIZER_UNAVAILABLE and exc.value.data["summarizer"] == "client"
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/run", {"sessionId": sid, "summarizer": "command"})
    assert exc.value.code == ErrorCode.SUMMARIZER_UNAVAILABLE and "[summarizer.command]" in exc.value.message
    await client.close()


# --------------------------------------------------------------------------- command and HTTP


async def test_command_summarizer(tmp_path: Path) -> None:
    script = tmp_path / "summarize.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            prompt = sys.stdin.read()
            assert "onversation" in prompt
            print("## Goal\\nFrom the command (" + os.environ["SESSIOND_SUMMARY_KIND"] + ")")
            """
        )
    )
    config = f"[summarizer.command]\nargv = [{json.dumps(sys.executable)}, {json.dumps(str(script))}]\n"
    daemon = start_daemon(tmp_path, config=config)
    try:
        client = await daemon.client()
        sid, path = await session_with_turns(client, 6)
        result = await call(client, "compaction/run", {"sessionId": sid})
        assert result["summarizer"] == "command"
        assert lines(path)[-1]["summary"].startswith("## Goal\nFrom the command (history)")
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_http_summarizer_against_a_fake_model(tmp_path: Path) -> None:
    with FakeModel() as model:
        model.reply = lambda _: Reply(
            body=completion(
                "## Goal\nFrom the model.",
                usage={"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
            )
        )
        config = f'[summarizer.http]\nbase_url = "{model.url}"\nmodel = "fake-1"\napi_key_env = "FAKE_KEY"\n'
        daemon = start_daemon(tmp_path, config=config, env={"FAKE_KEY": "sk-test"})
        try:
            client = await daemon.client()
            sid, path = await session_with_turns(client, 6)
            result = await call(client, "compaction/run", {"sessionId": sid})
            assert result["summarizer"] == "http"
            request = model.requests[0]  # (a second one when the cut splits a turn)
            body = request.json()
            assert body["model"] == "fake-1" and body["messages"][0]["role"] == "system"
            assert request.headers.get("Authorization") == "Bearer sk-test"
            written = lines(path)[-1]
            assert written["summary"].startswith("## Goal\nFrom the model.")
            await client.close()
        finally:
            assert daemon.stop() == 0


# --------------------------------------------------------------------------- micro-compaction and snip


async def tool_session(client: Client, n: int) -> tuple[str, str]:
    created = await call(client, "session/new", {"cwd": "/work/proj", "subscribe": True})
    sid = created["sessionId"]
    entries = [msg(user("Read everything"))]
    for i in range(n):
        call_message = assistant(calls=[("read", {"path": f"f{i}.py"})])
        call_message["content"][0]["id"] = f"toolu_{i}"
        entries += [msg(call_message), msg(tool_result(f"content of f{i} " * 50, f"toolu_{i}", "read"))]
    entries.append(msg(assistant("Done.")))
    await call(client, "session/append", {"sessionId": sid, "entries": entries})
    return sid, created["path"]


def pairs_intact(messages: list[dict[str, Any]]) -> bool:
    calls = [
        b["id"]
        for m in messages
        if m["message"]["role"] == "assistant"
        for b in m["message"]["content"]
        if b["type"] == "toolCall"
    ]
    results = [m["message"]["toolCallId"] for m in messages if m["message"]["role"] == "toolResult"]
    return len(calls) == len(results)


async def test_microcompact_clears_old_results_and_keeps_pairs(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path = await tool_session(client, 6)
    size = Path(path).stat().st_size
    dry = await call(client, "compaction/microcompact", {"sessionId": sid, "keepRecent": 2, "dryRun": True})
    assert len(dry["cleared"]) == 4 and dry["entryIds"] == [] and dry["tokensSaved"] > 0
    assert Path(path).stat().st_size == size
    done = await call(client, "compaction/microcompact", {"sessionId": sid, "keepRecent": 2})
    assert [c["entryId"] for c in done["cleared"]] == [c["entryId"] for c in dry["cleared"]]
    assert len(done["entryIds"]) == 4
    context = await call(client, "context/get", {"sessionId": sid})
    results = [m["message"] for m in context["messages"] if m["message"]["role"] == "toolResult"]
    texts = [r["content"][0]["text"] for r in results]
    assert texts[:4] == [PLACEHOLDER] * 4 and PLACEHOLDER not in texts[4:]
    assert pairs_intact(context["messages"])
    again = await call(client, "compaction/microcompact", {"sessionId": sid, "keepRecent": 2})
    assert again["cleared"] == []  # deterministic and idempotent
    first = json.dumps(context["messages"])
    assert json.dumps((await call(client, "context/get", {"sessionId": sid}))["messages"]) == first
    await client.close()


async def test_snip_hides_a_range_but_never_splits_a_pair(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path = await tool_session(client, 3)
    ids = (await call(client, "tree/branch", {"sessionId": sid}))["entryIds"]
    size = Path(path).stat().st_size
    with pytest.raises(RpcError) as exc:  # the call without its result
        await client.request(
            "compaction/snip", {"sessionId": sid, "fromEntryId": ids[1], "toEntryId": ids[1]}
        )
    assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == "toEntryId"
    with pytest.raises(RpcError) as exc:  # the result without its call
        await client.request(
            "compaction/snip", {"sessionId": sid, "fromEntryId": ids[2], "toEntryId": ids[3]}
        )
    assert exc.value.code == ErrorCode.INVALID_PARAMS
    assert Path(path).stat().st_size == size
    snipped = await call(
        client, "compaction/snip", {"sessionId": sid, "fromEntryId": ids[1], "toEntryId": ids[4]}
    )
    assert snipped["hidden"] == ids[1:5] and len(snipped["entryIds"]) == 4
    context = await call(client, "context/get", {"sessionId": sid})
    assert [m["entryId"] for m in context["messages"]] == [ids[0], *ids[5:]]
    assert pairs_intact(context["messages"])
    await client.close()


async def test_automatic_microcompaction_by_count(daemon: Daemon) -> None:
    client = await daemon.client()
    created = await call(client, "session/new", {"cwd": "/work/proj"})
    sid = created["sessionId"]
    await call(
        client,
        "compaction/settings",
        {"sessionId": sid, "set": {"microcompact": {"enabled": True, "triggerCount": 4, "keepRecent": 2}}},
    )
    await call(client, "session/append", {"sessionId": sid, "entries": [msg(user("go"))]})
    for i in range(4):
        await call(
            client,
            "session/append",
            {
                "sessionId": sid,
                "entries": [
                    msg(assistant(calls=[("bash", {"command": f"ls {i}"})])),
                    msg(tool_result(f"output {i} " * 40, "call_0", "bash")),
                ],
            },
        )
    context = await call(client, "context/get", {"sessionId": sid})
    texts = [
        m["message"]["content"][0]["text"]
        for m in context["messages"]
        if m["message"]["role"] == "toolResult"
    ]
    assert texts[:2] == [PLACEHOLDER] * 2 and PLACEHOLDER not in texts[2:]
    await client.close()


async def test_progress_for_a_client_that_asked(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, _ = await session_with_turns(client, 6)
    client.drain_notifications()
    await call(client, "compaction/run", {"sessionId": sid, "workDoneToken": "tok-1"})
    progress = [
        p["value"] for m, p in client.drain_notifications() if m == "$/progress" and p["token"] == "tok-1"
    ]
    kinds = [v["kind"] for v in progress]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    messages = [v.get("message", "") for v in progress if v["kind"] == "report"]
    assert any("extractive summarizer" in m for m in messages)
    await client.close()


async def test_a_summarizer_that_disconnects_fails_the_compaction(daemon: Daemon) -> None:
    agent_client = await daemon.client(summarizer=True)
    agent = SummarizerClient(agent_client)
    agent.release.clear()
    sid, path = await session_with_turns(agent_client, 5, contextWindow=4000, reserveTokens=1000)
    watcher = await daemon.client()
    await call(watcher, "session/subscribe", {"sessionId": sid})
    await call(agent_client, "session/append", {"sessionId": sid, "entries": turn(5, total=3500)})
    await asyncio.wait_for(agent.started.wait(), 10)
    size = Path(path).stat().st_size
    await agent_client.close()  # the agent goes away mid-summary
    failed = await until(watcher, sid, compaction_update("failed"))
    assert "disconnected" in failed["error"]
    assert Path(path).stat().st_size == size
    # The session stayed usable and nothing is armed: a manual run works (extractive now).
    result = await call(watcher, "compaction/run", {"sessionId": sid})
    assert result["summarizer"] == "extractive"
    # Background work has no request to fail: the editor is told in a window/logMessage.
    told = [p for m, p in watcher.drain_notifications() if m == "window/logMessage"]
    assert [p["type"] for p in told] == [2], told
    assert told[0]["message"].startswith(f"session {sid}: threshold compaction failed: ")
    assert "disconnected" in told[0]["message"]
    await watcher.close()
