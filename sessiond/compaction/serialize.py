"""The conversation as plain text for a summarizer.

Serialising (instead of replaying the messages) keeps the summarizer from treating the history
as a conversation to continue. Thinking is left out; tool results are cut to 2,000 UTF-16
units, since a summary needs what happened, not every byte a tool printed.
"""

from __future__ import annotations

from typing import Any, Final

from ..model.entries import Message
from ..model.js import get, to_string, utf16_len, utf16_slice_head
from ..model.js_json import object_items, stringify
from ..model.messages import content_text

TOOL_RESULT_MAX_CHARS: Final = 2000


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    length = utf16_len(text)
    if length <= max_chars:
        return text
    return f"{utf16_slice_head(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _tool_call_text(block: dict[str, Any]) -> str:
    args = block.get("arguments")
    if type(args) is dict:
        pairs = object_items(args)
    elif type(args) is list:
        pairs = [(str(i), v) for i, v in enumerate(args)]
    else:
        pairs = []
    rendered = ", ".join(f"{k}={stringify(v)}" for k, v in pairs)
    return f"{to_string(get(block, 'name'))}({rendered})"


def serialize_conversation(messages: list[Message]) -> str:
    """LLM messages (after ``convert_to_llm``) as ``[User]: …`` / ``[Assistant]: …`` text."""
    parts: list[str] = []
    for msg in messages:
        role = get(msg, "role")
        if role == "user":
            text = content_text(msg.get("content"), "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            content = msg.get("content")
            blocks = content if type(content) is list else []
            calls = [_tool_call_text(b) for b in blocks if type(b) is dict and b.get("type") == "toolCall"]
            if any(type(b) is dict and b.get("type") == "text" for b in blocks):
                parts.append(f"[Assistant]: {content_text(content)}")
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif role == "toolResult":
            text = content_text(msg.get("content"), "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)
