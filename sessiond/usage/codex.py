"""Codex rollouts -> usage records.

The rules (docs/usage.md, and what ccusage does):

* usage comes from ``event_msg`` ``token_count`` events, one per model call: its
  ``info.last_token_usage`` (else the growth of ``info.total_token_usage`` since the previous
  event); an event repeating the previous total is a repeat (Codex sends one again with new
  rate limits) and is not counted;
* Codex's ``input_tokens`` include the cached input: input is reported without it and
  ``cached_input_tokens`` as cache reads; ``output_tokens`` already include the reasoning;
* the model is the latest ``turn_context``'s (``gpt-5`` before any, as ccusage assumes);
* a fork (``session_meta.forked_from_id``) starts by replaying its parent's lines with their
  original timestamps, before the fork's own ``session_meta`` time: those events are the
  parent's usage and are not counted again.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from .records import Fields, Record, SessionInfo, count, epoch_ms, first_text, lines_matching, response

FALLBACK_MODEL = "gpt-5"
_MARKERS = re.compile(rb'"(?:session_meta|turn_context|token_count|user_message)"')
"""The lines that matter (most are response items)."""
FIELDS = Fields("input_tokens", "output_tokens", "cached_input_tokens", None, input_has_cache=True)


def read(
    path: Path, data: bytes, start: int, state: dict[str, Any], sessions: dict[str, SessionInfo]
) -> list[Record]:
    """The records of ``data`` (complete lines from file offset ``start``); ``state``
    (JSON-able) carries the session, model, fork time and last total from one call to the
    next (a rollout is read as it grows)."""
    out: list[Record] = []
    sid: str = state.get("sid") or _rollout_id(path)
    for offset, raw in lines_matching(data, start, _MARKERS):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(entry) is not dict:
            continue
        payload = entry.get("payload")
        if type(payload) is not dict:
            continue
        kind = entry.get("type")
        if kind == "session_meta":
            if "sid" not in state:
                pid = payload.get("id")
                sid = state["sid"] = pid if type(pid) is str and pid else sid
                if payload.get("forked_from_id"):
                    state["forkedAt"] = epoch_ms(payload.get("timestamp") or entry.get("timestamp"))
                info = sessions.setdefault(sid, SessionInfo(sid))
                cwd = payload.get("cwd")
                if type(cwd) is str and cwd and info.cwd is None:
                    info.cwd = cwd
            continue
        if kind == "turn_context":
            model = payload.get("model")
            if type(model) is str and model:
                state["model"] = model
            continue
        if kind != "event_msg":
            continue
        if payload.get("type") == "user_message":
            info = sessions.setdefault(sid, SessionInfo(sid))
            if info.title is None:
                info.title = first_text(payload.get("message"))
            continue
        if payload.get("type") != "token_count":
            continue
        record = _token_count(payload.get("info"), entry.get("timestamp"), state)
        if record is None:
            continue
        ts, usage = record
        forked_at = state.get("forkedAt")
        if type(forked_at) is int and ts < forked_at:
            continue  # the parent's usage, replayed into the fork
        model = state.get("model") or FALLBACK_MODEL
        out.append(response(f"{sid}:{offset}", sid, model, ts, usage, FIELDS))
    if "sid" not in state:
        state["sid"] = sid
    return out


_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _token_count(info: Any, timestamp: Any, state: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    if type(info) is not dict:
        return None
    ts = epoch_ms(timestamp)
    total = info.get("total_token_usage")
    last = info.get("last_token_usage")
    totals = [count(total.get(f)) for f in _FIELDS] if type(total) is dict else None
    previous = state.get("total")
    if totals is not None:
        if totals == previous:
            return None  # the same call reported again
        state["total"] = totals
    if ts is None:
        return None
    if type(last) is dict:
        usage = last
    elif totals is not None:
        before = previous if type(previous) is list and len(previous) == len(_FIELDS) else [0] * len(_FIELDS)
        usage = {f: max(now - was, 0) for f, now, was in zip(_FIELDS, totals, before, strict=True)}
    else:
        return None
    if not any(count(usage.get(f)) for f in ("input_tokens", "cached_input_tokens", "output_tokens")):
        return None
    return ts, usage


def _rollout_id(path: Path) -> str:
    """``rollout-<time>-<uuid>.jsonl`` -> the uuid (the last five dash-separated groups)."""
    parts = path.stem.split("-")
    return "-".join(parts[-5:]) if len(parts) > 5 else path.stem
