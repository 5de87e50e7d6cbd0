"""``sessiond connect``: the stdio <-> socket bridge an editor spawns.

An editor's language-client machinery wants a program that speaks JSON-RPC on stdio. This
is that program, but it holds no state: it copies bytes both ways between its stdio and the
daemon's Unix socket (either framing passes through untouched), so the editor shares the
one daemon — one index, one writer per session — with every agent. When no daemon runs it
starts one (detached, logging to ``<store>/daemon.log``) and waits for its socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from sessiond_protocol.errors import ErrorCode

from ..errors import SessiondError
from ..service.config import Config

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


async def _open(path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(str(path), limit=2**24)


async def connect_or_start(config: Config) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    path = config.socket
    try:
        return await _open(path)
    except (FileNotFoundError, ConnectionRefusedError):
        pass
    proc = start_daemon(config)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        try:
            return await _open(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if proc.poll() is not None:
                # It exited: maybe another daemon won the race for the store lock.
                with contextlib.suppress(FileNotFoundError, ConnectionRefusedError):
                    return await _open(path)
                raise DaemonUnavailableError(
                    f"sessiond serve exited with code {proc.returncode}; see {config.root / 'daemon.log'}"
                ) from None
    raise DaemonUnavailableError(f"sessiond did not open {path} within {START_TIMEOUT:.0f} s")


async def _pump(reader: asyncio.StreamReader, write: object, close: object) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            write(data)  # type: ignore[operator]
    finally:
        close()  # type: ignore[operator]


async def bridge(config: Config) -> int:
    sock_reader, sock_writer = await connect_or_start(config)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin.buffer)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)

    def write_out(data: bytes) -> None:
        out.write(data)

    def end_socket_write() -> None:
        with contextlib.suppress(OSError):
            sock_writer.write_eof()

    to_daemon = asyncio.ensure_future(_pump(stdin, sock_writer.write, end_socket_write))
    to_client = asyncio.ensure_future(_pump(sock_reader, write_out, lambda: None))
    await to_client  # the daemon closed the connection (or the client said exit)
    to_daemon.cancel()
    with contextlib.suppress(OSError):
        sock_writer.close()
    out.close()
    return 0
