"""sessiond's context (Pi-shaped messages) in the Messages API's shape, to compare with a request.

The mapping is the one docs/claude-code.md describes ("What Claude Code sends"):

* ``assistant`` → an assistant message: ``text``, ``thinking`` (with its ``signature``),
  ``tool_use`` (``id``, ``name``, ``input``);
* ``toolResult`` → a ``tool_result`` block (``tool_use_id``, ``content``, ``is_error`` when set)
  in a user message;
* ``user`` and ``custom`` (rendered attachments, marked ``claude-code.attachment/<type>``) → user
  content; consecutive user-side messages form one API user message;
* a system-rendered attachment (``details.renderedRole == "system"``) after tool results is
  sent inside the last result's text: that text, trailing whitespace trimmed, then a blank
  line, then the attachment's text; a user-rendered one is a text block of its own after them.

Both sides are normalised the same way before comparing: a string content is one text block,
``cache_control`` markers are dropped, and consecutive messages of one role are merged.
"""

from __future__ import annotations

from typing import Any

Api = dict[str, Any]


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for b in content or []:
        if b.get("type") == "text":
            out.append({"type": "text", "text": b.get("text", "")})
        elif b.get("type") == "image":
            out.append({"type": "image", "data": b.get("data") or (b.get("source") or {}).get("data")})
        else:
            out.append(dict(b))
    return out


def _assistant_blocks(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in content:
        t = b.get("type")
        if t == "text":
            out.append({"type": "text", "text": b["text"]})
        elif t == "thinking":
            if b.get("redacted"):
                out.append({"type": "redacted_thinking", "data": b.get("thinkingSignature", "")})
            else:
                out.append(
                    {"type": "thinking", "thinking": b["thinking"], "signature": b.get("thinkingSignature")}
                )
        elif t == "toolCall":
            out.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["arguments"]})
        else:
            out.append(dict(b))
    return out


def _merge(messages: list[Api]) -> list[Api]:
    out: list[Api] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"]:
            out[-1]["content"].extend(m["content"])
        else:
            out.append({"role": m["role"], "content": list(m["content"])})
    return out


def _rendered_role(m: dict[str, Any]) -> Any:
    details = m.get("details")
    return details.get("renderedRole") if isinstance(details, dict) else None


def sessiond_to_api(messages: list[dict[str, Any]]) -> list[Api]:
    """Pi-shaped context messages as the API messages Claude Code would send."""
    out: list[Api] = []
    last_result: dict[str, Any] | None = None
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            out.append({"role": "assistant", "content": _assistant_blocks(m["content"])})
            last_result = None
        elif role == "toolResult":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m["toolCallId"],
                "content": _text_blocks(m["content"]),
            }
            if m.get("isError"):
                block["is_error"] = True
            out.append({"role": "user", "content": [block]})
            last_result = block
        elif role == "custom" and last_result is not None and _rendered_role(m) == "system":
            texts = last_result["content"]
            added = "".join(b["text"] for b in _text_blocks(m["content"]) if b["type"] == "text")
            if texts and texts[-1]["type"] == "text":
                texts[-1] = {"type": "text", "text": texts[-1]["text"].rstrip() + "\n\n" + added}
            else:
                texts.append({"type": "text", "text": added})
        elif role in ("user", "custom"):
            out.append({"role": "user", "content": _text_blocks(m["content"])})
            if role == "user":
                last_result = None
    return _merge(out)


def _clean(block: dict[str, Any]) -> dict[str, Any]:
    b = {k: v for k, v in block.items() if k != "cache_control"}
    if b.get("type") == "tool_result":
        b["content"] = [_clean(x) for x in _text_blocks(b.get("content", ""))]
        if not b.get("is_error"):
            b.pop("is_error", None)
    if b.get("type") == "image" and "source" in b:
        b = {"type": "image", "data": b["source"].get("data")}
    return b


def request_to_api(messages: list[dict[str, Any]]) -> list[Api]:
    """A request's ``messages``, normalised as :func:`sessiond_to_api`'s output is."""
    return _merge(
        [{"role": m["role"], "content": [_clean(b) for b in _text_blocks(m["content"])]} for m in messages]
    )


def first_difference(ours: list[Api], theirs: list[Api]) -> str | None:
    """Where two API message lists first differ, block by block, as a readable message."""
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a["role"] != b["role"]:
            return f"message {i}: role {a['role']} != {b['role']}"
        for j, (x, y) in enumerate(zip(a["content"], b["content"], strict=False)):
            if x != y:
                return (
                    f"message {i} ({a['role']}) block {j}:\n"
                    f" sessiond: {str(x)[:600]}\n agent:    {str(y)[:600]}"
                )
        if len(a["content"]) != len(b["content"]):
            extra = a["content"][len(b["content"]) :] or b["content"][len(a["content"]) :]
            return (
                f"message {i} ({a['role']}): {len(a['content'])} blocks != {len(b['content'])}; "
                f"first extra: {str(extra[0])[:600]}"
            )
    if len(ours) != len(theirs):
        return f"{len(ours)} messages != {len(theirs)}"
    return None
