"""Talk to a running sessiond: list the sessions, show one's context usage and branch.

    .venv/bin/python examples/client_demo.py [--socket PATH]

Start the daemon first (``scripts/run``). Uses the Python client over the Unix socket.
"""

from __future__ import annotations

import argparse
import asyncio

from sessiond.service.config import load_config
from sessiond_client import Client


async def main(socket: str | None) -> None:
    path = socket or str(load_config().socket)
    async with await Client.connect_unix(path) as client:
        info = await client.initialize("client_demo")
        print(f"connected to {info['serverInfo']['name']} {info['serverInfo']['version']} at {path}")
        listing = await client.request("session/list", {"limit": 10})
        for s in listing["sessions"]:
            print(f"- {s['sessionId']}  {s['updatedAt']}  {s['title'] or s['firstMessage'][:60]!r}")
        if not listing["sessions"]:
            print("(no sessions in this store yet)")
            return
        sid = listing["sessions"][0]["sessionId"]
        loaded = await client.request("session/load", {"sessionId": sid})
        usage = await client.request("context/usage", {"sessionId": sid})
        branch = await client.request("tree/branch", {"sessionId": sid})
        branch_len = len(branch["entryIds"])
        print(f"\n{sid}: {loaded['entryCount']} entries, leaf {loaded['leafId']}, branch of {branch_len}")
        window = usage["size"] or "an unknown window"
        print(f"context: {usage['used']} tokens ({usage['source']}) of {window}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket")
    asyncio.run(main(parser.parse_args().socket))
