"""The ``sessiond`` subcommands that read and change sessions (one module per group).

``sessiond.cli`` builds the parser and keeps ``inspect``, ``serve``, ``connect`` and ``gc``;
the commands here talk to the daemon (starting it when needed) or read session files:

* :mod:`.sessions` — ``ls``, ``show``, ``tree``, ``context``, ``usage``
* :mod:`.changes` — ``label``, ``fork``, ``compact``
* :mod:`.rewind` — ``rewind``
* :mod:`.tail` — ``tail``
* :mod:`.doctor` — ``doctor``
* :mod:`.ui` — ``ui`` (opens the daemon's web viewer)
* :mod:`.daemon` — ``status``, ``stop``
* :mod:`.service` — ``service`` (a systemd user unit, a launchd agent)
* :mod:`.completion` — ``completion`` (bash, zsh, fish)
* :mod:`.export` — ``export``
* :mod:`.store` — ``store import``, ``store export`` (the shared JetStream store)
* :mod:`.search` — ``search`` (full-text search across sessions)
* :mod:`.stats` — ``stats`` (usage and cost of every agent, docs/usage.md)
* :mod:`.mcp` — ``mcp`` (the MCP server face, :mod:`sessiond.mcp_server`)

Shared machinery (exit codes, output, connecting) is in :mod:`.base`.
"""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Add every subcommand of this package to ``sub`` (an argparse subparsers action)."""
    from . import (  # noqa: PLC0415
        acp,
        changes,
        completion,
        daemon,
        doctor,
        export,
        mcp,
        rewind,
        search,
        service,
        sessions,
        stats,
        store,
        tail,
        ui,
    )

    sessions.register(sub)
    changes.register(sub)
    rewind.register(sub)
    tail.register(sub)
    doctor.register(sub)
    ui.register(sub)
    daemon.register(sub)
    service.register(sub)
    completion.register(sub)
    export.register(sub)
    store.register(sub)
    search.register(sub)
    stats.register(sub)
    mcp.register(sub)
    acp.register(sub)
