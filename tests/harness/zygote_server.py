"""The fork server behind :mod:`tests.harness.zygote` (run as a script, one per test worker).

A daemon spends ~1 s of CPU importing before it answers (``lsprotocol.types`` alone ~0.5 s)
and the suite starts a couple of hundred. This process imports what ``sessiond serve`` imports
once, then forks a child per request that becomes the daemon exactly as ``python -m sessiond
serve ...`` would (or a CLI command, as the ``sessiond`` script would run it): the request's
argv, environment, working directory, umask, open-file limit and standard streams (passed as
file descriptors), then ``sessiond.cli.main()`` and a normal interpreter exit (atexit
handlers, thread shutdown, flushed streams).

It is single-threaded (checked before each fork) and never touches signals, so a child starts
with the dispositions of a freshly started interpreter. It reaps a child only when asked
(``reap``), as ``subprocess.Popen`` does: until then an exited daemon is a zombie and its pid
cannot be reused, which lets the harness watch it through a pidfd of its own.

Protocol: one SOCK_SEQPACKET socket (the fd number is ``argv[1]``); each request is one JSON
object, each answer one JSON object. ``{"op": "spawn", ...}`` carries stdin, stdout and stderr
as SCM_RIGHTS and answers ``{"pid": n}``; ``{"op": "reap", "pid": n, "block": bool}`` answers
``{"status": <exit code as Popen reports it> | null}``. End of file on the socket: exit.
Only the standard library and ``sessiond`` are imported here (the tests' modules are not).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import os
import pkgutil
import resource
import socket
import sys
import threading
import types
from typing import Any

PRELOAD = (
    "logging",
    "sessiond.cli",
    "sessiond.errors",
    "sessiond.service.config",
    "sessiond.rpc.server",
    "sessiond.web.server",
    "sessiond.usage.prices",
    # loaded lazily by the daemon while it starts (its web server, the price data, its threads)
    "anyio._backends._asyncio",
    "websockets.asyncio.server",
    "httpx2",
    "genai_prices",
    "pydantic.type_adapter",
)
"""What ``serve`` imports before it answers (compared with a running daemon's ``sys.modules``).
A module missing here only costs its import in each child; one that is here but not imported
by ``serve`` would only matter if importing it changed something, which none of these does."""

MAX_MESSAGE = 1 << 20


def preload() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    import sessiond.cli_commands as commands  # noqa: PLC0415 (the parser registers them all)

    for info in pkgutil.iter_modules(commands.__path__):
        importlib.import_module(f"{commands.__name__}.{info.name}")


def run(control: socket.socket) -> int | None:
    """Answer requests until end of file (returns ``None``); in a forked child, return the
    child's exit code instead, so that the caller exits with it through a normal shutdown."""
    while True:
        message, fds, _flags, _addr = socket.recv_fds(control, MAX_MESSAGE, 3)
        if not message:
            return None
        request = json.loads(message)
        if request["op"] == "reap":
            for fd in fds:
                os.close(fd)
            try:
                answer: dict[str, Any] = {"status": _reap(int(request["pid"]), bool(request["block"]))}
            except OSError as exc:  # not our child, or reaped already: say so, keep serving
                answer = {"error": repr(exc)}
            control.sendall(json.dumps(answer).encode())
            continue
        if threading.active_count() != 1:  # a thread would leave its locks held in the child
            _answer_error(control, fds, f"the zygote has {threading.active_count()} threads")
            continue
        pid = os.fork()
        if pid == 0:
            control.close()
            return _child(request, fds)
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"pid": pid}).encode())


def _answer_error(control: socket.socket, fds: list[int], message: str) -> None:
    for fd in fds:
        os.close(fd)
    control.sendall(json.dumps({"error": message}).encode())


def _reap(pid: int, block: bool) -> int | None:
    got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    if got == 0:
        return None
    return os.waitstatus_to_exitcode(status)


def _child(request: dict[str, Any], fds: list[int]) -> int:
    """Become ``python -m sessiond <argv>`` (or the ``sessiond`` script, ``script``) with the
    request's surroundings, and run it."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    # only the standard streams stay open, as with Popen's close_fds (the received ones too)
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    if request.get("nofile") is not None:
        soft, hard = request["nofile"]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    os.environ.clear()
    os.environ.update(request["env"])
    script = request.get("script")
    main_module = types.ModuleType("__main__")
    if script is None:
        # what ``python -m sessiond`` sets up: argv[0] is the module's file, the working
        # directory leads the path, and ``__main__`` is ``sessiond.__main__`` (multiprocessing's
        # spawn start method, used by the usage index, reads its spec to prepare its workers)
        spec = importlib.util.find_spec("sessiond.__main__")
        assert spec is not None and spec.origin is not None
        main_module.__file__ = spec.origin
        main_module.__spec__ = spec
        sys.argv = [spec.origin, *request["argv"]]
        sys.path[0] = os.getcwd()
    else:
        # what the ``sessiond`` console script sets up: argv[0] is the script, its directory
        # leads the path, and ``__main__`` is the script itself
        main_module.__file__ = script
        main_module.__spec__ = None
        sys.argv = [script, *request["argv"]]
        sys.path[0] = os.path.dirname(script)
    sys.modules["__main__"] = main_module
    from sessiond.cli import main as sessiond_main  # noqa: PLC0415 (preloaded)

    return sessiond_main()


def main() -> None:
    # the script's directory leads the path; the checkout's root instead, where the tests (run
    # from it) and ``python -m sessiond`` started from it find sessiond (each child then puts its
    # own first entry there, as its interpreter would)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    control = socket.socket(fileno=int(sys.argv[1]))
    preload()
    gc.collect()
    gc.freeze()  # the children share these pages; the collector never walks them (as serve does)
    control.sendall(json.dumps({"ready": os.getpid()}).encode())
    code = run(control)
    if code is None:
        return
    sys.exit(code)


if __name__ == "__main__":
    main()
