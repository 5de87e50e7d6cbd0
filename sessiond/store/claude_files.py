"""Claude Code's files on disk: reading a transcript, sniffing a file, finding sub-agent transcripts.

The format package (:mod:`sessiond.formats.claude_code`) turns bytes into structures and
never opens a file; everything that touches the disk for it is here, so the format stays
testable on bytes alone and the cost of I/O is visible where it is paid. Every function only
reads: sessiond never writes another agent's file.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any, Final

import orjson

from ..formats.claude_code import (
    ClaudeTranscript,
    SubagentFile,
    SubagentLink,
    first_session_id,
    link_subagents,
    parse_transcript,
    sniff,
)
from .bounded import BoundedLines, describe_claude
from .regular import open_regular, read_regular

SNIFF_BYTES: Final = 1 << 20
"""How much of a file :func:`is_claude_code_file` reads at most."""
_HEAD_LINES: Final = 8
"""How many lines :func:`file_session_id` reads at most."""


def load_transcript(path: str | os.PathLike[str]) -> ClaudeTranscript:
    """Read a whole transcript file (read-only) and parse it. Raises ``OSError`` only."""
    with open_regular(path) as f:
        # never a line over the limit in memory: a placeholder stands in (see store.bounded);
        # a torn last line is read as before (the listing shows what is there)
        fd = f.fileno()
        size = os.fstat(fd).st_size
        lines = BoundedLines(fd, 0, size, describe_claude)
        data = b"".join(lines)
        if lines.skip_scanned is None and lines.pos < size:
            data += os.pread(fd, size - lines.pos, lines.pos)
    return parse_transcript(data, os.fspath(path))


def is_claude_code_file(path: str | os.PathLike[str]) -> bool:
    """Cheap sniff: is the first JSON object of the file a Claude Code record?

    Reads at most 1 MiB (:data:`SNIFF_BYTES`); an unreadable file says no. See
    :func:`~sessiond.formats.claude_code.sniff` for what says yes.
    """
    try:
        head = read_regular(path, SNIFF_BYTES)
    except OSError:
        return False
    return sniff(head, truncated=len(head) == SNIFF_BYTES)


def file_session_id(path: Path) -> str | None:
    """``sessionId`` of the first record that has one, reading a few lines at most."""
    try:
        with open_regular(path) as f:
            return first_session_id(itertools.islice(f, _HEAD_LINES))
    except OSError:
        return None


def find_subagents(path: str | os.PathLike[str], t: ClaudeTranscript) -> list[SubagentLink]:
    """Sub-agent transcripts of the session in ``path`` (already loaded as ``t``), in all layouts.

    * nested (2.1.x): ``<dir>/<sessionId>/subagents/**/agent-*.jsonl`` with ``.meta.json``;
    * flat (2.0.x): ``<dir>/agent-*.jsonl`` whose entries carry this session's ``sessionId``
      (checked on the first lines before the file is read whole);
    * inline (1.0.x) sidechains are in ``t`` itself.

    A file is read once even when two routes reach it (the session's own file never counts);
    unreadable files are skipped. Linking and order: :func:`~sessiond.formats.claude_code.link_subagents`.
    """
    p = Path(path)
    files: list[SubagentFile] = []
    seen_files: set[Path] = {p.resolve()} if p.exists() else set()
    directory = p.parent
    session_dirs = [directory / p.stem]
    if t.session_id and t.session_id != p.stem:
        session_dirs.append(directory / t.session_id)
    for sdir in session_dirs:
        sub = sdir / "subagents"
        if not sub.is_dir():
            continue
        for f in sorted(sub.rglob("agent-*.jsonl")):
            resolved = f.resolve()
            if resolved in seen_files:
                continue
            seen_files.add(resolved)
            found = _read_subagent(f, "nested")
            if found is not None:
                files.append(found)
    try:
        flat = sorted(directory.glob("agent-*.jsonl"))
    except OSError:
        flat = []
    for f in flat:
        resolved = f.resolve()
        if resolved in seen_files:
            continue
        seen_files.add(resolved)
        if t.session_id is None or file_session_id(f) != t.session_id:
            continue  # another session's sub-agent
        found = _read_subagent(f, "flat")
        if found is not None:
            files.append(found)
    return link_subagents(t, files)


def _read_subagent(f: Path, layout: str) -> SubagentFile | None:
    """A sub-agent transcript and its ``.meta.json`` (``None`` when the transcript is unreadable)."""
    try:
        transcript = load_transcript(f)
    except OSError:
        return None
    meta: dict[str, Any] = {}
    try:
        loaded = orjson.loads(f.with_name(f.name.removesuffix(".jsonl") + ".meta.json").read_bytes())
        if type(loaded) is dict:
            meta = loaded
    except (OSError, orjson.JSONDecodeError):
        pass
    return SubagentFile(str(f), layout, transcript, meta)


__all__ = ["SNIFF_BYTES", "file_session_id", "find_subagents", "is_claude_code_file", "load_transcript"]
