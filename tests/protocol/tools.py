"""The repository's generators in ``protocol/tools/`` (not part of the shipped packages), importable
by the tests that check their output is fresh."""

from __future__ import annotations

import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "protocol" / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import generate  # noqa: E402
import python_client  # noqa: E402

__all__ = ["TOOLS", "generate", "python_client"]
