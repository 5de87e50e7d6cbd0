"""What of an entry a person searches: its texts, each with a role and a kind.

An entry (Pi's shape; every reader gives its entries in that shape) yields at most one
document per kind: the message's text, its thinking, its tool calls (name and input as JSON),
a tool result's text, a summary, a title or a label. Tool results and tool inputs are cut at
:data:`TOOL_TEXT_CHARS` characters: their long tails (file dumps, logs, base64) are what makes
grepping raw transcripts useless, and cost index space without helping anyone find a session.
Images and signatures are never indexed.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def _tool_call_text(block: dict[str, Any]) -> str:
    name = block.get("name")
    arguments = block.get("arguments")
    try:
        encoded = orjson.dumps(arguments).decode() if arguments is not None else ""
    except TypeError:
        encoded = ""
    return f"{name if type(name) is str else ''} {encoded}".strip()[:TOOL_TEXT_CHARS]


def _message_docs(message: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A message's texts as ``(role, kind, text)``, empty ones included (the caller drops them)."""
    role = message.get("role")
    if role == "assistant":
        content = message.get("content")
        if type(content) is str:
            return [("assistant", "text", content[:TEXT_CHARS])]
        if type(content) is not list:
            return []
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[str] = []
        for block in content:
            if type(block) is not dict:
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if type(text) is str:
                    texts.append(text)
            elif kind == "thinking":
                text = block.get("thinking")
                if type(text) is str:
                    thinking.append(text)
            elif kind == "toolCall":
                calls.append(_tool_call_text(block))
        found = []  # a kind with no block would be an empty text: none (the caller drops those)
        if texts:
            found.append(("assistant", "text", "\n".join(texts)[:TEXT_CHARS]))
        if thinking:
            found.append(("assistant", "thinking", "\n".join(thinking)[:TEXT_CHARS]))
        if calls:
            found.append(("assistant", "toolCall", "\n".join(calls)))
        error = message.get("errorMessage")
        if type(error) is str:
            found.append(("assistant", "error", error[:TOOL_TEXT_CHARS]))
        return found
    if role == "toolResult":
        name = message.get("toolName")
        text = _blocks_text(message.get("content"))
        prefix = f"{name}: " if type(name) is str and name else ""
        return [("toolResult", "toolResult", (prefix + text)[:TOOL_TEXT_CHARS])]
    if role in ("user", "custom"):
        return [(str(role), "text", _blocks_text(message.get("content"))[:TEXT_CHARS])]
    if role == "bashExecution":
        command, output = message.get("command"), message.get("output")
        return [
            ("bashExecution", "toolCall", command[:TOOL_TEXT_CHARS] if type(command) is str else ""),
            ("bashExecution", "toolResult", output[:TOOL_TEXT_CHARS] if type(output) is str else ""),
        ]
    if role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        return [(str(role), "summary", summary[:TEXT_CHARS] if type(summary) is str else "")]
    return []


def _found(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """An entry's ``(role, kind, text)``, empty texts included (:func:`file_docs` drops them)."""
    t = entry.get("type")
    if t == "message":
        message = entry.get("message")
        return _message_docs(message) if type(message) is dict else []
    if t == "custom_message":
        return [("custom", "text", _blocks_text(entry.get("content"))[:TEXT_CHARS])]
    if t == "compaction":
        summary = entry.get("summary")
        return [("compactionSummary", "summary", summary if type(summary) is str else "")]
    if t == "branch_summary":
        summary = entry.get("summary")
        return [("branchSummary", "summary", summary if type(summary) is str else "")]
    if t == "session_info":
        name = entry.get("name")
        return [("session", "title", name if type(name) is str else "")]
    if t == "label":
        label = entry.get("label")
        return [("session", "label", label if type(label) is str else "")]
    return []


def file_docs(entries: Iterable[Any]) -> tuple[list[Doc], list[tuple[str, str | None]]]:
    """The docs of a file's entries and each entry's ``(id, parent id)``, in entry order: the
    last line carrying an id is the entry (Pi's rule), placed where that last line is.

    One loop over the entries, written for speed (a first build runs it on every entry of
    every file); tests/search/test_extract.py holds it to the same written plainly, an entry
    at a time."""
    listed = [e for e in entries if type(e) is dict and type(e.get("id")) is str]
    ids = [e["id"] for e in listed]
    last = dict(zip(ids, listed, strict=True))
    if len(last) != len(listed):  # an id repeated: its entry moves to its last line
        last = {}
        for entry_id, entry in zip(ids, listed, strict=True):
            last.pop(entry_id, None)
            last[entry_id] = entry
    docs: list[Doc] = []
    nodes: list[tuple[str, str | None]] = []
    add_doc, add_node, new = docs.append, nodes.append, tuple.__new__
    for entry_id, entry in last.items():
        parent = entry.get("parentId")
        add_node((entry_id, parent if type(parent) is str else None))
        found = _found(entry)
        if found:
            ts = timestamp_ms(entry.get("timestamp"))
            for role, kind, text in found:
                if text and not text.isspace():
                    add_doc(new(Doc, (entry_id, role, kind, text, ts)))  # Doc(...) without its __new__
    return docs, nodes
