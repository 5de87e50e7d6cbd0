"""Running the SDK editor (``sdk_editor.mjs``) against ``sessiond acp -- AGENT`` for the
end-to-end tests: where ``scripts/setup-acp`` put the real components, and one editor run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Daemon

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / ".cache" / "acp"
MODULES = INSTALL / "node_modules"
CODEX_ACP = MODULES / ".bin" / "codex-acp"
CLAUDE_CODE_ACP = MODULES / "@zed-industries" / "claude-code-acp" / "dist" / "index.js"
EDITOR = Path(__file__).with_name("sdk_editor.mjs")
RUN_TIMEOUT = 300
"""An upper bound for one editor run ("it happened at all"), generous for a loaded machine."""


def node_or_skip(agent: Path) -> str:
    """The ``node`` binary, or skip the test saying what is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the editor side is the ACP TypeScript SDK")
    if not (MODULES / "@agentclientprotocol" / "sdk").is_dir() or not agent.exists():
        pytest.skip(
            f"the ACP SDK / {agent.name} are not installed in .cache/acp: run scripts/setup-acp (needs npm)"
        )
    return node


def start_editor(
    node: str,
    daemon: Daemon,
    agent: list[str],
    env: dict[str, str],
    job: dict[str, Any],
    *options: str,
) -> subprocess.Popen[str]:
    """Start the SDK editor with ``sessiond acp [OPTIONS] -- AGENT`` as its agent."""
    proxy = [sys.executable, "-m", "sessiond", "acp", "--socket", str(daemon.socket), *options, "--", *agent]
    run_env = {**daemon.env, **env, "NODE_PATH": str(MODULES)}
    # The editor script imports the SDK from .cache/acp: run it from a copy placed there.
    script = INSTALL / "sdk_editor.mjs"
    if not script.exists() or script.read_bytes() != EDITOR.read_bytes():
        tmp = script.with_suffix(f".{id(job)}.tmp")
        shutil.copyfile(EDITOR, tmp)
        tmp.replace(script)
    return subprocess.Popen(
        [node, str(script), json.dumps({**job, "argv": proxy})],
        env=run_env,
        cwd=job["cwd"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def finish_editor(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Wait for the editor; what it printed (plus the proxy's and agent's stderr)."""
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"the editor did not finish:\n{stderr[-4000:]}") from None
    assert proc.returncode == 0, stderr[-4000:]
    out: dict[str, Any] = json.loads(stdout.splitlines()[-1])
    out["stderr"] = stderr
    return out


def run_editor(
    node: str, daemon: Daemon, agent: list[str], env: dict[str, str], job: dict[str, Any], *options: str
) -> dict[str, Any]:
    """One editor run, start to end."""
    return finish_editor(start_editor(node, daemon, agent, env, job, *options))


def chunks(updates: list[dict[str, Any]], kind: str) -> str:
    """The text of the updates of one kind (``agent_message_chunk``...), joined."""
    return "".join(
        u["update"]["content"].get("text", "") for u in updates if u["update"]["sessionUpdate"] == kind
    )
