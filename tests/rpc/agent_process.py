"""One agent process for the multi-agent test: appends messages to a shared session.

    python agent_process.py SOCKET SESSION_ID COUNT DURABILITY NAME

Prints one line per acknowledged entry id, then ``done``.
"""

from __future__ import annotations

import asyncio
import sys

from sessiond_client import Client


async def main(socket: str, session_id: str, count: int, durability: str, name: str) -> None:
    client = await Client.connect_unix(
        socket, framing="ndjson" if name.endswith(("1", "3", "5", "7")) else "content-length"
    )
    await client.initialize(name, notifications={"optOut": ["session/update"]})
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        message = {"role": role, "content": [{"type": "text", "text": f"{name} message {i}"}], "timestamp": i}
        if role == "assistant":
            message.update(
                {
                    "api": "x",
                    "provider": "p",
                    "model": "m",
                    "stopReason": "stop",
                    "usage": {
                        "input": 0,
                        "output": 0,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 10 + i,
                    },
                }
            )
        result = await client.request(
            "session/append",
            {
                "sessionId": session_id,
                "entries": [{"type": "message", "message": message}],
                "durability": durability if i % 3 else "fsync",
            },
        )
        print(result["entryIds"][0], flush=True)
    print("done", flush=True)
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]))
