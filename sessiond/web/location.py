"""Where the viewer is: the address rule (loopback only) and ``ui.json``, read without ``websockets``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..net.loopback import parse_loopback

INFO_FILE = "ui.json"
"""Beside the daemon's socket: ``{url, pid, tokenPath, rpcPath}``."""


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` of the viewer: a loopback IP address only (port 0: any free port)."""
    return parse_loopback(address, owner="the viewer", field="ui.listen")


def read_info(run_dir: Path) -> dict[str, Any] | None:
    """What a running daemon wrote in ``ui.json``, or ``None`` (no viewer, or a stale file)."""
    try:
        info = json.loads((run_dir / INFO_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    pid = info.get("pid")
    if isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
    return info
