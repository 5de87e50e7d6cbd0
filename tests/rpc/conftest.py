"""The real daemon, started as a subprocess on a temporary store, for integration tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sessiond_client import Client


@dataclass
class Daemon:
    store: Path
    socket: Path
    process: subprocess.Popen[bytes]
    log: Path
    tcp: tuple[str, int] | None = None
    env: dict[str, str] = field(default_factory=dict)

    async def client(
        self, framing: str = "content-length", *, initialize: bool = True, **caps: object
    ) -> Client:
        client = await Client.connect_unix(self.socket, framing=framing)
        if initialize:
            await client.initialize("pytest", **caps)
        return client

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                return self.process.wait()
        return self.process.returncode

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start_daemon(
    tmp: Path,
    *extra: str,
    config: str | None = None,
    env: dict[str, str] | None = None,
    wait_for: str = "socket",
) -> Daemon:
    store = tmp / "store"
    store.mkdir(parents=True, exist_ok=True)
    socket = tmp / "run" / "sessiond.sock"
    log = tmp / "daemon.log"
    # Other agents' directories point into the test's tmp dir, never at the user's real ones.
    isolated = {
        "CLAUDE_CONFIG_DIR": str(tmp / "claude"),
        "PI_CODING_AGENT_DIR": str(tmp / "pi"),
        "CODEX_HOME": str(tmp / "codex"),
        "XDG_DATA_HOME": str(tmp / "data"),
    }
    run_env = {**os.environ, "SESSIOND_HOME": str(store), **isolated, **(env or {})}
    run_env.pop("SESSIOND_CONFIG", None)
    if config is not None:
        (tmp / "config.toml").write_text(config)
        run_env["SESSIOND_CONFIG"] = str(tmp / "config.toml")
    args = [
        sys.executable,
        "-m",
        "sessiond",
        "serve",
        "--socket",
        str(socket),
        "--log-level",
        "debug",
        *extra,
    ]
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=out, env=run_env)
    daemon = Daemon(store, socket, proc, log, env=run_env)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {proc.returncode}:\n{daemon.log_text()}")
        if wait_for == "socket" and socket.exists():
            break
        if wait_for.startswith("log:") and wait_for[4:] in daemon.log_text():
            break
        time.sleep(0.02)
    else:
        daemon.stop()
        raise RuntimeError(f"daemon did not start:\n{daemon.log_text()}")
    return daemon


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        code = d.stop()
        assert code == 0, d.log_text()
        assert not d.socket.exists(), "the socket was not removed on SIGTERM"
        assert "Traceback" not in d.log_text() or "internal error" in d.log_text(), d.log_text()


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[Client]:
    c = await daemon.client()
    try:
        yield c
    finally:
        with contextlib.suppress(Exception):
            await c.close()
