"""The daemon process: one per store, serving a Unix socket, optionally TCP, or stdio.

* A single daemon per store: an exclusive ``flock`` on ``<store>/daemon.lock`` (the file
  also says which pid holds it); a second ``serve`` fails with a clear message.
* Unix socket in a 0700 directory, the socket itself 0600, and every peer's uid checked
  (``SO_PEERCRED``): a client of another user is refused even if permissions are loosened.
* TCP only on a loopback address, and only for clients that present the token stored in a
  0600 file (``initialize.authToken``).
* stdio: one client on stdin/stdout (for editors that spawn the server themselves).
* the web viewer (:mod:`sessiond.web`): loopback HTTP + WebSocket, TCP's token rules; its
  WebSocket clients are connections like the others.
* SIGTERM/SIGINT: stop accepting, answer what is in flight, flush and close every session,
  remove the socket, release the lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import secrets
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from sessiond_protocol.errors import ErrorCode

from ..errors import SessiondError
from ..net.loopback import parse_loopback
from ..service.config import Config, ConfigError
from ..service.service import Service
from .connection import Connection
from .methods import HANDLERS
from .stream import MessageStream, OpenCallback, OutFlow

if TYPE_CHECKING:
    from ..web.server import ViewerServer

log = logging.getLogger("sessiond.server")


class AlreadyRunningError(SessiondError):
    """Another daemon holds the store's lock. Raised by ``serve`` before any client connects, so
    it is never an error answer (were it one, it would be a bug: an internal error)."""

    error_code = ErrorCode.INTERNAL_ERROR

    def __init__(self, root: Path, pid: str) -> None:
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"sessiond is already running for the store {root}{who}", root=str(root), pid=pid)


class SocketInUseError(SessiondError):
    """A live daemon (of another store: the store lock already excludes this one's) answers on
    the socket path asked for. Taking the path over would silently hand that daemon's clients to
    this store, so ``serve`` refuses before any client connects (never an error answer)."""

    error_code = ErrorCode.INTERNAL_ERROR

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"a daemon is already running on the socket {path} (for another store); "
            "stop it or choose another --socket",
            socket=str(path),
        )


def _socket_answers(path: Path) -> bool:
    """Whether something accepts connections on the Unix socket ``path`` (a refused or missing
    one is stale: its daemon is gone)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
        return True


class StoreLock:
    """The exclusive lock that makes this process the one daemon of its store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        f = open(self.path, "a+")  # noqa: SIM115 (held for the life of the daemon)
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            f.seek(0)
            pid = f.read().strip()
            f.close()
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise AlreadyRunningError(self.path.parent, pid) from None
            raise
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._file = f

    def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.truncate(0)
            self._file.close()
            self._file = None


def peer_uid(sock: socket.socket) -> int | None:
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def read_or_create_token(path: Path) -> str:
    """The TCP token: created (0600) on first use, refused if anyone else may read it."""
    try:
        st = path.stat()
    except FileNotFoundError:
        token = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        return token
    if st.st_mode & 0o077:
        raise ConfigError(
            f"The token file {path} must not be readable by others (chmod 600 it)", path=str(path)
        )
    token = path.read_text().strip()
    if not token:
        raise ConfigError(f"The token file {path} is empty", path=str(path))
    return token


def parse_tcp(address: str) -> tuple[str, int]:
    """``--tcp HOST:PORT``: loopback only, as the viewer (:mod:`sessiond.net.loopback`)."""
    return parse_loopback(address, owner="--tcp", field="tcp")


class Daemon:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.service = Service(config)
        self.connections: set[Connection] = set()
        self._stop = asyncio.Event()
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._follow_task: asyncio.Future[None] | None = None
        self._usage_task: asyncio.Future[None] | None = None
        self.socket_path: Path | None = None
        self.viewer: ViewerServer | None = None
        self.tcp_address: str | None = None
        self.started_at = time.time()

    # ------------------------------------------------------------------ connections

    def _connection(self, source: Any, writer: Any, peer: str, token: str | None) -> Connection:
        conn = Connection(
            source,
            writer,
            HANDLERS,
            self.service,
            self.config.limits,
            peer=peer,
            auth_token=token,
            on_close=self._closed,
        )
        conn.daemon = self
        self.connections.add(conn)
        return conn

    def _closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.service.release(conn)

    async def _serve(self, conn: Connection) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await conn.run()
        finally:
            if task is not None:
                self._tasks.discard(task)

    def _stream(self, on_open: OpenCallback, *, header_timeout: bool = True) -> MessageStream:
        limits = self.config.limits
        timeout = limits.header_timeout if header_timeout else None
        return MessageStream(limits.max_message_bytes, limits.max_header_bytes, timeout, on_open)

    def _start(self, stream: MessageStream, peer: str, token: str | None) -> None:
        """Serve a stream whose peer was accepted: its connection runs as a task of its own."""
        conn = self._connection(stream, stream, peer, token)
        task = asyncio.ensure_future(self._serve(conn))
        self._tasks.add(task)  # held from now on, not only once it started
        task.add_done_callback(self._tasks.discard)

    def _full(self, stream: MessageStream) -> bool:
        if len(self.connections) < self.config.limits.max_connections:
            return False
        log.warning("refusing a connection: %d connections open", len(self.connections))
        error = {"code": -32001, "message": "Overloaded, retry: too many connections"}
        stream.write(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error}) + b"\n")
        stream.close()
        return True

    def _on_unix(self, stream: MessageStream) -> None:
        assert stream.transport is not None
        sock = stream.transport.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.getuid():
            log.warning(
                "refused a Unix-socket client of uid %s (the daemon runs as uid %s)", uid, os.getuid()
            )
            stream.close()
            return
        if self._full(stream):
            return
        self._start(stream, f"unix uid={uid}", None)

    def _on_tcp(self, stream: MessageStream, token: str) -> None:
        assert stream.transport is not None
        peer = stream.transport.get_extra_info("peername")
        if self._full(stream):
            return
        self._start(stream, f"tcp {peer}", token)

    # ------------------------------------------------------------------ listening

    async def listen_unix(self, path: Path) -> None:
        directory = path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        if path.is_socket() and _socket_answers(path):
            raise SocketInUseError(path)
        if path.exists() or path.is_symlink():
            path.unlink()  # nothing answers there and we hold the store lock: it is stale
        old = os.umask(0o177)
        try:
            loop = asyncio.get_running_loop()
            server = await loop.create_unix_server(lambda: self._stream(self._on_unix), path=str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self._servers.append(server)
        self.socket_path = path
        log.info("listening on %s", path)

    async def listen_tcp(self, address: str) -> tuple[str, int]:
        host, port = parse_tcp(address)
        token = read_or_create_token(self.config.token_path)

        def on_connect(stream: MessageStream) -> None:
            self._on_tcp(stream, token)

        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: self._stream(on_connect), host=host, port=port)
        self._servers.append(server)
        bound = server.sockets[0].getsockname()
        self.tcp_address = f"{bound[0]}:{bound[1]}"
        log.info("listening on tcp %s:%s (token in %s)", bound[0], bound[1], self.config.token_path)
        return bound[0], int(bound[1])

    async def listen_ui(self, host: str, port: int) -> str:
        """The web viewer (page + WebSocket) on loopback; its URL is also written to ui.json."""
        from ..web.server import ViewerServer  # noqa: PLC0415 (websockets only when serving it)

        token = read_or_create_token(self.config.token_path)

        async def open_connection(source: Any, writer: Any, peer: str) -> None:
            if len(self.connections) >= self.config.limits.max_connections:
                log.warning("refusing a connection: %d connections open", len(self.connections))
                error = {"code": -32001, "message": "Overloaded, retry: too many connections"}
                writer.write(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error}))
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                return
            await self._serve(self._connection(source, writer, peer, token))

        viewer = ViewerServer(open_connection, max_message_bytes=self.config.limits.max_message_bytes)
        await viewer.start(host, port)
        viewer.write_info(self.config.run_dir, self.config.token_path)
        self.viewer = viewer
        return viewer.url

    async def serve_stdio(self) -> None:
        loop = asyncio.get_running_loop()
        out = OutFlow()
        await loop.connect_write_pipe(lambda: out, os.fdopen(os.dup(sys.stdout.fileno()), "wb"))
        opened: list[Connection] = []

        def on_open(stream: MessageStream) -> None:
            # before the first byte is read: the connection must be there to take it
            out.on_backed_up = stream
            opened.append(self._connection(stream, out, "stdio", None))

        await loop.connect_read_pipe(lambda: self._stream(on_open, header_timeout=False), sys.stdin.buffer)
        await self._serve(opened[0])
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()

    async def run(
        self,
        *,
        unix: bool = True,
        tcp: str | None = None,
        stdio: bool = False,
        ui: tuple[str, int] | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        try:
            if ui is not None:
                # before the socket: a client that can connect finds the viewer's ui.json
                try:
                    await self.listen_ui(*ui)
                except OSError as exc:
                    log.error("the viewer cannot listen on %s:%s: %s", ui[0], ui[1], exc.strerror or exc)
            if unix and not stdio:
                await self.listen_unix(self.config.socket)
            if self.viewer is not None:
                log.info("the session viewer is at %s", self.viewer.url)
            if tcp:
                await self.listen_tcp(tcp)
            self._follow_task = asyncio.ensure_future(self._follow())
            self.service.search.start()
            self._usage_task = asyncio.ensure_future(self._usage())
            if stdio:
                stdio_task = asyncio.ensure_future(self.serve_stdio())
            await self._stop.wait()
            if stdio:
                stdio_task.cancel()
        finally:
            await self.close()

    async def _follow(self) -> None:
        try:
            await self.service.follower.run()
        except Exception:
            log.exception("the file watcher stopped; external changes are no longer followed")

    async def _usage(self) -> None:
        try:
            await self.service.stats.run()
        except Exception:
            log.exception("the usage records stopped; stats_update is no longer sent")

    async def close(self) -> None:
        self.service.follower.stop()
        if self._usage_task is not None:
            self._usage_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                await asyncio.wait_for(self._usage_task, timeout=5)
        if self.viewer is not None:
            await self.viewer.close()
        if self._follow_task is not None:
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                await asyncio.wait_for(self._follow_task, timeout=2)
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.close()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=3)
        await self.service.compactor.close()
        self.service.close_all()
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        log.info("stopped")


def serve(config: Config, *, tcp: str | None = None, stdio: bool = False, ui: str | None = None) -> None:
    """Run the daemon until SIGTERM/SIGINT (or, with stdio, until the client leaves).

    ``ui``: the viewer's ``HOST:PORT``, ``"off"``, or ``None`` for the configuration's choice
    (served by default, never with stdio unless asked).
    """
    from ..web.location import parse_address  # noqa: PLC0415

    if ui is None:
        ui = config.ui.listen if config.ui.enabled and not stdio else "off"
    viewer = None if ui == "off" else parse_address(ui)
    lock = StoreLock(config.lock_path)
    config.layout.ensure_dirs()
    lock.acquire()
    try:
        daemon = Daemon(config)
        asyncio.run(daemon.run(tcp=tcp, stdio=stdio, ui=viewer))
    finally:
        lock.release()
