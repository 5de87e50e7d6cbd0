"""The examples run against a real daemon, as their docstrings say."""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.daemon import start_daemon


def test_the_agent_loop_example(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    try:
        ws = tmp_path / "ws"
        proc = subprocess.run(
            [
                sys.executable,
                str(REPO / "examples" / "agent_loop.py"),
                "--socket",
                str(daemon.socket),
                "--workspace",
                str(ws),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=daemon.env,
        )
        out = proc.stdout
        assert proc.returncode == 0, out + proc.stderr
        assert "model error: prompt is too long" in out  # the overflow happened ...
        assert "reason overflow, willRetry True" in out  # ... sessiond compacted and asked for a retry
        assert "summarizing" in out  # through this agent's own summarizer
        assert "edited hello.py" in out and (ws / "hello.py").exists()
        assert (
            "rewinding to the first prompt would touch: " in out
            and "hello.py" in out.split("would touch:")[1]
        )
    finally:
        assert daemon.stop() == 0


@pytest.mark.parametrize("script", ["client_demo.py"])
def test_the_client_demo(tmp_path: Path, script: str) -> None:
    daemon = start_daemon(tmp_path)
    try:
        proc = subprocess.run(
            [sys.executable, str(REPO / "examples" / script), "--socket", str(daemon.socket)],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env=daemon.env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "connected to sessiond" in proc.stdout
    finally:
        assert daemon.stop() == 0


# ---------------------------------------------------------------------------- what a user runs into


def test_agent_loop_into_head_ends_quietly(tmp_path: Path) -> None:
    """``agent_loop.py | head``: the reader goes away; no BrokenPipeError traceback."""
    daemon = start_daemon(tmp_path)
    try:
        script = (
            f"{shlex.quote(sys.executable)} {shlex.quote(str(REPO / 'examples' / 'agent_loop.py'))} "
            f"--socket {shlex.quote(str(daemon.socket))} --workspace {shlex.quote(str(tmp_path / 'ws'))} "
            "| head -n 2"
        )
        proc = subprocess.run(
            ["bash", "-c", f'{script}; echo "exit=${{PIPESTATUS[0]}}"'],
            capture_output=True,
            text=True,
            timeout=120,
            env=daemon.env,
            check=False,
        )
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("session ") and lines[1].startswith("> "), proc.stdout
        assert lines[-1] == "exit=0", (proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    finally:
        assert daemon.stop() == 0


ALLOWED_IMPORTS = {"sessiond_client", "sessiond_protocol"}


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "examples").glob("*.py")))
def test_examples_use_only_the_client_packages(script: str) -> None:
    """An agent talks to sessiond through its client; an example importing the daemon's
    internals (``sessiond.*``) would teach the wrong thing."""
    tree = ast.parse((REPO / "examples" / script).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    ours = {name for name in imported if name.startswith("sessiond")}
    assert ours <= ALLOWED_IMPORTS, f"{script} imports {sorted(ours - ALLOWED_IMPORTS)}"
    assert "sessiond" not in imported
    # One client name across the examples and the docs: the typed SessiondClient.
    text = (REPO / "examples" / script).read_text(encoding="utf-8")
    assert "SessiondClient" in text and "import Client" not in text


def test_the_editor_example_imports_only_the_client() -> None:
    source = (REPO / "examples" / "editor" / "src" / "editor.ts").read_text(encoding="utf-8")
    modules = set(re.findall(r'from "([^"]+)"', source))
    assert modules and all(m == "@sessiond/client" or m.startswith("node:") for m in modules), modules
    assert (REPO / "examples" / "editor" / "README.md").exists()


EDITOR = REPO / "examples" / "editor" / "dist" / "editor.js"
NODE = shutil.which("node")


@pytest.mark.skipif(
    NODE is None or not EDITOR.exists(), reason="examples/editor is not built (scripts/setup-typescript)"
)
def test_the_editor_example_without_sessiond_on_path_gives_a_hint(tmp_path: Path) -> None:
    assert NODE is not None
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no sessiond anywhere on PATH
    for args, expected in (
        (["--stdio"], "`sessiond` is not on PATH"),
        (["--stdio", "--sessiond", str(tmp_path / "nope")], f"{tmp_path / 'nope'} does not exist"),
        (["--socket", str(tmp_path / "no.sock")], f"no sessiond daemon listens on {tmp_path / 'no.sock'}"),
    ):
        proc = subprocess.run(
            [NODE, str(EDITOR), *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert proc.returncode == 1, proc
        assert expected in proc.stderr, proc.stderr
        assert "\n    at " not in proc.stderr, f"a stack trace:\n{proc.stderr}"
