"""The MCP Inspector's CLI (npm @modelcontextprotocol/inspector, `--cli`): a client nobody here
wrote lists and calls ``sessiond mcp``'s tools against the package's real daemon."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from tests.conftest import REPO
from tests.mcp.conftest import EXAMPLE_ID, SESSIOND, TOOLS, World, mcp_args

INSPECTOR = REPO / ".cache" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"

pytestmark = pytest.mark.skipif(
    not INSPECTOR.exists() or shutil.which("node") is None,
    reason="the MCP Inspector is not installed (scripts/setup-mcp-inspector)",
)


def inspector(world: World, *args: str) -> Any:
    env_args = [f"-e{k}={v}" for k, v in world.daemon.env.items() if k in ("SESSIOND_HOME", "CODEX_HOME")]
    proc = subprocess.run(
        [str(INSPECTOR), "--cli", *env_args, str(SESSIOND), *mcp_args(world), *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    start = proc.stdout.find("{")
    assert start >= 0, (proc.returncode, proc.stdout, proc.stderr)
    return json.JSONDecoder().raw_decode(proc.stdout[start:])[0]


def test_the_inspector_lists_the_tools_and_their_schemas(world: World) -> None:
    listed = inspector(world, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == TOOLS
    assert tools["read_session"]["inputSchema"]["required"] == ["id"]
    assert "\n" not in tools["search_sessions"]["description"]


def test_the_inspector_calls_read_session_and_gets_text_and_structure(world: World) -> None:
    called = inspector(
        world,
        "--method",
        "tools/call",
        "--tool-name",
        "read_session",
        "--tool-arg",
        f"id={EXAMPLE_ID[:8]}",
        "--tool-arg",
        "what=entries",
    )
    assert not called.get("isError"), called
    assert "Check how authentication is implemented" in called["content"][0]["text"]
    assert called["structuredContent"]["sessionId"] == EXAMPLE_ID


def test_the_inspector_sees_an_unknown_session_as_a_tool_error(world: World) -> None:
    called = inspector(
        world, "--method", "tools/call", "--tool-name", "file_changes", "--tool-arg", "id=nope-nope"
    )
    assert called["isError"] is True
    assert "not found" in called["content"][0]["text"] and "Traceback" not in json.dumps(called)
