"""Shared test configuration.

anyio's pytest plugin runs async tests; the backend is pinned to asyncio because pygls (the
daemon's JSON-RPC layer) is asyncio-only, and an installed trio would otherwise double every
async test (tech-notes B.4).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SESSIOND_SHARED", REPO.parent / "shared"))
PI_FIXTURES = SHARED / "fixtures" / "pi"
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


def oracle_dir() -> Path | None:
    """Where pi-oracle is installed (``scripts/setup-oracle``), or None."""
    candidates = [os.environ.get("PI_ORACLE_DIR"), str(REPO / ".cache" / "pi-oracle")]
    for c in candidates:
        installed = c and (Path(c) / "node_modules" / "@earendil-works" / "pi-coding-agent").is_dir()
        if installed and shutil.which("node"):
            return Path(c)
    return None
