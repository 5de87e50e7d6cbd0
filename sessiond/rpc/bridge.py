"""``sessiond connect``: the stdio <-> socket bridge an editor spawns.

An editor's language-client machinery wants a program that speaks JSON-RPC on stdio. This
is that program, but it holds no state: it copies bytes both ways between its stdio and the
daemon's Unix socket (either framing passes through untouched), so the editor shares the
one daemon — one index, one writer per session — with every agent. When no daemon runs it
starts one (detached, logging to ``<store>/daemon.log``) and waits for its socket.

Everything the daemon sends is forwarded, also after the daemon stopped reading (it closes a
connection after a broken frame): a failed write towards the daemon ends only that direction.
The exit status tells an editor whether the conversation ended as it should: 0 when the daemon
closed after the client finished (its stdin ended, or it sent ``exit``); 1, with the reason on
stderr, when the daemon hung up first or closed because of what it could not read (an error
with ``data.closing``). To tell, the bridge follows message boundaries in both directions
(``MessageTap``) and looks only at small messages; it never changes a byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from sessiond_protocol.errors import ErrorCode

from ..errors import SessiondError
from ..service.config import Config
from .framing import MessageTap

START_TIMEOUT = 10.0


class DaemonUnavailableError(SessiondError):
    """No daemon answers and none could be started. Raised by ``sessiond connect`` (and the
    command line) before any request, so never an error answer; were it one, a bug."""

    error_code = ErrorCode.INTERNAL_ERROR


def start_daemon(config: Config) -> subprocess.Popen[bytes]:
    """Start ``sessiond serve`` for this store in the background (its own session, no tty)."""
    log_path = config.root / "daemon.log"
    config.layout.ensure_dirs()
    args = [sys.executable, "-m", "sessiond", "serve", "--store", str(config.root)]
    if config.socket_path is not None:
        args += ["--socket", str(config.socket_path)]
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
        )


async def _connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, str(path))
    except BaseException:
        sock.close()
        raise
    return sock


Started = Callable[[int, Path], None]
"""Told the pid and log file of a daemon :func:`connect_or_start` started (once it answers)."""


async def connect_or_start(
    config: Config, on_start: Started | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams on the daemon's socket, starting the daemon when none answers."""
    sock = await _socket_or_start(config, on_start)
    return await asyncio.open_unix_connection(sock=sock, limit=2**24)


async def open_client(
    config: Config, name: str, *, start: bool = True, on_start: Started | None = None, timeout: float = 15.0
) -> Any:
    """An initialised :class:`sessiond_client.client.Client` on the daemon's socket (the daemon
    started when none answers, with ``start``): what the faces that are clients of the daemon
    (``sessiond mcp``, ``sessiond acp``) hold. Raises :class:`DaemonUnavailableError` (none could
    be started), ``OSError`` (none answers) or the client's errors from ``initialize``."""
    from sessiond_client.client import Client  # noqa: PLC0415

    from .. import __version__  # noqa: PLC0415

    if start:
        reader, writer = await connect_or_start(config, on_start)
    else:
        reader, writer = await asyncio.open_unix_connection(str(config.socket), limit=2**26)
    client = Client(reader, writer)
    info = {"name": name, "version": __version__}
    try:
        await client.request("initialize", {"protocolVersion": 1, "clientInfo": info}, timeout=timeout)
        await client.notify("initialized", {})
    except BaseException:
        with contextlib.suppress(Exception):
            await client.close()
        raise
    return client


async def _socket_or_start(config: Config, on_start: Started | None = None) -> socket.socket:
    path = config.socket
    try:
        return await _connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        pass
    proc = start_daemon(config)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        try:
            opened = await _connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if proc.poll() is not None:
                # It exited: maybe another daemon won the race for the store lock.
                with contextlib.suppress(FileNotFoundError, ConnectionRefusedError):
                    return await _connect(path)
                raise DaemonUnavailableError(
                    f"sessiond serve exited with code {proc.returncode}; see {config.root / 'daemon.log'}"
                ) from None
        else:
            if on_start is not None and proc.poll() is None:  # not another daemon that won a race
                on_start(proc.pid, config.root / "daemon.log")
            return opened
    raise DaemonUnavailableError(f"sessiond did not open {path} within {START_TIMEOUT:.0f} s")


class _Conversation:
    """What the bridge saw pass, to tell a normal end from the daemon hanging up on the client."""

    def __init__(self) -> None:
        self.client_ended = False
        """The client's stdin ended, or it sent ``exit``."""
        self.client_gone = False
        """Writing to the client's stdout failed."""
        self.closing_error: str | None = None
        """The message of an error the daemon closes the connection after (``data.closing``)."""
        self._from_client = MessageTap()
        self._from_daemon = MessageTap()

    def from_client(self, data: bytes) -> None:
        for body in self._from_client.feed(data):
            if b'"exit"' in body:
                message = _json(body)
                if message.get("method") == "exit" and "id" not in message:
                    self.client_ended = True

    def from_daemon(self, data: bytes) -> None:
        for body in self._from_daemon.feed(data):
            if b'"closing"' not in body:
                continue
            error = _json(body).get("error")
            if not isinstance(error, dict):
                continue
            details = error.get("data")
            if isinstance(details, dict) and details.get("closing") is True:
                self.closing_error = str(error.get("message"))

    def failure(self) -> str | None:
        """Why the daemon's close was not the end the client asked for; None when it was."""
        if self.closing_error is not None:
            return f"the daemon closed the connection after an error: {self.closing_error}"
        if not self.client_ended:
            return "the daemon closed the connection before the client was done"
        return None


def _json(body: bytes) -> dict[str, Any]:
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return message if isinstance(message, dict) else {}


async def bridge(config: Config, on_start: Started | None = None) -> int:
    """Copy stdin to the daemon and the daemon to stdout until the daemon closes; the exit status
    (see the module docstring)."""
    sock = await _socket_or_start(config, on_start)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin.buffer)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    seen = _Conversation()

    async def to_daemon() -> None:
        while data := await stdin.read(65536):
            seen.from_client(data)
            try:
                await loop.sock_sendall(sock, data)
            except OSError:
                return  # the daemon stopped reading; what it sent is still read below
        seen.client_ended = True
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    async def to_client() -> None:
        while True:
            try:
                data = await loop.sock_recv(sock, 65536)
            except OSError:
                return
            if not data:
                return
            seen.from_daemon(data)
            try:
                out.write(data)
            except OSError:
                seen.client_gone = True
                return

    sending = asyncio.ensure_future(to_daemon())
    try:
        await to_client()  # until the daemon closes the connection (or the client is gone)
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        sock.close()
        with contextlib.suppress(OSError):
            out.close()
    if seen.client_gone:
        return 1
    reason = seen.failure()
    if reason is not None:
        print(f"sessiond connect: {reason}", file=sys.stderr)
        return 1
    return 0
