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
import gc
import logging
import os
import resource
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
from ..store.bounded import set_line_limit
from ..store.private import private_dir
from .auth import Credentials
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


class SocketPathTooLongError(SessiondError):
    """The socket path does not fit a Unix socket address (``sun_path``: 108 bytes with its
    final NUL on Linux, 104 on the BSDs and macOS). ``bind`` would fail with a bare OSError;
    this names the path, its length and what to do instead."""

    error_code = ErrorCode.INVALID_PARAMS
    LIMIT = 107 if sys.platform.startswith("linux") else 103

    def __init__(self, path: Path, length: int) -> None:
        super().__init__(
            f"the socket path {path} is {length} bytes; a Unix socket path holds at most "
            f"{self.LIMIT}: choose a shorter --socket (or a shorter SESSIOND_HOME)",
            socket=str(path),
            length=length,
            limit=self.LIMIT,
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


OPEN_FILES_CEILING = 1 << 20
"""The soft open-file limit is raised to the hard one, but not past this (an unlimited hard
limit)."""


def raise_open_files_limit() -> int | None:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; the soft limit now (None: unknown).

    The usual soft limit is 1,024 while the hard one is far higher: 1,100 half-open HTTP
    requests to the viewer took the daemon to EMFILE, and it stopped accepting its owner's
    clients. Every connection budget is kept below what this returns."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    target = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES_CEILING)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError) as exc:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, target, exc)
    return int(soft) if soft != resource.RLIM_INFINITY else OPEN_FILES_CEILING


class AcceptBackoff:
    """The event loop's handler for errors nobody awaits, quiet about running out of files.

    asyncio already stops accepting on a listening socket for a second when ``accept`` fails
    with EMFILE/ENFILE/ENOBUFS/ENOMEM, but logs each failure with a traceback (12,778 in 9 s
    under a flood). Here an episode is logged once when it starts, and once when it is over
    (how many accepts failed); anything else goes to the default handler."""

    QUIET = 10.0
    """Seconds without a failed accept that end an episode."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self.episodes = 0
        self.failures = 0
        self._last = -1e18
        self._in_episode = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        message = str(context.get("message", ""))
        if isinstance(exc, ValueError) and "_start_serving" in repr(context.get("handle")):
            # a retry asyncio scheduled after a failed accept, run after its server closed
            log.debug("a listener closed while it waited to accept again")
            return
        if not (isinstance(exc, OSError) and message.startswith("socket.accept() out of system resource")):
            loop.default_exception_handler(context)
            return
        now = self._clock()
        self.failures += 1
        if now - self._last > self.QUIET:
            if self._in_episode:
                log.warning("the previous episode is over; %d accepts had failed", self._in_episode)
            self.episodes += 1
            self._in_episode = 0
            log.warning(
                "cannot accept connections: %s (open-file limit %s); retrying every second, "
                "logged once until it is over",
                exc.strerror or exc,
                _soft_nofile(),
            )
            loop.call_later(self.QUIET + 0.5, self._maybe_over)
        self._in_episode += 1
        self._last = now

    def _maybe_over(self) -> None:
        if self._in_episode and self._clock() - self._last > self.QUIET:
            log.warning("accepting connections again; %d accepts had failed", self._in_episode)
            self._in_episode = 0
        elif self._in_episode:
            asyncio.get_running_loop().call_later(self.QUIET, self._maybe_over)


def _soft_nofile() -> str:
    try:
        return str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    except (OSError, ValueError):
        return "unknown"


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
        self._credentials: Credentials | None = None
        self.refused = 0
        """Connections refused since the start because their budget was full."""
        self.timed_out = 0
        """Connections closed since the start for not completing ``initialize`` in time."""
        self.open_files_limit: int | None = None

    @property
    def credentials(self) -> Credentials:
        """The token of ``<store>/tcp.token`` (created on first use), codes, viewer tokens."""
        if self._credentials is None:
            self._credentials = Credentials(self.config.token_path, read_or_create_token)
        return self._credentials

    # ------------------------------------------------------------------ connections

    def _connection(self, source: Any, writer: Any, peer: str, credentials: Credentials | None) -> Connection:
        conn = Connection(
            source,
            writer,
            HANDLERS,
            self.service,
            self.config.limits,
            peer=peer,
            credentials=credentials,
            on_close=self._closed,
        )
        conn.daemon = self
        self.connections.add(conn)
        if peer != "stdio":
            loop = asyncio.get_running_loop()
            loop.call_later(self.config.limits.initialize_timeout, self._initialize_deadline, conn)
        return conn

    def _closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.service.release(conn)
        granted = conn.granted
        if granted is not None and granted.viewer is not None and self._credentials is not None:
            self._credentials.closed(granted.viewer)

    def _initialize_deadline(self, conn: Connection) -> None:
        """A connection that has not completed ``initialize`` in time is closed: an anonymous
        one would otherwise hold its place for good (and the owner's socket needs none of it)."""
        if conn.initialized or conn.closed:
            return
        self.timed_out += 1
        timeout = self.config.limits.initialize_timeout
        log.info("connection %s (%s): no initialize within %g s; closing it", conn.id, conn.peer, timeout)
        conn.send(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": int(ErrorCode.SERVER_NOT_INITIALIZED),
                    "message": f"No initialize within {timeout:g} s: closing the connection",
                    "data": {"closing": True, "timeout": timeout},
                },
            }
        )
        conn.close()

    # ------------------------------------------------------------------ admission

    def _refusal(self, anonymous: bool) -> str | None:
        """Why a new connection cannot be let in now, or None.

        Two budgets, so that clients nobody has authenticated cannot lock the owner out: the
        owner's (the Unix socket, and TCP/WebSocket clients once their ``initialize`` presented
        a credential) is ``max_connections``; connections on TCP and the viewer's WebSocket that
        have not done so yet have ``max_anonymous_connections`` of their own and
        ``initialize_timeout`` to do it."""
        limits = self.config.limits
        anonymous_open = sum(1 for c in self.connections if c.anonymous)
        if anonymous:
            if anonymous_open >= limits.max_anonymous_connections:
                return f"{anonymous_open} unauthenticated connections open"
            return None
        owners = len(self.connections) - anonymous_open
        if owners >= limits.max_connections:
            return f"{owners} connections open"
        return None

    def _refuse_logged(self, why: str) -> dict[str, Any]:
        self.refused += 1
        log.warning("refusing a connection: %s", why)
        return {
            "code": -32001,
            "message": f"Overloaded, retry: too many connections ({why})",
            "data": {"closing": True, "reason": why},
        }

    def admission_status(self) -> dict[str, int | None]:
        return {
            "anonymous": sum(1 for c in self.connections if c.anonymous),
            "refused": self.refused,
            "timedOut": self.timed_out,
            "openFilesLimit": self.open_files_limit,
        }

    def viewer_connection_cap(self) -> int:
        """The viewer's HTTP and WebSocket connections at once: ``max_viewer_connections``, and
        never more than a quarter of the open-file limit (its floods must not starve the rest)."""
        cap = self.config.limits.max_viewer_connections
        if self.open_files_limit is not None:
            cap = min(cap, max(8, self.open_files_limit // 4))
        return cap

    def _viewer_refused(self) -> None:
        self.refused += 1

    def viewer_code(self, new_token: bool) -> dict[str, Any]:
        credentials = self.credentials
        if new_token:
            credentials.rotate()
            for conn in list(self.connections):
                if conn.credentials is not None and conn.generation < credentials.generation:
                    log.info("connection %s (%s): closed, the token was replaced", conn.id, conn.peer)
                    conn.close()
            log.warning(
                "the access token was replaced (%s); old codes and viewer tokens ended", credentials.path
            )
        code, ttl = credentials.issue_code()
        return {"code": code, "expiresInSeconds": ttl, "url": self.viewer.url if self.viewer else None}

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

    def _start(self, stream: MessageStream, peer: str, credentials: Credentials | None) -> None:
        """Serve a stream whose peer was accepted: its connection runs as a task of its own."""
        conn = self._connection(stream, stream, peer, credentials)
        task = asyncio.ensure_future(self._serve(conn))
        self._tasks.add(task)  # held from now on, not only once it started
        task.add_done_callback(self._tasks.discard)

    def _full(self, stream: MessageStream, *, anonymous: bool) -> bool:
        why = self._refusal(anonymous)
        if why is None:
            return False
        error = self._refuse_logged(why)
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
        if self._full(stream, anonymous=False):
            return
        self._start(stream, f"unix uid={uid}", None)

    def _on_tcp(self, stream: MessageStream) -> None:
        assert stream.transport is not None
        peer = stream.transport.get_extra_info("peername")
        if self._full(stream, anonymous=True):
            return
        self._start(stream, f"tcp {peer}", self.credentials)

    # ------------------------------------------------------------------ listening

    async def listen_unix(self, path: Path) -> None:
        length = len(os.fsencode(path))
        if length > SocketPathTooLongError.LIMIT:
            raise SocketPathTooLongError(path, length)
        private_dir(path.parent)
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
        _ = self.credentials.token  # created (or its file checked) before the first client

        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: self._stream(self._on_tcp), host=host, port=port)
        self._servers.append(server)
        bound = server.sockets[0].getsockname()
        self.tcp_address = f"{bound[0]}:{bound[1]}"
        log.info("listening on tcp %s:%s (token in %s)", bound[0], bound[1], self.config.token_path)
        return bound[0], int(bound[1])

    async def listen_ui(self, host: str, port: int) -> str:
        """The web viewer (page + WebSocket) on loopback; its URL is also written to ui.json."""
        from ..web.server import ViewerServer  # noqa: PLC0415 (websockets only when serving it)

        credentials = self.credentials
        _ = credentials.token  # created (or its file checked) before the first client

        async def open_connection(source: Any, writer: Any, peer: str) -> None:
            why = self._refusal(anonymous=True)
            if why is not None:
                error = self._refuse_logged(why)
                writer.write(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error}))
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                return
            await self._serve(self._connection(source, writer, peer, credentials))

        viewer = ViewerServer(
            open_connection,
            max_message_bytes=self.config.limits.max_message_bytes,
            max_connections=self.viewer_connection_cap(),
            on_refused=self._viewer_refused,
        )
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
        loop.set_exception_handler(AcceptBackoff())
        self.open_files_limit = raise_open_files_limit()
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
    set_line_limit(config.limits.max_line_bytes)
    lock = StoreLock(config.lock_path)
    config.layout.ensure_dirs()
    lock.acquire()
    try:
        daemon = Daemon(config)
        # What is loaded by now (modules, classes: pydantic's models, lsprotocol's types) lives as
        # long as the process: frozen out of the collector's sight, it is no longer traversed by
        # every full collection, nor by the last one at exit (~0.2 s of CPU of every stop).
        gc.freeze()
        asyncio.run(daemon.run(tcp=tcp, stdio=stdio, ui=viewer))
    finally:
        lock.release()
