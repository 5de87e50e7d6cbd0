"""``daemon/status``: what the running daemon is doing, for ``sessiond status`` and operators.

Only the daemon knows which sessions it holds open and who is connected, so this is a request
rather than something the command line could read from the store. Nothing here changes state.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sessiond_protocol import PROTOCOL_VERSION
from sessiond_protocol import methods as M

from .. import __version__
from ..store import allocator
from ..store.memory import BUDGET
from ..store.regular import COUNTS

if TYPE_CHECKING:
    from .dispatch import Caller


def iso(epoch: float) -> str:
    """Milliseconds and a ``Z``, as the session entries' timestamps."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def log_file() -> str | None:
    """Where this process's stderr goes, when that is a regular file (a daemon the CLI started
    logs to ``<store>/daemon.log``; one in a terminal or under a service manager has none)."""
    try:
        if not stat.S_ISREG(os.fstat(sys.stderr.fileno()).st_mode):
            return None
        return os.readlink(f"/proc/self/fd/{sys.stderr.fileno()}")
    except (OSError, ValueError, AttributeError):
        return None


def daemon_status(conn: Caller) -> M.DaemonStatusResult:
    daemon = conn.daemon
    service = conn.service
    started = daemon.started_at if daemon is not None else conn.connected_at
    connections = sorted(daemon.connections if daemon is not None else [conn], key=lambda c: c.id)
    hub = service.hub
    held = BUDGET.by_session()
    sessions = []
    for session_id, host in sorted(service.hosts.items()):
        root = host.root
        header_id = host.session.index.header.get("id")
        kinds = held.get(header_id if type(header_id) is str else session_id, {})
        sessions.append(
            {
                "sessionId": session_id,
                "path": str(host.session.path),
                "root": root.name if root is not None else "sessiond",
                "format": root.format if root is not None else "pi",
                "readOnly": host.session.read_only is not None,
                "subscribers": hub.subscriber_count(session_id),
                "users": len(host.users),
                "entries": len(host.session.index),
                "heldBytes": sum(kinds.values()),
            }
        )
    clients = []
    for c in connections:
        info = c.client_info or {}
        clients.append(
            {
                "id": c.id,
                "peer": c.peer,
                "name": info.get("name"),
                "version": info.get("version"),
                "connectedAt": iso(c.connected_at),
                "subscriptions": sorted(sid for sid in service.hosts if hub.is_subscribed(sid, c)),
                "current": c is conn,
            }
        )
    socket_path = daemon.socket_path if daemon is not None else None
    return M.DaemonStatusResult.model_construct(
        pid=os.getpid(),
        version=__version__,
        protocolVersion=PROTOCOL_VERSION,
        startedAt=iso(started),
        uptimeSeconds=round(max(0.0, time.time() - started), 3),
        store=str(service.layout.root),
        socket=str(socket_path) if socket_path is not None else None,
        tcp=daemon.tcp_address if daemon is not None else None,
        log=log_file(),
        sessions=sessions,
        clients=clients,
        memory=memory_status(held),
        watching=watching_status(conn),
        files={"notRegular": COUNTS.not_regular, "oversizedLines": COUNTS.oversized_lines},
        admission=daemon.admission_status() if daemon is not None else None,
        reads={
            "follow": service.follower.bytes_ingested,
            "usage": service.stats.bytes_read,
            "search": service.search.engine.bytes_read,
        },
    )


def watching_status(conn: Caller) -> dict[str, object]:
    """The follower's watchers: their modes and wake-ups, and the whole process's wake-ups."""
    follower = conn.service.follower
    return {
        "enabled": follower.enabled,
        "mode": follower.foreign.mode,
        "storeMode": follower.own.mode,
        "wakeups": follower.foreign.wakeups + follower.own.wakeups,
        "processWakeups": process_wakeups(),
    }


def process_wakeups() -> int | None:
    """Times this process's live threads were scheduled (``schedstat``'s run count; Linux)."""
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[2])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile, or no schedstat in this kernel
    return total


def memory_status(held: dict[str | None, dict[str, int]]) -> dict[str, object]:
    """The budget, what it holds by kind, evictions, RSS and the allocator's trims."""
    by_kind: dict[str, int] = {}
    for kinds in held.values():
        for kind, n in kinds.items():
            by_kind[kind] = by_kind.get(kind, 0) + n
    return {
        "budgetBytes": BUDGET.limit,
        "idleSeconds": BUDGET.idle,
        "heldBytes": sum(by_kind.values()),
        "heldByKind": by_kind,
        "evictions": BUDGET.evictions,
        "rssBytes": rss_bytes(),
        "allocatorTrims": allocator.TRIMMER.released if allocator.available() else None,
    }


def rss_bytes() -> int | None:
    """``VmRSS`` of this process (Linux), else None."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
