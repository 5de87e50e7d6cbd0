"""What a session list shows for an OpenCode session."""

from __future__ import annotations

from typing import Any

from .convert import entries_for, settled
from .model import OpenCodeSession


def _number(value: Any) -> float | None:
    return float(value) if type(value) is int or type(value) is float else None


def first_prompt(session: OpenCodeSession) -> str | None:
    """The first text the user typed (synthetic and ignored parts skipped)."""
    for message in session.messages:
        if message.role != "user":
            continue
        for part in message.parts:
            if part.get("type") != "text" or part.get("synthetic") or part.get("ignored"):
                continue
            text = part.get("text")
            if type(text) is str and text.strip():
                return text.strip()
    return None


def listing_fields(session: OpenCodeSession) -> dict[str, Any]:
    """``created_ms``, ``modified_ms``, ``message_count``, ``first_message`` of a session."""
    time = session.info.get("time")
    time = time if type(time) is dict else {}
    created, updated = _number(time.get("created")), _number(time.get("updated"))
    stamps = [m.created for m in session.messages if m.created]
    return {
        "created_ms": created if created is not None else (min(stamps) if stamps else None),
        "modified_ms": updated if updated is not None else (max(stamps) if stamps else None),
        "message_count": len(entries_for(settled(session.messages))),  # the tree's messages
        "first_message": first_prompt(session),
    }


__all__ = ["first_prompt", "listing_fields"]
