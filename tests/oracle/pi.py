"""Running Pi's own code: ``tests/oracle/harness.mjs`` on the install ``scripts/setup-oracle`` made.

Every test and script that asks Pi goes through here, so the harness's path and calling
convention live in one place. ``tests/oracle/README.md`` lists what the harness prints.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

HARNESS = Path(__file__).resolve().with_name("harness.mjs")


def harness_command(oracle: Path, *args: str) -> list[str]:
    """The command line running the harness on the Pi installed in ``oracle``."""
    return ["node", str(HARNESS), "--oracle", str(oracle), *args]


class NodeServer:
    """One long-lived Node process answering one JSON line per request line (``--serve`` of
    ``harness.mjs`` and ``tests/store/pi_ops.mjs``): Pi's modules load once per test worker
    instead of once per question (~0.3 s of CPU each; the round-trip tests asked ~130 times).

    Requests are serialized by a lock. A server that exits, or does not answer in ``timeout``,
    is killed and the request fails with its stderr; the next request starts a new one. The
    server is started again when the environment differs from the one it was started with (a
    run of its own would have seen the new one).
    """

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = None if env is None else dict(env)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None
        self._started_env: dict[str, str] = {}

    def ask(self, request: object, timeout: float) -> dict[str, Any]:
        with self._lock:
            env = _comparable_env(self.env)
            if self._process is not None and (self._process.poll() is not None or env != self._started_env):
                self._stop()
            if self._process is None:
                self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed in _stop)
                self._process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=self._stderr,
                    text=True,
                    encoding="utf-8",
                    env=self.env,
                )
                self._started_env = env
            process = self._process
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                poller = select.poll()  # not select: the worker's descriptors may pass 1024
                poller.register(process.stdout, select.POLLIN)
                line = process.stdout.readline() if poller.poll(timeout * 1000) else ""
            except OSError:
                line = ""
            if not line:
                code = process.poll()
                why = "did not answer in time" if code is None else f"exited with {code}"
                stderr = self._stop()
                raise RuntimeError(f"{self.command[1]} --serve {why}:\n{stderr[-4000:]}")
            answer: dict[str, Any] = json.loads(line)
            return answer

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> str:
        """Stop the process (end of input, then a kill), and return what it wrote on stderr."""
        process, self._process = self._process, None
        stderr = ""
        if process is not None:
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            assert process.stdout is not None
            process.stdout.close()
        if self._stderr is not None:
            self._stderr.seek(0)
            stderr = self._stderr.read()
            self._stderr.close()
            self._stderr = None
        return stderr


def _comparable_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a run of its own would get (pytest's per-test variable aside)."""
    return {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTEST_CURRENT_TEST"}


_servers: dict[Path, NodeServer] = {}


def _server(oracle: Path) -> NodeServer:
    server = _servers.get(oracle)
    if server is None:
        server = _servers[oracle] = NodeServer(harness_command(oracle, "--serve"))
        atexit.register(server.close)
    return server


def pi_results(
    oracle: Path, files: Sequence[Path | str], *args: str, timeout: float = 600
) -> list[dict[str, Any]]:
    """What Pi derives from each of ``files`` (one dict per file, in order; ``args`` are harness
    options). A file Pi cannot read gives a dict with ``error``; a harness failure raises.

    Asked of this process's harness server (:class:`NodeServer`): the same as a run of
    ``harness.mjs ARGS --jsonl FILES`` started from the current directory."""
    answer = _server(oracle).ask({"args": [*args, *map(str, files)], "cwd": os.getcwd()}, timeout)
    if "error" in answer:
        raise RuntimeError(f"pi-oracle refused {list(args)}: {answer['error']}")
    results: list[dict[str, Any]] = answer["results"]
    if len(results) != len(files):
        raise RuntimeError(f"pi-oracle answered for {len(results)} of {len(files)} files")
    return results


def pi_result(oracle: Path, file: Path | str, *args: str, timeout: float = 120) -> dict[str, Any]:
    """What Pi derives from one file (see :func:`pi_results`)."""
    return pi_results(oracle, [file], *args, timeout=timeout)[0]
