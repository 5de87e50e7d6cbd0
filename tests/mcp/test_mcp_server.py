"""``sessiond mcp`` through the MCP SDK's own client over stdio, against a real daemon.

The daemon runs on a temporary store holding the bundled example session, one of Pi's
sessions, a real Claude Code transcript and a real Codex rollout, plus a store session with
file history made here through the protocol; ``sessiond mcp`` is the installed command, spawned
by the SDK's stdio client exactly as an agent spawns it. Read-only sources must come out of the
whole module byte for byte as they went in.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters

from tests.conftest import REPO
from tests.mcp.conftest import (
    CLAUDE_FILE,
    CLAUDE_ID,
    CODEX_FILE,
    CODEX_ID,
    EXAMPLE_CWD,
    EXAMPLE_ID,
    PI_FILE,
    SESSIOND,
    TOOLS,
    World,
    _digest,
    mcp_args,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def mcp(world: World) -> AsyncIterator[McpClient]:
    params = StdioServerParameters(
        command=str(SESSIOND),
        args=mcp_args(world),
        env=world.daemon.env,
        cwd=EXAMPLE_CWD if Path(EXAMPLE_CWD).is_dir() else str(world.tmp),
    )
    async with McpClient(params) as client:
        yield client


def shown(text: str) -> list[int]:
    """The item numbers a page shows (its blocks start with ``[N · time · id]``)."""
    return [int(m.group(1)) for m in re.finditer(r"^\[(\d+)[ \]]", text, re.M)]


async def tool(client: McpClient, name: str, **args: Any) -> tuple[str, dict[str, Any]]:
    """A successful call's text and structured content (a tool error fails the test)."""
    result = await client.call_tool(name, args)
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    return text, dict(result.structured_content or {})


async def tool_error(client: McpClient, name: str, **args: Any) -> str:
    result = await client.call_tool(name, args)
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert result.is_error, f"{name}({args}) should have failed: {text}"
    assert "Traceback" not in text
    return text


# ---------------------------------------------------------------------------- the tools


async def test_the_six_tools_are_listed_with_typed_input_schemas(mcp: McpClient) -> None:
    listed = await mcp.list_tools()
    names = {t.name for t in listed.tools}
    assert names == TOOLS
    read = next(t for t in listed.tools if t.name == "read_session")
    props = read.input_schema["properties"]
    assert read.input_schema["required"] == ["id"]
    assert set(props) == {"id", "what", "start", "around", "budget"}
    handoff = next(t for t in listed.tools if t.name == "handoff")
    assert handoff.annotations is not None and handoff.annotations.read_only_hint is False
    assert all(t.annotations and t.annotations.read_only_hint for t in listed.tools if t.name != "handoff")


async def test_list_sessions_across_agents_and_filtered(mcp: McpClient, world: World) -> None:
    text, data = await tool(mcp, "list_sessions", all_projects=True, limit=50)
    ids = {s["id"]: s for s in data["sessions"]}
    assert {EXAMPLE_ID, CLAUDE_ID, CODEX_ID, world.edited_id} <= set(ids)
    assert ids[CODEX_ID]["agent"] == "codex" and ids[CLAUDE_ID]["agent"] == "claude"
    assert ids[EXAMPLE_ID]["messageCount"] > 0 and ids[EXAMPLE_ID]["cwd"] == EXAMPLE_CWD
    assert "Codex" in text and "Claude Code" in text and EXAMPLE_ID in text
    _, only = await tool(mcp, "list_sessions", cwd=EXAMPLE_CWD)
    assert [s["id"] for s in only["sessions"]] == [EXAMPLE_ID]
    _, codex = await tool(mcp, "list_sessions", agent="codex", all_projects=True)
    assert [s["id"] for s in codex["sessions"]] == [CODEX_ID]
    _, none = await tool(mcp, "list_sessions", all_projects=True, since="2999-01-01")
    assert none["sessions"] == []


async def test_list_sessions_refuses_bad_input(mcp: McpClient) -> None:
    assert "unknown agent" in await tool_error(mcp, "list_sessions", agent="emacs")
    assert "since" in await tool_error(mcp, "list_sessions", since="last tuesday")
    await tool_error(mcp, "list_sessions", limit=100000)


async def test_read_session_pages_within_the_budget_and_covers_everything(mcp: McpClient) -> None:
    _, whole = await tool(mcp, "read_session", id=EXAMPLE_ID, what="entries", budget=50000)
    total = whole["total"]
    assert whole["nextStart"] is None and whole["end"] == total - 1
    listed = shown(_)
    assert len(listed) > 5
    seen: list[int] = []
    start: int | None = 0
    pages = 0
    while start is not None:
        text, page = await tool(mcp, "read_session", id=EXAMPLE_ID, what="entries", start=start, budget=200)
        assert page["tokens"] <= 200 and (len(text) + 3) // 4 <= 200
        assert page["start"] == start
        seen += shown(text)
        start = page["nextStart"]
        pages += 1
    assert pages > 1
    assert seen == listed  # the pages, one after the other, show what one big read shows


async def test_read_session_around_an_entry_and_by_prefix(mcp: McpClient) -> None:
    text, page = await tool(
        mcp, "read_session", id=EXAMPLE_ID[:8], what="entries", around="a1000003", budget=2000
    )
    assert page["sessionId"] == EXAMPLE_ID
    assert "a1000003" in text and "signJwt" in text
    assert page["start"] > 0


async def test_read_session_of_other_agents(mcp: McpClient) -> None:
    text, page = await tool(mcp, "read_session", id=CLAUDE_ID, what="branch", budget=3000)
    assert page["agent"] == "claude" and page["total"] > 0
    assert "user:" in text and "assistant" in text
    text, page = await tool(mcp, "read_session", id=CODEX_ID, budget=3000)
    assert page["agent"] == "codex" and "→ " in text  # Codex's shell calls, one line each


async def test_read_session_refuses_bad_input(mcp: McpClient) -> None:
    assert (
        "not found"
        in (await tool_error(mcp, "read_session", id="ffffffff-0000-0000-0000-000000000000")).lower()
    )
    assert "past the end" in await tool_error(mcp, "read_session", id=EXAMPLE_ID, start=100000)
    assert "not in this session" in await tool_error(mcp, "read_session", id=EXAMPLE_ID, around="nope")
    await tool_error(mcp, "read_session", id=EXAMPLE_ID, budget=10**9)
    await tool_error(mcp, "read_session", id=EXAMPLE_ID, what="everything")


async def test_session_usage_of_a_session(mcp: McpClient) -> None:
    text, data = await tool(mcp, "session_usage", id=EXAMPLE_ID)
    assert data["sessionId"] == EXAMPLE_ID
    assert data["context"]["used"] > 0
    assert "context:" in text and "claude-sonnet-4-5" in text
    assert data["stats"]["rows"] and data["stats"]["totals"]["totalTokens"] > 0
    assert "$" in text and "prices as of" in text
    text, data = await tool(mcp, "session_usage", period="2026-07-29")
    assert data["stats"]["rows"] and "claude-sonnet-4-5" in text
    text, data = await tool(mcp, "session_usage", period="1999-01-01")
    assert "no usage recorded" in text
    _, listed = await tool(mcp, "list_sessions", cwd=EXAMPLE_CWD)
    assert listed["sessions"][0]["usage"]["totalTokens"] > 0
    assert "period" in await tool_error(mcp, "session_usage", period="fortnight")


async def test_file_changes_with_and_without_diffs(mcp: McpClient, world: World) -> None:
    text, data = await tool(mcp, "file_changes", id=world.edited_id)
    assert [c["changedFiles"] for c in data["checkpoints"]] == [["app.py"], ["README.md"]]
    assert "app.py" in text and "README.md" in text
    first = data["checkpoints"][0]["messageId"]
    text, data = await tool(mcp, "file_changes", id=world.edited_id, diffs=True, checkpoint=first)
    assert "+print('v2')" in text and "-print('v1')" in text
    assert "not a checkpoint" in await tool_error(mcp, "file_changes", id=world.edited_id, checkpoint="zzz")


async def test_handoff_copies_a_read_only_session_and_never_writes_it(mcp: McpClient, world: World) -> None:
    before = _digest(world.foreign)
    text, data = await tool(mcp, "handoff", id=CLAUDE_ID)
    assert data["source"] == CLAUDE_ID and data["sessionId"] != CLAUDE_ID
    assert Path(data["path"]).is_file() and str(world.daemon.store) in data["path"]
    assert "## First prompt" in text and "## Last exchange" in text and "pi --session" in text
    assert data["firstPrompt"]
    _, listed = await tool(mcp, "list_sessions", agent="sessiond", all_projects=True, limit=100)
    assert data["sessionId"] in {s["id"] for s in listed["sessions"]}
    # the copy holds the same conversation the source's context holds
    _, copy = await tool(mcp, "read_session", id=data["sessionId"], budget=200)
    _, source = await tool(mcp, "read_session", id=CLAUDE_ID, budget=200)
    assert copy["total"] == source["total"]
    again, second = await tool(mcp, "handoff", id=CLAUDE_ID)  # the same leaf: the same copy
    assert second["sessionId"] == data["sessionId"] and second["reused"] is True and "reused" in again
    assert _digest(world.foreign) == before


# ---------------------------------------------------------------------------- resources


async def test_session_resources_list_and_read(mcp: McpClient) -> None:
    listed = await mcp.list_resources()
    uris = {str(r.uri) for r in listed.resources}
    assert f"session://{EXAMPLE_ID}" in uris and f"session://{CODEX_ID}" in uris
    templates = await mcp.list_resource_templates()
    assert any(t.uri_template == "session://{session_id}" for t in templates.resource_templates)
    read = await mcp.read_resource(f"session://{EXAMPLE_ID}")
    text = "".join(getattr(c, "text", "") for c in read.contents)
    assert "Check the edge cases (expired cookie" in text and "summary of the earlier conversation" in text


async def test_nothing_was_written_to_read_only_sources(world: World) -> None:
    """Runs last in the module: the other agents' files as they were copied in."""
    originals = [PI_FILE, CLAUDE_FILE, CODEX_FILE]
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in world.foreign] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in originals
    ]


def test_docs_name_every_tool() -> None:
    text = (REPO / "docs" / "mcp.md").read_text()
    for name in TOOLS:
        assert f"`{name}`" in text
    assert "claude mcp add sessiond -- sessiond mcp" in text
    assert "[mcp_servers.sessiond]" in text
    json.dumps(TOOLS, default=list)


async def test_search_sessions_finds_words_across_agents_with_marked_snippets(mcp: McpClient) -> None:
    text, data = await tool(mcp, "search_sessions", query="signJwt", mode="substring", limit=5)
    hits = data["hits"]
    assert hits and hits[0]["sessionId"] == EXAMPLE_ID
    assert "«" in hits[0]["snippet"] and "\x02" not in json.dumps(data)
    assert EXAMPLE_ID in text and "«" in text
    _, only = await tool(mcp, "search_sessions", query="the", agent="codex", limit=3)
    assert only["hits"] and {h["sessionId"] for h in only["hits"]} == {CODEX_ID}
    assert "unknown agent" in await tool_error(mcp, "search_sessions", query="x", agent="emacs")
    await tool_error(mcp, "search_sessions", query="x", limit=1000)
