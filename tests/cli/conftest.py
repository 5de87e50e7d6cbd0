"""The installed ``sessiond`` command, run as a subprocess against a real daemon on a temp store.

One daemon serves the whole package (starting one costs about half a second); each test that
changes something works on sessions of its own. The store holds the bundled example session,
Pi's own directory one of Pi's v1 fixtures, and Claude Code's projects directory a real
transcript, so every root and both formats are exercised.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.builders import assistant, user
from tests.conftest import CLAUDE_FIXTURES, PI_FIXTURES, REPO
from tests.harness import zygote
from tests.harness.daemon import Daemon, start_daemon

SESSIOND = Path(sys.executable).parent / "sessiond"
EXAMPLE = REPO / "examples" / "auth-refactor.jsonl"
EXAMPLE_ID = "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"
PI_V1 = PI_FIXTURES / "before-compaction.v1.jsonl"
PI_V1_ID = "ffae836b-9420-4060-ac13-7745215f90ff"
CLAUDE_DIR = CLAUDE_FIXTURES
CLAUDE_SAMPLE = CLAUDE_DIR / "ccl-2.1.42" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
CLAUDE_ID = "03eb5929-52b3-4b13-ada3-b93ae35806b8"
CLAUDE_CWD = "/home/user/project"


@dataclass
class Cli:
    """Runs ``sessiond`` with the daemon's store, socket and environment."""

    daemon: Daemon

    @property
    def env(self) -> dict[str, str]:
        env = dict(self.daemon.env)
        for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS"):
            env.pop(name, None)
        return env

    def args(self, *args: str) -> list[str]:
        return [str(SESSIOND), *args, "--socket", str(self.daemon.socket)]

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return run_sessiond(self.args(*args)[1:], env={**self.env, **(env or {})}, timeout=timeout)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.args(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
        )


def run_plain(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``sessiond`` with exactly these arguments (no socket added)."""
    return run_sessiond(list(args), env=env, timeout=60)


def run_sessiond(args: list[str], *, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """The installed ``sessiond`` script on ``args``, its output captured as text, no stdin.

    Forked from the worker's zygote (tests/harness/zygote.py: the script's own argv, path,
    environment and streams; ~0.3 s of CPU of imports saved per call), else exec'd. Tests of
    start-up itself (imports, ``--help``) start the script themselves."""
    done = zygote.run_script(str(SESSIOND), args, env, timeout)
    if done is not None:
        return done
    return subprocess.run(
        [str(SESSIOND), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


def isolated_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIOND_CONFIG", "FORCE_COLOR", "NO_COLOR")}
    env.update(
        SESSIOND_HOME=str(tmp / "store"),
        CLAUDE_CONFIG_DIR=str(tmp / "claude"),
        PI_CODING_AGENT_DIR=str(tmp / "pi"),
    )
    return env


def _populate(tmp: Path) -> None:
    sessions = tmp / "store" / "sessions" / "--home-dev-webapp--"
    sessions.mkdir(parents=True)
    target = sessions / f"2026-07-29T09-00-00-000Z_{EXAMPLE_ID}.jsonl"
    shutil.copyfile(EXAMPLE, target)
    pi = tmp / "pi" / "sessions" / "--Users-badlogic-workspaces-pi-mono--"
    pi.mkdir(parents=True)
    shutil.copyfile(PI_V1, pi / PI_V1.name)
    claude = tmp / "claude" / "projects" / "-home-user-project"
    claude.mkdir(parents=True)
    shutil.copyfile(CLAUDE_SAMPLE, claude / CLAUDE_SAMPLE.name)
    for path in (tmp / "store", tmp / "pi", tmp / "claude"):
        for p in [path, *path.rglob("*")]:
            p.chmod(0o700 if p.is_dir() else 0o600)


@pytest.fixture(scope="package")
def cli_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("cli")
    _populate(tmp)
    daemon = start_daemon(tmp)
    try:
        yield daemon
    finally:
        code = daemon.stop()
        assert code == 0, daemon.log_text()


@pytest.fixture
def cli(cli_daemon: Daemon) -> Cli:
    return Cli(cli_daemon)


async def new_session(client: Any, cwd: Path | str, texts: list[str]) -> tuple[str, list[str]]:
    """A session with alternating user/assistant messages; returns its id and entry ids."""
    created = await client.request("session/new", {"cwd": str(cwd)})
    sid = created["sessionId"]
    entries = [
        {"type": "message", "message": user(t) if i % 2 == 0 else assistant(t, total=100 * (i + 1))}
        for i, t in enumerate(texts)
    ]
    appended = await client.request("session/append", {"sessionId": sid, "entries": entries})
    return sid, appended["entryIds"]


def stop_daemon_of(store: Path) -> None:
    """SIGTERM the daemon holding ``store``'s lock (one a command started) and wait for it."""
    lock = store / "daemon.lock"
    with contextlib.suppress(OSError, ValueError):
        pid = int(lock.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
