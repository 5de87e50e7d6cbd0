"""A Codex rollout read for indexing alone: the thread the daemon serves, without its session.

:class:`~sessiond.store.codex.CodexSession` replays the rollout into the conversation the daemon
serves (entries in Pi's shape, forks' inherited history first) and then files every entry in a
session index with previews and a tree: an eighth of a first build's time, none of it needed to
index text. This replays the same records the same way and keeps only the entries. It cannot
follow the file (no ``ingest``): the engine opens a ``CodexSession`` for a file it keeps
following (``SessionSource.open(file, follow=True)``).

Of the ``event_msg`` lines, the replay makes tree entries of ``thread_rolled_back`` only (the
others give usage, the context window and diagnostics, or echo items for a UI), and they are
half of a rollout's bytes (``token_count`` alone 40% of the benchmark's): the others are made
lines of ``0`` before parsing (:data:`_UNINDEXED_EVENTS`), so they cost no parse and no record,
and every line keeps its number (an entry's id). ``0``, not a blank line: the parser skips a
value that is no object at once, where a blank line costs it an exception.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from ..formats.codex import Thread, parse_rollout
from ..store.bounded import BoundedLines, describe_plain
from ..store.codex import _id_from_name, load_history_base, read_title, replay
from ..store.regular import open_regular
from .file_read import FileRead, leaf_or_last

_UNINDEXED_EVENTS: Final = re.compile(
    rb'\n\{"timestamp":"[^"\n]*","type":"event_msg","payload":\{"type":"(?!thread_rolled_back")[^\n]*(?=\n)'
)
"""A complete ``event_msg`` line in the order Codex writes its keys, but a rollback (after the
newline before it). A line in another shape is parsed as before."""


def read_codex(path: Path) -> FileRead:
    """The rollout's entries as ``CodexSession`` would serve them (its errors are its reader's)."""
    with open_regular(path) as f:
        st = os.fstat(f.fileno())
        data = b"".join(BoundedLines(f.fileno(), 0, st.st_size, describe_plain))
    rollout = parse_rollout(_UNINDEXED_EVENTS.sub(b"\n0", b"\n" + data)[1:], str(path))
    thread = Thread()
    base, _ = load_history_base(path, rollout.meta)
    entries = replay(thread, rollout.records, base)
    leaf = leaf_or_last(entries, thread.leaf_id)
    return FileRead(
        rollout.session_id or _id_from_name(path),
        rollout.cwd or "",
        read_title(path, rollout.session_id),
        entries,
        leaf,
    )
