"""Pi sessions (sessiond's store and Pi's own directory) -> usage records.

Each ``message`` entry whose message is an assistant's carries ``usage`` — ``input`` (without
cache), ``output``, ``cacheRead``, ``cacheWrite``, ``cost.total`` — and the ``model``. Pi's
``cost.total`` is the agent's own cost when it is above zero (Pi writes zeros for a model it has
no price for). The key is the session id and the entry id.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from .records import Fields, Record, SessionInfo, epoch_ms, first_text, lines_matching, money, response

_MARKERS = re.compile(rb'"usage"|"type":"session"|"role":"user"')
"""The lines that matter: assistant messages (with usage), the header, prompts (for a title)."""
FIELDS = Fields("input", "output", "cacheRead", "cacheWrite")


def read(
    path: Path, data: bytes, start: int, state: dict[str, Any], sessions: dict[str, SessionInfo]
) -> list[Record]:
    """The records of ``data`` (complete lines from file offset ``start``)."""
    out: list[Record] = []
    sid: str = state.get("sid") or path.stem.rsplit("_", 1)[-1]
    for _offset, raw in lines_matching(data, start, _MARKERS):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(entry) is not dict:
            continue
        kind = entry.get("type")
        if kind == "session":
            if "sid" not in state and type(entry.get("id")) is str:
                sid = state["sid"] = entry["id"]
            cwd = entry.get("cwd")
            info = sessions.setdefault(sid, SessionInfo(sid))
            if type(cwd) is str and cwd and info.cwd is None:
                info.cwd = cwd
            continue
        if kind != "message":
            continue
        message = entry.get("message")
        if type(message) is not dict:
            continue
        if message.get("role") == "user":
            info = sessions.setdefault(sid, SessionInfo(sid))
            if info.title is None:
                info.title = first_text(message.get("content"))
            continue
        usage = message.get("usage")
        model = message.get("model")
        if message.get("role") != "assistant" or type(usage) is not dict or type(model) is not str:
            continue
        ts = epoch_ms(entry.get("timestamp"))
        if ts is None:
            ts = epoch_ms(message.get("timestamp"))
        if ts is None or not model:
            continue
        cost = usage.get("cost")
        total = cost.get("total") if type(cost) is dict else None
        eid = entry.get("id")
        key = f"{sid}:{eid if type(eid) is str else _offset}"
        out.append(response(key, sid, model, ts, usage, FIELDS, agent_cost=money(total)))
    if "sid" not in state:
        state["sid"] = sid
    return out
