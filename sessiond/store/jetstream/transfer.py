"""Moving sessions between the local store and JetStream (``sessiond store import|export``).

Import publishes a Pi file's bytes as the session's log — the same lines, so an export gives
the file back byte for byte (plus a newline a torn last line lacked). The log must not exist
yet (compare-and-append at sequence 0); a file bigger than one message is split on line
boundaries, each part compare-and-appended after the previous. Export writes a session's log
to a new file (never over an existing one).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ...errors import NotASessionError, SessionExistsError, SessionNotFoundError
from ..layout import encode_cwd
from ..listing import read_header
from ..remote import RemoteMoved
from .log import JetStreamLog, fetch_all
from .store import JetStreamStore

CHUNK = 512 * 1024
"""Bytes per message when a file is imported in parts (the server's default limit is 1 MB)."""


def import_file(store: JetStreamStore, path: Path) -> dict[str, Any]:
    """Publish a Pi session file as a new session of the shared store; what was imported."""
    header = read_header(path)
    if header is None or type(header.get("id")) is not str:
        raise NotASessionError(str(path), "its first JSON line is not a session header")
    if header.get("version") != 3:
        raise NotASessionError(
            str(path), "it is not a version 3 session (open it with sessiond or Pi once to migrate it)"
        )
    session_id = header["id"]
    if store.last_seq(session_id):  # (a re-run within the duplicate window would be deduplicated)
        raise SessionExistsError(f"{session_id} (already in the shared store)")
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    cwd = header.get("cwd") if type(header.get("cwd")) is str else ""
    log = JetStreamLog(store.link, session_id, 0, os.path.join(encode_cwd(cwd or "/"), path.name))
    leaf = _last_id(data)
    parts = _split(data)
    try:
        for i, part in enumerate(parts):
            log.commit(part, create=i == 0, leaf=leaf)
    except RemoteMoved:
        raise SessionExistsError(f"{session_id} (already in the shared store)") from None
    log.flush_metadata()
    return {"sessionId": session_id, "path": str(path), "bytes": len(data), "messages": len(parts)}


def export_session(store: JetStreamStore, session_id: str, target: Path) -> dict[str, Any]:
    """Write a session's log as a Pi file at ``target`` (which must not exist)."""
    batches, last = fetch_all(store.link, store.subject(session_id))
    if last == 0:
        raise SessionNotFoundError(session_id)
    data = b"".join(batches)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        raise SessionExistsError(str(target)) from None
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return {"sessionId": session_id, "path": str(target), "bytes": len(data), "messages": len(batches)}


def _split(data: bytes) -> list[bytes]:
    parts: list[bytes] = []
    start = 0
    while start < len(data):
        end = start + CHUNK
        if end < len(data):
            cut = data.rfind(b"\n", start, end) + 1
            end = cut if cut > start else data.index(b"\n", end) + 1  # one line bigger than a chunk
        parts.append(data[start:end])
        start = end
    return parts


def _last_id(data: bytes) -> Any:
    for line in reversed(data.splitlines()):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if type(value) is dict and value.get("type") != "session":
            return value.get("id")
    return None
