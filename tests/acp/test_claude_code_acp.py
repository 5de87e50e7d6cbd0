"""End to end, offline: the ACP TypeScript SDK's client as the editor, ``sessiond acp`` in the
middle, Zed's ``claude-code-acp`` as the agent, driving the real Claude Code CLI
(``scripts/setup-claude-code``) against the loopback Messages API stand-in of
tests/agents/claude.

The adapter and the CLI run as uid 65534 (``setpriv``, as tests/agents/claude runs Claude Code:
it refuses to skip permissions as root, and its tools write real files) in a throw-away HOME;
the editor, the proxy and the daemon run as the test. The editor declares ``fs`` capabilities,
so the adapter edits through its own ``mcp__acp__Write`` tool: it asks the editor's permission
(``session/request_permission``) and writes through the editor (``fs/write_text_file``), both
relayed and recorded by the proxy. Checked: the transcript the editor saw is what the daemon
recorded (``context/get``), the permission decisions are recorded, a load after the agent
process is gone replays exactly what the editor saw, and ``_sessiond/rewind`` restores the
files the prompts changed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.acp.sdk import CLAUDE_CODE_ACP, chunks, node_or_skip, run_editor
from tests.agents.claude.agent import NOBODY, ClaudeHome, claude_binary, why_not_runnable
from tests.agents.claude.standin import StandIn, ToolUse, call, say
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


def _agent(node: str, env: dict[str, str]) -> list[str]:
    """claude-code-acp as uid 65534, in ``env`` only (none of the test's environment, which
    may name root's directories)."""
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return [*drop, "env", "-i", *(f"{k}={v}" for k, v in env.items()), node, str(CLAUDE_CODE_ACP)]


def _env(home: ClaudeHome) -> dict[str, str]:
    exe = claude_binary()
    assert exe is not None
    return {
        **home.env(),
        "CLAUDE_CONFIG_DIR": str(home.home / ".claude"),
        # The adapter bundles an older CLI (the Agent SDK's cli.js); this runs the pinned one.
        "CLAUDE_CODE_EXECUTABLE": str(exe),
    }


def _text(messages: list[dict[str, Any]], role: str, kind: str, key: str) -> str:
    return "".join(p[key] for m in messages if m["role"] == role for p in m["content"] if p["type"] == kind)


async def test_claude_code_acp_through_the_proxy_is_recorded_loads_and_rewinds(
    daemon: Daemon, tmp_path: Path
) -> None:
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    node = node_or_skip(CLAUDE_CODE_ACP)
    with StandIn() as model, ClaudeHome(model) as home:
        notes = home.write_file("notes.txt", "alpha\n")
        added = home.project / "added.txt"
        write = ToolUse("mcp__acp__Write", {"file_path": str(notes), "content": "beta\n"})
        create = ToolUse("mcp__acp__Write", {"file_path": str(added), "content": "new\n"})
        model.script(
            call(write, text="Rewriting the notes."),
            say("The notes now say beta."),
            call(create),
            say("Added a file."),
        )
        env = _env(home)
        job = {
            "cwd": str(home.project),
            "prompts": ["rewrite the notes", "add a file"],
            "rewinds": [{"prompt": 0}, {"prompt": 0, "dryRun": False}],
        }
        first = await asyncio.to_thread(run_editor, node, daemon, _agent(node, env), {}, job)
        assert not model.errors, model.errors
        assert first["exitCode"] == 0, first["stderr"][-4000:]
        assert [a["stopReason"] for a in first["answers"]] == ["end_turn", "end_turn"], first
        sid = first["sessionId"]
        updates = first["updates"]

        # The edits went through the editor (fs/write_text_file); the first asked permission and
        # the editor chose "always allow" (its first allowing option), so the second did not.
        assert first["writes"] == [str(notes), str(added)]
        [asked] = first["permissions"]
        assert asked["toolCall"]["toolCallId"] == write.id
        assert asked["options"][0]["kind"] == "allow_always", asked

        # Rewinding to the first prompt: a dry run lists both files, then both are restored.
        dry, done = first["rewinds"]
        assert dry["dryRun"] is True
        assert {(Path(f["path"]).name, f["action"]) for f in dry["files"]} == {
            ("notes.txt", "write"),
            ("added.txt", "delete"),
        }, dry
        assert done["dryRun"] is False
        assert notes.read_text() == "alpha\n"
        assert not added.exists()

        # The real CLI ran the session, as uid 65534: its own transcript is there, owned by it.
        assert home.transcript(sid).stat().st_uid == NOBODY

        client = await daemon.client()
        try:
            context = await client.request("context/get", {"sessionId": sid})
            entries = (await client.request("session/entries", {"sessionId": sid, "limit": 1000}))["entries"]
        finally:
            await client.close()
        decisions = [e["data"] for e in entries if e.get("customType") == "acp.permission"]
        assert [d["toolCall"] for d in decisions] == [p["toolCall"] for p in first["permissions"]]
        assert all(d["outcome"]["outcome"] == "selected" for d in decisions)

        messages = [m["message"] for m in context["messages"]]
        prompts = [m for m in messages if m["role"] == "user"]
        assert [p["content"] for p in prompts] == [
            [{"type": "text", "text": "rewrite the notes"}],
            [{"type": "text", "text": "add a file"}],
        ]
        said = _text(messages, "assistant", "text", "text")
        assert said == chunks(updates, "agent_message_chunk") != ""
        assert "The notes now say beta." in said and "Added a file." in said
        calls = [
            p["id"]
            for m in messages
            if m["role"] == "assistant"
            for p in m["content"]
            if p["type"] == "toolCall"
        ]
        started = [u["update"]["toolCallId"] for u in updates if u["update"]["sessionUpdate"] == "tool_call"]
        assert calls == started and write.id in calls and create.id in calls
        results = {m["toolCallId"]: m["isError"] for m in messages if m["role"] == "toolResult"}
        assert results == {write.id: False, create.id: False}

        # The agent process is gone. A new proxy, answering from sessiond's record, replays
        # exactly what the editor saw (the prompts where the proxy relayed them).
        second = await asyncio.to_thread(
            run_editor,
            node,
            daemon,
            _agent(node, env),
            {},
            {"cwd": str(home.project), "mode": "load", "sessionId": sid},
            "--own-sessions",
        )
    assert second["exitCode"] == 0, second["stderr"][-4000:]
    replayed = [u for u in second["updates"] if u["update"]["sessionUpdate"] != "user_message_chunk"]
    # Exactly what the editor saw, in order; claude-code-acp announces its commands on its own
    # time, so one may have passed the proxy (and been recorded) after the editor stopped
    # listening: such a late announcement is all the replay may add, at its end.
    assert replayed[: len(updates)] == updates
    late = replayed[len(updates) :]
    assert all(u["update"]["sessionUpdate"] == "available_commands_update" for u in late), late
    echoed = [
        u["update"]["content"]["text"]
        for u in second["updates"]
        if u["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert echoed == ["rewrite the notes", "add a file"]
    assert "sessiond acp:" not in second["stderr"], second["stderr"][-4000:]
