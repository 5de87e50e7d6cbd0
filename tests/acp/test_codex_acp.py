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
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.codex.standin import Reply, StandIn, Usage, function_call, message, reasoning
from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / ".cache" / "acp"
CODEX_ACP = INSTALL / "node_modules" / ".bin" / "codex-acp"
EDITOR = Path(__file__).with_name("sdk_editor.mjs")
RUN_TIMEOUT = 180


def _installed() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the editor side is the ACP TypeScript SDK")
    if not (INSTALL / "node_modules" / "@agentclientprotocol" / "sdk").is_dir() or not CODEX_ACP.exists():
        pytest.skip(
            "the ACP SDK / codex-acp are not installed in .cache/acp: run scripts/setup-acp (needs npm)"
        )
    return node


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        d.stop()


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
    proxy = [
        sys.executable,
        "-m",
        "sessiond",
        "acp",
        "--socket",
        str(daemon.socket),
        *options,
        "--",
        str(CODEX_ACP),
    ]
    run_env = {**daemon.env, **env, "NODE_PATH": str(INSTALL / "node_modules")}
    # The editor script imports the SDK from .cache/acp: run it from a copy placed there.
    script = INSTALL / "sdk_editor.mjs"
    shutil.copyfile(EDITOR, script)
    proc = subprocess.run(
        [node, str(script), json.dumps({**job, "argv": proxy})],
        env=run_env,
        cwd=job["cwd"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


def _chunks(updates: list[dict[str, Any]], kind: str) -> str:
    return "".join(
        u["update"]["content"].get("text", "") for u in updates if u["update"]["sessionUpdate"] == kind
    )


async def test_codex_acp_through_the_proxy_is_recorded_and_loads_again(
    daemon: Daemon, tmp_path: Path
) -> None:
    node = _installed()
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
    # The proxy added its /rewind to the commands codex-acp announced (and changed nothing else).
    announced = [
        u["update"]["availableCommands"]
        for u in updates
        if u["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert announced and all([c["name"] for c in a].count("rewind") == 1 for a in announced)
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
    assert said == _chunks(updates, "agent_message_chunk") != ""
    assert thought == _chunks(updates, "agent_thought_chunk")
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
    assert replayed == updates  # every update, as the editor first saw it, in the same order
    # The prompt comes back where the proxy relayed it: before the turn's first chunk.
    chunks = [i for i, u in enumerate(updates) if u["update"]["sessionUpdate"].endswith("_chunk")]
    assert at <= chunks[0]
    assert second["load"] == {k: v for k, v in second["load"].items() if k in ("modes", "models")}
    assert "sessiond acp:" not in second["stderr"], second["stderr"]
