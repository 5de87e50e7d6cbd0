"""The real Claude Code, offline against the stand-in, and sessiond reading what it wrote.

The oracle is the agent itself: when a session is resumed, Claude Code rebuilds the
conversation from its own transcript and sends it as the request of the new turn. sessiond's
context of the same file (through the real daemon) must equal it, block by block, after the
mapping of docs/claude-code.md ("What Claude Code sends").
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from sessiond.formats import claude_code as cc
from sessiond.store.claude import ClaudeSession
from tests.agents.claude.agent import ClaudeHome, why_not_runnable
from tests.agents.claude.compare import first_difference, request_to_api, sessiond_to_api
from tests.agents.claude.scenario import (
    NOTES_AFTER,
    NOTES_BEFORE,
    SCRIPT_AFTER_EDIT,
    Scenario,
    Turn,
    cold_entry_ids,
    cold_messages,
)
from tests.agents.claude.standin import HttpError, StandIn, Summary, ToolUse, call, say
from tests.conftest import oracle_dir
from tests.oracle.pi import pi_result
from tests.oracle.test_export import _described, _pairing

pytestmark = pytest.mark.anyio


def _assert_prefix(turn: Turn, request: dict[str, Any], what: str) -> None:
    theirs = request_to_api(request["messages"])
    ours = sessiond_to_api(turn.context)
    diff = first_difference(ours[: len(theirs)], theirs)
    assert diff is None, f"{what}: {diff}"
    assert len(ours) > len(theirs) and ours[len(theirs)]["role"] == "assistant", what


def _without_timestamps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m["message"].items() if k != "timestamp"} for m in messages]


def _blocks(turn: Turn) -> list[dict[str, Any]]:
    return [b for m in request_to_api(turn.requests[0]["messages"]) for b in m["content"]]


async def test_the_context_is_what_claude_code_resumes_with(scenario: Scenario) -> None:
    """(a) Every request of every turn, above all the first one after ``--resume``, is a prefix
    of sessiond's context of the file after that turn, and the turn's reply follows it."""
    for i, turn in enumerate(scenario.turns):
        assert turn.context == turn.cold_context, f"turn {i}: followed view != cold load"
        for j, request in enumerate(turn.requests):
            _assert_prefix(turn, request, f"turn {i + 1} ({turn.args}) request {j}")
    fork = scenario.fork_turn
    assert fork is not None and scenario.fork_id != scenario.session_id
    _assert_prefix(fork, fork.requests[0], "the forked session's first request")
    # What the resumed requests held: every kind of block the script produced.
    second = _blocks(scenario.turns[1])
    kinds = {b["type"] for b in second}
    assert {"text", "thinking", "tool_use", "tool_result"} <= kinds
    assert any(b["type"] == "thinking" and b["signature"] == "c2lnbmF0dXJlLW9uZQ==" for b in second)
    assert any(b["type"] == "tool_result" and b.get("is_error") for b in second)
    assert any(
        len(m["content"]) == 4
        for m in request_to_api(scenario.turns[1].requests[0]["messages"])
        if m["role"] == "assistant"
    ), "three parallel calls after a text, in one message"
    long = [b for b in second if b["type"] == "tool_result" and "4000" in str(b["content"])]
    assert long, "the long Bash output is part of the resumed context"
    third = _blocks(scenario.turns[2])
    assert any(c.get("type") == "image" for b in third if b["type"] == "tool_result" for c in b["content"])
    later = [
        b for r in scenario.turns[2].requests[1:] for m in request_to_api(r["messages"]) for b in m["content"]
    ]
    assert any(b["type"] == "redacted_thinking" for b in later)


async def test_the_context_after_compact_is_what_claude_code_resumes_with(scenario: Scenario) -> None:
    """After ``/compact`` the summary, the kept segment, the local-command entries (one message,
    each ending with a newline) and the rendered attachments come back as Claude Code sends them."""
    compact, after = scenario.turns[3], scenario.turns[4]
    assert not compact.requests, "/compact sends only the summary request"
    assert scenario.standin.of_kind("compact"), "the stand-in answered the summary request"
    request = after.requests[0]
    _assert_prefix(after, request, "first request after /compact")
    texts = [b.get("text", "") for m in request_to_api(request["messages"]) for b in m["content"]]
    assert any(t.startswith("<local-command-caveat>") and t.endswith("\n") for t in texts)
    attachments = [m for m in after.context if m.get("role") == "custom"]
    assert attachments and all(m["customType"].startswith("claude-code.attachment/") for m in attachments)


async def test_a_daemon_following_the_run_sees_every_entry(scenario: Scenario) -> None:
    """(b) The subscribed daemon was told of every entry the agent wrote, once, in file order,
    and its view at the end equals a cold load."""
    path = scenario.transcript
    appended = [
        i for u in scenario.updates if u.get("sessionUpdate") == "entries_appended" for i in u["entryIds"]
    ]
    ids = scenario.known_before_subscribe + appended
    assert ids == cold_entry_ids(path)
    assert not [u for u in scenario.updates if u.get("sessionUpdate") == "external_change"]
    client = await scenario.daemon.client()
    try:
        live = await client.request("context/get", {"sessionId": scenario.session_id})
        assert [m["message"] for m in live["messages"]] == cold_messages(path)
        tree = await client.request("tree/get", {"sessionId": scenario.session_id})
        assert len(tree["nodes"]) == ClaudeSession.open(path).entry_count
    finally:
        await client.close()


async def test_claude_code_file_history_is_rewound_through_sessiond(scenario: Scenario) -> None:
    """(c) The backups Claude Code took before its edits: dry run, rewind, undo."""
    script = scenario.home.project / "script.py"
    notes = scenario.home.project / "notes.txt"
    assert script.read_text() == SCRIPT_AFTER_EDIT and notes.read_text() == NOTES_AFTER
    client = await scenario.daemon.client()
    try:
        listed = await client.request("fileHistory/list", {"sessionId": scenario.session_id})
        assert {"notes.txt", "script.py"} <= set(listed["tracked"])
        by_prompt = {c["prompt"]: c for c in listed["checkpoints"]}
        # 2.1.328 records the backup taken before turn 1's Edit as a file-history-delta.
        first = by_prompt["fix the notes"]
        assert first["files"] >= 1, listed
        target = first["messageId"]
        dry = await client.request(
            "fileHistory/rewind", {"sessionId": scenario.session_id, "messageId": target, "dryRun": True}
        )
        assert dry["dryRun"] and dry["undoId"] is None and dry["conflicts"] == 0, dry
        assert {f["path"] for f in dry["files"]} >= {"notes.txt"}, dry
        assert notes.read_text() == NOTES_AFTER, "a dry run writes nothing"
        done = await client.request(
            "fileHistory/rewind", {"sessionId": scenario.session_id, "messageId": target}
        )
        assert done["written"] >= 1 and done["undoId"], done
        assert notes.read_text() == NOTES_BEFORE
        undo = await client.request(
            "fileHistory/rewind", {"sessionId": scenario.session_id, "messageId": done["undoId"]}
        )
        assert undo["conflicts"] == 0, undo
        assert script.read_text() == SCRIPT_AFTER_EDIT and notes.read_text() == NOTES_AFTER
    finally:
        await client.close()


async def test_export_continues_as_a_pi_session_with_the_same_context(scenario: Scenario) -> None:
    """(d) ``sessiond export`` of the run is a Pi session whose context is the same."""
    out = subprocess.run(
        [sys.executable, "-m", "sessiond", "export", "--json", "--socket", str(scenario.daemon.socket),
         scenario.session_id],
        capture_output=True, text=True, env=scenario.daemon.env, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    exported = json.loads(out.stdout)
    new_id = exported.get("sessionId") or exported.get("id")
    assert new_id, exported
    client = await scenario.daemon.client()
    try:
        loaded = await client.request("session/load", {"sessionId": new_id})
        assert loaded["format"] == "pi" and not loaded["readOnly"]
        theirs = await client.request("context/get", {"sessionId": new_id})
        ours = await client.request("context/get", {"sessionId": scenario.session_id})
        assert _without_timestamps(theirs["messages"]) == _without_timestamps(ours["messages"])
        # It continues: a new prompt is appended to the copy (the transcript stays read-only).
        prompt = {"type": "message", "message": {"role": "user", "content": "continue in Pi", "timestamp": 1}}
        await client.request("session/append", {"sessionId": new_id, "entries": [prompt]})
        after = await client.request("context/get", {"sessionId": new_id})
        assert after["messages"][-1]["message"]["content"] == "continue in Pi"
        assert len(after["messages"]) == len(theirs["messages"]) + 1
        oracle = oracle_dir()
        if oracle is not None:  # Pi's own code opens the copy with the same roles, texts, pairing
            pi = pi_result(oracle, exported["path"], "--full", "--raw")
            messages = [m["message"] for m in ours["messages"]]
            assert [(t["role"], t.get("text")) for t in pi["context"]["messages"]][:-1] == _described(
                messages
            )
            assert _pairing(pi["context"]["raw"]) == _pairing(messages)
    finally:
        await client.close()


def test_chained_auto_compactions_resume_as_claude_code_does() -> None:
    """ "prompt is too long" three times in one turn: Claude Code compacts on its own each time,
    keeping the running tool calls and their results (a ``preservedSegment`` on every boundary,
    each running through the one before); the resumed session is the one sessiond rebuilds."""
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    too_long = HttpError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
    with StandIn() as model, ClaudeHome(model) as home:
        model.script(call(ToolUse("Bash", {"command": "echo zero", "description": "zero"})), say("first"))
        sid = home.run("turn one").session_id
        model.script(say("second"))
        home.run("turn two", "--resume", sid)
        model.script(
            too_long,
            Summary(),
            call(ToolUse("Bash", {"command": "echo one", "description": "one"})),
            too_long,
            Summary(),
            call(ToolUse("Bash", {"command": "echo two", "description": "two"})),
            too_long,
            Summary(),
            say("done"),
        )
        home.run("turn three", "--resume", sid)
        assert len(model.of_kind("compact")) == 3
        mark = model.mark()
        model.script(say("resumed"))
        home.run("again", "--resume", sid)
        [request] = model.since(mark)
        session = ClaudeSession.open(home.transcript(sid))
        relink = session.reconstruction.diagnostics["preservedSegment"]
        assert relink["applied"] and [c["applied"] for c in relink["chained"]] == [True, True], relink
        ours = sessiond_to_api([m for _, m in session.reconstruction.messages])
        theirs = request_to_api(request["messages"])
        assert first_difference(ours[: len(theirs)], theirs) is None
        calls = [b["input"]["command"] for m in theirs for b in m["content"] if b["type"] == "tool_use"]
        assert calls == ["echo one", "echo two"], "the kept calls of both earlier compactions"
        assert [b["type"] for b in ours[len(theirs)]["content"]] == ["text"]


async def test_every_record_the_agent_wrote_is_known(scenario: Scenario) -> None:
    """A record type a new version adds shows up here first (``unknownTypes``), and so does a
    torn or unparsable line."""
    for path in (scenario.transcript, scenario.home.transcript(scenario.fork_id)):
        t = cc.parse_transcript(path.read_bytes())
        assert t.diagnostics.unknown_types == {}, path
        loaded = t.diagnostics.as_json()
        assert loaded["unparsableLines"] == 0 and loaded["nonObjectLines"] == 0, loaded
        assert not loaded["tornTail"] and loaded["chainWithoutUuid"] == 0, loaded
