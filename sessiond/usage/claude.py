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

import re
from pathlib import Path
from typing import Any

import orjson

from .records import Fields, Record, SessionInfo, count, epoch_ms, first_text, lines_matching, money, response

SYNTHETIC = "<synthetic>"


def session_of_path(path: Path) -> str | None:
    """The session a transcript belongs to by its place, or ``None`` when its lines say
    (a 2.0 ``agent-*.jsonl`` beside the sessions)."""
    if path.parent.name == "subagents":
        return path.parent.parent.name
    if path.name.startswith("agent-"):
        return None
    return path.stem


USAGE_LINE = b'"usag'
"""What the lines with usage hold (``"usage"``), cut short: ``bytes.find`` skips ahead by the
needle's last byte, and ``g`` is far rarer in a transcript than ``"`` (a fifth faster over the
whole file). Every line with ``"usage"`` has it; the few others are parsed and give nothing."""
USER_LINE = b'"type":"user"'
TOOL_RESULT = b'"tool_use_id"'
"""A user line carrying a tool's result (most user lines, and the largest): never a prompt, so
never parsed for the title."""
_MESSAGE_ID = re.compile(rb'"message":\{(?:"model":"[^"\\]*",)?"id":"([^"\\]+)"')
"""The response id a line visibly carries: a streamed response's pieces each name it first thing
in their ``message`` (or after the model). A JSON string cannot hold an unescaped quote, so
this is a ``message`` object's own first key; a line it misreads is at worst parsed (never
skipped) unless another line of the same block gives a record of exactly that id."""
FIELDS = Fields("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def read(
    path: Path, data: bytes, start: int, state: dict[str, Any], sessions: dict[str, SessionInfo]
) -> list[Record]:
    """The records of ``data`` (complete lines from file offset ``start``); ``sessions`` gains
    what the lines say of their sessions (cwd, the first prompt as a title: user lines are
    parsed only until one gave it, ``state["titled"]``)."""
    placed = session_of_path(path)
    lines = list(lines_matching(data, start, USAGE_LINE))
    search = _MESSAGE_ID.search
    ids = [m.group(1).decode("utf-8", "replace") if (m := search(raw)) else None for _offset, raw in lines]
    last = {mid: n for n, mid in enumerate(ids) if mid is not None}
    found: list[tuple[int, Record]] = []
    skipped: dict[str, list[int]] = {}
    for n, (offset, raw) in enumerate(lines):
        mid = ids[n]
        if mid is not None and last[mid] != n and placed is not None and placed in sessions:
            skipped.setdefault(mid, []).append(n)  # a later piece of this response replaces it
            continue
        _line(path, placed, offset, raw, n, sessions, found)
    if skipped:  # a last piece that gave no record of its id: the earlier pieces are read after all
        given = {(n, r.key) for n, r in found}
        missed = [n for mid, pieces in skipped.items() if (last[mid], mid) not in given for n in pieces]
        for n in missed:
            _line(path, placed, lines[n][0], lines[n][1], n, sessions, found)
        if missed:
            found.sort(key=lambda pair: pair[0])
    out = [r for _n, r in found]
    if placed is not None and path.parent.name != "subagents" and not state.get("titled"):
        _title(placed, data, start, state, sessions)
    return out


def _line(
    path: Path,
    placed: str | None,
    offset: int,
    raw: bytes,
    n: int,
    sessions: dict[str, SessionInfo],
    found: list[tuple[int, Record]],
) -> None:
    """Parse one line that mentions usage: its record (``n``: its place among them), its cwd."""
    try:
        entry = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return
    if type(entry) is not dict:
        return
    get = entry.get
    named = get("sessionId")
    sid = placed or (named if type(named) is str and named else path.stem)
    kind = get("type")
    if kind == "assistant":
        record = _record(entry, sid, path, offset, "")
        if record is not None:
            found.append((n, record))
    elif kind == "progress":
        data_field = get("data")
        nested = data_field.get("message") if type(data_field) is dict else None
        if type(nested) is dict and nested.get("type") == "assistant":
            record = _record(nested, sid, path, offset, ":p")
            if record is not None:
                found.append((n, record))
    if sid not in sessions:
        cwd = get("cwd")
        if type(cwd) is str and cwd:
            sessions[sid] = SessionInfo(sid, cwd)


def _title(
    sid: str, data: bytes, start: int, state: dict[str, Any], sessions: dict[str, SessionInfo]
) -> None:
    """The session's first real prompt (not a command, not injected context) as its title."""
    for _offset, raw in lines_matching(data, start, USER_LINE):
        if TOOL_RESULT in raw:
            continue
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


def _record(entry: dict[str, Any], sid: str, path: Path, offset: int, suffix: str) -> Record | None:
    """The response's record; without a message id its key is the line's place (file, offset)."""
    message = entry.get("message")
    if type(message) is not dict:
        return None
    usage = message.get("usage")
    model = message.get("model")
    if type(usage) is not dict or type(model) is not str or not model or model == SYNTHETIC:
        return None
    ts = epoch_ms(entry.get("timestamp"))
    if ts is None:
        return None
    mid = message.get("id")
    creation = usage.get("cache_creation")
    c5m = c1h = 0
    if type(creation) is dict:
        c5m = count(creation.get("ephemeral_5m_input_tokens"))
        c1h = count(creation.get("ephemeral_1h_input_tokens"))
    key = mid if type(mid) is str and mid else f"{path}:{offset}{suffix}"
    cost = money(entry.get("costUSD"), zero=True)
    return response(key, sid, model, ts, usage, FIELDS, cache_5m=c5m, cache_1h=c1h, agent_cost=cost)
