"""Runs the real Claude Code (``scripts/setup-claude-code``) against the stand-in, offline.

The agent refuses ``--permission-mode`` bypasses as root, and its tools write real files, so it
runs as uid/gid 65534 (``setpriv``) in a throw-away HOME and project directory owned by that
uid. :class:`ClaudeHome` holds those directories and finds the transcripts the agent writes
under ``$HOME/.claude/projects/``; :meth:`ClaudeHome.run` runs one ``claude -p`` turn and
returns its ``--output-format json`` result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.claude.standin import MODEL, StandIn

REPO = Path(__file__).resolve().parents[3]
NOBODY = 65534
DEFAULT_TOOLS = ("Read", "Write", "Edit", "Bash", "Glob", "Grep")


def claude_binary() -> Path | None:
    """The installed agent: ``$SESSIOND_CLAUDE_CODE_BIN``, else the @latest install when
    ``SESSIOND_AGENTS_LATEST=1``, else the pinned one; None when not installed."""
    env = os.environ.get("SESSIOND_CLAUDE_CODE_BIN")
    if env:
        return Path(env) if Path(env).is_file() else None
    name = "claude-code-latest" if os.environ.get("SESSIOND_AGENTS_LATEST") == "1" else "claude-code"
    path = REPO / ".cache" / "agents" / name / "node_modules" / "@anthropic-ai" / "claude-code"
    exe = path / "bin" / "claude.exe"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def why_not_runnable() -> str | None:
    """Why the agent cannot run here (a skip reason), or None when it can."""
    if claude_binary() is None:
        return "Claude Code is not installed (scripts/setup-claude-code failed or was not run)"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "running Claude Code as uid 65534 needs root (it refuses to skip permissions as root)"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) not found: cannot drop to uid 65534"
    return None


def agent_version() -> str:
    exe = claude_binary()
    assert exe is not None
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


@dataclass
class RunResult:
    """One ``claude -p`` run: exit code, its JSON result (None if unparsable) and stderr."""

    returncode: int
    result: dict[str, Any] | None
    stdout: str
    stderr: str

    @property
    def session_id(self) -> str:
        assert self.result is not None, self.stderr or self.stdout
        return str(self.result["session_id"])


class ClaudeHome:
    """A throw-away HOME and project directory owned by uid 65534, for one scripted session."""

    def __init__(self, standin: StandIn) -> None:
        self.standin = standin
        self.root = Path(tempfile.mkdtemp(prefix="sessiond-claude-"))
        os.chmod(self.root, 0o755)
        self.home = self.root / "home"
        self.project = self.root / "project"
        for d in (self.home, self.project):
            d.mkdir()
            os.chown(d, NOBODY, NOBODY)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ClaudeHome:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def projects(self) -> Path:
        return self.home / ".claude" / "projects"

    def transcript(self, session_id: str) -> Path:
        """The main transcript of ``session_id`` (``~/.claude/projects/<dir>/<id>.jsonl``)."""
        found = sorted(self.projects.glob(f"*/{session_id}.jsonl"))
        assert found, f"no transcript for {session_id} under {self.projects}"
        return found[0]

    def write_file(self, name: str, content: str | bytes) -> Path:
        """A project file the agent may edit, owned by uid 65534."""
        path = self.project / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        os.chown(path, NOBODY, NOBODY)
        return path

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": "nobody",
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "ANTHROPIC_BASE_URL": self.standin.url,
            "ANTHROPIC_API_KEY": "sk-ant-standin-not-a-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
            # -p runs keep no file history unless asked; sessiond rewinds these backups.
            "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "1",
        }

    def command(self, prompt: str, args: Sequence[str], tools: Sequence[str]) -> list[str]:
        exe = claude_binary()
        assert exe is not None
        return [
            "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            str(exe), "-p", prompt,
            "--output-format", "json",
            "--permission-mode", "acceptEdits",
            "--model", self.standin.model or MODEL,
            "--allowedTools", ",".join(tools),
            *args,
        ]  # fmt: skip

    def run(
        self,
        prompt: str,
        *args: str,
        tools: Sequence[str] = DEFAULT_TOOLS,
        timeout: float = 120,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> RunResult:
        """Run one ``claude -p`` turn in the project directory (extra ``args``: ``--resume ID``,
        ``--fork-session``, ``--mcp-config FILE``...; ``env``: more environment). With ``check``
        the run must succeed and the stand-in must have had a reply for every main request."""
        proc = subprocess.run(
            self.command(prompt, args, tools),
            cwd=self.project,
            env={**self.env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        try:
            result = json.loads(proc.stdout) if proc.stdout.strip() else None
        except ValueError:
            result = None
        run = RunResult(proc.returncode, result, proc.stdout, proc.stderr)
        if check:
            assert not self.standin.errors, self.standin.errors
            assert proc.returncode == 0 and result is not None, (
                f"claude exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\n"
                f"stderr: {proc.stderr[-2000:]}"
            )
            assert not result.get("is_error"), result
        return run
