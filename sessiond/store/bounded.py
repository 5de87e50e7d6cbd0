"""Reading other agents' JSON Lines files with a bound on the length of a line.

A Claude Code or Codex transcript may hold a line of hundreds of MiB (a tool that printed a
whole file or image): read whole, one such line cost the daemon over 600 MiB of memory while
following, and a 300 MB transcript with two of them 1 GB and 20 s to load. Here a file is read
in pieces of about 4 MiB, and a line longer than the limit (``[limits] max_line_bytes``) is
never held: the reader only looks for its end, then hands on a short placeholder record in its
place (:class:`~sessiond.formats.lines.OversizedLine`: the real line's offset and size), which
each format builds from a few bytes around the line's keys (:data:`Describe`). A file that grows
past the limit without a newline is scanned the same way, from where the last look stopped.

What the placeholders stood for is counted in :data:`~sessiond.store.regular.COUNTS`
(``daemon/status``) and in each session's ``diagnostics`` (``oversizedLines``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson

from ..formats.lines import OversizedLine
from .regular import COUNTS

PIECE: Final = 4 * 1024 * 1024
"""Bytes read at a time."""
DEFAULT_LINE_LIMIT: Final = 8 * 1024 * 1024

_limit = DEFAULT_LINE_LIMIT


def line_limit() -> int:
    """The longest line read into memory (``[limits] max_line_bytes``)."""
    return _limit


def set_line_limit(limit: int) -> None:
    """Set at the daemon's start from its configuration."""
    global _limit  # noqa: PLW0603 (one setting for the process, like the memory budget)
    _limit = max(1024, int(limit))


Describe = Callable[[int, int, int], bytes]
"""``(fd, offset, size)`` -> the placeholder record (one JSON line) of an oversized line."""


class BoundedLines:
    """The complete lines of ``fd`` from ``start`` to ``end`` as pieces that end with a newline,
    none holding a line over the limit (an :class:`OversizedLine` stands for each of those).

    After the iteration, :attr:`pos` is where the complete lines ended (the unterminated rest,
    if any, starts there) and :attr:`skip_scanned` is set when that rest is itself over the
    limit: how far it was scanned for a newline, so the next look resumes there."""

    def __init__(
        self,
        fd: int,
        start: int,
        end: int,
        describe: Describe,
        *,
        limit: int | None = None,
        skip_scanned: int | None = None,
    ) -> None:
        self.fd = fd
        self.start = start
        self.end = end
        self.describe = describe
        self.limit = line_limit() if limit is None else limit
        self.pos = start
        self.skip_scanned = skip_scanned
        """Not None: the line at :attr:`pos` is over the limit, scanned up to this offset."""

    def _oversized(self, offset: int, size: int) -> OversizedLine:
        COUNTS.add_oversized()
        return OversizedLine.of(self.describe(self.fd, offset, size), offset, size)

    def __iter__(self) -> Iterator[bytes]:
        limit = self.limit
        pos = self.start
        read_at = self.skip_scanned if self.skip_scanned is not None else pos
        skipping = self.skip_scanned is not None
        rest = b""  # the bytes from pos on, while that line is short enough to hold
        while read_at < self.end:
            block = os.pread(self.fd, min(PIECE, self.end - read_at), read_at)
            if not block:
                break
            block_at = read_at
            read_at += len(block)
            if skipping:
                nl = block.find(b"\n")
                if nl < 0:
                    self.skip_scanned = read_at
                    continue
                yield self._oversized(pos, block_at + nl - pos)
                skipping = False
                self.skip_scanned = None
                block = block[nl + 1 :]
                pos = block_at + nl + 1
            data = rest + block if rest else block
            cut = data.rfind(b"\n") + 1
            if cut:
                yield from self._split(data[:cut], pos)
                pos += cut
            rest = data[cut:]
            if len(rest) > limit:
                skipping = True
                self.skip_scanned = read_at
                rest = b""
        self.pos = pos

    def _split(self, data: bytes, at: int) -> Iterator[bytes]:
        """``data`` (complete lines from file offset ``at``) with its long lines replaced."""
        limit = self.limit
        if len(data) <= limit + 1:
            yield data
            return
        start = 0  # of the run of short lines not yet handed on
        line = 0
        size = len(data)
        while line < size:
            nl = data.find(b"\n", line)
            if nl - line > limit:
                if start < line:
                    yield data[start:line]
                yield self._oversized(at + line, nl - line)
                start = nl + 1
            line = nl + 1
        if start < size:
            yield data[start:] if start else data


def first_match(fd: int, offset: int, size: int, needle: bytes, window: int = 4096) -> tuple[int, bytes]:
    """Where ``needle`` first occurs in the line at ``offset`` (relative to it, -1: nowhere)
    and the ``window`` bytes from there, scanning in pieces (never the whole line at once)."""
    at = 0
    overlap = len(needle) - 1
    while at < size:
        chunk = os.pread(fd, min(PIECE, size - at), offset + at)
        if not chunk:
            break
        found = chunk.find(needle)
        if found >= 0:
            return at + found, os.pread(fd, min(window, size - at - found), offset + at + found)
        if at + len(chunk) >= size:
            break
        at += max(1, len(chunk) - overlap)
    return -1, b""


# --------------------------------------------------------------------------- placeholders

_HEAD: Final = 64 * 1024
_CLAUDE_KEYS = re.compile(
    rb'"(parentUuid|logicalParentUuid|isSidechain|userType|cwd|sessionId|version|gitBranch|type|subtype'
    rb'|agentId|isMeta|requestId)":("(?:[^"\\]|\\.)*"|true|false|null)'
)
_UUID = re.compile(rb'"uuid":"((?:[^"\\]|\\.)*)"(?:,"timestamp":"((?:[^"\\]|\\.)*)")?')


def oversized_note(size: int, offset: int) -> str:
    return (
        f"[an oversized line of {size:,} bytes at offset {offset:,} was not read: "
        f"over [limits] max_line_bytes = {line_limit():,}]"
    )


def describe_claude(fd: int, offset: int, size: int) -> bytes:
    """A Claude Code record standing for an oversized line: its top-level keys that come before
    ``message`` (Claude Code writes ``parentUuid``, ``sessionId``, ``type``... first), its own
    ``uuid`` and ``timestamp`` (found by scanning, they follow the message), and a text saying
    what was left out. It keeps the line's place in the conversation's chain."""
    head = os.pread(fd, min(_HEAD, size), offset)
    cut = head.find(b'"message":')
    record: dict[str, Any] = {}
    for found in _CLAUDE_KEYS.finditer(head[:cut] if cut >= 0 else head):
        key = found.group(1).decode()
        if key not in record:
            with contextlib.suppress(orjson.JSONDecodeError):
                record[key] = orjson.loads(found.group(2))
    _at, window = first_match(fd, offset, size, b'"uuid":"')
    ids = _UUID.match(window)
    if ids is not None:
        with contextlib.suppress(orjson.JSONDecodeError):
            record["uuid"] = orjson.loads(b'"' + ids.group(1) + b'"')
            if ids.group(2) is not None:
                record["timestamp"] = orjson.loads(b'"' + ids.group(2) + b'"')
    kind = record.get("type")
    role = kind if kind in ("user", "assistant") else "user"
    record["message"] = {"role": role, "content": [{"type": "text", "text": oversized_note(size, offset)}]}
    record["oversized"] = {"bytes": size, "offset": offset}
    return orjson.dumps(record)


def describe_plain(fd: int, offset: int, size: int) -> bytes:
    """A record that only says what was left out (formats whose records cannot stand in)."""
    return orjson.dumps({"type": "oversized", "oversized": {"bytes": size, "offset": offset}})


__all__ = [
    "DEFAULT_LINE_LIMIT",
    "BoundedLines",
    "Describe",
    "describe_claude",
    "describe_plain",
    "first_match",
    "line_limit",
    "oversized_note",
    "set_line_limit",
]
