"""``sessiond mcp``: an MCP server face, so that agents can consult every session themselves.

A client of the daemon like ``sessiond connect`` (it starts the daemon when none runs), holding
no copy of the engine: :mod:`.link` is the connection, :mod:`.tools` what each tool asks the
daemon, :mod:`.render` the text a model reads, :mod:`.server` the SDK's server and the tool
declarations. docs/mcp.md tells how to add it to Claude Code, Codex, VS Code and Cursor.
"""
