"""This daemon's replica of a session's log, and what lets it be reopened without a full read.

The replica is the log's messages concatenated, at the path the local store would use. Reading
the whole subject every time a session is opened costs as much as the session is long; so
whenever the replica is known to hold exactly the log up to a message — written whole, or let
go of by its session — a *mark* beside it records that message's sequence, the replica's size
and the id on its last line (``.<file name>.seq``). Reopening trusts the replica only if all
three still agree — the file has that size and ends with that id, and the stream's message at
that sequence is this session's and ends with the same id — and then reads just the messages
after it. Anything else (a daemon that crashed after appending, a log deleted and imported
again, a replica edited by hand) is a full read, as before.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson

TAIL: int = 64 * 1024
"""Bytes read from the end of a file to find its last line (a longer last line: no mark)."""


def mark_path(replica: Path) -> Path:
    return replica.with_name(f".{replica.name}.seq")


def last_id(data: bytes) -> Any:
    """The ``id`` of the last complete line of ``data`` (None if it has none)."""
    if not data.endswith(b"\n"):
        return None
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    try:
        value = orjson.loads(data[start:])
    except orjson.JSONDecodeError:
        return None
    return value.get("id") if type(value) is dict else None


def _tail(path: Path) -> tuple[int, Any]:
    """The file's size and the id on its last line."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(size - TAIL, 0))
        return size, last_id(f.read())


def write_mark(replica: Path, seq: int) -> None:
    """Record that ``replica`` holds the log up to message ``seq`` (best effort: no mark only
    means the next open reads the whole log)."""
    try:
        size, ends_with = _tail(replica)
        if ends_with is None:
            return
        tmp = mark_path(replica).with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps({"seq": seq, "size": size, "lastId": ends_with}))
        os.replace(tmp, mark_path(replica))
    except OSError:
        with contextlib.suppress(OSError):
            mark_path(replica).unlink()


def read_mark(replica: Path) -> tuple[int, Any] | None:
    """``(seq, last id)`` if the replica still is what its mark describes, else None (the mark
    is removed: the replica is about to be written again)."""
    mark = mark_path(replica)
    try:
        value = orjson.loads(mark.read_bytes())
        mark.unlink()
        size, ends_with = _tail(replica)
    except (OSError, orjson.JSONDecodeError):
        return None
    if type(value) is not dict or type(value.get("seq")) is not int or value["seq"] <= 0:
        return None
    if value.get("size") != size or ends_with is None or value.get("lastId") != ends_with:
        return None
    return value["seq"], ends_with


def replace(path: Path, data: bytes) -> None:
    """Write the replica atomically (readers see the old file or the new one)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.replica")
    _write(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), data)
    os.replace(tmp, path)


def extend(path: Path, data: bytes) -> None:
    """Append the log's later messages to a replica that held it up to its mark."""
    _write(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC), data)


def _write(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
