"""End to end, offline: the ACP TypeScript SDK's client as the editor, ``sessiond acp`` in the
middle, Zed's ``codex-acp`` (the Codex engine) as the agent against the loopback Responses API
stand-in of tests/agents/codex (with ``approval_policy = "untrusted"``, so the command the model
asks for needs the editor's permission, asked through the proxy). The transcript the editor
saw is the one recorded (read back through the daemon's ``context/get``), the permission
decision is recorded, and once the agent process is gone a new proxy loads the session by
replaying exactly what the editor saw.

``scripts/setup-acp`` installs the SDK and codex-acp into ``.cache/acp``; without them (or
without Node) the tests skip and say why.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.acp.sdk import (
    CODEX_ACP,
    RUN_TIMEOUT,
    chunks,
    finish_editor,
    node_or_skip,
    run_editor,
    start_editor,
)
from tests.agents.codex.standin import Reply, StandIn, Usage, function_call, message, reasoning
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


def _codex_home(tmp: Path, api: StandIn) -> dict[str, str]:
    home = tmp / "agent" / "codex"
    user_home = tmp / "agent" / "home"
    home.mkdir(parents=True)
    user_home.mkdir(parents=True)
    (home / "config.toml").write_text(
        f"""model = "gpt-5.5"
model_provider = "standin"
approval_policy = "untrusted"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.standin]
name = "scripted stand-in"
base_url = "{api.base_url}"
wire_api = "responses"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0
"""
    )
    return {"CODEX_HOME": str(home), "HOME": str(user_home), "NO_COLOR": "1"}


def _editor(
    node: str, daemon: Daemon, env: dict[str, str], job: dict[str, Any], *options: str
) -> dict[str, Any]:
    return run_editor(node, daemon, [str(CODEX_ACP)], env, job, *options)


async def test_codex_acp_through_the_proxy_is_recorded_and_loads_again(
    daemon: Daemon, tmp_path: Path
) -> None:
    node = node_or_skip(CODEX_ACP)
    work = tmp_path / "work"
    work.mkdir()
    with StandIn() as api:
        env = _codex_home(tmp_path, api)
        api.push(
            Reply(
                [
                    reasoning("Write the file first", "enc-1"),
                    function_call("exec_command", {"cmd": "echo one > a.txt && cat a.txt"}, "call_a"),
                ],
                Usage(1200, 0, 40, 10),
            ),
            Reply([message("Wrote a.txt; it says one.")], Usage(2000, 1100, 30)),
        )
        first = await asyncio.to_thread(
            _editor, node, daemon, env, {"cwd": str(work), "prompts": ["make a.txt"]}
        )
    assert first["exitCode"] == 0, first["stderr"]
    assert [a["stopReason"] for a in first["answers"]] == ["end_turn"], first
    assert (work / "a.txt").read_text() == "one\n"
    sid = first["sessionId"]
    updates = first["updates"]
    kinds = {u["update"]["sessionUpdate"] for u in updates}
    assert {"agent_message_chunk", "tool_call"} <= kinds, kinds

    # untrusted: codex-acp asks the editor before running the command; the SDK editor allowed it.
    assert [p["toolCall"]["toolCallId"] for p in first["permissions"]] == ["call_a"]
    client = await daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid})
        entries = (await client.request("session/entries", {"sessionId": sid, "limit": 1000}))["entries"]
    finally:
        await client.close()
    [decision] = [e["data"] for e in entries if e.get("customType") == "acp.permission"]
    assert decision["toolCall"] == first["permissions"][0]["toolCall"]
    assert decision["outcome"]["outcome"] == "selected"
    messages = [m["message"] for m in context["messages"]]
    assert messages[0] == {**messages[0], "role": "user", "content": [{"type": "text", "text": "make a.txt"}]}
    said = "".join(
        p["text"] for m in messages if m["role"] == "assistant" for p in m["content"] if p["type"] == "text"
    )
    thought = "".join(
        p["thinking"]
        for m in messages
        if m["role"] == "assistant"
        for p in m["content"]
        if p["type"] == "thinking"
    )
    assert said == chunks(updates, "agent_message_chunk") != ""
    assert thought == chunks(updates, "agent_thought_chunk")
    calls = [
        p["id"] for m in messages if m["role"] == "assistant" for p in m["content"] if p["type"] == "toolCall"
    ]
    started = [u["update"]["toolCallId"] for u in updates if u["update"]["sessionUpdate"] == "tool_call"]
    assert calls == started
    finished = {
        u["update"]["toolCallId"]: u["update"]["status"]
        for u in updates
        if u["update"]["sessionUpdate"] == "tool_call_update"
        and u["update"].get("status") in ("completed", "failed")
    }
    results = {m["toolCallId"]: m["isError"] for m in messages if m["role"] == "toolResult"}
    assert results == {call: status == "failed" for call, status in finished.items()}

    # The agent process is gone. A new proxy (codex-acp could load the session itself: the
    # proxy is told to answer from sessiond's record) replays exactly what the editor saw.
    second = await asyncio.to_thread(
        _editor, node, daemon, env, {"cwd": str(work), "mode": "load", "sessionId": sid}, "--own-sessions"
    )
    assert second["exitCode"] == 0, second["stderr"]
    prompt = {
        "sessionId": sid,
        "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "make a.txt"}},
    }
    replayed = list(second["updates"])
    at = replayed.index(prompt)
    del replayed[at]
    # Every update, as the editor first saw it, in the same order (an agent's late command
    # announcement, relayed and recorded after the editor stopped listening, may follow).
    assert replayed[: len(updates)] == updates
    late = replayed[len(updates) :]
    assert all(u["update"]["sessionUpdate"] == "available_commands_update" for u in late), late
    # The proxy added its /rewind to the commands codex-acp announced (and changed nothing else).
    # codex-acp announces them on its own schedule: to the editor during the turn, or only after
    # the editor stopped listening (then relayed and recorded all the same: the replay has it).
    announced = [
        u["update"]["availableCommands"]
        for u in updates + late
        if u["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert all([c["name"] for c in a].count("rewind") == 1 for a in announced), announced
    # The prompt comes back where the proxy relayed it: before the turn's first chunk.
    first_chunks = [i for i, u in enumerate(updates) if u["update"]["sessionUpdate"].endswith("_chunk")]
    assert at <= first_chunks[0]
    assert second["load"] == {k: v for k, v in second["load"].items() if k in ("modes", "models")}
    assert "sessiond acp:" not in second["stderr"], second["stderr"]


async def _recorded(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    """The messages of the daemon's context of a recorded session."""
    client = await daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid})
    finally:
        await client.close()
    return [m["message"] for m in context["messages"]]


def _said(messages: list[dict[str, Any]]) -> list[str]:
    """Each assistant message's text."""
    return [
        "".join(p["text"] for p in m["content"] if p["type"] == "text")
        for m in messages
        if m["role"] == "assistant"
    ]


def _wait_for_requests(apis: list[StandIn], procs: list[subprocess.Popen[str]]) -> None:
    """Until every stand-in holds a request (each editor's turn is in flight)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while not all(api.requests for api in apis):
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            return  # finish_editor says why
        time.sleep(0.05)


async def test_two_editors_sessions_at_once_are_recorded_apart(daemon: Daemon, tmp_path: Path) -> None:
    """Two editors, each with its own proxy and codex-acp, one daemon: both turns are held open
    by their stand-ins until both are in flight, so the two sessions are recorded at once."""
    node = node_or_skip(CODEX_ACP)
    both = threading.Event()
    runs: list[dict[str, Any]] = []
    with StandIn() as api_a, StandIn() as api_b:
        procs = []
        try:
            for name, api in (("a", api_a), ("b", api_b)):
                api.push(Reply([message(f"Answer for editor {name}.")], Usage(900, 0, 20), hold=both))
                api.push(Reply([message(f"Second answer for {name}.")], Usage(1000, 800, 20)))
                work = tmp_path / f"work-{name}"
                work.mkdir()
                env = _codex_home(tmp_path / name, api)
                job = {"cwd": str(work), "prompts": [f"hello from {name}", f"again from {name}"]}
                procs.append(start_editor(node, daemon, [str(CODEX_ACP)], env, job))
            await asyncio.to_thread(_wait_for_requests, [api_a, api_b], procs)
            in_flight = [len(api_a.requests), len(api_b.requests)]
        finally:
            both.set()
            runs = [await asyncio.to_thread(finish_editor, p) for p in procs]
    assert in_flight == [1, 1]  # both first turns were open at the same moment
    assert runs[0]["sessionId"] != runs[1]["sessionId"]
    for name, run in zip("ab", runs, strict=True):
        assert run["exitCode"] == 0, run["stderr"]
        assert [a["stopReason"] for a in run["answers"]] == ["end_turn", "end_turn"]
        messages = await _recorded(daemon, run["sessionId"])
        assert [m["content"][0]["text"] for m in messages if m["role"] == "user"] == [
            f"hello from {name}",
            f"again from {name}",
        ]
        assert _said(messages) == [f"Answer for editor {name}.", f"Second answer for {name}."]
        assert "".join(_said(messages)) == chunks(run["updates"], "agent_message_chunk")


async def test_a_turn_cancelled_mid_way_is_recorded_as_aborted(daemon: Daemon, tmp_path: Path) -> None:
    """The editor sends ``session/cancel`` once the agent's answer has begun (the stand-in keeps
    the response open): codex-acp ends the turn ``cancelled``, the proxy records what was said
    until then as an aborted assistant message, and the next prompt goes on in the session."""
    node = node_or_skip(CODEX_ACP)
    release = threading.Event()
    work = tmp_path / "work"
    work.mkdir()
    with StandIn() as api:
        api.push(
            Reply([message("Counting: one, two")], Usage(900, 0, 20), hold=release),
            Reply([message("Stopped counting.")], Usage(1000, 0, 10)),
        )
        env = _codex_home(tmp_path, api)
        job = {
            "cwd": str(work),
            "prompts": ["count slowly", "why did you stop?"],
            "cancelOn": "agent_message_chunk",
        }
        try:
            run = await asyncio.to_thread(_editor, node, daemon, env, job)
        finally:
            release.set()
    assert run["exitCode"] == 0, run["stderr"]
    assert [a["stopReason"] for a in run["answers"]] == ["cancelled", "end_turn"], run["answers"]
    messages = await _recorded(daemon, run["sessionId"])
    assert [m["content"][0]["text"] for m in messages if m["role"] == "user"] == [
        "count slowly",
        "why did you stop?",
    ]
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert [m["stopReason"] for m in assistant] == ["aborted", "stop"]
    assert "".join(_said(messages)) == chunks(run["updates"], "agent_message_chunk")
    assert _said(messages)[1] == "Stopped counting."
    assert _said(messages)[0] and "Counting: one, two".startswith(_said(messages)[0])


WORD = "quasarlattice"
FACE_DEADLINE = 120.0
"""An upper bound for the daemon's indexes to take in a new session ("it happened at all")."""


async def _until(ask: Callable[[], Awaitable[Any]], found: Callable[[Any], bool]) -> Any:
    """Ask until the answer shows what was recorded (the search and usage indexes catch up in
    the background), at most :data:`FACE_DEADLINE`; the last answer."""
    deadline = time.monotonic() + FACE_DEADLINE
    while True:
        answer = await ask()
        if found(answer) or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.2)


async def test_a_recorded_acp_session_shows_in_list_search_stats_and_mcp(
    daemon: Daemon, tmp_path: Path
) -> None:
    """After an ACP run the recorded session is an ordinary sessiond session for the other
    faces: listed by ``session/list``, found by ``search/query``, counted by ``stats/query`` and
    readable through the MCP server's ``read_session``."""
    node = node_or_skip(CODEX_ACP)
    mcp = pytest.importorskip("mcp")
    from mcp.client.stdio import StdioServerParameters  # noqa: PLC0415

    work = tmp_path / "work"
    work.mkdir()
    with StandIn() as api:
        api.push(Reply([message(f"The {WORD} holds the config.")], Usage(3000, 1000, 40, 5)))
        env = _codex_home(tmp_path, api)
        job = {"cwd": str(work), "prompts": [f"where is the {WORD}?"]}
        run = await asyncio.to_thread(_editor, node, daemon, env, job)
    assert run["exitCode"] == 0, run["stderr"]
    sid = run["sessionId"]

    client = await daemon.client()
    try:
        listed = await client.request("session/list", {"cwd": str(work)})
        assert [s["sessionId"] for s in listed["sessions"]] == [sid], listed

        def hit(answer: dict[str, Any]) -> bool:
            return sid in {h["sessionId"] for h in answer["hits"]}

        search = await _until(lambda: client.request("search/query", {"query": WORD}), hit)
        hits = [h for h in search["hits"] if h["sessionId"] == sid]
        assert {h["role"] for h in hits} == {"user", "assistant"}, search
        assert all(f"\x02{WORD}\x03" in h["snippet"] for h in hits), hits

        def row(answer: dict[str, Any]) -> bool:
            return any(r["period"] == sid for r in answer["rows"])

        stats = await _until(
            lambda: client.request("stats/query", {"groupBy": "session", "sessionId": sid}), row
        )
        [counted] = stats["rows"]
        assert (counted["period"], counted["cwd"]) == (sid, str(work)), stats
    finally:
        await client.close()

    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "sessiond"),
        args=["mcp", "--store", str(daemon.store), "--socket", str(daemon.socket), "--no-start"],
        env=daemon.env,
        cwd=str(work),
    )
    async with mcp.Client(params) as session:
        result = await session.call_tool("read_session", {"id": sid})
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    assert f"where is the {WORD}?" in text and f"The {WORD} holds the config." in text, text
