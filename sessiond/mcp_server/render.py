"""Sessions as text a model reads well, cut to a token budget.

An agent that calls ``read_session`` pays for every token of the answer out of its own context,
so the rendering is compact and never longer than the budget it asked for: one block per message
(role, then its text), tool calls summarised to one line (``→ Read src/auth.ts``), tool results
and long texts truncated with their full size stated, thinking shown as its first lines. The
budget is counted with Pi's estimate (four characters a token), the same rule sessiond uses for
context usage, and a page that does not fit ends at a block boundary with the index to continue
from. Pure: dictionaries in (the daemon's entries and context messages), strings out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

CHARS_PER_TOKEN: Final = 4
"""Pi's token estimate: a token per four characters (``estimateTokens``)."""

RESULT_CHARS: Final = 1200
"""How much of a tool result a block shows before saying how long the rest is."""

TEXT_CHARS: Final = 6000
"""How much of one message's text a block shows (a pasted log, a long answer)."""

THINKING_CHARS: Final = 400
"""Thinking is the model's scratch work: its opening is enough to follow the reasoning."""

ARGUMENT_CHARS: Final = 160
"""A tool call's arguments on its one line."""

TAIL_TOKENS: Final = 24
"""Kept free in every page for the line that says where to continue."""

PATH_KEYS: Final = ("file_path", "path", "filePath", "notebook_path")
COMMAND_KEYS: Final = ("command", "cmd")


def estimate_tokens(text: str) -> int:
    """Pi's estimate, rounded up: what a budget is counted in."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def clip(text: str, limit: int, what: str = "chars") -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out and how long it was."""
    if len(text) <= limit:
        return text
    lines = text.count("\n") + 1
    note = f"[… truncated: {len(text):,} {what} in {lines:,} lines, first {limit:,} shown]"
    return f"{text[:limit].rstrip()}\n{note}"


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, then cut with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind == "image":
                parts.append(
                    f"[image {block.get('mimeType') or block.get('mediaType') or ''}]".replace(" ]", "]")
                )
    return "\n".join(parts)


def tool_call_line(name: str, arguments: Any) -> str:
    """A tool call in one line: the file or command it is about when it has one, else its
    arguments as compact JSON, cut to :data:`ARGUMENT_CHARS`."""
    args = arguments if isinstance(arguments, Mapping) else {}
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            return f"→ {name}: {one_line(value, ARGUMENT_CHARS)}"
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return f"→ {name}: {one_line(' '.join(value), ARGUMENT_CHARS)}"
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            extra = ""
            old, new = (
                args.get("old_string", args.get("oldText")),
                args.get("new_string", args.get("newText")),
            )
            if isinstance(old, str) and isinstance(new, str):
                extra = f" (replace {len(old):,} chars with {len(new):,})"
            elif isinstance(args.get("content"), str):
                extra = f" ({len(args['content']):,} chars)"
            return f"→ {name} {value}{extra}"
    if isinstance(arguments, str):
        shown = arguments
    else:
        shown = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"→ {name} {one_line(shown, ARGUMENT_CHARS)}"


def message_block(message: Mapping[str, Any]) -> str:
    """One Pi message (user, assistant, toolResult, bashExecution, summaries, custom) as text."""
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        lines: list[str] = []
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _text_of(content)}]
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                lines.append(clip(block["text"].strip(), TEXT_CHARS))
            elif kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"].strip():
                lines.append("(thinking) " + one_line(block["thinking"], THINKING_CHARS))
            elif kind == "toolCall":
                lines.append(tool_call_line(str(block.get("name", "?")), block.get("arguments")))
        model = message.get("model")
        head = f"assistant ({model})" if isinstance(model, str) and model else "assistant"
        if message.get("stopReason") == "error" and isinstance(message.get("errorMessage"), str):
            lines.append(f"[error: {one_line(message['errorMessage'], 300)}]")
        return f"{head}:\n" + ("\n".join(lines) if lines else "(no text)")
    if role == "toolResult":
        name = message.get("toolName") or "tool"
        flag = " — ERROR" if message.get("isError") else ""
        text = _text_of(content)
        return f"result of {name}{flag}:\n{clip(text, RESULT_CHARS) if text else '(empty)'}"
    if role == "bashExecution":
        out = str(message.get("output") or "")
        code = message.get("exitCode")
        command = one_line(str(message.get("command") or ""), 300)
        return f"user ran `{command}` (exit {code}):\n{clip(out, RESULT_CHARS)}"
    if role == "compactionSummary":
        return "summary of the earlier conversation (compaction):\n" + clip(
            str(message.get("summary") or ""), TEXT_CHARS
        )
    if role == "branchSummary":
        return "summary of an abandoned branch:\n" + clip(str(message.get("summary") or ""), TEXT_CHARS)
    if role == "user":
        return "user:\n" + clip(_text_of(content).strip() or "(no text)", TEXT_CHARS)
    label = str(message.get("customType") or role or "message")
    return f"{label}:\n" + clip(_text_of(content).strip() or "(no text)", TEXT_CHARS)


def entry_block(entry: Mapping[str, Any]) -> str | None:
    """One stored entry as text; None for bookkeeping a reader does not need (labels, leaf
    markers, sessiond's own records)."""
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        return message_block(entry["message"])
    if kind == "compaction":
        return "compaction — summary of what came before:\n" + clip(
            str(entry.get("summary") or ""), TEXT_CHARS
        )
    if kind == "branch_summary":
        return "branch summary:\n" + clip(str(entry.get("summary") or ""), TEXT_CHARS)
    if kind == "model_change":
        return f"(model changed to {entry.get('provider')}/{entry.get('modelId')})"
    if kind == "thinking_level_change":
        return f"(thinking level: {entry.get('thinkingLevel')})"
    if kind == "session_info" and entry.get("name"):
        return f"(session named {entry.get('name')!r})"
    if kind == "custom_message":
        return f"{entry.get('customType') or 'custom'}:\n" + clip(_text_of(entry.get("content")), TEXT_CHARS)
    return None


@dataclass(frozen=True)
class Block:
    """One rendered item of a page: where it came from and its text."""

    index: int
    entry_id: str | None
    timestamp: str | None
    text: str


@dataclass(frozen=True)
class Page:
    """What fitted in the budget: the text, the items it holds, and where to continue."""

    text: str
    first: int
    last: int | None
    total: int
    next_index: int | None
    tokens: int


def blocks_of_context(messages: Sequence[Mapping[str, Any]]) -> list[Block]:
    """``context/get``'s messages, numbered in order."""
    out: list[Block] = []
    for i, item in enumerate(messages):
        message = item.get("message")
        if not isinstance(message, Mapping):
            continue
        entry_id = item.get("entryId")
        stamp = message.get("timestamp")
        out.append(
            Block(i, entry_id if isinstance(entry_id, str) else None, _iso(stamp), message_block(message))
        )
    return out


def blocks_of_entries(entries: Iterable[Mapping[str, Any]], start: int = 0) -> list[Block]:
    """Stored entries (a branch, or a page in file order), numbered from ``start``."""
    out: list[Block] = []
    for i, entry in enumerate(entries, start):
        text = entry_block(entry)
        if text is None:
            continue
        entry_id = entry.get("id")
        stamp = entry.get("timestamp")
        out.append(Block(i, entry_id if isinstance(entry_id, str) else None, _iso(stamp), text))
    return out


def _iso(stamp: Any) -> str | None:
    if isinstance(stamp, str):
        return stamp[:19].replace("T", " ")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        from datetime import UTC, datetime  # noqa: PLC0415

        try:
            return datetime.fromtimestamp(stamp / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return None
    return None


def paginate(blocks: Sequence[Block], *, total: int, budget: int, header: str) -> Page:
    """The blocks that fit in ``budget`` tokens after ``header``, whole blocks only — except a
    first block larger than the whole budget, which is cut so that every page makes progress."""
    parts = [header]
    used = estimate_tokens(header)
    room_for_blocks = budget - TAIL_TOKENS
    shown: list[Block] = []
    next_index: int | None = None
    for block in blocks:
        stamp = f" · {block.timestamp}" if block.timestamp else ""
        ref = f" · {block.entry_id}" if block.entry_id else ""
        text = f"\n[{block.index}{stamp}{ref}] {block.text}"
        cost = estimate_tokens(text)
        if used + cost > room_for_blocks:
            if not shown:
                room = max(0, (room_for_blocks - used) * CHARS_PER_TOKEN - 80)
                text = text[:room].rstrip() + f"\n[… block cut to the budget: {len(text):,} chars]"
                parts.append(text)
                used += estimate_tokens(text)
                shown.append(block)
                next_index = block.index + 1 if block.index + 1 < total else None
            else:
                next_index = block.index
            break
        parts.append(text)
        used += cost
        shown.append(block)
    first = shown[0].index if shown else (blocks[0].index if blocks else 0)
    last = shown[-1].index if shown else None
    if next_index is not None:
        tail = f"\n[page ends at item {last}; continue with start={next_index}]"
        parts.append(tail)
        used += estimate_tokens(tail)
    return Page("".join(parts), first, last, total, next_index, used)
