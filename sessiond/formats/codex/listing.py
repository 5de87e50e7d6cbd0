"""What a session list shows for a Codex rollout, and where a thread came from.

Titles come from ``$CODEX_HOME/session_index.jsonl`` (``{id, thread_name, updated_at}`` lines,
the last line for an id wins) and otherwise from the first prompt the user typed (the
``user_message`` event, else the first user message that is not injected context).
``session_meta`` says where a thread came from: ``forked_from_id`` for a fork, and
``source.subagent.thread_spawn.parent_thread_id`` for a sub-agent a thread spawned.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from ...model.js import date_ms
from ...model.titles import prompt_title
from . import items as I
from .records import EVENT_MSG, RESPONSE_ITEM, Record, Rollout


def parse_session_index(data: bytes) -> dict[str, str]:
    """Thread names by id from ``session_index.jsonl`` (bad lines skipped, the last one wins)."""
    names: dict[str, str] = {}
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(obj) is not dict:
            continue
        tid, name = obj.get("id"), obj.get("thread_name")
        if type(tid) is str and type(name) is str and name.strip():
            names[tid] = name.strip()
    return names


def _ms(value: Any) -> float | None:
    ms = date_ms(value)
    return ms if ms == ms and not math.isinf(ms) else None


def first_prompt(rollout: Rollout) -> str | None:
    """The first thing the user typed, injected context and prompt-template wrappers left out
    (:func:`~sessiond.model.titles.prompt_title`)."""
    fallback: str | None = None
    for record in rollout.records:
        payload = record.payload
        if record.type == EVENT_MSG and payload.get("type") == "user_message":
            text = payload.get("message")
            if type(text) is str and not I.is_contextual_text(text):
                title = prompt_title(text)
                if title:
                    return title
        elif fallback is None and record.type == RESPONSE_ITEM and I.is_user_turn(payload):
            fallback = prompt_title(I.user_text(payload))
    return fallback


def origin(rollout: Rollout) -> dict[str, Any]:
    """Where the thread came from: ``forkedFromId``, ``parentThreadId``, ``source``, versions."""
    meta = rollout.meta or {}
    out: dict[str, Any] = {}
    fork = meta.get("forked_from_id")
    if type(fork) is str and fork:
        out["forkedFromId"] = fork
    source = meta.get("source")
    if source is not None:
        out["source"] = source
    if type(source) is dict:
        sub = source.get("subagent")
        spawn = sub.get("thread_spawn") if type(sub) is dict else None
        if type(spawn) is dict and type(spawn.get("parent_thread_id")) is str:
            out["parentThreadId"] = spawn["parent_thread_id"]
            if type(spawn.get("depth")) is int:
                out["depth"] = spawn["depth"]
        elif type(sub) is str:
            out["subagent"] = sub
    for name, key in (
        ("originator", "originator"),
        ("cli_version", "cliVersion"),
        ("model_provider", "modelProvider"),
    ):
        value = meta.get(name)
        if type(value) is str:
            out[key] = value
    return out


def message_count(records: list[Record]) -> int:
    """The records read as ``message`` entries (``items.is_message_item``): a session's count."""
    return sum(1 for r in records if r.type == RESPONSE_ITEM and I.is_message_item(r.payload))


def listing_fields(rollout: Rollout) -> dict[str, Any]:
    """``created_ms``, ``modified_ms``, ``message_count``, ``first_message`` of a rollout."""
    meta = rollout.meta or {}
    created = _ms(meta.get("timestamp"))
    modified = None
    for record in rollout.records:
        ms = _ms(record.timestamp)
        if ms is not None:
            created = ms if created is None else min(created, ms)
            modified = ms if modified is None else max(modified, ms)
    return {
        "created_ms": created,
        "modified_ms": modified,
        "message_count": message_count(rollout.records),
        "first_message": first_prompt(rollout),
    }


__all__ = ["first_prompt", "listing_fields", "message_count", "origin", "parse_session_index"]
