"""Compaction's settings and defaults, apart from the code that uses them.

The configuration (:mod:`sessiond.service.config`) reads these when any command starts, so
this module imports only the standard library: loading the compaction itself (the model, the
token estimator) is left to the commands that compact (issue 30: `sessiond ls` stays light).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

DEFAULT_RESERVE_TOKENS: Final = 16384
DEFAULT_KEEP_RECENT_TOKENS: Final = 20000


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS

    def as_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
        }


DEFAULT_TOOLS: Final = (
    "read",
    "bash",
    "grep",
    "find",
    "ls",
    "glob",
    "edit",
    "write",
    "webfetch",
    "websearch",
)
"""The tools whose old results micro-compaction clears by default (:mod:`.micro`)."""
