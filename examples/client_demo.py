"""Talk to sessiond: list the sessions, show one's context usage and branch.

    .venv/bin/python examples/client_demo.py [--socket PATH]

Uses the Python client (``sessiond_client.SessiondClient``) over the store's Unix socket; the
daemon is started when none runs (``--socket``: a daemon's socket, never started).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from sessiond_client import SessiondClient


async def main(socket: str | None) -> None:
    async with await SessiondClient.connect(socket=socket, start=socket is None, name="client_demo") as c:
        info = c.initialize_result
        assert info is not None
        print(f"connected to {info.serverInfo.name} {info.serverInfo.version}")
        listing = await c.session_list(limit=10)
        for s in listing.sessions:
            print(f"- {s.sessionId}  {s.updatedAt}  {s.title or s.firstMessage[:60]!r}")
        if not listing.sessions:
            print("(no sessions in this store yet)")
            return
        sid = listing.sessions[0].sessionId
        loaded = await c.session_load(sid)
        usage = await c.context_usage(sid)
        branch = await c.tree_branch(sid)
        print(f"\n{sid}: {loaded.entryCount} entries, leaf {loaded.leafId}, branch of {len(branch.entryIds)}")
        window = usage.size or "an unknown window"
        print(f"context: {usage.used} tokens ({usage.source}) of {window}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", help="a daemon's socket (default: the store's, started when needed)")
    try:
        asyncio.run(main(parser.parse_args().socket))
    except BrokenPipeError:  # `client_demo.py | head`: the reader went away
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
