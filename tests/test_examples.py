"""The examples run against a real daemon, as their docstrings say."""

from __future__ import annotations

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
