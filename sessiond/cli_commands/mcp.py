"""``mcp``: run the MCP server face on stdio (what an agent's MCP configuration spawns).

Everything it prints goes to stderr: stdout belongs to the MCP protocol. The server itself is
:mod:`sessiond.mcp_server`, imported only when this command runs (it pulls in the MCP SDK).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .base import EXIT_INTERRUPTED, EXIT_OK, add_json_option, add_store_options


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve every session to agents as MCP tools (stdio; for `claude mcp add`, Codex, VS Code)",
        description=(
            "An MCP server on stdio: list_sessions, search_sessions, read_session, session_usage, "
            "file_changes and handoff, plus session://ID resources, answered by the store's daemon "
            "(started when none runs). Add it to an agent with e.g. `claude mcp add sessiond -- "
            "sessiond mcp`; see docs/mcp.md."
        ),
    )
    add_store_options(p)
    p.add_argument(
        "--no-start", action="store_true", help="never start the daemon: tools fail while none runs"
    )
    add_json_option(p)  # accepted like every command's: the stream is JSON-RPC (MCP) either way
    p.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from ..mcp_server.server import serve  # noqa: PLC0415

    store = Path(args.store).expanduser() if args.store else None
    socket = Path(args.socket).expanduser() if args.socket else None
    try:
        asyncio.run(serve(store, socket, start=not args.no_start))
    except KeyboardInterrupt:
        print("sessiond mcp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK
