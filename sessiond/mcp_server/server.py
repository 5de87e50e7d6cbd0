"""``sessiond mcp``: the daemon's sessions as MCP tools and resources, on stdio.

Built on the official MCP SDK (``mcp.server.mcpserver.MCPServer``): the SDK owns the protocol
(handshake, schemas from the signatures, validation of arguments, the stdio transport); this
module declares the tools — their names are fixed, agents' configurations and prompts refer to
them — and turns every failure into an MCP tool error carrying the daemon's message. The work is
in :mod:`.tools`, the text in :mod:`.render`, the daemon connection in :mod:`.link`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, Resource, TextContent, ToolAnnotations
from pydantic import Field

from .. import __version__
from . import tools
from .link import DaemonLink, ToolFailure

log = logging.getLogger("sessiond.mcp")

_Tool = TypeVar("_Tool", bound=Callable[..., Awaitable[CallToolResult]])

INSTRUCTIONS: Final = (
    "sessiond knows every coding-agent session on this machine (sessiond's store, Pi, Claude Code, "
    "Codex, OpenCode). Use search_sessions to find where something was discussed, list_sessions to "
    "see recent work in this project, read_session to read a conversation within a token budget "
    "(page with start=, or jump with around=ENTRY_ID from a search hit), session_usage for context "
    "and cost, file_changes for the files a session changed, and handoff to continue a session "
    "elsewhere. Sessions are only read; handoff writes a new copy."
)

DEFAULT_BUDGET: Final = 4000
MAX_BUDGET: Final = 50_000
RESOURCE_BUDGET: Final = 8000

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
CREATES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)

SessionId = Annotated[
    str, Field(min_length=1, max_length=256, description="A session id, or its first characters")
]
Agent = Annotated[
    str | None, Field(default=None, description="sessiond, pi, claude (Claude Code), codex or opencode")
]
Day = Annotated[
    str | None, Field(default=None, description="ISO date (2026-12-01) or date-time, or today/yesterday")
]
Budget = Annotated[
    int,
    Field(default=DEFAULT_BUDGET, ge=200, le=MAX_BUDGET, description="The most tokens the answer may take"),
]


def _result(answer: tools.Answer) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=answer.text)], structured_content=answer.data
    )


async def _run(name: str, work: Callable[[], Awaitable[tools.Answer]]) -> CallToolResult:
    """A tool's body, with every failure an MCP tool error the model can read."""
    try:
        return _result(await work())
    except ToolFailure as exc:
        raise ToolError(exc.message) from None
    except ToolError:
        raise
    except Exception as exc:  # a bug of ours: one log line and a plain message, never a traceback
        log.error("%s failed: %s: %s", name, type(exc).__name__, exc)
        raise ToolError(
            f"{name} failed inside sessiond ({type(exc).__name__}); see the MCP server's log"
        ) from None


class SessiondMCP(MCPServer[Any]):
    """The SDK's server, with the session resources listed from the daemon."""

    def __init__(self, link: DaemonLink) -> None:
        super().__init__(
            name="sessiond",
            title="sessiond: coding-agent sessions",
            instructions=INSTRUCTIONS,
            version=__version__,
            log_level="WARNING",
        )
        self.link = link

    async def list_resources(self) -> list[Resource]:
        try:
            page = await self.link.call("session/list", {"limit": 50})
        except ToolFailure as exc:
            log.warning("listing the session resources: %s", exc.message)
            return []
        return [
            Resource(
                uri=f"session://{row['sessionId']}",
                name=tools.title_of(row),
                description=f"{tools.AGENT_LABELS.get(str(row.get('root')), row.get('root'))} session "
                f"in {row.get('cwd')}",
                mime_type="text/plain",
            )
            for row in page["sessions"]
        ]


def _described(server: SessiondMCP, annotations: ToolAnnotations) -> Callable[[_Tool], _Tool]:
    """``server.tool`` with the docstring as the description in one paragraph (a docstring's
    indentation would reach the model as spaces)."""

    def register(fn: _Tool) -> _Tool:
        server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()), annotations=annotations)
        return fn

    return register


def build(link: DaemonLink) -> SessiondMCP:
    """The MCP server with its tools and resources, answering through ``link``."""
    server = SessiondMCP(link)

    @_described(server, READ_ONLY)
    async def list_sessions(
        agent: Agent = None,
        cwd: Annotated[
            str | None,
            Field(default=None, description="The project directory (default: where this server runs)"),
        ] = None,
        all_projects: Annotated[bool, Field(description="List every project's sessions")] = False,
        since: Day = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> CallToolResult:
        """Recent coding-agent sessions of this project (or all projects), newest first: id, agent,
        title, working directory, last activity, message count, tokens and cost."""
        return await _run(
            "list_sessions",
            lambda: tools.list_sessions(
                link, agent=agent, cwd=cwd, all_projects=all_projects, since=since, limit=limit
            ),
        )

    @_described(server, READ_ONLY)
    async def search_sessions(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1000,
                description='Words, "a phrase", prefix*, -excluded; with mode=substring any piece of code',
            ),
        ],
        mode: Annotated[str, Field(pattern="^(words|substring)$")] = "words",
        agent: Agent = None,
        cwd: Annotated[str | None, Field(default=None, description="Only this project's sessions")] = None,
        since: Day = None,
        until: Day = None,
        role: Annotated[
            str | None,
            Field(default=None, description="user, assistant, thinking, tool, toolResult, summary"),
        ] = None,
        session: Annotated[str | None, Field(default=None, description="Only this session")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        cursor: Annotated[
            str | None, Field(default=None, description="nextCursor of the previous call")
        ] = None,
    ) -> CallToolResult:
        """Full-text search across every session of every agent: hits with snippets (matches in
        «»), session and entry ids, and the command that resumes each session."""
        params = {
            "query": query,
            "mode": mode,
            "agent": agent,
            "cwd": cwd,
            "since": since,
            "until": until,
            "role": role,
            "sessionId": session,
            "limit": limit,
            "cursor": cursor,
        }
        return await _run("search_sessions", lambda: tools.search_sessions(link, params))

    @_described(server, READ_ONLY)
    async def read_session(
        id: SessionId,
        what: Annotated[
            tools.What,
            Field(
                description="context: what the model sees now; branch: the current branch's entries; "
                "entries: every entry in file order"
            ),
        ] = "context",
        start: Annotated[
            int | None, Field(default=None, ge=0, description="First item (from a page's end)")
        ] = None,
        around: Annotated[
            str | None,
            Field(default=None, description="Start a little before this entry id (from a search hit)"),
        ] = None,
        budget: Budget = DEFAULT_BUDGET,
    ) -> CallToolResult:
        """A session's conversation as compact text within a token budget: roles, tool calls in
        one line, results truncated with their size; pages end with the start of the next."""
        return await _run(
            "read_session",
            lambda: tools.read_session(
                link, session=id, what=what, start=start, around=around, budget=budget
            ),
        )

    @_described(server, READ_ONLY)
    async def session_usage(
        id: Annotated[
            str | None, Field(default=None, description="A session id: its context use and cost")
        ] = None,
        period: Annotated[
            str | None, Field(default=None, description="today (default), yesterday, week, month or a date")
        ] = None,
    ) -> CallToolResult:
        """How full a session's context is and what it cost, or the tokens and cost of a period
        across every agent."""
        return await _run("session_usage", lambda: tools.session_usage(link, session=id, period=period))

    @_described(server, READ_ONLY)
    async def file_changes(
        id: SessionId,
        diffs: Annotated[bool, Field(description="Include unified diffs (checkpoint → disk now)")] = False,
        checkpoint: Annotated[
            str | None, Field(default=None, description="Only this checkpoint (its messageId)")
        ] = None,
        budget: Budget = DEFAULT_BUDGET,
    ) -> CallToolResult:
        """The files a session changed, per checkpoint (one per prompt), with diffs on request."""
        return await _run(
            "file_changes",
            lambda: tools.file_changes(link, session=id, diffs=diffs, checkpoint=checkpoint, budget=budget),
        )

    @_described(server, CREATES)
    async def handoff(id: SessionId) -> CallToolResult:
        """Copy a session into a new Pi session (the source is only read) and return a summary to
        continue from: title, first prompt, last exchange, files changed, commands to resume."""
        return await _run("handoff", lambda: tools.handoff(link, session=id))

    @server.resource(
        "session://{session_id}", mime_type="text/plain", description="A session's context as text"
    )
    async def session_resource(session_id: str) -> str:
        try:
            return await tools.session_text(link, session_id, RESOURCE_BUDGET)
        except ToolFailure as exc:
            raise ResourceError(exc.message) from None

    return server


async def serve(store: Path | None, socket: Path | None, *, start: bool = True) -> None:
    """Run the MCP server on stdio until the client closes it."""
    link = DaemonLink(store, socket, start=start)
    try:
        await build(link).run_stdio_async()
    finally:
        await link.close()
