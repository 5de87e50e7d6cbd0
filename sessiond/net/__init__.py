"""What the daemon's transports share, below both of them.

The JSON-RPC transports (:mod:`sessiond.rpc`: Unix socket, TCP, stdio) start the viewer's
(:mod:`sessiond.web`: HTTP + WebSocket), so ``rpc`` imports ``web``; the pieces both need (the
names of the framings, the loopback-only address rule) live here so that ``web`` never
imports ``rpc`` and the dependency goes one way.
"""
