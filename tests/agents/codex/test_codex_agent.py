"""The real Codex CLI, offline against a scripted Responses API, checked against sessiond.

One scripted run is shared by every test of this module (Codex takes a second or two a turn):
a first turn with reasoning and two parallel shell commands (one fails), a resumed turn that
edits a file with ``apply_patch`` (a freeform tool call), a resumed turn with a web search the
provider runs, ``view_image`` (an image as a tool output), a long command output and a plain
answer, a fork of the thread (``codex exec fork``: 0.169 stores no copy of the parent's
history), a resumed turn of the fork and a fork of the fork. A real daemon on the same Codex
home is subscribed to the thread from its second turn on.

The oracle is Codex itself: the first request of a resumed (or forked) turn carries in
``input`` exactly the conversation Codex rebuilt from its rollout, and sessiond's context of
the same rollout, at the prompt that turn added, must be the same item by item.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessiond.store.codex import CodexSession
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.replay import updates_until

from .harness import Codex, Run, codex_binary, from_context, from_request, trimmed_from, user_line
from .standin import Reply, StandIn, Usage, custom_tool_call, function_call, message, reasoning, web_search

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PATCH = "*** Begin Patch\n*** Add File: b.txt\n+two\n*** End Patch\n"
LAST_USAGE = Usage(input_tokens=5000, cached_tokens=4000, output_tokens=60, reasoning_tokens=20)
PROMPTS = {
    "first": "make a file and look for another",
    "patch": "now add b.txt",
    "long": "print a long listing, then answer plainly",
    "fork": "in the fork: say something else",
    "fork-resume": "and continue the fork",
    "fork-of-fork": "fork the fork",
}


@dataclass
class Scenario:
    codex: Codex
    daemon: Daemon
    api: StandIn
    runs: dict[str, Run]
    initial: list[str]
    """Entry ids of the thread when the daemon subscribed (after the first turn)."""
    updates: list[dict[str, Any]]
    """Every update the subscribed daemon sent for the thread while Codex ran."""

    @property
    def main(self) -> str:
        return self.runs["first"].thread_id

    @property
    def forked(self) -> str:
        return self.runs["fork"].thread_id

    @property
    def forked_twice(self) -> str:
        return self.runs["fork-of-fork"].thread_id


def appended_ids(seen: list[dict[str, Any]]) -> list[str]:
    return [i for u in seen if u["sessionUpdate"] == "entries_appended" for i in u["entryIds"]]


async def play(codex: Codex, api: StandIn, daemon: Daemon) -> Scenario:
    runs: dict[str, Run] = {}
    api.push(
        Reply(
            [
                reasoning("Look before writing", "enc-look"),
                function_call("exec_command", {"cmd": "echo one > a.txt && cat a.txt"}, "call_a"),
                function_call("exec_command", {"cmd": "ls /nonexistent-sessiond-test"}, "call_b"),
            ],
            Usage(1200, 0, 40, 10),
        ),
        Reply([message("Two commands ran: one wrote a.txt, the other failed.")], Usage(2000, 1100, 30)),
    )
    runs["first"] = await asyncio.to_thread(codex.exec, PROMPTS["first"])
    sid = runs["first"].thread_id
    client = await daemon.client()
    for _ in range(200):  # the daemon finds the new rollout by watching the Codex home
        listed = await client.request("session/list", {"root": "codex"})
        if sid in [s["sessionId"] for s in listed["sessions"]]:
            break
        await asyncio.sleep(0.05)
    await client.request("session/load", {"sessionId": sid, "subscribe": True})
    initial = [n["id"] for n in (await client.request("tree/get", {"sessionId": sid}))["nodes"]]

    api.push(
        Reply([reasoning("Patch it", "enc-patch"), custom_tool_call("apply_patch", PATCH, "call_c")]),
        Reply(
            [reasoning("It is there", "enc-check"), message("Patched: b.txt holds two.")],
            Usage(3000, 2500, 40),
        ),
    )
    runs["patch"] = await asyncio.to_thread(codex.resume, sid, PROMPTS["patch"])
    (codex.work / "dot.png").write_bytes(PNG)
    api.push(
        Reply(
            [
                web_search("sessiond rollout format"),
                function_call("view_image", {"path": "dot.png"}, "call_img"),
                function_call("exec_command", {"cmd": "seq 1 3000"}, "call_d"),
            ],
            Usage(4000, 3000, 20),
        ),
        Reply([message("Plain reply.")], LAST_USAGE),
    )
    runs["long"] = await asyncio.to_thread(codex.resume, sid, PROMPTS["long"])
    api.push(Reply([message("Forked answer.")], Usage(6000, 100, 10)))
    runs["fork"] = await asyncio.to_thread(codex.fork, sid, PROMPTS["fork"])
    api.push(
        Reply([reasoning("Fork thinking", "enc-fork"), message("The fork continues.")], Usage(7000, 6000, 15))
    )
    runs["fork-resume"] = await asyncio.to_thread(
        codex.resume, runs["fork"].thread_id, PROMPTS["fork-resume"]
    )
    api.push(Reply([message("A fork of the fork.")], Usage(8000, 7000, 5)))
    runs["fork-of-fork"] = await asyncio.to_thread(
        codex.fork, runs["fork"].thread_id, PROMPTS["fork-of-fork"]
    )

    cold = CodexSession.open(codex.rollout(sid))
    expected = len(cold.entries())
    seen = await updates_until(client, sid, lambda s: len(initial) + len(appended_ids(s)) >= expected)
    # The last lines of a turn (a token count, the turn's end) add no entry: wait until the
    # daemon has read them too, so every test sees the finished thread.
    for _ in range(200):
        context = await client.request("context/get", {"sessionId": sid})
        if [m["message"] for m in context["messages"]] == cold.context().messages:
            break
        await asyncio.sleep(0.05)
    await client.close()
    return Scenario(codex, daemon, api, runs, initial, seen)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    binary = codex_binary()
    tmp = tmp_path_factory.mktemp("codex")
    with StandIn() as api:
        codex = Codex(tmp, api, binary)
        daemon = start_daemon(tmp)  # CODEX_HOME is <tmp>/codex: Codex's own home
        try:
            yield asyncio.run(play(codex, api, daemon))
        finally:
            assert daemon.stop() == 0, daemon.log_text()
        assert api.unscripted == 0, f"Codex made {api.unscripted} requests the script did not expect"
        assert not api.other_requests, api.other_requests


async def request(scenario: Scenario, method: str, params: dict[str, Any]) -> Any:
    client = await scenario.daemon.client()
    try:
        return await client.request(method, params)
    finally:
        await client.close()


def test_codex_really_ran_the_scripted_tools(scenario: Scenario) -> None:
    work = scenario.codex.work
    assert (work / "a.txt").read_text() == "one\n"
    assert (work / "b.txt").read_text() == "two\n"
    assert len(scenario.api.requests) == 9
    sent = scenario.runs["first"].requests[1]["input"]
    outputs = {i["call_id"]: i["output"] for i in sent if i["type"] == "function_call_output"}
    assert "one" in outputs["call_a"] and "No such file" in outputs["call_b"]


@pytest.mark.parametrize(
    ("turn", "thread"),
    [
        ("patch", "main"),
        ("long", "main"),
        ("fork", "forked"),
        ("fork-resume", "forked"),
        ("fork-of-fork", "forked_twice"),
    ],
)
async def test_sessiond_context_is_what_codex_resumes_with(
    scenario: Scenario, turn: str, thread: str
) -> None:
    """(a) The first request of a resumed or forked turn against sessiond's context of the
    rollout at the prompt that turn added: the same items in the same order."""
    sid = getattr(scenario, thread)
    sent = scenario.runs[turn].requests[0]["input"]
    leaf = user_line(scenario.codex.rollout(sid), PROMPTS[turn])
    context = await request(scenario, "context/get", {"sessionId": sid, "leafId": leaf})
    messages = [m["message"] for m in context["messages"]]
    # The base instructions: Codex's leading developer item, not in the rollout; sessiond shows
    # the recorded text, marked as the system prompt (Codex leaves out sections on tools a run
    # does not offer, so the sent text is the recorded one with lines left out).
    first = messages[0]
    assert first["role"] == "custom" and first["customType"] == "codex.instructions"
    assert first["details"]["systemPrompt"] is True
    assert sent[0]["type"] == "message" and sent[0]["role"] == "developer"
    assert trimmed_from(sent[0]["content"][0]["text"], first["content"][0]["text"])
    assert from_context(messages[1:]) == from_request(sent[1:])
    assert [m["entryId"] for m in context["messages"]][-1] == leaf


async def test_a_live_daemon_sees_every_entry_and_ends_as_a_cold_load(scenario: Scenario) -> None:
    """(b) Subscribed while Codex ran two more turns: every entry once, in file order, and the
    final tree and context equal a cold load of the finished rollout."""
    cold = CodexSession.open(scenario.codex.rollout(scenario.main))
    appended = [u for u in scenario.updates if u["sessionUpdate"] == "entries_appended"]
    assert appended and all(u.get("external") for u in appended)
    assert scenario.initial + appended_ids(scenario.updates) == [e["id"] for e in cold.entries()]
    assert not [u for u in scenario.updates if u["sessionUpdate"] == "external_change"]
    tree = await request(scenario, "tree/get", {"sessionId": scenario.main})
    assert [(n["id"], n["parentId"]) for n in tree["nodes"]] == [
        (e["id"], e["parentId"]) for e in cold.entries()
    ]
    context = await request(scenario, "context/get", {"sessionId": scenario.main})
    assert [m["message"] for m in context["messages"]] == cold.context().messages
    loaded = await request(scenario, "session/load", {"sessionId": scenario.main})
    assert loaded["leafId"] == cold.leaf_id
    # The current context is what the last request sent plus the answer to it.
    last = scenario.runs["long"].requests[-1]["input"]
    rows = from_context([m["message"] for m in context["messages"]][1:])
    assert rows == [*from_request(last[1:]), ("text", "Plain reply.")]


def comparable(messages: list[Any]) -> list[Any]:
    """Messages as sent: a ``custom`` message's timestamp is its entry's, written at export."""
    return [
        {
            k: v
            for k, v in m.items()
            if m["role"] != "custom" or k in ("role", "customType", "content", "details")
        }
        for m in messages
    ]


async def test_an_export_continues_as_a_pi_session_with_the_same_context(scenario: Scenario) -> None:
    """(c) ``sessiond export`` of the fork (its inherited history included) is a Pi session
    whose context is the fork's; it can be continued through the daemon."""
    env = {**scenario.daemon.env}
    out = subprocess.run(
        [sys.executable, "-m", "sessiond", "export", "--json", scenario.forked],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    exported = json.loads(out.stdout)
    assert exported["source"]["format"] == "codex" and exported["source"]["sessionId"] == scenario.forked
    new = exported["sessionId"]
    source = await request(scenario, "context/get", {"sessionId": scenario.forked})
    target = await request(scenario, "context/get", {"sessionId": new})
    assert comparable([m["message"] for m in target["messages"]]) == comparable(
        [m["message"] for m in source["messages"]]
    )
    client = await scenario.daemon.client()
    try:
        prompt = {"role": "user", "content": [{"type": "text", "text": "continued in Pi"}], "timestamp": 1}
        await client.request(
            "session/append", {"sessionId": new, "entries": [{"type": "message", "message": prompt}]}
        )
        after = await client.request("context/get", {"sessionId": new})
    finally:
        await client.close()
    assert [m["message"] for m in after["messages"]][:-1] == [m["message"] for m in target["messages"]]
    assert after["messages"][-1]["message"]["content"][0]["text"] == "continued in Pi"


async def test_usage_is_what_the_model_reported(scenario: Scenario) -> None:
    """(d) The last ``token_count`` holds the stand-in's last usage; sessiond reports it."""
    rollout = scenario.codex.rollout(scenario.main)
    counts = [
        r["payload"]["info"]
        for r in map(json.loads, rollout.read_bytes().splitlines())
        if r["type"] == "event_msg" and r["payload"].get("type") == "token_count" and r["payload"].get("info")
    ]
    last = counts[-1]["last_token_usage"]
    assert (last["input_tokens"], last["cached_input_tokens"], last["output_tokens"]) == (5000, 4000, 60)
    assert last["reasoning_output_tokens"] == 20 and last["total_tokens"] == 5060
    loaded = await request(scenario, "session/load", {"sessionId": scenario.main})
    assert loaded["diagnostics"]["tokenUsage"]["last"] == last
    assert (
        loaded["diagnostics"]["tokenUsage"]["total"]["input_tokens"]
        == 1200 + 2000 + 1000 + 3000 + 4000 + 5000
    )
    context = await request(scenario, "context/get", {"sessionId": scenario.main})
    usage = context["messages"][-1]["message"]["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (
        1000,
        4000,
        60,
        5060,
    )


async def test_what_0_169_writes_is_known(scenario: Scenario) -> None:
    """No record of the run is unknown; 0.169's bookkeeping records are named; the fork's
    inherited history is found in the parent's rollout."""
    known = {
        "world_state",
        "token_usage_record",
        "event_msg/item_completed",
        "event_msg/thread_settings_applied",
    }
    for sid in (scenario.main, scenario.forked):
        loaded = await request(scenario, "session/load", {"sessionId": sid})
        diagnostics = loaded["diagnostics"]
        assert diagnostics["load"]["unknownRecordTypes"] == {}
        assert diagnostics["replay"]["unknownItems"] == {}
        assert set(diagnostics["load"]["bookkeeping"]) <= known
        if sid == scenario.main:  # a fork starts without a world_state of its own
            assert set(diagnostics["load"]["bookkeeping"]) == known
    listed = await request(scenario, "session/list", {"root": "codex"})
    by_id = {s["sessionId"]: s for s in listed["sessions"]}
    assert by_id[scenario.forked]["parentSession"] == str(scenario.codex.rollout(scenario.main))
    assert by_id[scenario.main]["firstMessage"] == PROMPTS["first"]
    nodes = (await request(scenario, "tree/get", {"sessionId": scenario.main}))["nodes"]
    # the tree's message entries (docs/concepts.md, "Messages"): at least three prompts, three answers
    assert by_id[scenario.main]["messageCount"] == sum(n["type"] == "message" for n in nodes) >= 3 + 3
    twice = await request(scenario, "session/load", {"sessionId": scenario.forked_twice})
    chained = twice["diagnostics"]["historyBase"]  # a fork of a fork points at the fork
    assert chained["found"] and chained["threadId"] == scenario.forked and chained["ancestors"] == 2
    loaded = await request(scenario, "session/load", {"sessionId": scenario.forked})
    base = loaded["diagnostics"]["historyBase"]
    assert base["found"] and base["threadId"] == scenario.main
    assert Path(base["path"]) == scenario.codex.rollout(scenario.main)
