"""Fixtures for the typed Python client: the real daemon on a temporary store, typed clients."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import SessiondClient
from tests.builders import assistant, tool_result, user
from tests.harness.calls import msg
from tests.harness.daemon import Daemon
from tests.harness.fixtures import daemon, file_daemon, shared_daemon, stop_cleanly

__all__ = [
    "client",
    "daemon",
    "daemon_env",
    "file_daemon",
    "session_with_turns",
    "shared_daemon",
    "stop_cleanly",
    "turn",
]


def now(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "timestamp": int(time.time() * 1000)}


def turn(i: int, size: int = 400) -> list[dict[str, Any]]:
    """A user request, an assistant reading a file, the result, and the answer."""
    body = f"line {i} " * (size // 7)
    call = {"type": "toolCall", "id": f"call_{i}", "name": "read", "arguments": {"path": f"src/mod{i}.py"}}
    reading = assistant(f"Reading mod{i}")
    reading["content"].append(call)
    return [
        msg(now(user(f"Request {i}: please look at src/mod{i}.py and fix the bug"))),
        msg(now(reading)),
        msg(now(tool_result(body, f"call_{i}", "read"))),
        msg(now(assistant(f"Fixed the bug in src/mod{i}.py by checking for None."))),
    ]


async def session_with_turns(c: SessiondClient, n: int, *, cwd: str = "/work/proj", **settings: Any) -> str:
    """A subscribed session with ``n`` turns and a small ``keepRecentTokens`` (so it compacts)."""
    created = await c.session_new(cwd=cwd, subscribe=True)
    sid = created.sessionId
    await c.compaction_settings(sid, set={"keepRecentTokens": 300, **settings})
    for i in range(n):
        await c.append(sid, turn(i))
    return sid


def daemon_env(tmp: Path) -> dict[str, str]:
    """The environment of a daemon the client starts itself: no user config, isolated agent dirs."""
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIOND_CONFIG", "SESSIOND_HOME")}
    (tmp / "empty-config.toml").write_text("")
    env["SESSIOND_CONFIG"] = str(tmp / "empty-config.toml")
    env["CLAUDE_CONFIG_DIR"] = str(tmp / "claude")
    env["PI_CODING_AGENT_DIR"] = str(tmp / "pi")
    return env


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[SessiondClient]:
    c = await SessiondClient.connect(socket=daemon.socket, start=False, name="pytest")
    try:
        yield c
    finally:
        with contextlib.suppress(Exception):
            await c.close()
