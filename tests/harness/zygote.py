"""Start ``sessiond serve`` forked from a pre-imported process instead of exec'ing Python.

Each test worker starts one fork server (:mod:`tests.harness.zygote_server`, "the zygote") the
first time it starts a daemon; the zygote has imported what ``serve`` imports, so each daemon
forked from it skips ~1 s of CPU of imports (the suite starts ~220 daemons). The child is the
real daemon (``sessiond.cli.main`` on the given argv, environment, working directory, standard
streams) on a real socket; only the interpreter start-up and the imports are shared.

:class:`ForkedProcess` is the part of ``subprocess.Popen`` the tests use (``pid``, ``poll``,
``wait``, ``send_signal``, ``terminate``, ``kill``, ``returncode``): it watches the daemon
through a pidfd of its own and asks the zygote, its parent, for the exit status (the zygote reaps
a child only when asked, so the pid stays the daemon's until then, as with Popen).

Not used (the daemon is exec'd as before) when ``SESSIOND_TEST_NO_ZYGOTE=1``, when the daemon's
environment differs from the zygote's in a variable read while the interpreter or sessiond's
modules start (``PYTHON*``, the locale, ``SESSIOND_FAULTS``), or after the zygote died (a
warning says so). Tests about start-up itself start ``python -m sessiond`` themselves.
"""

from __future__ import annotations

import contextlib
import json
import locale
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

DISABLE_ENV = "SESSIOND_TEST_NO_ZYGOTE"
READY_TIMEOUT = 120.0
"""Seconds the zygote may take to import (it is ~1.3 s of CPU; the machine may be loaded)."""
ANSWER_TIMEOUT = 120.0
"""Seconds the zygote may take to answer (a fork, or reaping a child known to have exited)."""
IMPORT_TIME_ENV = ("SESSIOND_FAULTS", "LANG", "LANGUAGE")
"""Variables read while the interpreter or a sessiond module starts (with every ``PYTHON*`` and
``LC_*``): a daemon whose value differs from the zygote's is exec'd, so it sees its own."""
SERVER = Path(__file__).with_name("zygote_server.py")


class ZygoteGone(RuntimeError):
    """The zygote exited or stopped answering (the daemon is then exec'd instead)."""


def _import_time_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in IMPORT_TIME_ENV or k.startswith(("PYTHON", "LC_"))}


class Zygote:
    """One fork server and the socket to it; requests are serialized by a lock."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = dict(os.environ)
        try:
            self.process = subprocess.Popen(
                [sys.executable, str(SERVER), str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=self.env,
            )
        finally:
            theirs.close()
        self.owner = os.getpid()
        self._socket = ours
        self._lock = threading.Lock()
        ours.settimeout(READY_TIMEOUT)
        try:
            ready = self._receive()
        except BaseException:
            self.close()
            raise
        ours.settimeout(ANSWER_TIMEOUT)
        if "ready" not in ready:
            self.close()
            raise ZygoteGone(f"the zygote did not start: {ready}")

    def fits(self, env: Mapping[str, str]) -> bool:
        """Whether a daemon with ``env`` may be forked (it would import the same way)."""
        return _import_time_env(env) == _import_time_env(self.env)

    def spawn(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdout: int,
        stderr: int,
        nofile: tuple[int, int] | None,
        *,
        stdin: int | None = None,
        script: str | None = None,
    ) -> ForkedProcess:
        """Fork ``python -m sessiond ARGV`` (with ``script``: that ``sessiond`` script ARGV)."""
        request: dict[str, object] = {
            "op": "spawn",
            "script": script,
            "argv": list(argv),
            "env": dict(env),
            "cwd": os.getcwd(),
            "umask": _umask(),
            "nofile": list(nofile) if nofile is not None else None,
        }
        answer = self._ask(request, [_stdin() if stdin is None else stdin, stdout, stderr])
        if "pid" not in answer:
            raise ZygoteGone(f"the zygote refused to fork: {answer.get('error')}")
        args = [sys.executable, "-m", "sessiond", *argv] if script is None else [script, *argv]
        return ForkedProcess(self, args, int(str(answer["pid"])))

    def reap(self, pid: int, *, block: bool) -> int | None:
        answer = self._ask({"op": "reap", "pid": pid, "block": block}, [])
        if "status" not in answer:
            raise ZygoteGone(f"the zygote could not reap pid {pid}: {answer.get('error')}")
        status = answer["status"]
        return None if status is None else int(str(status))

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        """End of file tells the zygote to exit (its running children go on, as exec'd ones would)."""
        self._socket.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _ask(self, request: dict[str, object], fds: list[int]) -> dict[str, object]:
        with self._lock:
            try:
                socket.send_fds(self._socket, [json.dumps(request).encode()], fds)
                return self._receive()
            except OSError as exc:  # gone, or hung (an answer is a fork or a waitpid away)
                if self.process.poll() is None:
                    self.process.kill()  # a late answer would be taken for the next one's
                raise ZygoteGone(f"the zygote (pid {self.process.pid}) is gone: {exc!r}") from exc

    def _receive(self) -> dict[str, object]:
        message = self._socket.recv(1 << 16)
        if not message:
            raise ZygoteGone(f"the zygote (pid {self.process.pid}) exited with {self.process.wait()}")
        answer: dict[str, object] = json.loads(message)
        return answer


class ForkedProcess:
    """A daemon forked by the zygote, with the ``subprocess.Popen`` calls the tests make."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, args: list[str], pid: int) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._zygote = zygote
        self._lock = threading.Lock()
        # the zygote reaps only when asked: until then the pid is this child's, alive or zombie
        self._pidfd: int | None = os.pidfd_open(pid)

    def poll(self) -> int | None:
        if self.returncode is None and self._exited(0):
            self._collect()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not self._exited(timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._collect()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):  # gone already: nothing to signal (as Popen)
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _exited(self, timeout: float | None) -> bool:
        """Whether the child exited (its pidfd is readable), waiting up to ``timeout`` seconds
        (poll, not select: a worker's descriptors may be numbered past select's 1024)."""
        assert self._pidfd is not None
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999))))

    def _collect(self) -> None:
        with self._lock:  # two threads may see the exit; one reaps
            if self.returncode is not None:
                return
            try:
                status = self._zygote.reap(self.pid, block=True)
            except ZygoteGone as exc:
                raise ZygoteGone(f"daemon pid {self.pid} exited, but its exit status is lost: {exc}") from exc
            assert status is not None
            self.returncode = status
            self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def __del__(self) -> None:
        self._close_pidfd()


def _stdin() -> int:
    """This process's stdin for the daemon, as Popen would leave it (``/dev/null`` if closed)."""
    global _devnull  # noqa: PLW0603
    try:
        os.fstat(0)
    except OSError:
        if _devnull is None:
            _devnull = os.open(os.devnull, os.O_RDONLY)
        return _devnull
    return 0


_devnull: int | None = None


def _umask() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    raise RuntimeError("no Umask line in /proc/self/status")


_zygote: Zygote | None = None
_failures = 0
_start_lock = threading.Lock()
MAX_FAILURES = 3
"""A zygote that died is replaced at the next start; after this many, daemons are exec'd."""
enabled = False
"""Set by tests/conftest.py (the benchmarks, which import the harness too, always exec)."""


def _usable(env: Mapping[str, str]) -> Zygote | None:
    """This worker's zygote (started at the first call), or ``None``: exec instead."""
    global _zygote  # noqa: PLW0603 (one zygote per worker process)
    if not enabled or os.environ.get(DISABLE_ENV) == "1" or _failures >= MAX_FAILURES:
        return None
    with _start_lock:
        if _zygote is not None and _zygote.owner != os.getpid():
            _zygote = None  # a forked copy of the worker: not our child
        if _zygote is None:
            try:
                _zygote = Zygote()
            except (OSError, ZygoteGone) as exc:
                _fail(f"the zygote did not start ({exc!r})")
                return None
        zygote = _zygote
    return zygote if zygote.fits(env) else None


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    stdout: int,
    stderr: int,
    nofile: tuple[int, int] | None,
    *,
    stdin: int | None = None,
    script: str | None = None,
) -> ForkedProcess | None:
    """The daemon (or CLI command) forked from this worker's zygote, or ``None``: exec it."""
    global _zygote  # noqa: PLW0603 (one zygote per worker process)
    zygote = _usable(env)
    if zygote is None:
        return None
    try:
        return zygote.spawn(argv, env, stdout, stderr, nofile, stdin=stdin, script=script)
    except ZygoteGone as exc:
        with _start_lock:
            if _zygote is zygote:
                _zygote = None
        zygote.close()
        _fail(str(exc))
        return None


def run_script(
    script: str, argv: Sequence[str], env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str] | None:
    """``subprocess.run([script, *argv], capture_output=True, text=True, stdin=DEVNULL,
    env=env, timeout=timeout)`` for the ``sessiond`` script, forked from the zygote (a CLI
    call is ~0.3 s of CPU of imports; the CLI tests make hundreds), or ``None``: exec it."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        process = spawn(argv, env, out_w, err_w, None, stdin=null, script=script)
    finally:
        for fd in (out_w, err_w, null):
            os.close(fd)
    if process is None:
        os.close(out_r)
        os.close(err_r)
        return None
    try:
        stdout, stderr = _read_both(out_r, err_r, time.monotonic() + timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise subprocess.TimeoutExpired(process.args, timeout) from None
    finally:
        os.close(out_r)
        os.close(err_r)
    code = process.wait()
    return subprocess.CompletedProcess(process.args, code, _text(stdout), _text(stderr))


def _read_both(out: int, err: int, deadline: float) -> tuple[bytes, bytes]:
    """Both pipes to their end (as ``communicate``); TimeoutExpired past the deadline."""
    chunks: dict[int, list[bytes]] = {out: [], err: []}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired([], 0)
            for key, _ in selector.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
    return b"".join(chunks[out]), b"".join(chunks[err])


def _text(data: bytes) -> str:
    """What ``text=True`` makes of a captured stream (the locale's encoding, universal newlines)."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def _fail(why: str) -> None:
    global _failures  # noqa: PLW0603
    _failures += 1
    then = "exec'd from now on" if _failures >= MAX_FAILURES else "exec'd this time (a new zygote next)"
    warnings.warn(f"{why}: the daemon is {then}", RuntimeWarning, stacklevel=3)


def shutdown() -> None:
    global _zygote  # noqa: PLW0603
    if _zygote is not None and _zygote.owner == os.getpid():
        _zygote.close()
    _zygote = None
