"""Finding the daemon of a store, starting it when none runs, and the three ways to connect.

The rules are the daemon's own (``sessiond.service.config``), restated here so the client does
not import the daemon:

* the store: ``$SESSIOND_HOME``, else ``$XDG_DATA_HOME/sessiond``, else ``~/.local/share/sessiond``;
* its socket: ``$XDG_RUNTIME_DIR/sessiond/sessiond.sock`` for the per-user store
  (``$XDG_DATA_HOME/sessiond``, else ``~/.local/share/sessiond``) when that runtime directory
  exists, else — also for a store ``$SESSIOND_HOME`` names elsewhere — ``<store>/run/sessiond.sock``
  (two stores never share a socket);
* the TCP token: ``<store>/tcp.token``.

A :class:`Connector` opens one transport :class:`~sessiond_client.client.Client`; the typed
client keeps its connector to open a new one when it reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .client import Client
from .errors import DaemonUnavailable

START_TIMEOUT = 10.0
"""Seconds a started daemon may take to open its socket."""

DEFAULT_DAEMON_ARGV: tuple[str, ...] = (sys.executable, "-m", "sessiond")
"""How the daemon is run (``serve`` and its options follow): this interpreter's sessiond."""


def default_store(env: Mapping[str, str] | None = None) -> Path:
    """The store a daemon started without ``--store`` serves."""
    env = os.environ if env is None else env
    if env.get("SESSIOND_HOME"):
        return Path(env["SESSIOND_HOME"]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sessiond"
    return Path.home() / ".local" / "share" / "sessiond"


def _is_default_store(store: Path, env: Mapping[str, str]) -> bool:
    try:
        default = default_store({k: v for k, v in env.items() if k != "SESSIOND_HOME"})
        return store.resolve() == default.resolve()
    except OSError:
        return False


def socket_path(store: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where the daemon of ``store`` (default: :func:`default_store`) listens."""
    env = os.environ if env is None else env
    root = Path(store).expanduser() if store is not None else default_store(env)
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg) and _is_default_store(root, env):
        return Path(xdg) / "sessiond" / "sessiond.sock"
    return root / "run" / "sessiond.sock"


def token_path(store: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The file holding the TCP token of ``store``'s daemon."""
    root = Path(store).expanduser() if store is not None else default_store(env)
    return root / "tcp.token"


def read_token(path: str | os.PathLike[str]) -> str:
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise DaemonUnavailable(f"cannot read the TCP token file {path}: {exc.strerror or exc}") from None
    if not token:
        raise DaemonUnavailable(f"the TCP token file {path} is empty")
    return token


def start_daemon(
    store: Path,
    socket: Path,
    *,
    argv: Sequence[str] = DEFAULT_DAEMON_ARGV,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``sessiond serve`` for ``store`` in the background, as ``sessiond connect`` does:
    its own session, no terminal, logging to ``<store>/daemon.log``."""
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    args = [*argv, "serve", "--store", str(store), "--socket", str(socket)]
    with open(store / "daemon.log", "ab") as log:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=dict(env) if env is not None else None,
        )


class Connector(Protocol):
    """Opens a new transport connection (at first, and again on every reconnect)."""

    async def open(self, framing: str) -> Client: ...

    def auth_token(self) -> str | None:
        """What ``initialize.authToken`` must carry on this transport (TCP), else None."""
        ...


@dataclass
class UnixConnector:
    """The daemon's Unix socket; with ``start``, the daemon is started when none answers."""

    store: Path
    socket: Path
    start: bool = True
    daemon_argv: Sequence[str] = DEFAULT_DAEMON_ARGV
    daemon_env: Mapping[str, str] | None = None
    start_timeout: float = START_TIMEOUT
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    """The daemon this connector started last, if any."""

    async def _try(self, framing: str) -> Client | None:
        try:
            return await Client.connect_unix(self.socket, framing=framing)
        except (FileNotFoundError, ConnectionRefusedError):
            return None

    async def open(self, framing: str) -> Client:
        client = await self._try(framing)
        if client is not None:
            return client
        if not self.start:
            raise DaemonUnavailable(f"no sessiond listens on {self.socket}")
        proc = start_daemon(self.store, self.socket, argv=self.daemon_argv, env=self.daemon_env)
        self.process = proc
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            client = await self._try(framing)
            if client is not None:
                return client
            if proc.poll() is not None:
                # It exited: maybe another daemon won the race for the store lock.
                await asyncio.sleep(0.05)
                client = await self._try(framing)
                if client is not None:
                    return client
                raise DaemonUnavailable(
                    f"sessiond serve exited with code {proc.returncode}; see {self.store / 'daemon.log'}"
                )
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        raise DaemonUnavailable(f"sessiond did not open {self.socket} within {self.start_timeout:.0f} s")

    def auth_token(self) -> str | None:
        return None


@dataclass
class TcpConnector:
    """Loopback TCP; the token is ``token``, else read from ``token_file`` at each connection."""

    host: str
    port: int
    token: str | None = None
    token_file: Path | None = None

    async def open(self, framing: str) -> Client:
        try:
            return await Client.connect_tcp(self.host, self.port, framing=framing)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot connect to {self.host}:{self.port}: {exc}") from None

    def auth_token(self) -> str | None:
        if self.token is not None:
            return self.token
        return read_token(self.token_file) if self.token_file is not None else None


@dataclass
class StdioConnector:
    """A server process speaking on its stdio (default ``sessiond serve --stdio``), one per
    connection. It takes the store's lock, so it only works when no daemon runs for the store.
    Its stderr (the daemon's log) goes to ``log`` when given, else to this process's stderr."""

    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    log: Path | None = None

    async def open(self, framing: str) -> Client:
        stderr = None
        try:
            if self.log is not None:
                self.log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                stderr = open(self.log, "ab")  # noqa: SIM115 (the child keeps its own copy)
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=dict(self.env) if self.env is not None else None,
                limit=2**26,
            )
        except OSError as exc:
            raise DaemonUnavailable(f"cannot run {self.argv[0]}: {exc}") from None
        finally:
            if stderr is not None:
                stderr.close()
        assert proc.stdout is not None and proc.stdin is not None
        return Client(proc.stdout, proc.stdin, framing=framing, process=proc)

    def auth_token(self) -> str | None:
        return None


def stdio_argv(
    store: str | os.PathLike[str] | None = None, daemon_argv: Sequence[str] = DEFAULT_DAEMON_ARGV
) -> list[str]:
    args = [*daemon_argv, "serve", "--stdio"]
    if store is not None:
        args += ["--store", str(Path(store).expanduser())]
    return args
