"""Turning entries and messages into text a person reads: previews, tool-call summaries, blocks.

``show`` builds a list of :class:`Block` per entry; the same blocks become a Markdown document
(for pipes, files and ``--markdown``) or rich renderables (for a terminal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # rich loads only where something is drawn (`sessiond --help` stays light)
    from rich.console import Console, RenderableType

ROLE_STYLES = {
    "user": "bold cyan",
    "assistant": "bold green",
    "toolResult": "yellow",
    "bashExecution": "yellow",
    "custom": "blue",
    "system": "bold white",
    "compactionSummary": "bold magenta",
    "branchSummary": "bold magenta",
}

_TOOL_KEYS = (
    "command",
    "file_path",
    "path",
    "notebook_path",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
)


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Text from a session made safe for a terminal.

    Tool output in transcripts is full of terminal escapes (colours, cursor moves, hidden
    cursors) and could hold hostile ones (a title change, an OSC 8 link): printed raw they
    would repaint the user's terminal. Escape sequences are dropped and any other control
    character shows as U+FFFD; newlines and tabs stay. ``--json`` output keeps the text as
    stored (JSON escapes it).
    """
    return _CONTROL.sub("\ufffd", _ANSI.sub("", text))


def one_line(text: str, limit: int = 100) -> str:
    """Whitespace collapsed, control characters made safe, cut to ``limit`` characters."""
    flat = " ".join(clean(str(text)).split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)] + "…"


def clip_lines(text: str, max_lines: int | None) -> tuple[str, int]:
    """The first ``max_lines`` lines, and how many were left out."""
    lines = text.rstrip("\n").split("\n")
    if max_lines is None or len(lines) <= max_lines:
        return "\n".join(lines), 0
    return "\n".join(lines[:max_lines]), len(lines) - max_lines


def fenced(text: str, info: str = "") -> str:
    """A Markdown code block that the text cannot close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def when(timestamp: Any, *, seconds: bool = False) -> str:
    """An ISO timestamp in local time (``YYYY-MM-DD HH:MM``), or "" when there is none."""
    if type(timestamp) is str and timestamp:
        try:
            moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        except ValueError:
            return timestamp
        return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    if type(timestamp) in (int, float) and timestamp > 0:
        moment = datetime.fromtimestamp(timestamp / 1000).astimezone()
        return moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return ""


def tokens(n: Any) -> str:
    return f"{n:,}" if type(n) is int else ("?" if n is None else str(n))


def text_of(content: Any) -> str:
    """The text blocks of message content (a string is its own text)."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    parts = [b.get("text", "") for b in content if type(b) is dict and b.get("type") == "text"]
    return "\n".join(p for p in parts if type(p) is str)


def tool_call_summary(name: Any, arguments: Any) -> str:
    """``name  what`` — the argument a reader cares about (a command, a path...), or the JSON."""
    label = str(name) if name else "tool"
    if isinstance(arguments, dict):
        for k in _TOOL_KEYS:
            value = arguments.get(k)
            if type(value) is str and value.strip():
                return f"{label} {one_line(value, 100)}"
        if not arguments:
            return label
        try:
            return f"{label} {one_line(json.dumps(arguments, ensure_ascii=False), 100)}"
        except (TypeError, ValueError):
            return label
    if arguments in (None, ""):
        return label
    return f"{label} {one_line(str(arguments), 100)}"


def message_preview(message: Any, limit: int = 100) -> str:
    """One line about a context message (what ``context`` lists)."""
    if not isinstance(message, dict):
        return ""
    role = message.get("role")
    if role == "bashExecution":
        return one_line(f"$ {message.get('command', '')}", limit)
    if role in ("compactionSummary", "branchSummary"):
        return one_line(str(message.get("summary", "")), limit)
    content = message.get("content")
    text = text_of(content).strip()
    if text:
        return one_line(text, limit)
    if type(content) is list:
        calls = [
            tool_call_summary(b.get("name"), b.get("arguments"))
            for b in content
            if type(b) is dict and b.get("type") == "toolCall"
        ]
        if calls:
            return one_line("→ " + "; ".join(calls), limit)
        if any(type(b) is dict and b.get("type") == "image" for b in content):
            return "[image]"
        if any(type(b) is dict and b.get("type") == "thinking" for b in content):
            return "[thinking]"
    error = message.get("errorMessage")
    return one_line(f"[error] {error}", limit) if type(error) is str else ""


# ---------------------------------------------------------------------------- show: blocks


class Block(NamedTuple):  # not a dataclass: `dataclasses` costs `sessiond --help` ~10 ms
    kind: str
    """``message``, ``tool`` (tool result, shell run), ``summary`` (compaction, branch summary), ``note``."""
    title: str
    style: str
    body: str = ""
    """Markdown."""
    entry_id: str = ""


class ShowOptions(NamedTuple):
    full: bool = False
    thinking: bool = False
    all_entries: bool = False
    result_lines: int = 12
    summary_lines: int = 20


def _clipped_code(text: str, max_lines: int | None) -> str:
    shown, hidden = clip_lines(text, max_lines)
    out = fenced(shown) if shown.strip() else "_(no output)_"
    if hidden:
        out += f"\n\n_… {hidden} more line{'s' if hidden != 1 else ''} (--full shows them)_"
    return out


def _clipped_text(text: str, max_lines: int | None) -> str:
    shown, hidden = clip_lines(text, max_lines)
    if hidden:
        shown += f"\n\n_… {hidden} more line{'s' if hidden != 1 else ''} (--full shows them)_"
    return shown


def _message_blocks(entry: dict[str, Any], message: Any, opts: ShowOptions) -> list[Block]:
    eid = str(entry.get("id", ""))
    stamp = when(entry.get("timestamp"))
    if not isinstance(message, dict):
        return [Block("note", f"message without content · {eid}", "dim", entry_id=eid)]
    role = str(message.get("role", "?"))
    style = ROLE_STYLES.get(role, "bold")
    results = None if opts.full else opts.result_lines
    if role == "toolResult":
        name = message.get("toolName") or "tool"
        title = f"← {name} result"
        if message.get("isError") is True:
            title += " (error)"
        body = _clipped_code(text_of(message.get("content")), results)
        return [Block("tool", f"{title} · {eid}", "red" if message.get("isError") else style, body, eid)]
    if role == "bashExecution":
        title = f"$ {one_line(str(message.get('command', '')), 200)}"
        code = message.get("exitCode")
        if type(code) is int and code != 0:
            title += f" (exit {code})"
        body = _clipped_code(str(message.get("output") or ""), results)
        return [Block("tool", f"{title} · {eid}", style, body, eid)]
    parts = [role]
    if role == "custom" and message.get("customType"):
        parts[0] = f"custom · {message.get('customType')}"
    parts.append(eid)
    if stamp:
        parts.append(stamp)
    if role == "assistant" and message.get("model"):
        parts.append(str(message.get("model")))
    body_parts: list[str] = []
    content = message.get("content")
    if type(content) is str:
        body_parts.append(content)
    elif type(content) is list:
        for block in content:
            if type(block) is not dict:
                continue
            t = block.get("type")
            if t == "text" and type(block.get("text")) is str:
                body_parts.append(block["text"])
            elif t == "thinking":
                thought = str(block.get("thinking") or "")
                if opts.thinking and thought.strip():
                    body_parts.append("\n".join("> " + line for line in thought.split("\n")))
                else:
                    body_parts.append(f"_(thinking, {len(thought):,} characters)_")
            elif t == "toolCall":
                summary = tool_call_summary(block.get("name"), block.get("arguments"))
                body_parts.append(f"→ {fenced_inline(summary)}")
            elif t == "image":
                body_parts.append("_[image]_")
    error = message.get("errorMessage")
    if type(error) is str and error:
        body_parts.append(f"_[error] {one_line(error, 300)}_")
    body = "\n\n".join(p.strip("\n") for p in body_parts if p.strip())
    if not body and role == "assistant":
        # Nothing to read (Claude Code writes whitespace-only text pieces while it streams): a
        # heading with nothing under it is noise, unless every entry was asked for.
        if not opts.all_entries:
            return []
        body = "_(no text)_"
    return [Block("message", " · ".join(parts), style, body, eid)]


def fenced_inline(text: str) -> str:
    """Inline code that survives backticks in the text."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def entry_blocks(entry: Any, opts: ShowOptions) -> list[Block]:
    """What ``show`` prints for one entry of the branch (possibly nothing)."""
    if not isinstance(entry, dict):
        return []
    t = entry.get("type")
    eid = str(entry.get("id", ""))
    summaries = None if opts.full else opts.summary_lines
    if t == "message":
        return _message_blocks(entry, entry.get("message"), opts)
    if t == "custom_message":
        if entry.get("display") is False and not opts.all_entries:
            return []
        message = {"role": "custom", "customType": entry.get("customType"), "content": entry.get("content")}
        return _message_blocks(entry, message, opts)
    summary = _clipped_text(str(entry.get("summary", "")), summaries)
    if t == "compaction":
        title = f"⟳ compaction · {eid}"
        if type(entry.get("tokensBefore")) is int:
            title += f" · {entry['tokensBefore']:,} tokens before"
        if entry.get("firstKeptEntryId"):
            title += f" · kept from {entry['firstKeptEntryId']}"
        return [Block("summary", title, "bold magenta", summary, eid)]
    if t == "branch_summary":
        title = f"↳ branch summary · {eid}"
        if entry.get("fromId"):
            title += f" · of the branch left at {entry['fromId']}"
        return [Block("summary", title, "bold magenta", summary, eid)]
    if t == "model_change":
        return [Block("note", f"model → {entry.get('provider')}/{entry.get('modelId')}", "dim", entry_id=eid)]
    if t == "thinking_level_change":
        return [Block("note", f"thinking level → {entry.get('thinkingLevel')}", "dim", entry_id=eid)]
    if t == "session_info":
        return [Block("note", f"named: {entry.get('name')}", "dim", entry_id=eid)]
    if t == "label":
        label = entry.get("label")
        target = entry.get("targetId")
        text = f"label {label!r} on {target}" if label else f"label cleared on {target}"
        return [Block("note", text, "dim", entry_id=eid)]
    if t == "context_edit":
        verb = "hides" if entry.get("replacement") is None else "replaces the content of"
        return [Block("note", f"context edit: {verb} {entry.get('targetId')}", "dim", entry_id=eid)]
    if not opts.all_entries:
        return []
    what = str(t)
    if t == "custom":
        what = f"custom · {entry.get('customType')}"
    return [Block("note", what, "dim", entry_id=eid)]


def _cleaned(b: Block) -> Block:
    return Block(b.kind, clean(b.title), b.style, clean(b.body), clean(b.entry_id))


def markdown_document(heading: str, meta: Iterable[str], blocks: list[Block]) -> str:
    out = [f"# {clean(heading)}", "", clean(" · ".join(meta)), ""]
    for b in map(_cleaned, blocks):
        if b.kind == "note":
            out += [f"_{b.title}_" + (f" · `{b.entry_id}`" if b.entry_id else ""), ""]
        elif b.kind == "summary":
            out += ["---", "", f"**{b.title}**", ""]
            if b.body:
                out += ["\n".join(("> " + line).rstrip() for line in b.body.split("\n")), ""]
            out += ["---", ""]
        elif b.kind == "tool":
            out += [f"### {b.title}", "", b.body, ""] if b.body else [f"### {b.title}", ""]
        else:
            out += [f"## {b.title}", ""]
            if b.body:
                out += [b.body, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def rich_blocks(heading: str, meta: Iterable[str], blocks: list[Block]) -> list[RenderableType]:
    from rich.console import Group  # noqa: PLC0415
    from rich.markdown import Markdown  # noqa: PLC0415 (markdown-it: only for a terminal)
    from rich.panel import Panel  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    out: list[RenderableType] = [
        Text(clean(heading), style="bold"),
        Text(clean(" · ".join(meta)), style="dim"),
        Text(""),
    ]
    for b in map(_cleaned, blocks):
        if b.kind == "note":
            out.append(Text(f"  · {b.title}" + (f"  {b.entry_id}" if b.entry_id else ""), style="dim italic"))
        elif b.kind == "summary":
            body = Markdown(b.body or "_(empty)_")
            out.append(Panel(body, title=Text(b.title), title_align="left", border_style="magenta"))
        elif b.kind == "tool":
            header = Text("  " + b.title, style=b.style)
            out.append(Group(header, _indented(Markdown(b.body))) if b.body else header)
        else:
            header = Text("▍" + b.title, style=b.style)
            out.append(Group(Text(""), header, Markdown(b.body)) if b.body else Group(Text(""), header))
    return out


def _indented(renderable: RenderableType) -> RenderableType:
    from rich.padding import Padding  # noqa: PLC0415

    return Padding(renderable, (0, 0, 0, 2))


def print_lines(console: Console, renderables: Iterable[RenderableType]) -> None:
    for r in renderables:
        console.print(r)
