"""Claude Code transcripts -> usage records.

The rules (docs/usage.md, and what ccusage does):

* an ``assistant`` line with ``message.usage`` is one piece of a response; the pieces of one
  streamed response share ``message.id`` and are counted once, with the last piece's usage
  (the key is the message id, so a later piece replaces an earlier one);
* sub-agent work is counted and attributed to its parent session: the separate transcripts
  (``<session>/subagents/agent-*.jsonl``, and 2.0's ``agent-*.jsonl`` beside the sessions,
  whose lines name the parent in ``sessionId``) and 2.1's sub-agent messages nested in the
  parent's ``progress`` entries (``data.message``) — the same message in both places has one id
  and is counted once;
* ``<synthetic>`` models (messages Claude Code made up, no API call) are skipped;
* ``costUSD`` on a line (older versions) is the agent's own cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from .records import Record, SessionInfo, count, epoch_ms, first_text, lines_matching, money

SYNTHETIC = "<synthetic>"


def session_of_path(path: Path) -> str | None:
    """The session a transcript belongs to by its place, or ``None`` when its lines say
    (a 2.0 ``agent-*.jsonl`` beside the sessions)."""
    if path.parent.name == "subagents":
        return path.parent.parent.name
    if path.name.startswith("agent-"):
        return None
    return path.stem


USAGE_LINE = b'"usage"'
USER_LINE = b'"type":"user"'


def read(
    path: Path, data: bytes, start: int, state: dict[str, Any], sessions: dict[str, SessionInfo]
) -> list[Record]:
    """The records of ``data`` (complete lines from file offset ``start``); ``sessions`` gains
    what the lines say of their sessions (cwd, the first prompt as a title: user lines are
    parsed only until one gave it, ``state["titled"]``)."""
    placed = session_of_path(path)
    out: list[Record] = []
    for offset, raw in lines_matching(data, start, USAGE_LINE):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(entry) is not dict:
            continue
        named = entry.get("sessionId")
        sid = placed or (named if type(named) is str and named else path.stem)
        kind = entry.get("type")
        if kind == "assistant":
            _record(entry, sid, f"{path}:{offset}", out)
        elif kind == "progress":
            data_field = entry.get("data")
            nested = data_field.get("message") if type(data_field) is dict else None
            if type(nested) is dict and nested.get("type") == "assistant":
                _record(nested, sid, f"{path}:{offset}:p", out)
        cwd = entry.get("cwd")
        if type(cwd) is str and cwd and sid not in sessions:
            sessions[sid] = SessionInfo(sid, cwd)
    if placed is not None and path.parent.name != "subagents" and not state.get("titled"):
        _title(placed, data, start, state, sessions)
    return out


def _title(
    sid: str, data: bytes, start: int, state: dict[str, Any], sessions: dict[str, SessionInfo]
) -> None:
    """The session's first real prompt (not a command, not injected context) as its title."""
    for _offset, raw in lines_matching(data, start, USER_LINE):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(entry) is not dict or entry.get("type") != "user":
            continue
        if entry.get("isMeta") or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        text = first_text(message.get("content")) if type(message) is dict else None
        if text and not text.startswith("<"):
            info = sessions.setdefault(sid, SessionInfo(sid))
            info.title = text
            state["titled"] = True
            return


def _record(entry: dict[str, Any], sid: str, fallback_key: str, out: list[Record]) -> None:
    message = entry.get("message")
    if type(message) is not dict:
        return
    usage = message.get("usage")
    model = message.get("model")
    if type(usage) is not dict or type(model) is not str or not model or model == SYNTHETIC:
        return
    ts = epoch_ms(entry.get("timestamp"))
    if ts is None:
        return
    mid = message.get("id")
    creation = usage.get("cache_creation")
    c5m = c1h = 0
    if type(creation) is dict:
        c5m = count(creation.get("ephemeral_5m_input_tokens"))
        c1h = count(creation.get("ephemeral_1h_input_tokens"))
    cost = entry.get("costUSD")
    out.append(
        Record(
            key=mid if type(mid) is str and mid else fallback_key,
            session_id=sid,
            model=model,
            ts=ts,
            input=count(usage.get("input_tokens")),
            output=count(usage.get("output_tokens")),
            cache_read=count(usage.get("cache_read_input_tokens")),
            cache_creation=count(usage.get("cache_creation_input_tokens")),
            cache_5m=c5m,
            cache_1h=c1h,
            agent_cost=money(cost, zero=True),
        )
    )
