"""Where the viewer is: the address rule (loopback only) and ``ui.json``, read without ``websockets``."""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from typing import Any

from ..errors import SessiondError

INFO_FILE = "ui.json"
"""Beside the daemon's socket: ``{url, pid, tokenPath, rpcPath}``."""


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` of the viewer: a loopback IP address only (port 0: any free port)."""
    host, sep, port = address.rpartition(":")
    if not sep:
        raise SessiondError(f"the viewer's address wants HOST:PORT, got {address!r}", field="ui.listen")
    host = host.strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise SessiondError(
            f"the viewer's host must be a loopback IP address, got {host!r}", field="ui.listen"
        ) from None
    if not ip.is_loopback:
        raise SessiondError(f"the viewer only listens on loopback addresses, not {host}", field="ui.listen")
    try:
        number = int(port)
    except ValueError:
        raise SessiondError(f"the viewer's port must be a number, got {port!r}", field="ui.listen") from None
    if not 0 <= number <= 65535:
        raise SessiondError(f"the viewer's port must be 0-65535, got {number}", field="ui.listen")
    return host, number


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
