"""Shared test configuration.

anyio's pytest plugin runs async tests; the backend is pinned to asyncio because pygls (the
daemon's JSON-RPC layer) is asyncio-only, and an installed trio would otherwise double every
async test (docs/design-notes.md §3).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
"""Real session files, copied into the repository (``tests/fixtures/README.md``): the only place
tests read fixtures from, so that a clone passes its tests with nothing beside it."""
PI_FIXTURES = FIXTURES / "pi"
CLAUDE_FIXTURES = FIXTURES / "claude-code"
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


def oracle_dir() -> Path | None:
    """Where pi-oracle is installed (``scripts/setup-oracle``), or None."""
    candidates = [os.environ.get("PI_ORACLE_DIR"), str(REPO / ".cache" / "pi-oracle")]
    for c in candidates:
        if not c:
            continue
        installed = (Path(c) / "node_modules" / "@earendil-works" / "pi-coding-agent").is_dir()
        if installed and shutil.which("node"):
            return Path(c)
    return None


@pytest.fixture(scope="session", autouse=True)
def _other_agents_dirs_isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Claude Code's, Pi's, Codex's and OpenCode's directories point into a temp dir for every
    test (and every daemon a test starts): tests must never list or watch the real ones of the
    person running them. (``XDG_DATA_HOME`` also moves the default store; tests name theirs.)"""
    base = tmp_path_factory.mktemp("agents")
    names = ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "CODEX_HOME", "XDG_DATA_HOME")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["CLAUDE_CONFIG_DIR"] = str(base / "claude")
    os.environ["PI_CODING_AGENT_DIR"] = str(base / "pi")
    os.environ["CODEX_HOME"] = str(base / "codex")
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    yield None
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
