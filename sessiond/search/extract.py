"""What of an entry a person searches: its texts, each with a role and a kind.

An entry (Pi's shape; every reader gives its entries in that shape) yields at most one
document per kind: the message's text, its thinking, its tool calls (name and input as JSON),
a tool result's text, a summary, a title or a label. Tool results and tool inputs are cut at
:data:`TOOL_TEXT_CHARS` characters: their long tails (file dumps, logs, base64) are what makes
grepping raw transcripts useless, and cost index space without helping anyone find a session.
Images and signatures are never indexed.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Final, NamedTuple

import orjson

TOOL_TEXT_CHARS: Final = 2000
"""Characters kept of one tool call's input or one tool result's text (documented in
docs/search.md)."""
TEXT_CHARS: Final = 100_000
"""Characters kept of any other text of one entry (a pasted book is not a conversation)."""

ROLES: Final = (
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "compactionSummary",
    "branchSummary",
    "session",
)
"""The roles a hit can have (``role`` filter): a message's role, a summary's, or ``session`` for
titles and labels."""


class Doc(NamedTuple):
    """One searchable text of an entry (a tuple: a build makes one per text, and a frozen
    dataclass's ``__init__`` cost 4% of it)."""

    entry_id: str
    role: str
    kind: str
    """``text``, ``thinking``, ``toolCall``, ``toolResult``, ``summary``, ``title``, ``label``."""
    text: str
    timestamp_ms: int


def timestamp_ms(value: Any) -> int:
    """An entry's ISO 8601 timestamp (or epoch milliseconds) as epoch milliseconds; 0 if unreadable."""
    if type(value) is str:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return 0
    if type(value) in (int, float) and value == value:
        return int(value)
    return 0


def _blocks_text(content: Any) -> str:
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    parts = [
        b["text"]
        for b in content
        if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str
    ]
    return "\n".join(parts)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def _tool_call_text(block: dict[str, Any]) -> str:
    name = block.get("name")
    arguments = block.get("arguments")
    try:
        encoded = orjson.dumps(arguments).decode() if arguments is not None else ""
    except TypeError:
        encoded = ""
    return _clip(f"{name if type(name) is str else ''} {encoded}".strip(), TOOL_TEXT_CHARS)


def _message_docs(message: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    role = message.get("role")
    if role in ("user", "custom"):
        yield str(role), "text", _clip(_blocks_text(message.get("content")), TEXT_CHARS)
    elif role == "assistant":
        content = message.get("content")
        if type(content) is str:
            yield "assistant", "text", _clip(content, TEXT_CHARS)
            return
        if type(content) is not list:
            return
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[str] = []
        for block in content:
            if type(block) is not dict:
                continue
            kind = block.get("type")
            if kind == "text" and type(block.get("text")) is str:
                texts.append(block["text"])
            elif kind == "thinking" and type(block.get("thinking")) is str:
                thinking.append(block["thinking"])
            elif kind == "toolCall":
                calls.append(_tool_call_text(block))
        yield "assistant", "text", _clip("\n".join(texts), TEXT_CHARS)
        yield "assistant", "thinking", _clip("\n".join(thinking), TEXT_CHARS)
        yield "assistant", "toolCall", "\n".join(calls)
        error = message.get("errorMessage")
        if type(error) is str:
            yield "assistant", "error", _clip(error, TOOL_TEXT_CHARS)
    elif role == "toolResult":
        name = message.get("toolName")
        text = _blocks_text(message.get("content"))
        prefix = f"{name}: " if type(name) is str and name else ""
        yield "toolResult", "toolResult", _clip(prefix + text, TOOL_TEXT_CHARS)
    elif role == "bashExecution":
        command, output = message.get("command"), message.get("output")
        yield "bashExecution", "toolCall", _clip(command if type(command) is str else "", TOOL_TEXT_CHARS)
        yield "bashExecution", "toolResult", _clip(output if type(output) is str else "", TOOL_TEXT_CHARS)
    elif role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        yield str(role), "summary", _clip(summary if type(summary) is str else "", TEXT_CHARS)


def entry_docs(entry: Any) -> list[Doc]:
    """The searchable texts of one entry (none for headers, model changes and the like)."""
    if type(entry) is not dict:
        return []
    entry_id = entry.get("id")
    if type(entry_id) is not str:
        return []
    t = entry.get("type")
    found: list[tuple[str, str, str]] = []
    if t == "message":
        message = entry.get("message")
        if type(message) is dict:
            found = list(_message_docs(message))
    elif t == "custom_message":
        found = [("custom", "text", _clip(_blocks_text(entry.get("content")), TEXT_CHARS))]
    elif t == "compaction":
        summary = entry.get("summary")
        found = [("compactionSummary", "summary", summary if type(summary) is str else "")]
    elif t == "branch_summary":
        summary = entry.get("summary")
        found = [("branchSummary", "summary", summary if type(summary) is str else "")]
    elif t == "session_info":
        name = entry.get("name")
        found = [("session", "title", name if type(name) is str else "")]
    elif t == "label":
        label = entry.get("label")
        found = [("session", "label", label if type(label) is str else "")]
    if not found:
        return []
    ts = timestamp_ms(entry.get("timestamp"))
    return [Doc(entry_id, role, kind, text, ts) for role, kind, text in found if text and not text.isspace()]


def parent_of(entry: Any) -> str | None:
    parent = entry.get("parentId") if type(entry) is dict else None
    return parent if type(parent) is str else None
