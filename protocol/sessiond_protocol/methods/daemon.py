"""The daemon itself: ``daemon/status`` (what ``sessiond status`` shows)."""

from __future__ import annotations

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import Params, Result
from .base import Empty, MethodSpec


class StatusClient(Result):
    id: int = Field(description="The connection's number in this daemon.")
    peer: str = Field(description="How it is connected: `unix uid=…`, `tcp (host, port)`, `stdio`.")
    name: str | None = Field(None, description="`initialize.clientInfo.name`.")
    version: str | None = None
    connectedAt: str = Field(description="ISO 8601, UTC.")
    subscriptions: list[str] = Field(description="Session ids it subscribed to.")
    current: bool = Field(False, description="This is the connection that asked.")


class StatusSession(Result):
    sessionId: str
    path: str
    root: str = Field(description="`sessiond`, `pi`, `claude`, `codex` or `opencode`.")
    format: str
    readOnly: bool
    subscribers: int
    users: int = Field(description="Connections that used it since it was opened (subscribed or not).")
    entries: int = Field(
        0, description="Lines in its light index (kept while it is open, a few hundred bytes each)."
    )
    heldBytes: int = Field(
        0,
        description="Bytes of its session lines held parsed under the memory budget (bodies and context); "
        "their parsed form takes about 3-4 times as much.",
    )


class StatusMemory(Result):
    budgetBytes: int = Field(
        description="`[memory] budget_mb`: parsed session content all sessions may hold."
    )
    idleSeconds: float = Field(
        description="`[memory] idle_seconds`: unused parsed content is dropped after this."
    )
    heldBytes: int = Field(description="Bytes of session lines held parsed now, all sessions together.")
    heldByKind: dict[str, int] = Field(
        description="`heldBytes` by what holds it: `bodies` (entry bodies read recently), `context` (materialised contexts)."
    )
    evictions: int = Field(
        description="Times the budget dropped what a session held (over the budget or idle) since the start."
    )
    rssBytes: int | None = Field(
        None, description="The daemon's resident memory (`VmRSS`; null where it cannot be read)."
    )
    allocatorTrims: int | None = Field(
        None,
        description="Times the periodic sweep gave freed memory back to the system (glibc `malloc_trim`); null where "
        "the allocator cannot be trimmed.",
    )


class StatusWatching(Result):
    enabled: bool = Field(description="`[watch] enabled`: other writers' changes are followed.")
    mode: str | None = Field(
        None,
        description="How the roots other agents write are watched: `inotify` or `poll` (null: not started).",
    )
    storeMode: str | None = Field(
        None,
        description="How the roots sessiond writes (its store) are watched: `inotify` or `poll` (null: not started).",
    )
    wakeups: int = Field(
        description="Times the file watchers woke since the start (kernel events read, poll ticks, "
        "re-scans); an idle daemon's watchers add none between their deadlines."
    )
    processWakeups: int | None = Field(
        None,
        description="Times the daemon's live threads were put on a CPU since they started "
        "(`/proc/self/task/*/schedstat`), every cause together; null where it cannot be read.",
    )


class StatusFiles(Result):
    notRegular: int = Field(
        description="Files named like sessions that were FIFOs, devices, sockets or directories, skipped unread "
        "(each time one was looked at) since the start."
    )
    oversizedLines: int = Field(
        description="Lines of other agents' files longer than `[limits] max_line_bytes`, kept as `oversized` "
        "placeholders unread, since the start."
    )


class StatusReads(Result):
    follow: int = Field(
        description="Bytes open sessions read since the start to take in what other programs appended to their files."
    )
    usage: int = Field(
        description="Bytes of session files read for the usage records since the start (their build, files nobody "
        "has open, changes whose lines no open session read); lines an open session read or the daemon wrote "
        "are handed over, not read again."
    )
    search: int = Field(
        description="Bytes of session files the search index read since the start (its build, files nobody has "
        "open); entries an open session read or the daemon wrote are handed over, not read again."
    )


class StatusAdmission(Result):
    anonymous: int = Field(
        description="Connections open now that have not completed `initialize` (TCP and WebSocket: not authenticated)."
    )
    refused: int = Field(
        description="Connections refused since the start because their budget was full (`max_connections`, "
        "`max_anonymous_connections`, `max_viewer_connections`)."
    )
    timedOut: int = Field(
        description="Connections closed since the start for not completing `initialize` in time."
    )
    openFilesLimit: int | None = Field(
        None, description="The daemon's open-file limit (`RLIMIT_NOFILE`, soft)."
    )


class DaemonStatusResult(Result):
    pid: int
    version: str
    protocolVersion: int
    startedAt: str = Field(description="ISO 8601, UTC.")
    uptimeSeconds: float
    store: str
    socket: str | None = Field(description="The Unix socket it listens on (null with `--stdio`).")
    tcp: str | None = Field(None, description="`host:port` when it also listens on loopback TCP.")
    log: str | None = Field(
        None,
        description="The file its log goes to, when it is a file (a daemon started by the CLI or `connect`).",
    )
    sessions: list[StatusSession] = Field(description="Open sessions.")
    clients: list[StatusClient] = Field(description="Open connections, the asking one included.")
    memory: StatusMemory | None = Field(None, description="The memory budget and what is held under it.")
    watching: StatusWatching | None = Field(
        None, description="How other writers' changes are followed, and what that wakes the daemon."
    )
    files: StatusFiles | None = Field(
        None, description="Hostile or unreadable files skipped since the start."
    )
    admission: StatusAdmission | None = Field(
        None, description="Who is let in: connections not yet initialized, refused, timed out."
    )
    reads: StatusReads | None = Field(
        None,
        description="Bytes of session files read since the start, per reader: what a file grew by is read by one "
        "of them and handed to the others.",
    )


class ViewerCodeParams(Params):
    newToken: bool = Field(
        False,
        description="First replace the store's long-lived token (`tcp.token`): every code, viewer token and "
        "connection that used the old one ends.",
    )


class ViewerCodeResult(Result):
    code: str = Field(
        description="Good for one `initialize.authToken` (the viewer's URL carries it as `#code=`)."
    )
    expiresInSeconds: float
    url: str | None = Field(None, description="The viewer's address (null when it is not served).")


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "daemon/viewerCode",
            ViewerCodeParams,
            ViewerCodeResult,
            "A one-time code for the session viewer (what `sessiond ui` opens the browser with, instead of the "
            "long-lived token); only on the Unix socket or stdio (the owner's).",
            (C.INVALID_REQUEST,),
            {},
            {
                "code": "Vq3x9c0Lr2tJ8aQmZ1nY4wE6pS7dF5gH",
                "expiresInSeconds": 60.0,
                "url": "http://127.0.0.1:8417/",
            },
        ),
        MethodSpec(
            "daemon/status",
            Empty,
            DaemonStatusResult,
            "The daemon itself: pid, version, uptime, store, socket, open sessions, connected clients and its memory budget (what `sessiond status` shows).",
            (),
            {},
            {
                "pid": 4242,
                "version": "0.1.0",
                "protocolVersion": 1,
                "startedAt": "2026-07-29T09:00:00.000Z",
                "uptimeSeconds": 3600.5,
                "store": "/home/dev/.local/share/sessiond",
                "socket": "/run/user/1000/sessiond/sessiond.sock",
                "tcp": None,
                "log": "/home/dev/.local/share/sessiond/daemon.log",
                "sessions": [
                    {
                        "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                        "path": "/home/dev/.local/share/sessiond/sessions/--home-dev-webapp--/2026-07-29T09-00-00-000Z_019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001.jsonl",
                        "root": "sessiond",
                        "format": "pi",
                        "readOnly": False,
                        "subscribers": 1,
                        "users": 1,
                        "entries": 412,
                        "heldBytes": 180224,
                    }
                ],
                "memory": {
                    "budgetBytes": 67108864,
                    "idleSeconds": 60.0,
                    "heldBytes": 180224,
                    "heldByKind": {"bodies": 65536, "context": 114688},
                    "evictions": 7,
                    "rssBytes": 98566144,
                    "allocatorTrims": 42,
                },
                "watching": {
                    "enabled": True,
                    "mode": "inotify",
                    "storeMode": "inotify",
                    "wakeups": 318,
                    "processWakeups": 5210,
                },
                "clients": [
                    {
                        "id": 3,
                        "peer": "unix uid=1000",
                        "name": "my-editor",
                        "version": "1.0",
                        "connectedAt": "2026-07-29T09:10:00.000Z",
                        "subscriptions": ["019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"],
                        "current": False,
                    }
                ],
            },
        ),
    ]
}
