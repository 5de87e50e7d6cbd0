"""The TypeScript client (npm ``@sessiond/client``, clients/typescript) against the real daemon.

The node tests (``clients/typescript/test/*.test.ts``, compiled to ``dist-test/`` and run with
``node --test``) get the daemon's socket in ``SESSIOND_TEST_SOCKET`` and the argv of a
``sessiond connect`` bridge to it in ``SESSIOND_TEST_CONNECT``. The reconnect test writes the
file named by ``SESSIOND_TEST_READY`` and waits while this side kills the daemon and starts it
again on the same store. The editor example (``examples/editor``) runs as a user would run it.

Everything is installed and compiled by ``scripts/setup-typescript``; without node, npm or that
build these tests are skipped, saying so.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Daemon, start_daemon

REPO = Path(__file__).resolve().parents[3]
CLIENT = REPO / "clients" / "typescript"
EXAMPLE = REPO / "examples" / "editor"
SCHEMA = REPO / "protocol" / "sessiond.schema.json"
NODE = shutil.which("node")
NPM = shutil.which("npm")
SETUP = "run scripts/setup-typescript"

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed (Node >= 20 is needed)"),
    pytest.mark.skipif(
        not (CLIENT / "node_modules" / "vscode-jsonrpc" / "package.json").exists(),
        reason=f"the npm dependencies of clients/typescript are not installed ({SETUP})",
    ),
]
needs_build = pytest.mark.skipif(
    not (CLIENT / "dist" / "index.js").exists() or not (CLIENT / "dist-test").is_dir(),
    reason=f"clients/typescript is not built ({SETUP})",
)
needs_npm = pytest.mark.skipif(NPM is None, reason="npm is not installed")


def node_env(d: Daemon, tmp_path: Path, **extra: str) -> dict[str, str]:
    connect = [sys.executable, "-m", "sessiond", "connect", "--socket", str(d.socket)]
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return {
        **d.env,  # SESSIOND_HOME: a bridge reaches the same store (and daemon)
        "SESSIOND_TEST_SOCKET": str(d.socket),
        "SESSIOND_TEST_CONNECT": json.dumps(connect),
        "SESSIOND_TEST_WORKDIR": str(work),
        **extra,
    }


def node_test(*files: str) -> list[str]:
    assert NODE is not None
    return [NODE, "--test", "--test-reporter=tap", *(str(CLIENT / "dist-test" / f) for f in files)]


def check_tap(proc: subprocess.CompletedProcess[str], d: Daemon, expected: int) -> None:
    """node --test passed: exit 0, no failure, and exactly ``expected`` tests really ran."""
    out = proc.stdout
    report = f"stdout:\n{out}\nstderr:\n{proc.stderr}\ndaemon log:\n{d.log_text()[-5000:]}"
    assert proc.returncode == 0, report
    counts = {k: int(v) for k, v in re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", out, re.M)}
    assert counts.get("fail") == 0 and counts.get("cancelled") == 0, report
    assert counts.get("skipped") == 0, report
    assert counts.get("pass") == expected, report


def stop(d: Daemon) -> None:
    assert d.stop() == 0, d.log_text()
    assert "Traceback" not in d.log_text(), d.log_text()


# Each node test file with the number of tests it must pass.
NODE_TESTS = {
    "socket.test.js": 6,  # initialize, sessions + typed updates, context, progress, errors, abort
    "summarize.test.js": 3,  # compaction/summarize answered, cancellation -32800, timeoutMs
    "stdio.test.js": 4,  # connectStdio through `sessiond connect`; connection failures
    "version.test.js": 2,  # another protocol version: refused by the client, by the daemon
}


@needs_build
@pytest.mark.parametrize("test_file", list(NODE_TESTS))
def test_node_tests_against_a_real_daemon(tmp_path: Path, test_file: str) -> None:
    d = start_daemon(tmp_path)
    try:
        proc = subprocess.run(
            node_test(test_file),
            env=node_env(d, tmp_path),
            cwd=CLIENT,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        check_tap(proc, d, NODE_TESTS[test_file])
        assert d.process.poll() is None, "the daemon under test died"
    finally:
        stop(d)


@needs_build
@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL], ids=["restart", "crash"])
def test_reconnect_after_the_daemon_restarts(tmp_path: Path, kill: signal.Signals) -> None:
    ready = tmp_path / "ready"
    d = start_daemon(tmp_path)
    proc = subprocess.Popen(
        node_test("reconnect.test.js"),
        env=node_env(d, tmp_path, SESSIOND_TEST_READY=str(ready)),
        cwd=CLIENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    restarted: Daemon | None = None
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the node side never got ready"
            time.sleep(0.02)
        session_id = ready.read_text().strip()
        d.process.send_signal(kill)
        d.process.wait(timeout=15)
        time.sleep(0.3)  # the clients see the close and start retrying
        restarted = start_daemon(tmp_path)  # same store, same socket path
        out, err = proc.communicate(timeout=120)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        check_tap(done, restarted, 1)
        # the appends made before and after the restart are in the one session file
        [path] = (d.store / "sessions").rglob(f"*_{session_id}.jsonl")
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        texts = [e["message"]["content"][0]["text"] for e in lines[1:] if e.get("type") == "message"]
        assert texts == ["before the restart", "noted", "after", "priced"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        d.stop()
        if restarted is not None:
            stop(restarted)


def daemon_pid(store: Path) -> int | None:
    """The pid a running daemon wrote into ``<store>/daemon.lock`` (None when none holds it)."""
    lock = store / "daemon.lock"
    if not lock.exists():
        return None
    with open(lock) as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            text = lock.read_text().strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return None  # nobody holds the lock: no daemon


def wait_until_gone(store: Path, timeout: float = 15) -> None:
    """Until no daemon holds the store's lock (its process exited, reaped or not)."""
    deadline = time.monotonic() + timeout
    while daemon_pid(store) is not None:
        assert time.monotonic() < deadline, "the daemon did not exit"
        time.sleep(0.02)


@needs_build
def test_stdio_client_restarts_the_daemon_through_a_new_bridge(tmp_path: Path) -> None:
    """The editor's case: `sessiond connect` started the daemon, the daemon crashes; the client
    (autoReconnect) spawns a new bridge, which starts a new daemon on the same store."""
    store, socket, ready = tmp_path / "store", tmp_path / "run" / "sessiond.sock", tmp_path / "ready"
    isolated = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "PI_CODING_AGENT_DIR": str(tmp_path / "pi")}
    env = {k: v for k, v in os.environ.items() if k != "SESSIOND_CONFIG"}
    env.update(isolated, SESSIOND_HOME=str(store))
    connect = [sys.executable, "-m", "sessiond", "connect", "--socket", str(socket)]
    env.update(SESSIOND_TEST_CONNECT=json.dumps(connect), SESSIOND_TEST_STDIO_READY=str(ready))
    proc = subprocess.Popen(
        node_test("stdio-restart.test.js"),
        env=env,
        cwd=CLIENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = store / "daemon.log"  # where a daemon started by the bridge logs
    first: int | None = None
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the node side never got ready"
            time.sleep(0.02)
        session_id = ready.read_text().strip()
        first = daemon_pid(store)
        assert first is not None, "the bridge did not start a daemon"
        os.kill(first, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        logs = log.read_text(errors="replace") if log.exists() else ""
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        report = f"stdout:\n{out}\nstderr:\n{err}\ndaemon log:\n{logs[-5000:]}"
        assert proc.returncode == 0, report
        assert re.search(r"^# pass 1$", done.stdout, re.M) and re.search(r"^# fail 0$", done.stdout, re.M), (
            report
        )
        second = daemon_pid(store)
        assert second is not None and second != first, "no new daemon was started"
        [path] = (store / "sessions").rglob(f"*_{session_id}.jsonl")
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        texts = [e["message"]["content"][0]["text"] for e in lines[1:] if e.get("type") == "message"]
        assert texts == ["before the crash", "noted", "after"]
        assert "Traceback" not in logs, logs
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        pid = daemon_pid(store)
        if pid is not None and pid != first:
            os.kill(pid, signal.SIGTERM)
            wait_until_gone(store)


@needs_npm
def test_generated_types_are_up_to_date() -> None:
    """``npm run check-gen``: src/generated/protocol.ts matches protocol/sessiond.schema.json."""
    assert NPM is not None
    proc = subprocess.run(
        [NPM, "run", "--silent", "check-gen"], cwd=CLIENT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert "is up to date" in proc.stdout


@needs_npm
def test_check_gen_fails_on_a_changed_schema(tmp_path: Path) -> None:
    assert NPM is not None
    schema = json.loads(SCHEMA.read_text())
    schema["$defs"]["TreeNode"]["properties"]["pinned"] = {"type": "boolean", "description": "New field."}
    changed = tmp_path / "sessiond.schema.json"
    changed.write_text(json.dumps(schema, indent=2))
    check = [NPM, "run", "--silent", "check-gen", "--", "--schema", str(changed)]
    proc = subprocess.run(check, cwd=CLIENT, capture_output=True, text=True, check=False)
    assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
    assert "is stale" in proc.stderr and "npm run gen" in proc.stderr
    # and regenerating from it (elsewhere) picks the change up
    out = tmp_path / "protocol.ts"
    gen = [NPM, "run", "--silent", "gen", "--", "--schema", str(changed), "--out", str(out)]
    subprocess.run(gen, cwd=CLIENT, capture_output=True, text=True, check=True)
    assert re.search(r"New field\.\s*\*/\s*pinned\?: boolean;", out.read_text())
    check_out = [*check, "--out", str(out)]
    proc = subprocess.run(check_out, cwd=CLIENT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"


@needs_build
def test_socket_discovery_agrees_with_the_daemon(tmp_path: Path) -> None:
    """defaultSocketPath() gives the path ``sessiond serve`` would listen on, for the same env."""
    assert NODE is not None
    units = node_test("discovery.test.js")  # the unit tests of defaultStore/defaultSocketPath
    unit = subprocess.run(units, cwd=CLIENT, capture_output=True, text=True, check=False)
    assert unit.returncode == 0 and re.search(r"^# pass 4$", unit.stdout, re.M), unit.stdout + unit.stderr
    home = tmp_path / "home"
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (home / ".local" / "share" / "sessiond").mkdir(parents=True)
    (tmp_path / "link").symlink_to(home / ".local" / "share" / "sessiond")
    cases: list[dict[str, str]] = [
        {},
        {"XDG_RUNTIME_DIR": str(runtime)},
        {"XDG_RUNTIME_DIR": str(runtime), "SESSIOND_HOME": str(tmp_path / "other")},
        {"XDG_RUNTIME_DIR": str(runtime), "SESSIOND_HOME": str(tmp_path / "link")},
        {"XDG_RUNTIME_DIR": str(tmp_path / "missing")},
        {"XDG_RUNTIME_DIR": str(runtime), "XDG_DATA_HOME": str(tmp_path / "data")},
        {"XDG_DATA_HOME": str(tmp_path / "data"), "SESSIOND_HOME": str(tmp_path / "data" / "sessiond")},
    ]
    python = "from sessiond.service.config import load_config; print(load_config().socket)"
    node = "import('@sessiond/client').then((m) => console.log(m.defaultSocketPath()))"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SESSIOND_"))}
    for case in cases:
        env = {**base, "HOME": str(home), **case}
        daemon_says = subprocess.run(
            [sys.executable, "-c", python], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        client_says = subprocess.run(
            [NODE, "-e", node], env=env, cwd=CLIENT, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert client_says == daemon_says, case


# --------------------------------------------------------------------------- the editor example


SESSIOND = Path(sys.executable).with_name("sessiond")  # the console script next to this Python


def run_editor(d: Daemon, *args: str) -> dict[str, Any]:
    assert NODE is not None
    proc = subprocess.run(
        [NODE, str(EXAMPLE / "dist" / "editor.js"), "--socket", str(d.socket), "--json", *args],
        env=d.env,
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}\n{d.log_text()[-5000:]}"
    *human, last = proc.stdout.splitlines()
    summary: dict[str, Any] = json.loads(last)
    assert summary["ok"] is True and summary["output"] == human
    return summary


@pytest.mark.skipif(
    not (EXAMPLE / "dist" / "editor.js").exists(), reason=f"examples/editor is not built ({SETUP})"
)
def test_editor_example(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    d = start_daemon(tmp_path)
    try:
        # as an editor extension connects: through `sessiond connect` bridges (to this daemon)
        assert SESSIOND.exists(), f"no sessiond console script at {SESSIOND}"
        demo = run_editor(d, "--stdio", "--sessiond", str(SESSIOND), "--workspace", str(ws))
        assert demo["transport"] == f"stdio:{SESSIOND} connect --socket {d.socket}"
        sid = demo["sessionId"]
        # the status line followed usage_update: the agent's two answers (12k then 48k of 200k)
        status = demo["status"]
        assert status[0] == "ctx: no usage yet"
        assert "ctx 6% · 12k/200k (api)" in status
        assert status[-1] == "ctx 24% · 48k/200k (api)"
        # the tree view from tree/get: the four messages on the branch, the leaf last
        assert demo["tree"] == [
            "> user: Add a greeting to hello.txt",
            "> assistant: Done: Add a greeting to hello.txt.",
            "> user: Make it louder",
            "* assistant: Done: Make it louder.",
            "(6 extension entries hidden)",
        ]
        # the rewind: a dry run with the plan, then the real one, back to before "Make it louder"
        dry, done = demo["dryRun"], demo["rewind"]
        assert dry["dryRun"] is True and dry["undoId"] is None
        assert [(f["path"], f["action"], f["status"]) for f in dry["files"]] == [("hello.txt", "write", "ok")]
        assert [(f["path"], f["action"]) for f in done["files"]] == [("hello.txt", "write")]
        assert (done["written"], done["conflicts"], done["refused"]) == (1, 0, 0)
        assert (ws / "hello.txt").read_text() == "hello v1\n" == demo["helloAfter"]
        assert "[files] rewind of hello.txt announced to subscribers" in demo["output"]

        # the same example on the existing session: the tree, the usage, and undoing that rewind
        again = run_editor(d, "--session", sid, "--rewind", done["undoId"])  # over the socket
        assert again["transport"] == f"unix:{d.socket}"
        assert set(again["status"]) == {"ctx 24% · 48k/200k (api)"}
        assert again["tree"][:4] == demo["tree"][:4]  # the leaf moved onto a (hidden) snapshot entry
        assert re.fullmatch(r"\(\d+ extension entries hidden\)", again["tree"][4])
        assert again["rewind"]["written"] == 1
        assert (ws / "hello.txt").read_text() == "HELLO V2!\n"
        [path] = (d.store / "sessions").rglob(f"*_{sid}.jsonl")
        kinds = [
            e["data"]["kind"]
            for e in map(json.loads, path.read_text().splitlines()[1:])
            if e.get("customType") == "sessiond.fileSnapshot"
        ]
        assert "undo" in kinds  # what each rewind replaced, kept for undoing it
    finally:
        stop(d)
