"""An OpenCode session as Pi-shaped tree entries and as the context OpenCode would send next.

**Entries.** One Pi entry per message (its id), and after an assistant message one
``toolResult`` entry per tool part (the part's id), chained in message order. Only *settled*
messages get entries: an assistant message once it is completed or failed, any message once
a later one exists (so a user message once its reply has started). A message still being streamed is
in the context but not yet in the tree, so an entry never changes after it is announced.
The leaf is the last entry before the session's revert point when one is armed (OpenCode
hides the reverted messages and deletes them at the next prompt), else the last entry.

**Context** (OpenCode's prompt loop): the messages before the revert point; from the newest
backwards up to the last completed compaction (a user message with a ``compaction`` part
whose ``summary`` assistant reply finished without error), also keeping the tail that
compaction retained (``tail_start_id``); then, per message: user text parts (not ``ignored``),
files (images as images), a compaction part as the question OpenCode asks for the summary;
assistant messages that failed are left out (an aborted one keeps what it produced); text,
reasoning and tool calls, each tool call followed by its result (a pruned output replaced by
OpenCode's placeholder, an error as an error result, an unfinished call as interrupted).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from .model import Info, OpenCodeMessage, OpenCodeSession

Entry = dict[str, Any]
Message = dict[str, Any]

API: Final = "opencode"
PRUNED_OUTPUT: Final = "[Old tool result content cleared]"
INTERRUPTED: Final = "[Tool execution was interrupted]"
COMPACTION_PROMPT: Final = "What did we do so far?"
SUBTASK_PROMPT: Final = "The following tool was executed by the user"
_FINISH: Final = {"tool-calls": "toolUse", "length": "length", "error": "error", "content-filter": "error"}
ZERO_COST: Final = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


@dataclass(slots=True)
class ConversionDiagnostics:
    messages: int = 0
    parts: Counter[str] = field(default_factory=Counter)
    unsettled: int = 0
    failed_assistants: int = 0
    reverted_messages: int = 0
    compacted_messages: int = 0
    compactions: int = 0
    pruned_outputs: int = 0
    interrupted_tools: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "parts": dict(sorted(self.parts.items())),
            "unsettled": self.unsettled,
            "failedAssistants": self.failed_assistants,
            "revertedMessages": self.reverted_messages,
            "compactedMessages": self.compacted_messages,
            "compactions": self.compactions,
            "prunedOutputs": self.pruned_outputs,
            "interruptedTools": self.interrupted_tools,
        }


@dataclass(slots=True)
class Conversion:
    entries: list[Entry]
    leaf: str | None
    context: list[tuple[str, Message]]
    diagnostics: ConversionDiagnostics


# --------------------------------------------------------------------------- helpers


def _num(value: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value):
        return int(value)
    return 0


def _obj(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


def _time(info: Info, name: str) -> Any:
    time = info.get("time")
    return time.get(name) if type(time) is dict else None


def _ms(info: Info) -> int:
    return _num(_time(info, "created"))


def iso(ms: int) -> str:
    """Milliseconds since the epoch as the ISO string Pi entries carry."""
    from datetime import UTC, datetime  # noqa: PLC0415

    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    except (OverflowError, ValueError, OSError):
        return ""


def pi_usage(tokens: Any) -> dict[str, Any]:
    """OpenCode ``tokens`` as Pi's usage (reasoning counted as output)."""
    t = tokens if type(tokens) is dict else {}
    cache = _obj(t.get("cache"))
    i, o, r = _num(t.get("input")), _num(t.get("output")), _num(t.get("reasoning"))
    cr, cw = _num(cache.get("read")), _num(cache.get("write"))
    total = _num(t.get("total")) or i + o + r + cr + cw
    return {
        "input": i,
        "output": o + r,
        "cacheRead": cr,
        "cacheWrite": cw,
        "totalTokens": total,
        "cost": dict(ZERO_COST),
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _file_block(part: Info) -> dict[str, Any] | None:
    mime = part.get("mime")
    mime = mime if type(mime) is str else ""
    if mime in ("text/plain", "application/x-directory"):
        return None  # OpenCode sends these as the text parts it adds next to them
    url = part.get("url")
    name = part.get("filename")
    if mime.startswith("image/") and type(url) is str and url.startswith("data:") and "," in url:
        return {"type": "image", "data": url.split(",", 1)[1], "mimeType": mime}
    label = name if type(name) is str and name else "file"
    return _text(f"[Attached {mime or 'file'}: {label}]")


def user_blocks(message: OpenCodeMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        t = part.get("type")
        if t == "text" and not part.get("ignored"):
            text = part.get("text")
            blocks.append(_text(text if type(text) is str else ""))
        elif t == "file":
            block = _file_block(part)
            if block is not None:
                blocks.append(block)
        elif t == "compaction":
            blocks.append(_text(COMPACTION_PROMPT))
        elif t == "subtask":
            blocks.append(_text(SUBTASK_PROMPT))
    return blocks


def _state(part: Info) -> Info:
    state = part.get("state")
    return state if type(state) is dict else {}


def _tool_result(part: Info, diag: ConversionDiagnostics | None) -> Message:
    state = _state(part)
    status = state.get("status")
    failed = False
    if status == "completed":
        if _obj(state.get("time")).get("compacted"):
            text = PRUNED_OUTPUT
            if diag is not None:
                diag.pruned_outputs += 1
        else:
            output = state.get("output")
            text = output if type(output) is str else ""
    elif status == "error":
        failed = True
        metadata = _obj(state.get("metadata"))
        output = metadata.get("output")
        if metadata.get("interrupted") is True and type(output) is str:
            text, failed = output, False
        else:
            error = state.get("error")
            text = error if type(error) is str else "error"
    else:
        failed = True
        text = INTERRUPTED
        if diag is not None:
            diag.interrupted_tools += 1
    call_id = part.get("callID")
    tool = part.get("tool")
    return {
        "role": "toolResult",
        "toolCallId": call_id if type(call_id) is str else str(part.get("id")),
        "toolName": tool if type(tool) is str else "",
        "content": [_text(text)] if text else [],
        "isError": failed,
        "timestamp": _num(_obj(state.get("time")).get("end")),
    }


def _assistant(message: OpenCodeMessage) -> Message:
    info = message.info
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        t = part.get("type")
        if t == "text":
            text = part.get("text")
            blocks.append(_text(text if type(text) is str else ""))
        elif t == "reasoning":
            text = part.get("text")
            blocks.append({"type": "thinking", "thinking": text if type(text) is str else ""})
        elif t == "tool":
            call_id = part.get("callID")
            tool = part.get("tool")
            state = _state(part)
            args = state.get("input")
            blocks.append(
                {
                    "type": "toolCall",
                    "id": call_id if type(call_id) is str else str(part.get("id")),
                    "name": tool if type(tool) is str else "",
                    "arguments": args if type(args) is dict else {},
                }
            )
    error = info.get("error")
    finish = info.get("finish")
    if type(error) is dict:
        stop = "aborted" if error.get("name") == "MessageAbortedError" else "error"
    elif type(finish) is str and finish in _FINISH:
        stop = _FINISH[finish]
    else:
        stop = "toolUse" if any(b["type"] == "toolCall" for b in blocks) else "stop"
    provider, model = info.get("providerID"), info.get("modelID")
    out: Message = {
        "role": "assistant",
        "content": blocks,
        "api": API,
        "provider": provider if type(provider) is str else "",
        "model": model if type(model) is str else "",
        "usage": pi_usage(info.get("tokens")),
        "stopReason": stop,
        "timestamp": _ms(info),
    }
    if type(error) is dict:
        data = error.get("data")
        text = data.get("message") if type(data) is dict else None
        out["errorMessage"] = text if type(text) is str else str(error.get("name") or "error")
    return out


def _tool_parts(message: OpenCodeMessage) -> list[Info]:
    return [p for p in message.parts if p.get("type") == "tool"]


# --------------------------------------------------------------------------- the tree


def finished(info: Info) -> bool:
    """A message that will not change even when it is the session's last: an assistant message
    completed or failed (a user message's parts are written one by one: it is done once the
    reply has started)."""
    if info.get("role") != "assistant":
        return False
    return bool(_time(info, "completed")) or type(info.get("error")) is dict


def settled(messages: list[OpenCodeMessage]) -> list[OpenCodeMessage]:
    """The leading messages that will not change any more (see the module docstring)."""
    out: list[OpenCodeMessage] = []
    for i, message in enumerate(messages):
        later = i + 1 < len(messages)
        if not (finished(message.info) or later):
            break
        out.append(message)
    return out


def entries_for(messages: list[OpenCodeMessage]) -> list[Entry]:
    """Pi entries for messages, chained in order (the first one is a root)."""
    out: list[Entry] = []
    parent: str | None = None
    for message in messages:
        ms = _ms(message.info)
        ts = iso(ms)
        if message.role == "assistant":
            body: Message = _assistant(message)
        else:
            body = {"role": "user", "content": user_blocks(message), "timestamp": ms}
        entry: Entry = {
            "type": "message",
            "id": message.id,
            "parentId": parent,
            "timestamp": ts,
            "message": body,
        }
        flags = {
            k: message.info[k]
            for k in ("agent", "mode", "summary", "finish")
            if k in message.info and type(message.info[k]) in (str, bool)
        }
        if flags:
            entry["opencode"] = flags
        out.append(entry)
        parent = message.id
        if message.role == "assistant":
            for part in _tool_parts(message):
                result = _tool_result(part, None)
                pid = str(part.get("id"))
                out.append(
                    {
                        "type": "message",
                        "id": pid,
                        "parentId": parent,
                        "timestamp": iso(result["timestamp"]) if result["timestamp"] else ts,
                        "message": result,
                    }
                )
                parent = pid
    return out


def _last_entry_id(message: OpenCodeMessage) -> str:
    if message.role == "assistant":
        tools = _tool_parts(message)
        if tools:
            return str(tools[-1].get("id"))
    return message.id


# --------------------------------------------------------------------------- the context


def before_revert(session: OpenCodeSession) -> list[OpenCodeMessage]:
    revert = session.revert
    if revert is None:
        return session.messages
    target = revert["messageID"]
    for i, message in enumerate(session.messages):
        if message.id == target:
            return session.messages[:i]
    return session.messages


def filter_compacted(messages: list[OpenCodeMessage], diag: ConversionDiagnostics) -> list[OpenCodeMessage]:
    """From the newest back to the last completed compaction (and the tail it kept)."""
    completed: set[str] = set()
    kept: list[OpenCodeMessage] = []
    retain: str | None = None
    retained_at = 0
    stop = False
    for message in reversed(messages):
        if retain is not None:
            kept.append(message)
            if message.id == retain:
                stop = True
                break
            continue
        kept.append(message)
        info = message.info
        if message.role == "user" and message.id in completed:
            part = next((p for p in message.parts if p.get("type") == "compaction"), None)
            if part is not None:
                diag.compactions += 1
                tail = part.get("tail_start_id")
                if type(tail) is str and tail and tail != message.id:
                    retain, retained_at = tail, len(kept)
                    continue
                stop = True
                break
        if (
            message.role == "assistant"
            and info.get("summary")
            and info.get("finish")
            and not info.get("error")
            and type(info.get("parentID")) is str
        ):
            completed.add(info["parentID"])
    if retain is not None and not stop:
        # The kept tail reaches past what is stored: keep only what followed the compaction.
        kept = kept[:retained_at]
    kept.reverse()
    diag.compacted_messages += len(messages) - len(kept)
    return kept


def context_for(messages: list[OpenCodeMessage], diag: ConversionDiagnostics) -> list[tuple[str, Message]]:
    out: list[tuple[str, Message]] = []
    for message in messages:
        if not message.parts:
            continue
        if message.role == "user":
            out.append(
                (
                    message.id,
                    {"role": "user", "content": user_blocks(message), "timestamp": _ms(message.info)},
                )
            )
            continue
        if message.role != "assistant":
            continue
        error = message.info.get("error")
        if type(error) is dict:
            productive = any(p.get("type") not in ("step-start", "reasoning") for p in message.parts)
            if not (error.get("name") == "MessageAbortedError" and productive):
                diag.failed_assistants += 1
                continue
        assistant = _assistant(message)
        if not assistant["content"]:
            continue
        out.append((message.id, assistant))
        for part in _tool_parts(message):
            out.append((str(part.get("id")), _tool_result(part, diag)))
    return out


def convert(session: OpenCodeSession, upto: str | None = None) -> Conversion:
    """Entries, leaf and context of a session (``upto``: the context as of that entry)."""
    diag = ConversionDiagnostics(messages=len(session.messages))
    for message in session.messages:
        for part in message.parts:
            t = part.get("type")
            diag.parts[t if type(t) is str else "(none)"] += 1
    ready = settled(session.messages)
    diag.unsettled = len(session.messages) - len(ready)
    entries = entries_for(ready)
    visible = before_revert(session)
    diag.reverted_messages = len(session.messages) - len(visible)
    leaf: str | None
    if session.revert is not None and len(visible) < len(session.messages):
        ready_ids = {m.id for m in ready}
        shown = [m for m in visible if m.id in ready_ids]
        leaf = _last_entry_id(shown[-1]) if shown else None
    else:
        leaf = entries[-1]["id"] if entries else None
    if upto is not None:
        visible = _through(session.messages, upto)
    context = context_for(filter_compacted(visible, diag), diag)
    return Conversion(entries, leaf, context, diag)


def _through(messages: list[OpenCodeMessage], entry_id: str) -> list[OpenCodeMessage]:
    """The messages up to the one an entry belongs to (a tool result belongs to its message)."""
    for i, message in enumerate(messages):
        if message.id == entry_id or any(p.get("id") == entry_id for p in _tool_parts(message)):
            return messages[: i + 1]
    return messages


__all__ = [
    "COMPACTION_PROMPT",
    "INTERRUPTED",
    "PRUNED_OUTPUT",
    "Conversion",
    "ConversionDiagnostics",
    "before_revert",
    "context_for",
    "convert",
    "entries_for",
    "filter_compacted",
    "finished",
    "iso",
    "pi_usage",
    "settled",
    "user_blocks",
]
