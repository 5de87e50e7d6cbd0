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

from .records import Record, SessionInfo, count, epoch_ms, first_text, money

SYNTHETIC = "<synthetic>"


def session_of_path(path: Path) -> str | None:
    """The session a transcript belongs to by its place, or ``None`` when its lines say
    (a 2.0 ``agent-*.jsonl`` beside the sessions)."""
    if path.parent.name == "subagents":
        return path.parent.parent.name
    if path.name.startswith("agent-"):
        return None
    return path.stem


def read(path: Path, lines: list[tuple[int, bytes]], sessions: dict[str, SessionInfo]) -> list[Record]:
    """The records of complete lines (``(offset, bytes)``); ``sessions`` gains what the lines
    say of their sessions (cwd, the first prompt as a title)."""
    placed = session_of_path(path)
    out: list[Record] = []
    for offset, raw in lines:
        if b'"usage"' not in raw and b'"user"' not in raw:
            continue  # most lines: tool results, attachments, snapshots
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
            data = entry.get("data")
            nested = data.get("message") if type(data) is dict else None
            if type(nested) is dict and nested.get("type") == "assistant":
                _record(nested, sid, f"{path}:{offset}:p", out)
        elif kind == "user" and placed is not None and path.parent.name != "subagents":
            info = sessions.setdefault(sid, SessionInfo(sid))
            if info.title is None and not entry.get("isMeta") and not entry.get("isSidechain"):
                message = entry.get("message")
                if type(message) is dict:
                    text = first_text(message.get("content"))
                    if text and not text.startswith("<"):
                        info.title = text
        cwd = entry.get("cwd")
        if type(cwd) is str and cwd:
            info = sessions.setdefault(sid, SessionInfo(sid))
            if info.cwd is None:
                info.cwd = cwd
    return out


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
