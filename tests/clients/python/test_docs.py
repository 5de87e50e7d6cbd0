"""docs/python-client.md is correct: its examples run against a real daemon, its table is the code's.

* ```python blocks that connect by themselves (the complete example first, the blocking one)
  are programs: each runs in a subprocess against the daemon of a fresh store (found the way
  the client finds it) and must print what the page says;
* every other ```python block runs inside ``async def`` with ``c`` (a connected client whose
  summarizer never answers, like a slow model) and ``sid`` (a session with a few turns);
* ```py blocks (they need a model, another daemon, ...) must at least compile;
* the errors table lists exactly the exception classes and codes of the client.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import SessiondClient, errors, socket_path
from sessiond_client.discovery import start_daemon
from sessiond_protocol import ErrorCode
from sessiond_protocol.notifications import SummarizeParams
from tests.clients.python.conftest import daemon_env, session_with_turns
from tests.harness.daemon import Daemon

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "python-client.md"


def blocks(language: str) -> list[tuple[int, str]]:
    """``(line, code)`` of each fenced block of ``language``, in order."""
    found: list[tuple[int, str]] = []
    lines = DOC.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == f"```{language}":
            start = i + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            found.append((start + 1, "\n".join(lines[start:end]) + "\n"))
            i = end
        i += 1
    return found


def is_program(code: str) -> bool:
    """Blocks that connect by themselves run as programs; the others are fragments."""
    return "SessiondClient.connect(" in code or "connect_sync(" in code


PROGRAMS = [block for block in blocks("python") if is_program(block[1])]
FRAGMENTS = [block for block in blocks("python") if not is_program(block[1])]


def test_the_page_has_the_examples_it_promises() -> None:
    assert len(PROGRAMS) == 2 and len(FRAGMENTS) >= 4 and len(blocks("py")) >= 3
    assert blocks("python")[0] == PROGRAMS[0]  # the complete example comes first


def run_program(tmp_path: Path, program: str) -> tuple[list[str], Path]:
    """Run ``program`` against the daemon of a fresh store (started the way ``connect()``
    starts one, so the program finds it where it looks); its output lines and the store."""
    (tmp_path / "example.py").write_text(program)
    store = tmp_path / "store"
    env = daemon_env(tmp_path)
    env["SESSIOND_HOME"] = str(store)
    env.pop("XDG_RUNTIME_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "protocol"), str(ROOT / "clients" / "python")])
    socket = socket_path(store, env)
    daemon = start_daemon(store, socket, env=env)
    try:
        for _ in range(500):
            if socket.exists() or daemon.poll() is not None:
                break
            time.sleep(0.02)
        assert socket.exists(), (store / "daemon.log").read_text()
        run = subprocess.run(
            [sys.executable, str(tmp_path / "example.py")],
            check=False,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=15)
    log = (store / "daemon.log").read_text()
    assert code == 0 and "Traceback" not in log, log
    # It used that daemon (none was started beside it): one "listening" in the log.
    assert log.count("listening on") == 1, log
    return run.stdout.splitlines(), store


def test_the_complete_example_runs_against_the_running_daemon(tmp_path: Path) -> None:
    out, store = run_program(tmp_path, PROGRAMS[0][1])
    assert re.fullmatch(r"appended \['\S+'\]", out[0]), out
    assert re.fullmatch(r"context: 4000 of \d+ tokens \(api\)", out[1]), out
    assert out[2] == "the model sees 8 messages", out
    assert re.fullmatch(r"someone else appended; the leaf is now \S+", out[3]), out
    compacted = re.fullmatch(r"compacted: (\d+) -> (\d+) tokens", out[4])
    assert compacted is not None and int(compacted[2]) < int(compacted[1]), out
    assert re.fullmatch(r"compaction \S+ in_progress", out[5]), out
    assert len(out) == 6, out
    # The session and its compaction are in the store.
    files = list((store / "sessions").rglob("*.jsonl"))
    assert len(files) == 1 and '"type":"compaction"' in files[0].read_text()


def test_the_blocking_example_runs_against_the_running_daemon(tmp_path: Path) -> None:
    out, store = run_program(tmp_path, PROGRAMS[1][1])
    assert re.fullmatch(r"appended \['\S+'\]", out[0]), out
    assert re.fullmatch(r"\S+ greetings 1", out[1]) and len(out) == 2, out
    (file,) = (store / "sessions").rglob("*.jsonl")
    assert '"name":"greetings"' in file.read_text()


class Thinking:
    """A summarizer whose model takes forever (the cancellation example gives up on it)."""

    def __init__(self) -> None:
        self.cancelled = 0

    async def __call__(self, request: SummarizeParams) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize(("line", "code"), FRAGMENTS, ids=lambda v: f"line{v}" if isinstance(v, int) else "")
async def test_each_fragment_runs(daemon: Daemon, line: int, code: str) -> None:
    model = Thinking()
    c = await SessiondClient.connect(socket=daemon.socket, start=False, summarizer=model)
    try:
        sid = await session_with_turns(c, 6)
        path = Path((await c.session_load(sid)).path)
        size = path.stat().st_size
        source = "async def fragment(c, sid):\n" + textwrap.indent(code, "    ")
        namespace: dict[str, Any] = {}
        exec(compile(source, f"{DOC}:{line}", "exec"), namespace)
        await namespace["fragment"](c, sid)
        if "move_on_after" in code:
            # The cancelled compaction: the daemon cancelled the summarizer and wrote nothing.
            for _ in range(500):
                if model.cancelled:
                    break
                await asyncio.sleep(0.01)
            assert model.cancelled == 1
            assert path.stat().st_size == size
            assert (await c.compaction_cancel(sid)).cancelled is False  # nothing left running
    finally:
        await c.close()


@pytest.mark.parametrize(
    ("line", "code"), blocks("py"), ids=lambda v: f"line{v}" if isinstance(v, int) else ""
)
def test_the_other_snippets_compile(line: int, code: str) -> None:
    compile(code, f"{DOC}:{line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_the_errors_table_is_the_clients() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (-\d+) \| `(\w+)` \|", DOC.read_text(), re.MULTILINE)
    assert rows
    table = {int(code): (cls, name) for cls, code, name in rows}
    assert len(table) == len(rows)  # no code twice
    assert set(table) == {int(c) for c in ErrorCode}
    for code, (cls, name) in table.items():
        assert ErrorCode(code).name == name
        assert errors.ERROR_CLASSES[code].__name__ == cls
        assert getattr(errors, cls) is errors.ERROR_CLASSES[code]
