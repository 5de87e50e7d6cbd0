"""The newest entries of a session file from its last bytes alone: a viewer's first paint.

Opening a large session (parsing every line, building its tree, converting another agent's
records) takes hundreds of milliseconds; a page showing the end of it needs the last hundred
entries, which the last few hundred kilobytes hold. These functions read such a tail — bytes
that may start in the middle of a line — as entries of the Pi shape the protocol serves:

* Pi's format: each line is an entry already (the header line is skipped);
* Claude Code: each conversation record (user, assistant, system, attachment) converted as
  :func:`~sessiond.formats.claude_code.to_pi.pi_entry` converts it, its parent the record's
  ``parentUuid`` (the full load may re-link across bridged records: the preview is what the
  tree shows until ``tree/get`` answers);
* other formats (Codex's rollouts need the whole file's state): ``None``, open the session.

Pure: bytes in, entries out. Junk lines are skipped.
"""

from __future__ import annotations

from typing import Any

import orjson

from .claude_code.messages import EMPTY_USAGE
from .claude_code.records import MESSAGE_TYPES
from .claude_code.to_pi import pi_entry

PREVIEW_FORMATS = frozenset({"pi", "claude-code"})
"""The formats whose tail can be read alone."""


def _records(data: bytes, whole: bool) -> list[dict[str, Any]]:
    """The JSON objects of complete lines (the first line is cut unless ``data`` starts the file)."""
    lines = data.split(b"\n")
    if not whole:
        lines = lines[1:]
    out: list[dict[str, Any]] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if type(value) is dict:
            out.append(value)
    return out


def tail_entries(data: bytes, fmt: str, limit: int, *, whole: bool) -> list[dict[str, Any]] | None:
    """Up to ``limit`` newest entries in ``data`` (the end of a file; ``whole``: all of it), in
    file order; ``None`` when the format cannot be read from its tail."""
    if fmt not in PREVIEW_FORMATS:
        return None
    records = _records(data, whole)
    if fmt == "pi":
        entries = [r for r in records if type(r.get("id")) is str and r.get("type") != "session"]
        return entries[-limit:]
    tool_names: dict[str, str] = {}
    for r in records:
        message = r.get("message")
        content = message.get("content") if type(message) is dict else None
        if r.get("type") == "assistant" and type(content) is list:
            for block in content:
                if type(block) is dict and block.get("type") == "tool_use" and type(block.get("id")) is str:
                    name = block.get("name")
                    tool_names[block["id"]] = name if type(name) is str else ""
    chain = [r for r in records if r.get("type") in MESSAGE_TYPES and type(r.get("uuid")) is str]
    out: list[dict[str, Any]] = []
    for r in chain[-limit:]:
        parent = r.get("parentUuid")
        out.append(pi_entry(r["uuid"], r, parent if type(parent) is str else None, EMPTY_USAGE, tool_names))
    return out
