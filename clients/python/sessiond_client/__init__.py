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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# The names load on first use (PEP 562): `from sessiond_client.client import Client` (the
# transport core, all the `sessiond` command line needs) must not build the typed facade and
# every pydantic model of the protocol first (~0.1 s; issue 30).
_WHERE = {
    "errors": "",
    **dict.fromkeys(("Client", "ConnectionClosedError", "RpcError"), "client"),
    **dict.fromkeys(("default_store", "socket_path", "token_path"), "discovery"),
    **dict.fromkeys(
        (
            "CompactionRunning",
            "ConnectionClosed",
            "DaemonUnavailable",
            "EntryNotFound",
            "InvalidParams",
            "LeafMismatch",
            "NotFound",
            "Overloaded",
            "ReadOnly",
            "RequestCancelled",
            "SessiondError",
            "SessionNotFound",
        ),
        "errors",
    ),
    **dict.fromkeys(("SessiondSyncClient", "connect_sync"), "sync"),
    **dict.fromkeys(
        (
            "RECONNECTED",
            "UNSET",
            "ModelStream",
            "Notification",
            "NotificationStream",
            "SessiondClient",
            "Subscription",
            "UpdateStream",
            "connect",
        ),
        "typed",
    ),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = (
        importlib.import_module(f"{__name__}.{name}")
        if module == ""
        else getattr(importlib.import_module(f"{__name__}.{module}"), name)
    )
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


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
