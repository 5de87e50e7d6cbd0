"""``acp``: a recording proxy in front of an ACP agent (what an ACP editor spawns).

stdout belongs to the Agent Client Protocol; everything the proxy says goes to stderr. The
proxy itself is :mod:`sessiond.acp`, imported only when this command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .base import EXIT_INTERRUPTED, EXIT_USAGE, add_json_option, add_store_options


def register(sub: Any) -> None:
    p = sub.add_parser(
        "acp",
        help="record an ACP agent's sessions: put `sessiond acp -- AGENT` where the editor runs the agent",
        description=(
            "A proxy for the Agent Client Protocol on stdio: it starts AGENT, relays every message "
            "between the editor and it unchanged, records each ACP session in sessiond through the "
            "store's daemon (started when none runs), and answers session/list and session/load for "
            "agents that lack them (and session/resume). Exits with the agent's status. See docs/acp.md."
        ),
    )
    add_store_options(p)
    p.add_argument(
        "--no-start",
        action="store_true",
        help="never start the daemon: relay without recording while none runs",
    )
    p.add_argument("--no-record", action="store_true", help="relay only: record nothing, answer nothing")
    p.add_argument(
        "--own-sessions",
        action="store_true",
        help="answer session/list, /load and /resume from sessiond's record even when the agent has them",
    )
    add_json_option(p)  # accepted like every command's: the stream is ACP (JSON-RPC) either way
    p.add_argument("agent", nargs=argparse.REMAINDER, help="-- then the agent's command and arguments")
    p.set_defaults(handler=cmd_acp)


def cmd_acp(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    argv = list(args.agent)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print(
            "sessiond acp: no agent command (usage: sessiond acp [options] -- AGENT [ARGS...])",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from ..acp.link import DaemonLink  # noqa: PLC0415
    from ..acp.recorder import Recorder  # noqa: PLC0415
    from ..acp.relay import Proxy  # noqa: PLC0415

    store = Path(args.store).expanduser() if args.store else None
    socket = Path(args.socket).expanduser() if args.socket else None

    async def main() -> int:
        link = None if args.no_record else DaemonLink(store, socket, start=not args.no_start)
        return await Proxy(argv, Recorder(link), own_sessions=args.own_sessions).run()

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        print("sessiond acp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
