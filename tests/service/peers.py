"""A connection as the service sees it (``sessiond.service.peer.Peer``), without a socket.

It records what the service sent it — ``session/update`` notifications, ``window/logMessage``
lines, server -> client requests — and answers requests with ``answer`` (a function of the
method and params; raising ``ConnectionError`` plays a client that went away).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiond.service.config import load_config
from sessiond.service.peer import Peer
from sessiond.service.service import Service

_ids = itertools.count(1)

Answer = Callable[[str, Any], Awaitable[Any]]


async def _no_answer(method: str, params: Any) -> Any:
    raise ConnectionError(f"this peer does not answer {method}")


@dataclass
class FakePeer:
    summarizer: bool = False
    answer: Answer = _no_answer
    id: int = field(default_factory=lambda: next(_ids))
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    logs: list[tuple[int, str]] = field(default_factory=list)
    requests: list[tuple[str, Any]] = field(default_factory=list)

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.updates.append((session_id, update))

    def log_message(self, level: int, message: str) -> None:
        self.logs.append((level, message))

    async def request_client(self, method: str, params: Any) -> Any:
        self.requests.append((method, params))
        return await self.answer(method, params)

    def kinds(self, session_id: str | None = None) -> list[str]:
        """The ``sessionUpdate`` kinds received (of one session, or all)."""
        return [u["sessionUpdate"] for sid, u in self.updates if session_id in (None, sid)]


def _is_a_peer(peer: FakePeer) -> Peer:
    return peer  # mypy: the fake satisfies the protocol the service takes


BACKEND_CONFIG: list[str] = []
"""The config text selecting the store backend of this test (set by the ``service_backend``
fixture; empty: the local store)."""
SERVICES: list[Service] = []
"""Services made during a test with a shared backend (their connections are closed after it)."""


def make_service(tmp_path: Path, env: dict[str, str] | None = None) -> Service:
    """A service on a fresh store under ``tmp_path`` (nothing started: no watcher, no socket)."""
    env = dict(env or {})
    if BACKEND_CONFIG and "SESSIOND_CONFIG" not in env:
        config = tmp_path / "backend.toml"
        config.write_text(BACKEND_CONFIG[0])
        env["SESSIOND_CONFIG"] = str(config)
    service = Service(load_config(env, root=tmp_path / "store", socket=tmp_path / "sessiond.sock"))
    if BACKEND_CONFIG:
        SERVICES.append(service)
    return service
