"""The real Claude Code asks sessiond through MCP, offline: a scripted model calls
``mcp__sessiond__search_sessions`` and the hit lands in Claude Code's own transcript.

Claude Code (``scripts/setup-claude-code``) runs as uid 65534 against the loopback Messages API
stand-in of ``tests/agents/claude``. Turn one is an ordinary session that mentions a rare word.
Then the daemon of a store owned by the same uid indexes the agent's own transcripts
(``sessiond search`` from the command line, which waits for the first build). Turn two is a new
session with ``sessiond mcp`` configured as an MCP server (``--mcp-config``): the scripted model
calls the search tool, Claude Code spawns ``sessiond mcp`` itself, and the tool's answer — the
first session's id and a snippet with the word marked — is what the model receives next and what
Claude Code writes into its transcript.
"""

from __future__ import annotations

import compileall
import json
import os
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.claude.agent import DEFAULT_TOOLS, NOBODY, ClaudeHome, why_not_runnable
from tests.agents.claude.standin import StandIn, ToolUse, call, say

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")
"""The agent's uid cannot run the venv's interpreter when it lives under a home only root may
enter (pyenv under /root, as on CI): sessiond runs for that uid on the system's CPython of the
same minor version, with the venv's packages and this checkout on its path."""
WORD = "fluxcapacitor"
TOOL = "mcp__sessiond__search_sessions"


def python_path() -> str:
    return os.pathsep.join(
        [site.getsitepackages()[0], str(REPO), str(REPO / "protocol"), str(REPO / "clients" / "python")]
    )


def why_not() -> str | None:
    reason = why_not_runnable()
    if reason is not None:
        return reason
    if not SYSTEM_PYTHON.exists():
        return f"{SYSTEM_PYTHON} not found: sessiond cannot run as uid {NOBODY}"
    version = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if version != str(sys.version_info[:2]):
        return (
            f"{SYSTEM_PYTHON} is Python {version}, the venv {sys.version_info[:2]}: its packages cannot load"
        )
    return None


def as_nobody(home: ClaudeHome, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``sessiond ARGS`` as the agent's user, with the agent's HOME (so its daemon is theirs)."""
    return subprocess.run(
        [
            *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
            *(str(SYSTEM_PYTHON), "-m", "sessiond", *args),
        ],
        env={**home.env(), "SESSIOND_HOME": str(home.root / "sessiond"), "PYTHONPATH": python_path()},
        cwd=home.project,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def tool_results(request: dict[str, Any]) -> list[str]:
    """The text of every ``tool_result`` block in a Messages API request."""
    out: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    out.append(inner)
                elif isinstance(inner, list):
                    out += [b.get("text", "") for b in inner if isinstance(b, dict)]
    return out


def test_claude_code_finds_an_earlier_session_through_sessiond_mcp() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    compileall.compile_dir(REPO / "sessiond", quiet=1)  # the agent's uid cannot write __pycache__
    with StandIn() as model, ClaudeHome(model) as home:
        store = home.root / "sessiond"
        store.mkdir(mode=0o700)
        os.chown(store, NOBODY, NOBODY)
        try:
            model.script(say(f"The {WORD} is configured in settings/flux.toml; noted for later."))
            earlier = home.run(f"Where is the {WORD} configured?").session_id

            found = as_nobody(home, "search", WORD, "--json")
            assert found.returncode == 0, found.stderr
            assert earlier in {h["sessionId"] for h in json.loads(found.stdout)["hits"]}, found.stdout

            config = home.root / "mcp.json"
            server = {
                "type": "stdio",
                "command": str(SYSTEM_PYTHON),
                "args": ["-m", "sessiond", "mcp", "--store", str(store)],
                "env": {"PYTHONPATH": python_path(), "SESSIOND_HOME": str(store), "HOME": str(home.home)},
            }
            config.write_text(json.dumps({"mcpServers": {"sessiond": server}}))
            mark = model.mark()
            search = ToolUse(TOOL, {"query": WORD})
            model.script(call(search), say("Found it: we noted where it is configured."))
            later = home.run(
                f"What did we say about the {WORD} in an earlier session?",
                "--mcp-config",
                str(config),
                "--strict-mcp-config",
                tools=(*DEFAULT_TOOLS, TOOL),
            )

            answer = "\n".join(tool_results(model.since(mark)[-1]))
            assert earlier in answer and f"«{WORD}»" in answer, answer
            assert "Error" not in answer.split("\n", 1)[0]

            transcript = home.transcript(later.session_id).read_text()
            records = [json.loads(line) for line in transcript.splitlines() if line.strip()]
            results = [
                block
                for r in records
                if r.get("type") == "user"
                for block in (r.get("message", {}).get("content") or [])
                if isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") == search.id
            ]
            assert results and earlier in json.dumps(results), transcript[-3000:]
            assert not results[0].get("is_error")
        finally:
            as_nobody(home, "stop", "--store", str(store), timeout=60)
