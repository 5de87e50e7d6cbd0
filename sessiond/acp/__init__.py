"""``sessiond acp -- AGENT``: a recording proxy for the Agent Client Protocol.

An ACP editor (Zed, JetBrains, Neovim...) spawns this instead of the agent; it spawns the
agent and relays NDJSON JSON-RPC both ways, byte for byte (:mod:`.relay`), while it records
each ACP session as a sessiond session through the store's daemon (:mod:`.recorder`, writing
in the background through :mod:`.link`) and answers ``session/list`` and ``session/load``
from that record for agents that lack them (:mod:`.answers`). See docs/acp.md.
"""
