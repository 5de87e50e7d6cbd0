"""The directories sessiond serves sessions from, and what it may do there.

* ``sessiond`` — its own store (``<store>/sessions``): read-write, Pi format.
* ``pi`` — Pi's own sessions (``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``):
  Pi format, read-only unless configured writable (Pi may be writing them right now).
* ``claude`` — Claude Code's transcripts (``$CLAUDE_CONFIG_DIR/projects``, else
  ``~/.claude/projects``): always read-only; sessiond never rewrites another agent's file.
* ``codex`` — Codex CLI's home (``$CODEX_HOME``, else ``~/.codex``): the rollouts under
  ``sessions/`` and ``archived_sessions/``, always read-only.
* ``opencode`` — OpenCode's data directory (``$XDG_DATA_HOME/opencode``, else
  ``~/.local/share/opencode``): its ``opencode.db`` and older ``storage/`` JSON files,
  always read-only.

A root whose directory does not exist is simply empty. Configuration (``[roots.pi]``,
``[roots.claude]``, ``[roots.codex]``, ``[roots.opencode]``: ``path``, ``enabled``,
``writable`` for Pi) overrides the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

Format = Literal["pi", "claude-code", "codex", "opencode"]
ROOT_NAMES: Final = ("sessiond", "pi", "claude", "codex", "opencode")
AGENT_NAMES: Final = {"claude-code": "Claude Code", "codex": "Codex CLI", "opencode": "OpenCode"}


@dataclass(frozen=True, slots=True)
class Root:
    name: str
    format: Format
    path: Path
    """The directory holding the per-cwd directories."""
    writable: bool

    @property
    def read_only_reason(self) -> str | None:
        if self.writable:
            return None
        if self.format == "claude-code":
            return f"it is a Claude Code transcript ({self.path}); sessiond never writes another agent's file"
        if self.format in AGENT_NAMES:
            agent = AGENT_NAMES[self.format]
            return f"it is {agent} data ({self.path}); sessiond never writes another agent's files"
        return f"it is in Pi's directory ({self.path}), which is read-only unless [roots.pi] writable = true"

    def contains(self, path: Path) -> bool:
        try:
            Path(path).resolve().relative_to(self.path.resolve())
        except (ValueError, OSError):
            return False
        return True


def default_pi_sessions(env: Mapping[str, str]) -> Path:
    agent = env.get("PI_CODING_AGENT_DIR")
    base = Path(agent).expanduser() if agent else Path.home() / ".pi" / "agent"
    return base / "sessions"


def default_claude_projects(env: Mapping[str, str]) -> Path:
    config = env.get("CLAUDE_CONFIG_DIR")
    base = Path(config).expanduser() if config else Path.home() / ".claude"
    return base / "projects"


def default_codex_home(env: Mapping[str, str]) -> Path:
    home = env.get("CODEX_HOME")
    return Path(home).expanduser() if home else Path.home() / ".codex"


def default_opencode_data(env: Mapping[str, str]) -> Path:
    """OpenCode's data directory: ``$XDG_DATA_HOME/opencode`` (an absolute one), else the default."""
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "opencode"


def claude_project_dir_name(cwd: str) -> str:
    """Claude Code's directory name for a cwd: every character outside ``[A-Za-z0-9]`` -> ``-``.

    Names longer than 200 characters get a hash suffix whose function differs between Claude
    Code builds; callers match those by the 200-character prefix.
    """
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


def build_roots(store_sessions: Path, data: Mapping[str, object], env: Mapping[str, str]) -> list[Root]:
    """The roots in lookup order (sessiond's own store first), from the ``[roots]`` table."""
    roots = [Root("sessiond", "pi", store_sessions, True)]
    specs: list[tuple[str, Format, Path, bool]] = [
        ("pi", "pi", default_pi_sessions(env), False),
        ("claude", "claude-code", default_claude_projects(env), False),
        ("codex", "codex", default_codex_home(env), False),
        ("opencode", "opencode", default_opencode_data(env), False),
    ]
    for name, fmt, default, writable in specs:
        table = data.get(name, {})
        assert isinstance(table, Mapping)
        if not table.get("enabled", True):
            continue
        path = Path(str(table["path"])).expanduser() if table.get("path") else default
        if os.path.abspath(path) == os.path.abspath(store_sessions):
            continue  # the store itself, configured twice
        roots.append(Root(name, fmt, path, bool(table.get("writable", writable)) and fmt == "pi"))
    return roots
