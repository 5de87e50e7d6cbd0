"""Codex response items: what kind each is, and what it becomes in Pi's message shapes.

Facts from Codex's history code (``context_manager``): every non-``system`` message, reasoning
item, tool call and tool output is part of what the model is sent back; ``ghost_snapshot``
items (undo checkpoints) and unknown items are not. A *user turn* starts at a user message
that is not "contextual" (environment context, AGENTS.md / user instructions, skills, a shell
command the user ran, an aborted-turn marker): rollbacks count those turns.

The Pi side: consecutive items the model produced in one response (reasoning, assistant text,
calls) become one ``assistant`` message; each tool output becomes a ``toolResult``; a
``developer`` message becomes a ``custom`` message (``codex.developer``), since Pi has no
developer role; a provider-encrypted compaction item becomes a ``custom`` message
(``codex.compaction``) standing for the context the provider holds.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

Item = dict[str, Any]
Message = dict[str, Any]

API_ITEM_TYPES: Final = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "image_generation_call",
        "tool_search_call",
        "tool_search_output",
        "compaction",
        "context_compaction",
    }
)
"""Items Codex sends back to the model (a ``system`` message excepted)."""
OTHER_ITEM_TYPES: Final = frozenset({"ghost_snapshot", "compaction_trigger", "other"})
"""Items Codex records but does not send."""
KNOWN_ITEM_TYPES: Final = API_ITEM_TYPES | OTHER_ITEM_TYPES

MODEL_ITEM_TYPES: Final = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "image_generation_call",
        "tool_search_call",
    }
)
"""Items a response produces besides assistant messages (they join its assistant message)."""
OUTPUT_ITEM_TYPES: Final = frozenset(
    {"function_call_output", "custom_tool_call_output", "tool_search_output"}
)
COMPACTION_ITEM_TYPES: Final = frozenset({"compaction", "context_compaction"})

_CONTEXTUAL_MARKED: Final = (
    ("<environment_context>", "</environment_context>"),
    ("<user_instructions>", "</user_instructions>"),
    ("<skills_instructions>", "</skills_instructions>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<subagent_notification>", "</subagent_notification>"),
)
_CONTEXTUAL_DEVELOPER: Final = (
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<personality_spec>",
)
SYNTHETIC_OUTPUT: Final = "aborted"
"""What Codex sends for a call whose output was never recorded."""


# --------------------------------------------------------------------------- classification


def item_type(item: Item) -> str | None:
    value = item.get("type")
    return value if type(value) is str else None


def role(item: Item) -> str | None:
    value = item.get("role")
    return value if type(value) is str else None


def is_api_item(item: Item) -> bool:
    t = item_type(item)
    if t == "message":
        return role(item) != "system"
    return t in API_ITEM_TYPES


def texts(content: Any) -> list[str]:
    """The text pieces of a message's content list (a bare string is one piece)."""
    if type(content) is str:
        return [content]
    if type(content) is not list:
        return []
    out: list[str] = []
    for part in content:
        if type(part) is dict:
            text = part.get("text")
            if type(text) is str:
                out.append(text)
    return out


def _marked(text: str, start: str, end: str) -> bool:
    head = text.lstrip()
    if head[: len(start)].lower() != start.lower():
        return False
    tail = head.rstrip()
    return tail[-len(end) :].lower() == end.lower()


def is_contextual_text(text: str) -> bool:
    """Text Codex injects into a user message itself (instructions, environment, markers)."""
    head = text.lstrip()
    if head[:1] not in ("<", "#"):  # every marker starts so (nothing else lowers to ``<``)
        return False
    if head.startswith("<turn_aborted>"):
        return True
    if head.startswith("# AGENTS.md instructions") and head.rstrip().endswith("</INSTRUCTIONS>"):
        return True
    return any(_marked(text, start, end) for start, end in _CONTEXTUAL_MARKED)


def is_contextual_user(item: Item) -> bool:
    if item_type(item) != "message" or role(item) != "user":
        return False
    return any(is_contextual_text(t) for t in texts(item.get("content")))


def is_contextual_developer(item: Item) -> bool:
    if item_type(item) != "message" or role(item) != "developer":
        return False
    return any(t.lstrip().startswith(_CONTEXTUAL_DEVELOPER) for t in texts(item.get("content")))


def is_user_turn(item: Item) -> bool:
    """A user message that starts a turn (what ``thread_rolled_back`` counts)."""
    return item_type(item) == "message" and role(item) == "user" and not is_contextual_user(item)


def is_model_item(item: Item) -> bool:
    """Produced by the model in a response (joins the response's assistant message)."""
    t = item_type(item)
    if t == "message":
        return role(item) == "assistant"
    return t in MODEL_ITEM_TYPES


def is_message_item(item: Item) -> bool:
    """Read as a ``message`` entry of the tree (what a session's ``messageCount`` counts): a
    user or assistant message, each item the model produced (reasoning, a tool call) and each
    tool output. A developer/system message, a compaction and Codex's own records are entries
    of other types (docs/sessions.md, "Messages and entries")."""
    t = item_type(item)
    if t == "message":
        return role(item) in ("user", "assistant")
    return t in MODEL_ITEM_TYPES or t in OUTPUT_ITEM_TYPES


def user_text(item: Item) -> str:
    return "\n".join(t for t in texts(item.get("content")) if t)


# --------------------------------------------------------------------------- Pi blocks


def _image(url: Any) -> dict[str, Any]:
    if type(url) is str and url.startswith("data:") and "," in url:
        meta, _, data = url.partition(",")
        mime = meta[5:].split(";", 1)[0]
        if ";base64" in meta:
            return {"type": "image", "data": data, "mimeType": mime}
    return {"type": "text", "text": f"[image: {url}]" if type(url) is str else "[image]"}


def user_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content items as Pi text/image blocks."""
    if type(content) is str:
        return [{"type": "text", "text": content}]
    if type(content) is not list:
        return []
    out: list[dict[str, Any]] = []
    for part in content:
        if type(part) is not dict:
            continue
        t = part.get("type")
        if t in ("input_text", "output_text", "text", "refusal"):
            text = part.get("text", part.get("refusal"))
            out.append({"type": "text", "text": text if type(text) is str else ""})
        elif t == "input_image":
            out.append(_image(part.get("image_url")))
        else:
            out.append({"type": "text", "text": f"[{t}]"})
    return out


def call_id(item: Item, line: int) -> str:
    """The id that pairs a call with its output (a made-up one for server-side calls)."""
    for name in ("call_id", "id"):
        value = item.get(name)
        if type(value) is str and value:
            return value
    return f"{item_type(item) or 'call'}_{line}"


_JSON_START: Final = frozenset('{["-0123456789tfn \t\n\r')
"""The characters a JSON text can start with (what follows ``[`` adds ``]``)."""


def _arguments(raw: Any) -> dict[str, Any]:
    if type(raw) is dict:
        return raw
    if type(raw) is str:
        if raw[:1] not in _JSON_START or (raw[:1] == "[" and raw[1:2] not in _JSON_START and raw[1:2] != "]"):
            # Not JSON at all (a redacted or free-form argument string): what a failed parse
            # gives, without raising and catching the parser's error (it costs microseconds).
            return {"input": raw}
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"input": raw}
        return parsed if type(parsed) is dict else {"input": parsed}
    return {} if raw is None else {"input": raw}


def assistant_blocks(item: Item, line: int) -> list[dict[str, Any]]:
    """What one model-produced item adds to its response's assistant message."""
    t = item_type(item)
    if t == "message":
        return [b for b in user_blocks(item.get("content")) if b["type"] == "text"]
    if t == "reasoning":
        pieces = [s for s in texts(item.get("summary")) if s]
        if not pieces:
            pieces = [s for s in texts(item.get("content")) if s]
        block: dict[str, Any] = {"type": "thinking", "thinking": "\n\n".join(pieces)}
        if not pieces and item.get("encrypted_content"):
            block["redacted"] = True
        return [block]
    name: Any
    if t in {"function_call", "tool_search_call"}:
        name = item.get("name")
        args = _arguments(item.get("arguments"))
    elif t == "custom_tool_call":
        name = item.get("name")
        raw = item.get("input")
        args = {"input": raw if type(raw) is str else ""}
    elif t == "local_shell_call":
        name = "local_shell"
        action = item.get("action")
        args = action if type(action) is dict else {}
    elif t == "web_search_call":
        name = "web_search"
        action = item.get("action")
        args = action if type(action) is dict else {}
    elif t == "image_generation_call":
        name = "image_generation"
        args = {k: v for k, v in item.items() if k in ("revised_prompt", "status")}
    else:
        return []
    return [
        {
            "type": "toolCall",
            "id": call_id(item, line),
            "name": name if type(name) is str else (t or ""),
            "arguments": args,
        }
    ]


def server_side_result(item: Item) -> str | None:
    """The result text of a call the provider ran itself (no output item follows it)."""
    t = item_type(item)
    if t == "web_search_call":
        status = item.get("status")
        return f"web search {status}" if type(status) is str else "web search"
    if t == "image_generation_call":
        status = item.get("status")
        return f"image generation {status}" if type(status) is str else "image generation"
    return None


def output_result(item: Item) -> tuple[list[dict[str, Any]], bool]:
    """A tool output's content as Pi blocks, and whether it reports a failure.

    Outputs are a string, a ``{content, success}`` payload (older builds) or a list of content
    items; ``success: false`` marks an error.
    """
    output = item.get("output")
    failed = False
    if type(output) is dict:
        failed = output.get("success") is False
        output = output.get("content", output.get("body", ""))
    if type(output) is str:
        return ([{"type": "text", "text": output}] if output else []), failed
    if type(output) is list:
        return user_blocks(output), failed
    if output is None:
        return [], failed
    return [{"type": "text", "text": orjson.dumps(output).decode()}], failed


def compaction_text(item: Item) -> str:
    blob = item.get("encrypted_content")
    size = len(blob) if type(blob) is str else 0
    return f"[compacted context held by the provider: {size} encrypted characters]"


__all__ = [
    "API_ITEM_TYPES",
    "COMPACTION_ITEM_TYPES",
    "KNOWN_ITEM_TYPES",
    "OUTPUT_ITEM_TYPES",
    "SYNTHETIC_OUTPUT",
    "assistant_blocks",
    "call_id",
    "compaction_text",
    "is_api_item",
    "is_contextual_developer",
    "is_contextual_text",
    "is_contextual_user",
    "is_message_item",
    "is_model_item",
    "is_user_turn",
    "item_type",
    "output_result",
    "role",
    "server_side_result",
    "texts",
    "user_blocks",
    "user_text",
]
