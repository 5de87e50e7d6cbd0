"""OpenCode's messages -> usage records.

An assistant message's ``tokens`` — ``input`` (without cache), ``output``, ``reasoning``
(counted as output), ``cache.read``, ``cache.write`` — its ``modelID`` and its ``cost`` (the
agent's own, when above zero). From ``opencode.db`` (its ``message`` rows' JSON) or, for older
versions, the JSON files under ``storage/message/<session>/``. The key is the message id.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any

import orjson

from .records import Record, SessionInfo, count, epoch_ms, money

DB_NAME = "opencode.db"


def record(data: Any, fallback_sid: str | None = None) -> Record | None:
    """One message (its JSON object) as a record, ``None`` unless an assistant's with tokens."""
    if type(data) is not dict or data.get("role") != "assistant":
        return None
    tokens = data.get("tokens")
    model = data.get("modelID")
    mid = data.get("id")
    sid = data.get("sessionID") or fallback_sid
    if type(tokens) is not dict or type(model) is not str or not model or type(sid) is not str:
        return None
    time = data.get("time")
    ts = epoch_ms(time.get("created")) if type(time) is dict else None
    if ts is None or type(mid) is not str:
        return None
    cache: dict[str, Any] = tokens["cache"] if type(tokens.get("cache")) is dict else {}
    cost = data.get("cost")
    return Record(
        key=mid,
        session_id=sid,
        model=model,
        ts=ts,
        input=count(tokens.get("input")),
        output=count(tokens.get("output")) + count(tokens.get("reasoning")),
        cache_read=count(cache.get("read")),
        cache_creation=count(cache.get("write")),
        agent_cost=money(cost),
    )


def read_database(path: Path, sessions: dict[str, SessionInfo]) -> list[Record]:
    """Every assistant message of ``opencode.db`` (read-only; a damaged database reads empty)."""
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    out: list[Record] = []
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=5.0)
    except sqlite3.Error:
        return out
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "message" not in tables:
            return out
        if "session" in tables:
            for sid, directory, title in conn.execute("SELECT id, directory, title FROM session"):
                sessions[sid] = SessionInfo(sid, directory or None, title or None)
        for mid, sid, data in conn.execute(
            "SELECT id, session_id, data FROM message WHERE data LIKE '%\"assistant\"%'"
        ):
            try:
                parsed = orjson.loads(data)
            except (orjson.JSONDecodeError, TypeError):
                continue
            if type(parsed) is dict:
                parsed.setdefault("id", mid)
            found = record(parsed, sid)
            if found is not None:
                out.append(found)
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return out


def read_message_file(path: Path) -> Record | None:
    """One ``storage/message/<session>/<message>.json`` file."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return record(data, path.parent.name)


def read_session_file(path: Path, sessions: dict[str, SessionInfo]) -> None:
    """One ``storage/session/<project>/<session>.json`` file: its cwd and title."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return
    if type(data) is dict and type(data.get("id")) is str:
        directory, title = data.get("directory"), data.get("title")
        sessions[data["id"]] = SessionInfo(
            data["id"], directory if type(directory) is str else None, title if type(title) is str else None
        )
