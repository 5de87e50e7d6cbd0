"""What the MCP tests share: a real daemon on a store holding every kind of session.

The daemon runs on a temporary store holding the bundled example session, one of Pi's sessions,
a real Claude Code transcript and a real Codex rollout, plus a store session with file history
made here through the protocol. One daemon serves the whole package.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.builders import assistant, user
from tests.conftest import CLAUDE_FIXTURES, FIXTURES, PI_FIXTURES, REPO
from tests.harness.calls import call
from tests.harness.daemon import Daemon, start_daemon

SESSIOND = Path(sys.executable).parent / "sessiond"
EXAMPLE = REPO / "examples" / "auth-refactor.jsonl"
EXAMPLE_ID = "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"
EXAMPLE_CWD = "/home/dev/webapp"
PI_FILE = PI_FIXTURES / "before-compaction.v1.jsonl"
CLAUDE_FILE = CLAUDE_FIXTURES / "ccl-2.1.42" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
CLAUDE_ID = "03eb5929-52b3-4b13-ada3-b93ae35806b8"
CODEX_FILE = (
    FIXTURES
    / "codex"
    / "cpolar-0.36"
    / "rollout-2025-09-16T12-47-48-9cd28a74-da7e-4458-a91a-fffec2be9d7a.jsonl"
)
CODEX_ID = "9cd28a74-da7e-4458-a91a-fffec2be9d7a"
TOOLS = {"list_sessions", "search_sessions", "read_session", "session_usage", "file_changes", "handoff"}


@dataclass
class World:
    daemon: Daemon
    tmp: Path
    foreign: list[Path]
    """The other agents' files: never written."""
    edited_id: str
    """A store session with file history (two checkpoints, two files changed)."""
    workspace: Path


def _digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("mcp")
    store = tmp / "store" / "sessions" / "--home-dev-webapp--"
    store.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, store / f"2026-07-29T09-00-00-000Z_{EXAMPLE_ID}.jsonl")
    pi = tmp / "pi" / "sessions" / "--Users-badlogic-workspaces-pi-mono--"
    pi.mkdir(parents=True)
    shutil.copyfile(PI_FILE, pi / PI_FILE.name)
    claude = tmp / "claude" / "projects" / "-home-user-project"
    claude.mkdir(parents=True)
    shutil.copyfile(CLAUDE_FILE, claude / CLAUDE_FILE.name)
    codex = tmp / "codex" / "sessions" / "2025" / "09" / "16"
    codex.mkdir(parents=True)
    shutil.copyfile(CODEX_FILE, codex / CODEX_FILE.name)
    for base in (tmp / "store", tmp / "pi", tmp / "claude", tmp / "codex"):
        for p in [base, *base.rglob("*")]:
            p.chmod(0o700 if p.is_dir() else 0o600)
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('v1')\n")
    daemon = start_daemon(tmp)
    try:
        import anyio  # noqa: PLC0415

        edited = anyio.run(_make_edited_session, daemon, ws)
        yield World(
            daemon, tmp, [pi / PI_FILE.name, claude / CLAUDE_FILE.name, codex / CODEX_FILE.name], edited, ws
        )
    finally:
        assert daemon.stop() == 0, daemon.log_text()


async def _make_edited_session(daemon: Daemon, ws: Path) -> str:
    """A store session whose agent edited two files over two prompts, telling sessiond."""
    client = await daemon.client()
    try:
        created = await call(client, "session/new", {"cwd": str(ws)})
        sid: str = created["sessionId"]
        for prompt, name, text in (
            ("make app print v2", "app.py", "print('v2')\n"),
            ("add a readme", "README.md", "# app\n"),
        ):
            appended = await call(
                client,
                "session/append",
                {"sessionId": sid, "entries": [{"type": "message", "message": user(prompt)}]},
            )
            await call(client, "fileHistory/checkpoint", {"sessionId": sid, "messageId": appended["leafId"]})
            await call(client, "fileHistory/track", {"sessionId": sid, "path": name})
            (ws / name).write_text(text)
            await call(client, "fileHistory/track", {"sessionId": sid, "path": name, "phase": "after"})
            await call(
                client,
                "session/append",
                {"sessionId": sid, "entries": [{"type": "message", "message": assistant(f"done: {name}")}]},
            )
        return sid
    finally:
        await client.close()


def mcp_args(world: World) -> list[str]:
    """``sessiond mcp`` on the package's daemon (never starting another)."""
    return ["mcp", "--store", str(world.daemon.store), "--socket", str(world.daemon.socket), "--no-start"]
