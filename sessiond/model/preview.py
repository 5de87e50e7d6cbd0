"""A one-line preview of an entry, for tree views (``tree/get``) and listings."""

from __future__ import annotations

from typing import Any, Final

from . import entries as E
from .js import get, to_string, utf16_len, utf16_slice_head
from .messages import content_text

PREVIEW_UNITS: Final = 80


def _collapse(text: str) -> str:
    """``" ".join(text.split())``: runs of whitespace made one space, none at the ends.

    A text without a whitespace character other than the space (the only printable one) and
    without two spaces in a row is its own collapsed form, stripped: checked in C without
    splitting it into words (most prose heads)."""
    if text.isprintable() and "  " not in text:
        return text.strip()
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    # The whitespace-collapsed form of any prefix of ``text`` is a prefix of the collapsed
    # whole; when a short prefix already runs past the limit, its head is the whole's head.
    # Collapsing every 20 KB tool result in full made previews most of `Session.open`; half of
    # it still went to collapsing texts of a few hundred characters (issue 30).
    # A head a quarter longer than the limit usually suffices (prose, most code), and the
    # words split off are most of a preview's cost.
    for head in (limit + limit // 4, 2 * limit):
        if len(text) > head:
            flat = _collapse(text[:head])
            if flat.isascii():
                if len(flat) > limit:
                    return flat[: max(0, limit - 1)] + "…"
            elif utf16_len(flat) > limit:
                return utf16_slice_head(flat, limit - 1) + "…"
    flat = _collapse(text)
    if utf16_len(flat) <= limit:
        return flat
    return utf16_slice_head(flat, limit - 1) + "…"


def _text_blocks(content: list[Any]) -> str | None:
    """``content_text(content)`` when every text block's text is a string (the usual case),
    without its per-block conversions; ``None`` otherwise."""
    texts: list[str] = []
    for block in content:
        if type(block) is dict and block.get("type") == "text":
            text = block.get("text")
            if type(text) is not str:
                return None
            texts.append(text)
    return "\n".join(texts)


def _message_preview(message: Any) -> str:
    role = get(message, "role")
    if role == "bashExecution":
        return f"$ {to_string(get(message, 'command'))}"
    content = get(message, "content")
    if type(content) is list:
        text = _text_blocks(content)
        if text is None:
            text = content_text(content)
    else:
        text = content if type(content) is str else ""
    if text and not text.isspace():  # text.strip(), without copying a long text
        return text
    if type(content) is list:
        calls = [to_string(get(b, "name")) for b in content if get(b, "type") == "toolCall"]
        if calls:
            return "→ " + ", ".join(calls)
        if any(get(b, "type") == "image" for b in content):
            return "[image]"
        if any(get(b, "type") == "thinking" for b in content):
            return "[thinking]"
    error = get(message, "errorMessage")
    return f"[error] {to_string(error)}" if type(error) is str else ""


def _list_message_preview(content: list[Any], limit: int) -> str | None:
    """:func:`entry_preview` of a message (not a bash execution) whose content is a list, for the
    usual shapes: one text block, or none and tool calls; ``None`` for any other shape (then
    the general path decides).

    One loop and no calls per block: ``Session.open`` previews every entry, and the general
    path's calls were most of a preview (issue 30).
    """
    text: Any = None
    texts = 0
    names: list[Any] = []
    for block in content:
        if type(block) is dict:
            kind = block.get("type")
            if kind == "text":
                texts += 1
                text = block.get("text")
            elif kind == "toolCall":
                names.append(block.get("name"))
    if texts == 1:
        if type(text) is not str or not text or text.isspace():
            return None
    elif texts == 0 and names and all(type(name) is str for name in names):
        text = "→ " + ", ".join(names)
    else:
        return None
    return _clip(text, limit)


def entry_preview(entry: Any, limit: int = PREVIEW_UNITS) -> str:
    """What a human would want to read first about an entry, at most ``limit`` UTF-16 units."""
    if type(entry) is dict and entry.get("type") == E.MESSAGE:
        message = entry.get("message")
        if type(message) is dict and message.get("role") != "bashExecution":
            content = message.get("content")
            if type(content) is list:
                quick = _list_message_preview(content, limit)
                if quick is not None:
                    return quick
    t = get(entry, "type")
    if t == E.MESSAGE:
        text = _message_preview(get(entry, "message"))
    elif t == E.CUSTOM_MESSAGE:
        content = get(entry, "content")
        text = content_text(content) if type(content) in (str, list) else ""
    elif t in (E.COMPACTION, E.BRANCH_SUMMARY):
        text = to_string(get(entry, "summary"))
    elif t == E.MODEL_CHANGE:
        text = f"{to_string(get(entry, 'provider'))}/{to_string(get(entry, 'modelId'))}"
    elif t == E.THINKING_LEVEL_CHANGE:
        text = f"thinking: {to_string(get(entry, 'thinkingLevel'))}"
    elif t == E.LABEL:
        label = get(entry, "label")
        text = (
            f"label {to_string(get(entry, 'targetId'))}: {to_string(label)}"
            if type(label) is str
            else "label cleared"
        )
    elif t == E.SESSION_INFO:
        text = f"name: {to_string(get(entry, 'name'))}"
    elif t == E.CONTEXT_EDIT:
        hidden = get(entry, "replacement") is None
        text = f"{'hide' if hidden else 'edit'} {to_string(get(entry, 'targetId'))}"
    elif t == E.CUSTOM:
        text = to_string(get(entry, "customType"))
    elif t == E.USAGE:
        text = f"usage {to_string(get(entry, 'kind'))}"
    else:
        text = to_string(t) if t is not None else ""
    return _clip(text, limit)
