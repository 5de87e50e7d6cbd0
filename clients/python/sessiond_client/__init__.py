"""The Python client of sessiond: a typed async facade, a blocking one, and the transport core.

    from sessiond_client import SessiondClient

    async with await SessiondClient.connect() as c:        # the store's daemon, started if needed
        new = await c.session_new(cwd="/repo", subscribe=True)
        async with c.updates(new.sessionId) as updates:
            await c.append(new.sessionId, [{"type": "message", "message": {...}}])
            event = await updates.next(timeout=5)          # SessionUpdate; event.update is typed

* :class:`SessiondClient` (``typed``): one typed method per protocol method, update streams,
  the ``compaction/summarize`` handler, cancellation, reconnection. See docs/python-client.md.
* :class:`SessiondSyncClient` / :func:`connect_sync` (``sync``): the same, blocking.
* :mod:`~sessiond_client.errors`: one exception class per error code (all :class:`RpcError`).
* :class:`Client` (``client``): the transport core the rest builds on (framing, request and
  response matching, notifications, server requests, cancellation) — raw JSON.
"""

from . import errors
from .client import Client, ConnectionClosedError, RpcError
from .discovery import default_store, socket_path, token_path
from .errors import (
    CompactionRunning,
    ConnectionClosed,
    DaemonUnavailable,
    EntryNotFound,
    InvalidParams,
    LeafMismatch,
    NotFound,
    Overloaded,
    ReadOnly,
    RequestCancelled,
    SessiondError,
    SessionNotFound,
)
from .sync import SessiondSyncClient, connect_sync
from .typed import (
    RECONNECTED,
    UNSET,
    ModelStream,
    Notification,
    NotificationStream,
    SessiondClient,
    Subscription,
    UpdateStream,
    connect,
)

__all__ = [
    "RECONNECTED",
    "UNSET",
    "Client",
    "CompactionRunning",
    "ConnectionClosed",
    "ConnectionClosedError",
    "DaemonUnavailable",
    "EntryNotFound",
    "InvalidParams",
    "LeafMismatch",
    "ModelStream",
    "NotFound",
    "Notification",
    "NotificationStream",
    "Overloaded",
    "ReadOnly",
    "RequestCancelled",
    "RpcError",
    "SessionNotFound",
    "SessiondClient",
    "SessiondError",
    "SessiondSyncClient",
    "Subscription",
    "UpdateStream",
    "connect",
    "connect_sync",
    "default_store",
    "errors",
    "socket_path",
    "token_path",
]
