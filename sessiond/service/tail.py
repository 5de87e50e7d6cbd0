"""``session/tail``: the newest entries of a session without opening it, from its file's end.

A viewer asks for this first so it can paint the end of a large session at once, and opens the
session (``session/subscribe``, ``tree/get``) after. The reading is
:func:`sessiond.formats.tail.tail_entries`; this module reads the bytes — the last 256 KiB,
doubled while they hold fewer entries than asked, up to 8 MiB — in a worker thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..formats.tail import PREVIEW_FORMATS, tail_entries

FIRST_READ = 256 * 1024
MAX_READ = 8 * 1024 * 1024


def read_tail(path: Path, fmt: str, limit: int) -> tuple[list[dict[str, Any]], str] | None:
    """The newest ``limit`` entries of the file and its cwd (``""`` if the bytes read do not say),
    or ``None``: a format that needs the whole file, or a file that cannot be read here."""
    if fmt not in PREVIEW_FORMATS:
        return None
    try:
        # never blocks on a FIFO, never follows a symlink: anything but a regular file is left to
        # the ordinary open (and its rules about such files)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with open(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        return _read(f, info.st_size, fmt, limit)


def _read(f: BinaryIO, size: int, fmt: str, limit: int) -> tuple[list[dict[str, Any]], str] | None:
    """The last 256 KiB, doubled while they hold fewer than ``limit`` entries (up to 8 MiB)."""
    span = FIRST_READ
    try:
        while True:
            start = max(0, size - span)
            f.seek(start)
            data = f.read(size - start)
            entries = tail_entries(data, fmt, limit, whole=start == 0)
            if entries is None:
                return None
            if len(entries) >= limit or start == 0 or span >= MAX_READ:
                break
            span *= 2
        head = _first_line(f) if fmt == "pi" else b""
    except OSError:
        return None
    return entries, _cwd(fmt, head, data)


def _first_line(f: BinaryIO) -> bytes:
    f.seek(0)
    line: bytes = f.readline(64 * 1024)
    return line


def _cwd(fmt: str, head: bytes, data: bytes) -> str:
    """Pi: the header line's ``cwd``; Claude Code: the last record that names one."""
    if fmt == "pi":
        try:
            header = orjson.loads(head)
        except orjson.JSONDecodeError:
            return ""
        cwd = header.get("cwd") if type(header) is dict else None
        return cwd if type(cwd) is str else ""
    for line in reversed(data.split(b"\n")[-50:]):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        cwd = record.get("cwd") if type(record) is dict else None
        if type(cwd) is str:
            return cwd
    return ""
