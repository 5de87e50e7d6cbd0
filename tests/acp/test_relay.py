"""``sessiond acp`` in front of a scripted agent: the relay changes no byte, keeps the two id
spaces apart, records the session through the real daemon, and answers ``session/list`` and
``session/load`` (with an exact replay) for an agent that has neither."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Daemon

from .editor import Editor

pytestmark = pytest.mark.anyio


def _env(daemon: Daemon, tmp: Path, work: Path) -> dict[str, str]:
    return {**daemon.env, "FAKE_AGENT_LOG": str(tmp / "agent"), "FAKE_AGENT_CWD": str(work)}


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True) if path.exists() else []


def _write_file(params: dict[str, Any]) -> dict[str, Any]:
    Path(params["path"]).write_text(params["content"])
    return {}


def _allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow"}}


async def _first_session(daemon: Daemon, tmp: Path, work: Path) -> tuple[Editor, str, list[dict[str, Any]]]:
    editor = await Editor.start(daemon.socket, _env(daemon, tmp, work))
    editor.handlers = {"session/request_permission": _allow, "fs/write_text_file": _write_file}
    init, _ = await editor.request(
        0,
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"writeTextFile": True}}},
        spaced=True,
    )
    assert init["result"]["agentCapabilities"]["loadSession"] is True
    new, _ = await editor.request(1, "session/new", {"cwd": str(work), "mcpServers": []})
    sid = new["result"]["sessionId"]
    answer, seen = await editor.request(
        2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "h\u00e9llo"}]}
    )
    assert answer["result"]["stopReason"] == "end_turn"
    return editor, sid, seen


async def test_the_relay_changes_no_byte_and_keeps_the_id_spaces_apart(
    daemon: Daemon, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    editor, sid, seen = await _first_session(daemon, tmp_path, work)
    # The agent's requests used ids 0 and 1, the editor's own requests too: both were answered.
    asked = [m for m in seen if "id" in m]
    assert [(m["id"], m["method"]) for m in asked] == [
        (0, "session/request_permission"),
        (1, "fs/write_text_file"),
    ]
    assert (work / "out.txt").read_text() == "h\u00e9llo\n"
    echo, _ = await editor.request("e", "_fake/echo", {"a": [1, 2], "_meta": {"k": "v"}}, spaced=True)
    assert echo["result"] == {"a": [1, 2], "_meta": {"k": "v"}}
    await editor.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 77}})
    listed, _ = await editor.request(3, "session/list", {"cwd": str(work)})  # answered by the proxy
    # Rewind from the editor: a dry run first changes nothing, then the file is restored
    # (it did not exist before the prompt).
    bad, _ = await editor.request(4, "_sessiond/rewind", {"sessionId": sid, "prompt": 5})
    assert bad["error"]["code"] == -32602 and bad["error"]["data"] == {"field": "prompt"}
    dry, _ = await editor.request(5, "_sessiond/rewind", {"sessionId": sid, "prompt": 0})
    assert "result" in dry, dry
    assert dry["result"]["dryRun"] is True and [f["path"] for f in dry["result"]["files"]] == ["out.txt"]
    assert (work / "out.txt").exists()
    done, _ = await editor.request(6, "_sessiond/rewind", {"sessionId": sid, "prompt": 0, "dryRun": False})
    assert done["result"]["deleted"] == 1 and done["result"]["undoId"], done
    assert not (work / "out.txt").exists()
    await editor.send({"jsonrpc": "2.0", "method": "_fake/exit", "params": {"status": 3}})
    code, stderr = await editor.finish()
    assert code == 3, stderr
    assert "fake agent: started" in stderr  # the agent's stderr is the proxy's

    sent_to_agent = [
        line for line in editor.sent if b'"session/list"' not in line and b"_sessiond/" not in line
    ]
    assert _lines(tmp_path / "agent.in") == sent_to_agent
    from_agent = _lines(tmp_path / "agent.out")
    answered_here = {3, 4, 5, 6}
    relayed = [
        line
        for line in editor.received
        if json.loads(line).get("id") not in answered_here or b'"method"' in line
    ]
    assert len(relayed) == len(from_agent)
    # Byte for byte, except the initialize answer, which gained the capabilities the proxy adds.
    assert relayed[1:] == from_agent[1:]
    theirs, ours = json.loads(from_agent[0]), json.loads(relayed[0])
    caps = ours["result"]["agentCapabilities"]
    assert caps.pop("loadSession") is True
    assert caps.pop("sessionCapabilities") == {"list": {}, "resume": {}}
    theirs["result"]["agentCapabilities"].pop("loadSession")
    assert ours == theirs

    assert listed["result"]["sessions"] == [
        {
            "sessionId": sid,
            "cwd": str(work),
            "title": "h\u00e9llo",
            "updatedAt": listed["result"]["sessions"][0]["updatedAt"],
        }
    ]


async def test_what_the_editor_saw_is_recorded_and_replayed_exactly(daemon: Daemon, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    editor, sid, seen = await _first_session(daemon, tmp_path, work)
    code, _ = await editor.finish()
    assert code == 0
    updates = [m["params"] for m in seen if m.get("method") == "session/update"]

    client = await daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid})
        history = await client.request("fileHistory/list", {"sessionId": sid})
    finally:
        await client.close()
    messages = [m["message"] for m in context["messages"]]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[0]["content"] == [{"type": "text", "text": "h\u00e9llo"}]
    chunks = [u["update"] for u in updates if u["update"]["sessionUpdate"].endswith("_chunk")]
    said = "".join(c["content"]["text"] for c in chunks if c["sessionUpdate"] == "agent_message_chunk")
    thought = "".join(c["content"]["text"] for c in chunks if c["sessionUpdate"] == "agent_thought_chunk")
    recorded_text = "".join(
        p.get("text", "") for m in messages if m["role"] == "assistant" for p in m["content"]
    )
    assert recorded_text == said
    assert messages[1]["content"][0] == {"type": "thinking", "thinking": thought}
    assert messages[1]["content"][2]["type"] == "toolCall" and messages[1]["content"][2]["id"] == "call-1"
    assert messages[2]["toolCallId"] == "call-1" and messages[2]["isError"] is False
    assert messages[2]["content"] == [{"type": "text", "text": "wrote it"}]
    # The prompt is a checkpoint; the file the agent wrote through the editor is tracked.
    assert [c["prompt"] for c in history["checkpoints"]][:1] == ["h\u00e9llo"]
    assert history["tracked"] == ["out.txt"]

    # The agent process is gone; a new proxy (a new agent process) loads the session.
    os.unlink(tmp_path / "agent.in")
    second = await Editor.start(daemon.socket, _env(daemon, tmp_path, work))
    second.handlers = {"session/request_permission": _allow, "fs/write_text_file": _write_file}
    await second.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    loaded, replayed = await second.request(
        1, "session/load", {"sessionId": sid, "cwd": str(work), "mcpServers": []}
    )
    assert "result" in loaded, loaded
    prompt_chunk = {
        "sessionId": sid,
        "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "h\u00e9llo"}},
    }
    assert [m["params"] for m in replayed] == [prompt_chunk, *updates]
    # The loaded session goes on, in a session the new agent process made for it.
    answer, more = await second.request(
        2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]}
    )
    assert answer["result"]["stopReason"] == "end_turn"
    assert {m["params"]["sessionId"] for m in more} == {sid}
    code, _ = await second.finish()
    assert code == 0
    client = await daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid})
    finally:
        await client.close()
    roles = [m["message"]["role"] for m in context["messages"]]
    assert roles == ["user", "assistant", "toolResult", "assistant"] * 2

    # session/resume: the same without the replay.
    third = await Editor.start(daemon.socket, _env(daemon, tmp_path, work))
    third.handlers = {"session/request_permission": _allow, "fs/write_text_file": _write_file}
    await third.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    resumed, nothing = await third.request(1, "session/resume", {"sessionId": sid, "cwd": str(work)})
    assert "result" in resumed and nothing == []
    answer, more = await third.request(
        2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "3"}]}
    )
    assert answer["result"]["stopReason"] == "end_turn" and {m["params"]["sessionId"] for m in more} == {sid}
    assert (await third.finish())[0] == 0
    client = await daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid})
    finally:
        await client.close()
    assert len(context["messages"]) == 12


async def test_without_a_daemon_the_proxy_relays_and_says_so_once(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "SESSIOND_HOME": str(tmp_path / "store"), "FAKE_AGENT_CWD": str(work)}
    env.pop("SESSIOND_CONFIG", None)
    editor = await Editor.start(tmp_path / "no-daemon.sock", env, "--no-start")
    editor.handlers = {"session/request_permission": _allow, "fs/write_text_file": _write_file}
    await editor.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new, _ = await editor.request(1, "session/new", {"cwd": str(work), "mcpServers": []})
    sid = new["result"]["sessionId"]
    for rid in (2, 3):  # two turns: recording fails on both, the relay does not notice
        answer, seen = await editor.request(
            rid, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        assert answer["result"]["stopReason"] == "end_turn"
        assert any(m.get("method") == "fs/write_text_file" for m in seen)
    code, stderr = await editor.finish()
    assert code == 0
    assert stderr.count("sessiond acp: not recording:") == 1, stderr
    assert "Traceback" not in stderr


async def test_no_agent_command_is_a_usage_error(tmp_path: Path) -> None:
    env = {**os.environ, "SESSIOND_HOME": str(tmp_path / "store")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sessiond",
        "acp",
        "--no-start",
        "--",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 2 and out == b""
    assert b"no agent command" in err


async def test_an_agent_that_cannot_start_is_exit_127(tmp_path: Path) -> None:
    env = {**os.environ, "SESSIOND_HOME": str(tmp_path / "store")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sessiond",
        "acp",
        "--no-record",
        "--",
        str(tmp_path / "no-such-agent"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 127 and out == b""
    assert b"cannot start" in err and b"Traceback" not in err


async def test_two_editors_at_once_are_two_recorded_sessions(daemon: Daemon, tmp_path: Path) -> None:
    works = [tmp_path / "one", tmp_path / "two"]
    for work in works:
        work.mkdir()
    runs = await asyncio.gather(*(_first_session(daemon, work, work) for work in works))
    for editor, _, _ in runs:
        assert (await editor.finish())[0] == 0
    client = await daemon.client()
    try:
        for (_, sid, seen), work in zip(runs, works, strict=True):
            context = await client.request("context/get", {"sessionId": sid})
            said = "".join(
                m["params"]["update"]["content"]["text"]
                for m in seen
                if m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
            recorded = "".join(
                p.get("text", "")
                for m in context["messages"]
                if m["message"]["role"] == "assistant"
                for p in m["message"]["content"]
            )
            assert recorded == said
            assert (work / "out.txt").exists()
            listed = await client.request("session/list", {"cwd": str(work)})
            assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    finally:
        await client.close()


async def test_a_cancelled_turn_passes_the_cancel_and_records_the_failed_call(
    daemon: Daemon, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    editor = await Editor.start(daemon.socket, _env(daemon, tmp_path, work))
    await editor.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new, _ = await editor.request(1, "session/new", {"cwd": str(work), "mcpServers": []})
    sid = new["result"]["sessionId"]
    await editor.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
        }
    )
    while "id" not in (msg := await editor.next()) or "method" not in msg:
        pass
    assert msg["method"] == "session/request_permission"
    # As ACP says: the editor sends session/cancel, then answers what is pending as cancelled.
    await editor.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    await editor.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    while (answer := await editor.next()).get("id") != 2 or "method" in answer:
        pass
    assert answer["result"]["stopReason"] == "cancelled"
    assert (await editor.finish())[0] == 0
    assert any(b'"session/cancel"' in line for line in _lines(tmp_path / "agent.in"))
    client = await daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid})
        entries = (await client.request("session/entries", {"sessionId": sid, "limit": 1000}))["entries"]
    finally:
        await client.close()
    messages = [m["message"] for m in context["messages"]]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]
    assert messages[2]["isError"] is True
    [decision] = [e["data"] for e in entries if e.get("customType") == "acp.permission"]
    assert decision["outcome"] == {"outcome": "cancelled"}


async def test_the_rewind_slash_command_shows_then_restores(daemon: Daemon, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    editor, sid, _ = await _first_session(daemon, tmp_path, work)

    async def command(rid: int, text: str) -> str:
        answer, seen = await editor.request(
            rid, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        )
        assert answer["result"] == {"stopReason": "end_turn"}
        [said] = [m["params"]["update"]["content"]["text"] for m in seen]
        return str(said)

    shown = await command(3, "/rewind")
    assert "out.txt: would delete" in shown and "/rewind N apply" in shown
    assert (work / "out.txt").exists()
    assert "prompt must be" in await command(4, "/rewind 9 apply")
    done = await command(5, "/rewind 1 apply")
    assert "out.txt: did delete" in done, done
    assert not (work / "out.txt").exists()
    assert (await editor.finish())[0] == 0
    assert not any(b"/rewind" in line for line in _lines(tmp_path / "agent.in"))  # never the agent's


async def test_a_prompt_is_checkpointed_only_when_its_turn_writes_and_rewinds_like_one(
    daemon: Daemon, tmp_path: Path
) -> None:
    """Four prompts; the editor allows the write of the first and third only. Checkpoints exist
    at those two; rewinding to the second (no checkpoint of its own) goes to the third's — the
    files as they were at the second, since no write came between — and rewinding to the last
    finds nothing changed since."""
    work = tmp_path / "work"
    work.mkdir()
    editor = await Editor.start(daemon.socket, _env(daemon, tmp_path, work))
    decisions = iter(["allow", "reject", "allow", "reject"])
    editor.handlers = {
        "session/request_permission": lambda _: {
            "outcome": {"outcome": "selected", "optionId": next(decisions)}
        },
        "fs/write_text_file": _write_file,
    }
    caps = {"protocolVersion": 1, "clientCapabilities": {"fs": {"writeTextFile": True}}}
    await editor.request(0, "initialize", caps)
    new, _ = await editor.request(1, "session/new", {"cwd": str(work), "mcpServers": []})
    sid = new["result"]["sessionId"]
    for rid, text in enumerate(["one", "two", "three", "four"], start=2):
        await editor.request(
            rid, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        )
    assert (work / "out.txt").read_text() == "three\n"

    last, _ = await editor.request(10, "_sessiond/rewind", {"sessionId": sid})
    assert last["result"]["files"] == [] and last["result"]["undoId"] is None, last
    dry, _ = await editor.request(11, "_sessiond/rewind", {"sessionId": sid, "prompt": 1})
    assert [(f["path"], f["action"]) for f in dry["result"]["files"]] == [("out.txt", "write")], dry
    done, _ = await editor.request(12, "_sessiond/rewind", {"sessionId": sid, "prompt": 1, "dryRun": False})
    assert done["result"]["written"] == 1, done
    assert (work / "out.txt").read_text() == "one\n"
    assert (await editor.finish())[0] == 0

    client = await daemon.client()
    try:
        listed = await client.request("fileHistory/list", {"sessionId": sid})
        context = await client.request("context/get", {"sessionId": sid})
    finally:
        await client.close()
    prompts = {
        m["entryId"]: m["message"]["content"][0]["text"]
        for m in context["messages"]
        if m["message"]["role"] == "user"
    }
    checkpoints = [c["messageId"] for c in listed["checkpoints"] if c["kind"] == "checkpoint"]
    assert [prompts[c] for c in checkpoints] == ["one", "three"]
