"""A Pi v3 session file read for indexing alone: one ``orjson.loads`` per line, nothing else.

Opening it as a :class:`~sessiond.store.session.Session` builds the light index, previews and
the tree the daemon needs to serve it — three quarters of the time of a first build, none of it
needed to index text. A v3 file's lines are its entries already (the last line carrying an id
is the entry; the last entry is the leaf: a leaf move is a marker entry appended below its
target). Older versions need Pi's migration (ids assigned), so :func:`read_pi_v3` returns
``None`` for them and the caller opens them the usual way. Unreadable lines are skipped, as Pi's
loader skips them; an incomplete last line (being written) waits for its newline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..store.regular import read_regular


class PiFile:
    """What the engine reads of a session (``OpenedSession``), from a v3 file's lines."""

    def __init__(self, header: dict[str, Any], entries: list[Any]) -> None:
        self.header = header
        self._entries = entries
        self.id = str(header.get("id") or "")
        cwd = header.get("cwd")
        self.cwd = cwd if type(cwd) is str else ""
        self.name: str | None = None
        self.leaf_id: Any = None
        for entry in entries:
            if type(entry) is not dict:
                continue
            if type(entry.get("id")) is str:
                self.leaf_id = entry["id"]
            if entry.get("type") == "session_info":
                name = entry.get("name")
                self.name = (name.strip() or None) if type(name) is str else None

    def entries(self) -> list[Any]:
        return self._entries

    def close(self) -> None:
        self._entries = []


def read_pi_v3(path: Path) -> PiFile | None:
    """The file's header and entries if it is a v3 Pi session, else ``None``."""
    data = read_regular(path)  # never blocks on a FIFO (an OSError, like a missing file)
    end = data.rfind(b"\n")
    lines = data[: end + 1].splitlines() if end >= 0 else []
    if not lines:
        return None
    try:
        header = orjson.loads(lines[0])
    except orjson.JSONDecodeError:
        return None
    if type(header) is not dict or header.get("type") != "session" or header.get("version") != 3:
        return None
    entries: list[Any] = []
    for raw in lines[1:]:
        try:
            entries.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
    return PiFile(header, entries)
