"""A Claude Code transcript read for indexing alone: its entries, without the session around them.

:class:`~sessiond.store.claude.ClaudeSession` reads the transcript
(:meth:`~sessiond.formats.claude_code.live.LiveTranscript.read`), files every entry in a
session index with a preview and a tree node, and then, asked for its entries, reads each line
back from the file, parses it again and converts it again: two of every three steps of its
first build's time, none of them needed to index text. This takes the same read and converts
each entry once, from the record the read parsed (the line it would read back). A transcript
with a line over the line limit (its entry is a placeholder read back from the file) is left to
``ClaudeSession`` (:func:`read_claude` returns ``None``). It cannot follow the file: the engine
opens a ``ClaudeSession`` for a file it keeps following.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..formats.claude_code.live import LiveTranscript
from ..store.bounded import BoundedLines, describe_claude
from ..store.regular import open_regular_fd
from .file_read import FileRead, leaf_or_last


def read_claude(path: Path) -> FileRead | None:
    """The transcript's entries as ``ClaudeSession`` serves them, or ``None`` when a line of it
    is over the line limit (its reader's errors are ``ClaudeSession.open``'s)."""
    fd = open_regular_fd(path)
    try:
        lines = BoundedLines(fd, 0, os.fstat(fd).st_size, describe_claude)
        live, chain = LiveTranscript.read(lines, str(path))
    finally:
        os.close(fd)
    t = live.t
    if t.diagnostics.oversized_lines:
        return None
    pi_entry = live.pi_entry
    entries = [pi_entry(record) for _, _, _, record in chain]
    leaf = leaf_or_last(entries, live.leaf)  # as ClaudeSession._set_leaf
    return FileRead(t.session_id or Path(t.source).stem, t.cwd or "", t.title(), entries, leaf)
