"""``status``, ``stop``, the notice a command gives when it starts the daemon, and a second
``scripts/run`` (issue 14 item 11). Each test has a store and daemon of its own."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import pytest

from sessiond_client import Client
from tests.cli.conftest import SESSIOND, isolated_env, run_plain, stop_daemon_of
from tests.conftest import REPO

pytestmark = pytest.mark.anyio


def _env(tmp_path: Path) -> dict[str, str]:
    env = isolated_env(tmp_path)
    env.pop("XDG_RUNTIME_DIR", None)  # the store's own run/ directory holds the socket
    return env


def _socket(tmp_path: Path) -> Path:
    return tmp_path / "store" / "run" / "sessiond.sock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child of this process that exited is a zombie until reaped: not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def test_status_and_stop_without_a_daemon(tmp_path: Path) -> None:
    env = _env(tmp_path)
    status = run_plain("status", env=env)
    assert status.returncode == 3, status
    assert f"not running for the store {tmp_path / 'store'}" in status.stdout
    as_json = json.loads(run_plain("status", "--json", env=env).stdout)
    assert as_json == {
        "running": False,
        "store": str(tmp_path / "store"),
        "socket": str(_socket(tmp_path)),
        "pid": None,
    }
    stop = run_plain("stop", env=env)
    assert stop.returncode == 3 and "nothing to stop" in stop.stderr
    assert not (tmp_path / "store" / "daemon.log").exists()  # neither started one


async def test_a_read_command_says_it_started_the_daemon_then_status_and_stop(tmp_path: Path) -> None:
    env = _env(tmp_path)
    try:
        listed = run_plain("ls", env=env)
        assert listed.returncode == 0, listed.stderr
        notice = re.search(r"started one \(pid (\d+), log (\S+)\)", listed.stderr)
        assert notice, listed.stderr
        pid, log = int(notice.group(1)), notice.group(2)
        assert log == str(tmp_path / "store" / "daemon.log") and Path(log).exists()
        assert "sessiond stop" in listed.stderr
        again = run_plain("ls", env=env)  # a daemon runs now: no notice
        assert again.returncode == 0 and "started" not in again.stderr

        # A client with an open, subscribed session shows up in status.
        client = await Client.connect_unix(_socket(tmp_path))
        await client.initialize("status-test")
        created = await client.request("session/new", {"cwd": str(tmp_path), "subscribe": True})
        sid = created["sessionId"]

        status = run_plain("status", "--json", env=env)
        assert status.returncode == 0, status.stderr
        s = json.loads(status.stdout)
        assert s["running"] is True and s["pid"] == pid
        assert s["store"] == str(tmp_path / "store") and s["socket"] == str(_socket(tmp_path))
        assert s["log"] == log and s["uptimeSeconds"] >= 0 and s["version"]
        assert [(x["sessionId"], x["subscribers"]) for x in s["sessions"]] == [(sid, 1)]
        by_name = {c["name"]: c for c in s["clients"]}
        assert by_name["status-test"]["subscriptions"] == [sid]
        assert by_name["sessiond-status"]["current"] is True
        assert s["memory"]["budgetBytes"] == 64 * 1024 * 1024 and s["memory"]["rssBytes"] > 0
        text = run_plain("status", env=env)
        assert text.returncode == 0
        assert f"is running: pid {pid}, up " in text.stdout
        assert re.search(r"memory\s+RSS \d+ MiB; [\d.]+ of 64 MiB held parsed", text.stdout), text.stdout
        assert sid in text.stdout and "status-test" in text.stdout and "(this command)" in text.stdout
        await client.close()

        stopped = run_plain("stop", env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped sessiond (pid {pid})" in stopped.stdout
        assert not _socket(tmp_path).exists()
        deadline = time.monotonic() + 10
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _pid_alive(pid)
        assert run_plain("status", env=env).returncode == 3
        assert run_plain("stop", "--json", env=env).returncode == 3
    finally:
        stop_daemon_of(tmp_path / "store")


def test_a_daemon_serving_stdio_holds_the_store_status_says_so_and_stop_stops_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    daemon = subprocess.Popen(
        [str(SESSIOND), "serve", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        lock = tmp_path / "store" / "daemon.lock"
        deadline = time.monotonic() + 30
        while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        status = run_plain("status", env=env)
        assert status.returncode == 1, status
        assert f"(pid {daemon.pid}) holds the store" in status.stderr and "--stdio" in status.stderr
        assert json.loads(run_plain("status", "--json", env=env).stdout)["answering"] is False
        stopped = run_plain("stop", env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert daemon.wait(timeout=10) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def test_stop_gives_up_after_the_timeout(tmp_path: Path) -> None:
    """A process holding the store's lock that ignores SIGTERM: exit 1 with the pid and a hint."""
    env = _env(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            f"f = open({str(store / 'daemon.lock')!r}, 'a+')\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write(f'{os.getpid()}\\n'); f.flush()\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        stopped = run_plain("stop", "--timeout", "0.5", "--json", env=env)
        assert stopped.returncode == 1
        error = json.loads(stopped.stdout)["error"]
        assert error["pid"] == holder.pid and "did not stop within 0.5 s" in error["message"]
        assert f"kill -9 {holder.pid}" in stopped.stderr
        assert run_plain("stop", "--timeout", "0", env=env).returncode == 2
    finally:
        holder.kill()
        holder.wait()


def test_a_second_scripts_run_fails_before_its_banner(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env.pop("VIRTUAL_ENV", None)
    first = subprocess.Popen(
        [str(SESSIOND), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while not _socket(tmp_path).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _socket(tmp_path).exists()
        second = subprocess.run(
            ["bash", str(REPO / "scripts" / "run")],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert second.returncode == 3, second
        assert "sessiond is starting" not in second.stderr
        assert "seeded" not in second.stderr  # nothing is done to the running daemon's store
        assert f"already running for the store {tmp_path / 'store'}" in second.stderr
        assert f"pid {first.pid}" in second.stderr and "sessiond stop" in second.stderr
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=15)


def _subcommands_with(option: str) -> list[str]:
    from sessiond.cli import build_parser  # noqa: PLC0415

    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    # argparse types a subparsers action's choices as any iterable; here it is the name → parser map.
    subparsers = cast("dict[str, argparse.ArgumentParser]", action.choices)
    return sorted(
        name for name, sub in subparsers.items() if any(option in a.option_strings for a in sub._actions)
    )


def test_store_and_socket_help_state_the_real_defaults(tmp_path: Path) -> None:
    """The help says $SESSIOND_HOME, $XDG_DATA_HOME, ~/.local/share/sessiond, $XDG_RUNTIME_DIR
    and <store>/run — and the daemon's paths (as status reports them) follow exactly that."""
    commands = _subcommands_with("--socket")
    assert {"ls", "show", "serve", "connect", "status", "stop", "gc", "doctor"} <= set(commands)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    for command in commands:
        text = " ".join(run_plain(command, "--help", env=env).stdout.split())
        store_default = "$SESSIOND_HOME, else $XDG_DATA_HOME/sessiond, else ~/.local/share/sessiond"
        assert f"--store DIR the store (default: {store_default})" in text, command
        socket_default = (
            "sessiond/sessiond.sock when $XDG_RUNTIME_DIR is set and the store is the per-user one, "
            "$XDG_DATA_HOME/sessiond or ~/.local/share/sessiond; for any other store, also one named "
            "by $SESSIOND_HOME or --store, <store>/run/sessiond.sock"
        )
        assert f"$XDG_RUNTIME_DIR/{socket_default}" in text, command

    def where(extra: dict[str, str]) -> tuple[str, str]:
        done = run_plain("status", "--json", env={**env, **extra})
        assert done.returncode == 3, done
        found = json.loads(done.stdout)
        return found["store"], found["socket"]

    home = tmp_path / "home"
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    default = home / ".local" / "share" / "sessiond"
    assert where({}) == (str(default), str(default / "run" / "sessiond.sock"))
    assert where({"XDG_RUNTIME_DIR": str(runtime)}) == (
        str(default),
        str(runtime / "sessiond" / "sessiond.sock"),
    )
    data = tmp_path / "data"
    assert where({"XDG_DATA_HOME": str(data), "XDG_RUNTIME_DIR": str(runtime)}) == (
        str(data / "sessiond"),
        str(runtime / "sessiond" / "sessiond.sock"),
    )
    own = tmp_path / "own"
    assert where({"SESSIOND_HOME": str(own), "XDG_RUNTIME_DIR": str(runtime)}) == (
        str(own),
        str(own / "run" / "sessiond.sock"),  # not the default store: its own run/ directory
    )
