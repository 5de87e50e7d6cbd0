"""JSON-RPC over Unix socket, TCP and stdio: framing, connections, the method table, servers."""
