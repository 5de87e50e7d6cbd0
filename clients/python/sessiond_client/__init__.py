"""An asyncio client for sessiond (Unix socket, loopback TCP or a spawned stdio server).

    async with await Client.connect_unix(path) as client:
        await client.initialize("my-agent")
        session = await client.request("session/new", {"cwd": "/repo", "subscribe": True})
        async for update in client.updates(session["sessionId"]):
            ...

The typed facade over every method comes with the clients milestone; this is the transport
core it builds on (framing, request/response matching, notifications, server requests,
cancellation).
"""

from .client import Client, RpcError

__all__ = ["Client", "RpcError"]
