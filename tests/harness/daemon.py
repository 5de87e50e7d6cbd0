"""The real daemon for tests: one way to start it, know it is ready, and stop it.

Every test that needs a running daemon starts it here: ``python -m sessiond serve`` on a
temporary store and a real Unix socket (and, with ``--tcp``, a loopback TCP port), logging to
``<tmp>/daemon.log``. The daemon is **ready** when a client can connect and complete
``initialize`` — not when its socket file exists: under load the file appears before the
daemon accepts (and a killed daemon's stale socket is still there when its successor starts),
which made tests fail at random. The probe retries with backoff until a deadline; a daemon
that exits, or never answers, fails the test with its log.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sessiond_client import Client
from sessiond_protocol import PROTOCOL_VERSION, ErrorCode
from tests.harness import zygote
from tests.harness.zygote import ForkedProcess

READY_TIMEOUT = 60.0
"""Seconds a daemon may take to become ready (the CI machine is shared and often loaded)."""
PROBE_TIMEOUT = 10.0
"""Seconds one probe connection may wait for the daemon's answer."""
TCP_LISTENING = re.compile(r"listening on tcp (\S+):(\d+) ")
DaemonProcess = subprocess.Popen[bytes] | ForkedProcess
"""An exec'd daemon, or one forked from the zygote (the same calls: poll, wait, send_signal, ...)."""


class DaemonNotReady(RuntimeError):
    """The daemon exited, refused the probe, or did not answer it before the deadline."""


@dataclass
class Daemon:
    store: Path
    socket: Path
    process: DaemonProcess
    log: Path
    tcp: tuple[str, int] | None = None
    """The loopback address the daemon listens on with ``--tcp`` (the bound port, not 0)."""
    env: dict[str, str] = field(default_factory=dict)

    async def client(
        self, framing: str = "content-length", *, initialize: bool = True, **caps: object
    ) -> Client:
        client = await Client.connect_unix(self.socket, framing=framing)
        if initialize:
            await client.initialize("pytest", **caps)
        return client

    @property
    def tcp_token(self) -> str:
        return (self.store / "tcp.token").read_text().strip()

    def stop(self) -> int:
        """SIGTERM, then the exit code (SIGKILL after 10 s without exit)."""
        code = self.process.poll()
        if code is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                return self.process.wait()
        return code

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def daemon_env(tmp: Path, env: dict[str, str] | None = None, config: str | None = None) -> dict[str, str]:
    """The daemon's environment: the store in ``tmp``, no user config, other agents' directories
    (Claude Code's, Pi's) inside ``tmp`` so a test never reads or watches the real ones."""
    run_env = {
        **os.environ,
        "SESSIOND_HOME": str(tmp / "store"),
        "CLAUDE_CONFIG_DIR": str(tmp / "claude"),
        "PI_CODING_AGENT_DIR": str(tmp / "pi"),
        "CODEX_HOME": str(tmp / "codex"),
        "XDG_DATA_HOME": str(tmp / "data"),
        **(env or {}),
    }
    run_env.pop("SESSIOND_CONFIG", None)
    if config is not None:
        (tmp / "config.toml").write_text(config)
        run_env["SESSIOND_CONFIG"] = str(tmp / "config.toml")
    return run_env


def start_daemon(
    tmp: Path,
    *extra: str,
    config: str | None = None,
    env: dict[str, str] | None = None,
    socket_path: Path | None = None,
    timeout: float = READY_TIMEOUT,
    nofile: tuple[int, int] | None = None,
) -> Daemon:
    """Start ``sessiond serve`` on ``<tmp>/store`` and return it once it is ready.

    ``extra`` are more ``serve`` arguments (``"--tcp", "127.0.0.1:0"``), ``config`` the text of
    a config file, ``env`` extra environment. The socket is ``<tmp>/run/sessiond.sock`` unless
    ``socket_path`` says otherwise; ``nofile`` the daemon's (soft, hard) open-file limit.
    Starting again on the same ``tmp`` (after a stop or a kill)
    reuses the store, the socket path and the log (appended to).
    """
    store = tmp / "store"
    store.mkdir(parents=True, exist_ok=True)
    sock = socket_path or tmp / "run" / "sessiond.sock"
    log = tmp / "daemon.log"
    run_env = daemon_env(tmp, env, config)
    args = [sys.executable, "-m", "sessiond", "serve", "--socket", str(sock), "--log-level", "debug", *extra]
    with open(log, "ab") as out:
        offset = out.tell()
        # forked from this worker's pre-imported zygote (tests/harness/zygote.py), else exec'd
        proc: DaemonProcess | None = zygote.spawn(args[3:], run_env, out.fileno(), out.fileno(), nofile)
        if proc is None:
            limit = None if nofile is None else lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile)
            # the limit is set in the child between fork and exec (no lock is taken there)
            proc = subprocess.Popen(args, stdout=out, stderr=out, env=run_env, preexec_fn=limit)  # noqa: PLW1509
    daemon = Daemon(store, sock, proc, log, env=run_env)
    try:
        wait_until_ready(sock, proc, log, timeout=timeout, log_offset=offset)
        if "--tcp" in extra:
            daemon.tcp = _wait_for_tcp(daemon, offset, time.monotonic() + timeout)
    except BaseException:
        daemon.stop()
        raise
    return daemon


def wait_until_ready(
    sock: Path,
    process: subprocess.Popen[Any] | ForkedProcess | None,
    log: Path | None,
    *,
    timeout: float = READY_TIMEOUT,
    log_offset: int = 0,
) -> None:
    """Return once a client can connect to ``sock`` and complete ``initialize``.

    Retries with backoff (10 ms doubling to 50 ms) until ``timeout``; raises
    :class:`DaemonNotReady` with the daemon's log (from ``log_offset``) when ``process`` exits
    first or the deadline passes.
    """
    deadline = time.monotonic() + timeout
    _retry(lambda: _probe_unix(sock), process, log, log_offset, deadline, f"the daemon on {sock}")


def _wait_for_tcp(daemon: Daemon, offset: int, deadline: float) -> tuple[str, int]:
    """The TCP address, from the daemon's own line (the port was 0), once a client authenticates."""
    found: list[tuple[str, int]] = []

    def probe() -> None:
        if not found:
            match = TCP_LISTENING.search(_log_since(daemon.log, offset))
            if match is None:
                raise ConnectionRefusedError("not listening on tcp yet")
            found.append((match.group(1), int(match.group(2))))
        _probe_tcp(found[0], daemon.tcp_token)

    _retry(probe, daemon.process, daemon.log, offset, deadline, "the daemon's TCP listener")
    return found[0]


def _retry(
    probe: Any,
    process: subprocess.Popen[Any] | ForkedProcess | None,
    log: Path | None,
    offset: int,
    deadline: float,
    what: str,
) -> None:
    delay = 0.01
    last: BaseException | None = None
    while True:
        if process is not None and process.poll() is not None:
            raise DaemonNotReady(f"{what} exited with {process.returncode}:\n{_log_since(log, offset)}")
        try:
            probe()
            return
        except (OSError, ValueError) as exc:  # not listening yet, reset, torn answer
            last = exc
        now = time.monotonic()
        if now >= deadline:  # the last attempt was made at the deadline: the whole timeout passed
            raise DaemonNotReady(
                f"{what} was not ready in time (last attempt: {last!r}):\n{_log_since(log, offset)}"
            )
        time.sleep(min(delay, deadline - now))
        # at most 50 ms between tries: a daemon takes 1-3 s to start, and with 200 ms every start
        # waited ~100 ms past its readiness (~300-400 starts a run); a refused connect costs nothing
        delay = min(delay * 2, 0.05)


def _probe_unix(path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(PROBE_TIMEOUT)
        s.connect(str(path))
        _handshake(s, None)


def _probe_tcp(address: tuple[str, int], token: str) -> None:
    with socket.create_connection(address, timeout=PROBE_TIMEOUT) as s:
        _handshake(s, token)


def _handshake(s: socket.socket, token: str | None) -> None:
    """``initialize`` and ``exit`` over NDJSON; returns when the daemon has closed the
    connection, so the probe is gone (not counted against connection limits) when a test starts."""
    params: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION, "clientInfo": {"name": "test-harness"}}
    if token is not None:
        params["authToken"] = token
    s.sendall(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}) + b"\n")
    buffer = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionResetError("the daemon closed the connection before answering initialize")
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        answers = [m for m in map(orjson.loads, filter(None, lines)) if m.get("id") == 1]
        if answers:
            break
    error = answers[0].get("error")
    if error is not None and error.get("code") != ErrorCode.PROTOCOL_VERSION_MISMATCH:
        # one built for another protocol version answers, so it is ready (tests/rpc/test_version.py)
        raise DaemonNotReady(f"the daemon refused initialize: {error}")
    s.sendall(orjson.dumps({"jsonrpc": "2.0", "method": "exit"}) + b"\n")
    while s.recv(65536):
        pass


def _log_since(log: Path | None, offset: int) -> str:
    if log is None or not log.exists():
        return "(no log)"
    with open(log, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")[-20000:]
