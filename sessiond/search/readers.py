"""The readers a build uses for the session files of each agent, in one place: the daemon's
source (:class:`~sessiond.service.searching.CatalogSource`) and the build's reading process
(:mod:`.worker`) open a file the same way, so both index the same texts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from ..store.claude import ClaudeSession
from ..store.codex import CodexSession
from ..store.session import Session
from .claude_file import read_claude
from .codex_file import read_codex
from .pi_file import read_pi_v3

READ_ONLY: Final = "it is opened read-only to be indexed for search"
FILE_AGENTS: Final = frozenset({"claude-code", "codex", "pi"})
"""The agents whose sessions are one file each, read whole by :func:`open_for_index`."""


def open_for_index(agent: str, path: Path, *, follow: bool = False) -> Any:
    """The session in ``path`` read for indexing; its reader's errors are
    ``SessiondError``/``OSError``. ``agent`` is one of :data:`FILE_AGENTS`. ``follow``: the
    caller keeps it to read what the file grows by (``ingest``), so a Claude Code transcript or
    a Codex rollout is opened as the daemon's session, not read by the light readers (which
    give the same entries and cannot follow)."""
    if agent == "claude-code":
        light = None if follow else read_claude(path)
        return light if light is not None else ClaudeSession.open(path)
    if agent == "codex":
        return CodexSession.open(path) if follow else read_codex(path)
    fast = read_pi_v3(path)
    return fast if fast is not None else Session.open(path, read_only=READ_ONLY)
