"""Claude Code entries as Pi messages, and the conversation the model sees from a chain.

A user entry becomes its tool results (first, as the API requires) and one user message; an
assistant entry (one streamed piece) becomes one Pi assistant message. :func:`build_messages`
turns a reconstructed chain into the request Claude Code would send: pieces merged by
``message.id`` (walking back across assistants and tool results), duplicate ``tool_use`` ids
removed, and every tool call paired with a result (a synthetic error result when none was
recorded).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .graph import Graph
from .records import ASSISTANT, ATTACHMENT, SYSTEM, USER, ClaudeTranscript, attachment_type, timestamp_ms

Message = dict[str, Any]

ATTACHMENT_CUSTOM_TYPE: Final = "claude-code.attachment/"
"""``customType`` prefix of the ``custom`` message a rendered attachment becomes (``/<type>`` follows)."""

SYNTHETIC_TOOL_RESULT_TEXT: Final = "[Tool result missing due to internal error]"
"""Text of the error result given to a tool call that has none (Claude Code's placeholder wording)."""

_STOP_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
    "error": "error",
}
Usage4 = tuple[int, int, int, int]
"""Anthropic usage as ``(input, output, cache read, cache write)`` token counts."""
EMPTY_USAGE: Final[Usage4] = (0, 0, 0, 0)


def epoch_ms(value: Any) -> int:
    d = timestamp_ms(value)
    return int(d) if d == d else 0


def _number(value: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value == value and not math.isinf(value):
        return int(value)
    return 0


def max_usage(a: Usage4, b: Usage4) -> Usage4:
    """Field-wise maximum: streamed pieces carry partial (growing) counts of the same message."""
    return (max(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def usage_tuple(message: Any) -> Usage4:
    usage = message.get("usage") if type(message) is dict else None
    if type(usage) is not dict:
        return EMPTY_USAGE
    return (
        _number(usage.get("input_tokens")),
        _number(usage.get("output_tokens")),
        _number(usage.get("cache_read_input_tokens")),
        _number(usage.get("cache_creation_input_tokens")),
    )


def pi_usage(fields: Usage4) -> dict[str, Any]:
    """Anthropic usage ``(input, output, cacheRead, cacheWrite)`` as Pi's usage object."""
    i, o, r, w = fields
    return {
        "input": i,
        "output": o,
        "cacheRead": r,
        "cacheWrite": w,
        "totalTokens": i + o + r + w,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def _image_block(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    if type(source) is dict and source.get("type") == "base64" and type(source.get("data")) is str:
        mime = source.get("media_type")
        return {"type": "image", "data": source["data"], "mimeType": mime if type(mime) is str else ""}
    return {"type": "text", "text": "[image]"}


def _user_blocks(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    """Text and image blocks as Pi content; other block types become a short text placeholder."""
    out: list[dict[str, Any]] = []
    for b in blocks:
        if type(b) is str:
            out.append({"type": "text", "text": b})
            continue
        if type(b) is not dict:
            continue
        bt = b.get("type")
        if bt == "text":
            text = b.get("text")
            out.append({"type": "text", "text": text if type(text) is str else ""})
        elif bt == "image":
            out.append(_image_block(b))
        elif bt == "tool_reference":
            out.append({"type": "text", "text": f"[tool_reference {b.get('tool_name', '')}]"})
        else:
            out.append({"type": "text", "text": f"[{bt}]"})
    return out


def _tool_result_message(block: dict[str, Any], tool_names: dict[str, str], ts: int) -> Message:
    content = block.get("content")
    if type(content) is str:
        blocks = [{"type": "text", "text": content}] if content else []
    elif type(content) is list:
        blocks = _user_blocks(content)
    else:
        blocks = []
    tid = block.get("tool_use_id")
    tid = tid if type(tid) is str else ""
    return {
        "role": "toolResult",
        "toolCallId": tid,
        "toolName": tool_names.get(tid, ""),
        "content": blocks,
        "isError": block.get("is_error") is True,
        "timestamp": ts,
    }


def attachment_messages(entry: dict[str, Any]) -> list[Message]:
    """What an attachment entry contributes: the text Claude Code rendered for the model.

    From 2.1.3xx an attachment records ``rendered`` (a list of ``{content}`` items, the exact
    text the model receives, ``<system-reminder>`` framing included) and ``renderedRole``
    (``system`` or ``user``: how Claude Code files it; both are sent as user content). It
    becomes one ``custom`` message marked ``claude-code.attachment/<type>``, with
    ``display: false`` (context the model got, not a message a person wrote). An attachment
    without ``rendered`` (older versions, or one the model never sees) contributes nothing.
    """
    rendered = entry.get("rendered")
    if type(rendered) is not list:
        return []
    blocks: list[dict[str, Any]] = []
    for item in rendered:
        content = item.get("content") if type(item) is dict else item
        if type(content) is str:
            blocks.append({"type": "text", "text": content})
        elif type(content) is list:
            blocks.extend(_user_blocks(content))
    if not blocks:
        return []
    kind = attachment_type(entry)
    role = entry.get("renderedRole")
    details: dict[str, Any] = {"attachment": kind if type(kind) is str else None}
    if type(role) is str:
        details["renderedRole"] = role
    return [
        {
            "role": "custom",
            "customType": f"{ATTACHMENT_CUSTOM_TYPE}{kind if type(kind) is str else 'none'}",
            "content": blocks,
            "display": False,
            "details": details,
            "timestamp": epoch_ms(entry.get("timestamp")),
        }
    ]


def is_attachment_message(m: Message) -> bool:
    """A rendered attachment (see :func:`attachment_messages`)."""
    return m.get("role") == "custom" and str(m.get("customType", "")).startswith(ATTACHMENT_CUSTOM_TYPE)


def user_messages(entry: dict[str, Any], tool_names: dict[str, str]) -> list[Message]:
    """What one user entry contributes: its tool results first (as the API requires), then the
    rest of its content as one Pi user message. A string content stays a string. An attachment
    entry contributes its rendered text (:func:`attachment_messages`)."""
    if entry.get("type") == ATTACHMENT:
        return attachment_messages(entry)
    message = entry.get("message")
    if type(message) is not dict:
        return []
    ts = epoch_ms(entry.get("timestamp"))
    content = message.get("content")
    if type(content) is str:
        return [{"role": "user", "content": content, "timestamp": ts}]
    if type(content) is not list:
        return []
    results: list[Message] = []
    rest: list[Any] = []
    for b in content:
        if type(b) is dict and b.get("type") == "tool_result":
            results.append(_tool_result_message(b, tool_names, ts))
        else:
            rest.append(b)
    if rest:
        results.append({"role": "user", "content": _user_blocks(rest), "timestamp": ts})
    return results


def _blocks_of(content: Any) -> list[Any]:
    """An assistant ``content`` as a block list (a plain string is one text block)."""
    if type(content) is list:
        return list(content)
    if type(content) is str and content:
        return [{"type": "text", "text": content}]
    return []


def _assistant_blocks(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if type(b) is not dict:
            continue
        bt = b.get("type")
        if bt == "text":
            text = b.get("text")
            out.append({"type": "text", "text": text if type(text) is str else ""})
        elif bt == "thinking":
            thinking = b.get("thinking")
            block: dict[str, Any] = {
                "type": "thinking",
                "thinking": thinking if type(thinking) is str else "",
            }
            if type(b.get("signature")) is str:
                block["thinkingSignature"] = b["signature"]
            out.append(block)
        elif bt == "redacted_thinking":
            data = b.get("data")
            out.append(
                {
                    "type": "thinking",
                    "thinking": "",
                    "thinkingSignature": data if type(data) is str else "",
                    "redacted": True,
                }
            )
        elif bt == "tool_use":
            args = b.get("input")
            tid = b.get("id")
            name = b.get("name")
            out.append(
                {
                    "type": "toolCall",
                    "id": tid if type(tid) is str else "",
                    "name": name if type(name) is str else "",
                    "arguments": args if type(args) is dict else {},
                }
            )
        else:
            out.append({"type": "text", "text": f"[{bt}]"})
    return out


def _stop_reason(raw: Any, has_tool_calls: bool) -> str:
    if type(raw) is str and raw in _STOP_REASONS:
        return _STOP_REASONS[raw]
    if raw is None and has_tool_calls:
        return "toolUse"  # 2.1.17-2.1.42 write stop_reason null on every piece
    return "stop"


def assistant_message(
    entry: dict[str, Any],
    blocks: list[Any] | None = None,
    usage: Usage4 | None = None,
    stop: Any = None,
) -> Message:
    """A Pi assistant message for an assistant entry (or a merged API message)."""
    message = entry.get("message")
    message = message if type(message) is dict else {}
    content = _assistant_blocks(blocks if blocks is not None else _blocks_of(message.get("content")))
    has_calls = any(b["type"] == "toolCall" for b in content)
    reason = message.get("stop_reason") if stop is None else stop
    model = message.get("model")
    out: Message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model if type(model) is str else "",
        "usage": pi_usage(usage if usage is not None else usage_tuple(message)),
        "stopReason": _stop_reason(reason, has_calls),
    }
    if entry.get("isApiErrorMessage") is True:
        out["stopReason"] = "error"
        text = " ".join(b["text"] for b in content if b["type"] == "text")
        out["errorMessage"] = text or str(entry.get("error") or "API error")
    out["timestamp"] = epoch_ms(entry.get("timestamp"))
    return out


@dataclass(slots=True)
class _Api:
    """One API assistant message being merged from its pieces."""

    uuid: str
    entry: dict[str, Any]
    blocks: list[Any]
    usage: Usage4
    stop: Any
    pieces: int = 1


def build_messages(
    t: ClaudeTranscript, g: Graph, chain: list[str], entries: Mapping[str, dict[str, Any]] | None = None
) -> tuple[list[tuple[str, Message]], dict[str, Any]]:
    """The request built from ``chain`` (records from ``entries``, default ``t.chain``) and what
    building it reported."""
    if entries is None:
        entries = t.chain
    start = 0
    boundaries = set(g.boundaries)
    for i in range(len(chain) - 1, -1, -1):
        if chain[i] in boundaries:
            start = i + 1  # the model's context starts after the last compact boundary
            break
    items: list[tuple[str, Any]] = []  # ("a", _Api) | ("u", uuid)
    open_ids: dict[str, int] = {}  # message.id -> index in items, since the last non-tool-result user
    excluded: dict[str, int] = {}
    merged_pieces = 0
    for u in chain[start:]:
        e = entries[u]
        etype = e.get("type")
        if etype == ASSISTANT:
            message = e.get("message")
            content = message.get("content") if type(message) is dict else None
            blocks = _blocks_of(content)
            usage = EMPTY_USAGE if u in g.zero_usage else usage_tuple(message)
            stop = message.get("stop_reason") if type(message) is dict else None
            mid = g.msg_ids.get(u)
            if mid is not None and mid in open_ids:
                api: _Api = items[open_ids[mid]][1]
                api.blocks.extend(blocks)
                api.usage = max_usage(api.usage, usage)
                if stop is not None:
                    api.stop = stop
                api.pieces += 1
                merged_pieces += 1
                continue
            items.append(("a", _Api(u, e, blocks, usage, stop)))
            if mid is not None:
                open_ids[mid] = len(items) - 1
        elif etype == USER:
            items.append(("u", u))
            if u not in g.results:
                open_ids.clear()  # the walk back stops at a user entry that is not a tool result
        elif etype == ATTACHMENT and attachment_messages(e):
            items.append(("u", u))  # rendered text the model got; pieces still merge across it
        else:
            sub = e.get("subtype") if etype == SYSTEM else attachment_type(e)
            name = f"{etype}/{sub or 'none'}"
            excluded[name] = excluded.get(name, 0) + 1
    raw: list[tuple[str, Message]] = []
    seen_calls: set[str] = set()
    duplicate_calls = 0
    dropped_assistants = 0
    for kind, item in items:
        if kind == "u":
            raw.extend((item, m) for m in user_messages(entries[item], g.tool_names))
            continue
        api = item
        msg = assistant_message(api.entry, api.blocks, api.usage, api.stop)
        kept: list[dict[str, Any]] = []
        for b in msg["content"]:
            if b["type"] == "toolCall":
                if b["id"] in seen_calls:
                    duplicate_calls += 1
                    continue
                seen_calls.add(b["id"])
            kept.append(b)
        if len(kept) != len(msg["content"]):
            if not kept:
                dropped_assistants += 1
                continue
            msg["content"] = kept
        raw.append((api.uuid, msg))
    paired, pdiag = _pair_tool_results(raw)
    usage_sum = 0
    last_total: int | None = None
    api_messages = 0
    for _, m in paired:
        if m["role"] == "assistant":
            api_messages += 1
            usage_sum += m["usage"]["totalTokens"]
            if m["usage"]["totalTokens"] > 0 and m["stopReason"] != "error":
                last_total = m["usage"]["totalTokens"]
    diag: dict[str, Any] = {
        "contextStart": chain[start] if start < len(chain) else None,
        "apiAssistantMessages": api_messages,
        "mergedAssistantPieces": merged_pieces,
        "duplicateToolUses": duplicate_calls,
        "assistantsEmptiedByDedup": dropped_assistants,
        **pdiag,
        "excludedFromMessages": excluded,
        "usageTotalTokensSum": usage_sum,
        "lastAssistantTotalTokens": last_total,
    }
    return paired, diag


def _pair_tool_results(raw: list[tuple[str, Message]]) -> tuple[list[tuple[str, Message]], dict[str, Any]]:
    """Every tool call answered right after its assistant message, every result with its call.

    Between an assistant message and the next one, the results of its calls come first (in
    the order they were recorded), then a synthetic error result for each call without one,
    then the other messages of that stretch. Results for calls of another message, and second
    results for a call, are dropped. This is the shape the Messages API accepts and the repair
    Claude Code applies when it builds a request.
    """
    out: list[tuple[str, Message]] = []
    synthetic = 0
    dropped = 0
    i = 0
    n = len(raw)
    leading: list[tuple[str, Message]] = []
    while i < n and raw[i][1]["role"] != "assistant":
        if raw[i][1]["role"] == "toolResult":
            dropped += 1  # a result before any call
        else:
            leading.append(raw[i])
        i += 1
    out.extend(_arrange(leading))
    while i < n:
        source, m = raw[i]
        out.append((source, m))
        calls = [b for b in m["content"] if b["type"] == "toolCall"]
        j = i + 1
        results: list[tuple[str, Message]] = []
        others: list[tuple[str, Message]] = []
        answered: set[str] = set()
        wanted = {b["id"] for b in calls}
        while j < n and raw[j][1]["role"] != "assistant":
            item = raw[j]
            if item[1]["role"] == "toolResult":
                tid = item[1]["toolCallId"]
                if tid in wanted and tid not in answered:
                    answered.add(tid)
                    results.append(item)
                else:
                    dropped += 1
            else:
                others.append(item)
            j += 1
        out.extend(results)
        ts = m["timestamp"]
        for b in calls:
            if b["id"] not in answered:
                synthetic += 1
                out.append(
                    (
                        source,
                        {
                            "role": "toolResult",
                            "toolCallId": b["id"],
                            "toolName": b["name"],
                            "content": [{"type": "text", "text": SYNTHETIC_TOOL_RESULT_TEXT}],
                            "details": {"synthetic": True},
                            "isError": True,
                            "timestamp": ts,
                        },
                    )
                )
        out.extend(_arrange(others))
        i = j
    return out, {"syntheticToolResults": synthetic, "droppedToolResults": dropped}


def _arrange(stretch: list[tuple[str, Message]]) -> list[tuple[str, Message]]:
    """A stretch of user-side messages (after an assistant message and its results) in the
    order and shape Claude Code sends them.

    * Rendered attachments move up, ahead of the stretch's prompts and local-command entries
      (Claude Code lets attachments bubble up until they meet an assistant message or a tool
      result), keeping their own order.
    * A message followed by a user entry gets a newline at the end of its last text: Claude
      Code joins consecutive user messages into one API message and ends the text before each
      user entry's with ``\n`` (the caveat / command / stdout entries after ``/compact``, an
      attachment before a prompt). Copies are changed, never the converted entries.
    """
    if not stretch:
        return stretch
    attachments = [x for x in stretch if is_attachment_message(x[1])]
    arranged = (
        attachments + [x for x in stretch if not is_attachment_message(x[1])]
        if attachments
        else list(stretch)
    )
    for k in range(len(arranged) - 1):
        source, m = arranged[k]
        if m["role"] in ("user", "custom") and arranged[k + 1][1]["role"] == "user":
            arranged[k] = (source, _newline_at_end(m))
    return arranged


def _newline_at_end(m: Message) -> Message:
    content = m.get("content")
    if type(content) is str:
        return {**m, "content": content + "\n"}
    if type(content) is list and content and type(content[-1]) is dict and content[-1].get("type") == "text":
        last = content[-1]
        return {**m, "content": [*content[:-1], {**last, "text": str(last.get("text", "")) + "\n"}]}
    return m
