"""The shell command that resumes a session in the agent that wrote it."""

from __future__ import annotations

import shlex


def resume_command(agent: str, root: str, session_id: str, cwd: str, path: str) -> str | None:
    """``claude --resume`` in its cwd, ``codex resume``, ``pi --session`` for a Pi file; a
    session of sessiond's store is a Pi file too, so Pi resumes it the same way (sessiond
    follows what Pi appends). ``None`` when no agent can resume it (OpenCode's are resumed
    from its own picker)."""
    into = f"cd {shlex.quote(cwd)} && " if cwd else ""
    if agent == "claude-code":
        return f"{into}claude --resume {shlex.quote(session_id)}"
    if agent == "codex":
        return f"{into}codex resume {shlex.quote(session_id)}"
    if agent == "pi":
        return f"{into}pi --session {shlex.quote(path)}"
    if agent == "opencode":
        return f"{into}opencode --session {shlex.quote(session_id)}"
    return None
