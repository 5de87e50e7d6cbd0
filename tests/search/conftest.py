"""Fixtures of the search tests: a daemon whose roots hold the recorded Claude Code, Codex and Pi
sessions under tests/fixtures (copied, so a test may append to them)."""

from __future__ import annotations

import shutil
from pathlib import Path

from sessiond_client.typed import SessiondClient

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE_FIXTURE = FIXTURES / "claude-code" / "ccl-2.1.42" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
CLAUDE_ID = "03eb5929-52b3-4b13-ada3-b93ae35806b8"
CODEX_HOME = FIXTURES / "codex" / "synthetic-home"
PI_FIXTURE = FIXTURES / "pi" / "before-compaction.v1.jsonl"


def user_entry(
    eid: str, text: str, parent: str | None = None, timestamp: str = "2026-03-01T10:00:00Z"
) -> dict[str, object]:
    """A Pi ``message`` entry of the user saying ``text``: what the index tests feed the index."""
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": timestamp,
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def populate(tmp: Path) -> dict[str, Path]:
    """Put one session of each agent where the daemon (tests.harness.daemon's env) looks."""
    claude = tmp / "claude" / "projects" / "-home-user-project" / f"{CLAUDE_ID}.jsonl"
    claude.parent.mkdir(parents=True)
    shutil.copyfile(CLAUDE_FIXTURE, claude)
    shutil.copytree(CODEX_HOME, tmp / "codex")
    pi = tmp / "pi" / "sessions" / "--home-user-pi--" / "2026-01-01T00-00-00-000Z_pi-fixture.jsonl"
    pi.parent.mkdir(parents=True)
    shutil.copyfile(PI_FIXTURE, pi)
    return {"claude": claude, "pi": pi, "codex": tmp / "codex"}


async def typed_client(daemon: object) -> SessiondClient:
    """The typed client of a test daemon (tests.harness.daemon.Daemon), initialized."""
    return await SessiondClient.connect(daemon.store, socket=daemon.socket, start=False)  # type: ignore[attr-defined]
