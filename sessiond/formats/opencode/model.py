"""OpenCode sessions as records: the session, its messages and their parts, from either store.

OpenCode (``$XDG_DATA_HOME/opencode``) keeps a session's *info* (title, directory, parent
session, revert point, token totals), its *messages* (``role``, ``time``, ``parentID``; on
assistant messages ``modelID``, ``providerID``, ``tokens``, ``finish``, ``summary``, ``error``)
and each message's ordered *parts* (``text``, ``reasoning``, ``tool`` with its ``state``,
``file``, ``compaction``, ``step-start``/``step-finish``, ``patch``, ...). Current versions hold
them in SQLite (``opencode.db``: tables ``session``, ``message``, ``part``, the JSON in a
``data`` column, ids and times in columns); older ones in one JSON file per object
(``storage/session/<project>/<id>.json``, ``storage/message/<session>/<id>.json``,
``storage/part/<message>/<id>.json``). Both are normalised here into the same dicts, in
OpenCode's order: messages by creation time then id, parts by id.

Pure: rows and decoded JSON in, :class:`OpenCodeSession` out; the readers live in the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

Info = dict[str, Any]


@dataclass(slots=True)
class OpenCodeMessage:
    info: Info
    parts: list[Info] = field(default_factory=list)

    @property
    def id(self) -> str:
        value = self.info.get("id")
        return value if type(value) is str else ""

    @property
    def role(self) -> str | None:
        value = self.info.get("role")
        return value if type(value) is str else None

    @property
    def created(self) -> float:
        time = self.info.get("time")
        value = time.get("created") if type(time) is dict else None
        return float(value) if type(value) is int or type(value) is float else 0.0


@dataclass(slots=True)
class OpenCodeSession:
    info: Info
    messages: list[OpenCodeMessage] = field(default_factory=list)
    skipped: int = 0
    """Rows or files that could not be read (bad JSON, not an object, no id)."""

    @property
    def id(self) -> str:
        value = self.info.get("id")
        return value if type(value) is str else ""

    @property
    def parent_id(self) -> str | None:
        value = self.info.get("parentID")
        return value if type(value) is str and value else None

    @property
    def directory(self) -> str:
        value = self.info.get("directory")
        return value if type(value) is str else ""

    @property
    def title(self) -> str | None:
        value = self.info.get("title")
        return value.strip() if type(value) is str and value.strip() else None

    @property
    def revert(self) -> Info | None:
        value = self.info.get("revert")
        return value if type(value) is dict and type(value.get("messageID")) is str else None


def _json(value: Any) -> Any:
    if type(value) in (bytes, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    return value


def session_from_row(row: Mapping[str, Any]) -> Info:
    """A ``session`` table row as OpenCode's session info."""
    info: Info = {
        "id": row.get("id"),
        "projectID": row.get("project_id"),
        "title": row.get("title"),
        "directory": row.get("directory"),
        "version": row.get("version"),
        "time": {
            k: row[c]
            for k, c in (
                ("created", "time_created"),
                ("updated", "time_updated"),
                ("compacting", "time_compacting"),
                ("archived", "time_archived"),
            )
            if row.get(c) is not None
        },
    }
    if row.get("parent_id"):
        info["parentID"] = row["parent_id"]
    if row.get("slug"):
        info["slug"] = row["slug"]
    revert = _json(row.get("revert"))
    if type(revert) is dict:
        info["revert"] = revert
    tokens = {
        name: row[column]
        for name, column in (
            ("input", "tokens_input"),
            ("output", "tokens_output"),
            ("reasoning", "tokens_reasoning"),
            ("cacheRead", "tokens_cache_read"),
            ("cacheWrite", "tokens_cache_write"),
        )
        if type(row.get(column)) is int
    }
    if tokens:
        info["tokens"] = tokens
    if type(row.get("cost")) in (int, float):
        info["cost"] = row["cost"]
    return info


def build_session(
    info: Info,
    messages: Iterable[tuple[str | None, Any, Any]],
    parts: Iterable[tuple[str | None, str | None, Any]],
) -> OpenCodeSession:
    """A session from its info, ``(id, time_created, data)`` message rows and
    ``(id, message_id, data)`` part rows (``data`` a JSON text or an already decoded object;
    an id of ``None`` is taken from the data)."""
    session = OpenCodeSession(info)
    by_id: dict[str, OpenCodeMessage] = {}
    order: list[tuple[float, str]] = []
    for mid, created, data in messages:
        obj = _json(data)
        if type(obj) is not dict:
            session.skipped += 1
            continue
        message_id = mid if type(mid) is str else obj.get("id")
        if type(message_id) is not str or not message_id:
            session.skipped += 1
            continue
        obj = dict(obj)
        obj["id"] = message_id
        obj.setdefault("sessionID", session.id)
        message = OpenCodeMessage(obj)
        if message_id in by_id:  # a JSON store written twice: the last file wins
            by_id[message_id].info = obj
            continue
        by_id[message_id] = message
        when = created if type(created) in (int, float) else message.created
        order.append((float(when), message_id))
    for pid, message_id, data in parts:
        obj = _json(data)
        if type(obj) is not dict:
            session.skipped += 1
            continue
        part_id = pid if type(pid) is str else obj.get("id")
        owner = message_id if type(message_id) is str else obj.get("messageID")
        if type(part_id) is not str or type(owner) is not str:
            session.skipped += 1
            continue
        target = by_id.get(owner)
        if target is None:
            session.skipped += 1  # a part whose message is gone (or not written yet)
            continue
        obj = dict(obj)
        obj["id"] = part_id
        obj["messageID"] = owner
        target.parts.append(obj)
    order.sort()
    session.messages = [by_id[mid] for _, mid in order]
    for message in session.messages:
        message.parts.sort(key=lambda p: str(p.get("id")))
    return session


__all__ = ["OpenCodeMessage", "OpenCodeSession", "build_session", "session_from_row"]
