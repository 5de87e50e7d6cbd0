"""Messages: what an entry contributes to the model's context, and how that reaches the LLM.

Two steps, as in Pi: an entry on the selected path becomes zero or more *agent messages*
(:func:`entry_messages`), and agent messages become *LLM messages* (:func:`convert_to_llm`),
where the roles only sessiond/Pi know (``bashExecution``, ``custom``, ``branchSummary``,
``compactionSummary``) turn into user messages with fixed framing texts. The texts are part of
the format: a model resumed by Pi or by sessiond must see the same words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from . import entries as E
from .entries import Entry, Message
from .js import UNDEFINED, date_ms, get, key, nullish, to_string, truthy

COMPACTION_SUMMARY_PREFIX: Final = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX: Final = "\n</summary>"
BRANCH_SUMMARY_PREFIX: Final = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX: Final = "</summary>"

LLM_PASSTHROUGH_ROLES: Final = frozenset({"system", "user", "assistant", "toolResult"})
EDITABLE_ROLES: Final = frozenset({"user", "assistant", "toolResult", "custom"})
"""Roles whose content a ``context_edit`` replacement applies to."""


# --------------------------------------------------------------------------- derived messages


def branch_summary_message(summary: Any, from_id: Any, timestamp: Any) -> Message:
    return {"role": "branchSummary", "summary": summary, "fromId": from_id, "timestamp": date_ms(timestamp)}


def compaction_summary_message(summary: Any, tokens_before: Any, timestamp: Any) -> Message:
    return {
        "role": "compactionSummary",
        "summary": summary,
        "tokensBefore": tokens_before,
        "timestamp": date_ms(timestamp),
    }


def custom_message(custom_type: Any, content: Any, display: Any, details: Any, timestamp: Any) -> Message:
    return {
        "role": "custom",
        "customType": custom_type,
        "content": content,
        "display": display,
        "details": details,
        "timestamp": date_ms(timestamp),
    }


# --------------------------------------------------------------------------- entry -> messages


def entry_messages(entry: Any) -> list[Message]:
    """The agent messages one entry contributes to context (Pi's ``sessionEntryToContextMessages``).

    ``message`` entries contribute their message (a missing or ``null`` content normalised so
    later steps can iterate it), ``custom_message`` a ``custom`` message, ``branch_summary`` a
    ``branchSummary`` when its summary is non-empty, ``compaction`` its optional system
    checkpoint plus a ``compactionSummary``. Every other type contributes nothing.
    """
    if type(entry) is not dict:
        return []
    t = entry.get("type")
    if t == E.MESSAGE:
        message = entry.get("message", UNDEFINED)
        if type(message) is not dict:
            # Pi throws on a missing/null message (we contribute nothing) and passes any other
            # value through as a role-less message, which later steps ignore.
            return [] if nullish(message) else [message]
        role = message.get("role")
        if nullish(message.get("content", UNDEFINED)):
            if role == "system":
                fixed = dict(message)
                fixed["content"] = ""
                return [fixed]
            if role in ("user", "assistant", "toolResult"):
                fixed = dict(message)
                fixed["content"] = []
                return [fixed]
        return [message]
    if t == E.CUSTOM_MESSAGE:
        content = entry.get("content", UNDEFINED)
        return [
            custom_message(
                get(entry, "customType"),
                [] if nullish(content) else content,
                get(entry, "display"),
                get(entry, "details"),
                get(entry, "timestamp"),
            )
        ]
    if t == E.BRANCH_SUMMARY:
        summary = entry.get("summary", UNDEFINED)
        if truthy(summary):
            return [branch_summary_message(summary, get(entry, "fromId"), get(entry, "timestamp"))]
        return []
    if t == E.COMPACTION:
        summary_msg = compaction_summary_message(
            get(entry, "summary"), get(entry, "tokensBefore"), get(entry, "timestamp")
        )
        system = entry.get("systemMessage", UNDEFINED)
        return [system, summary_msg] if truthy(system) else [summary_msg]
    return []


def apply_replacement(messages: list[Message], edit: Entry) -> list[Message]:
    """Apply a ``context_edit`` to what its target contributes (``null`` hides it entirely)."""
    replacement = get(edit, "replacement")
    if replacement is None:
        return []
    new_content = get(replacement, "content")
    out: list[Message] = []
    for message in messages:
        role = get(message, "role")
        if role not in EDITABLE_ROLES:
            out.append(message)
            continue
        if role in ("assistant", "toolResult") and type(new_content) is str:
            content: Any = [{"type": "text", "text": new_content}]
        else:
            content = new_content
        edited = dict(message)
        edited["content"] = content
        out.append(edited)
    return out


# --------------------------------------------------------------------------- content helpers


def content_text(content: Any, separator: str = "\n") -> str:
    """Text blocks of a content value joined by ``separator`` (a string is its own text)."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    texts = [
        block.get("text", UNDEFINED)
        for block in content
        if type(block) is dict and block.get("type") == "text"
    ]
    return separator.join("" if nullish(t) else to_string(t) for t in texts)


def bash_execution_text(message: Message) -> str:
    """The user text a ``bashExecution`` message becomes for the model."""
    text = f"Ran `{to_string(get(message, 'command'))}`\n"
    output = get(message, "output")
    if truthy(output):
        text += f"```\n{to_string(output)}\n```"
    else:
        text += "(no output)"
    exit_code = get(message, "exitCode")
    if truthy(get(message, "cancelled")):
        text += "\n\n(command cancelled)"
    elif not nullish(exit_code) and exit_code != 0:
        text += f"\n\nCommand exited with code {to_string(exit_code)}"
    full_path = get(message, "fullOutputPath")
    if truthy(get(message, "truncated")) and truthy(full_path):
        text += f"\n\n[Output truncated. Full output: {to_string(full_path)}]"
    return text


def convert_to_llm(messages: list[Message]) -> list[Message]:
    """Agent messages -> LLM messages (Pi's ``convertToLlm``); unknown roles are dropped."""
    out: list[Message] = []
    for m in messages:
        role = get(m, "role")
        ts = get(m, "timestamp")
        if role == "bashExecution":
            if truthy(get(m, "excludeFromContext")):
                continue
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": bash_execution_text(m)}],
                    "timestamp": ts,
                }
            )
        elif role == "custom":
            content = get(m, "content")
            if type(content) is str:
                content = [{"type": "text", "text": content}]
            out.append({"role": "user", "content": content, "timestamp": ts})
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + to_string(get(m, "summary")) + BRANCH_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + to_string(get(m, "summary")) + COMPACTION_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
        elif role in LLM_PASSTHROUGH_ROLES:
            out.append(m)
    return out


# --------------------------------------------------------------------------- system messages


def current_tools(messages: Sequence[Message]) -> list[Any]:
    """The tool set after replaying every system message's ``toolsRemoved``/``toolsAdded``."""
    tools: dict[Any, Any] = {}
    for m in messages:
        if get(m, "role") != "system":
            continue
        removed = get(m, "toolsRemoved")
        for tool in removed if type(removed) is list else ():
            tools.pop(key(get(tool, "name")), None)
        added = get(m, "toolsAdded")
        for tool in added if type(added) is list else ():
            tools[key(get(tool, "name"))] = tool
    return list(tools.values())


def current_system_message(messages: Sequence[Message]) -> Message | None:
    """Every system message replayed into one (Pi's ``getCurrentSystemMessage``).

    Content is appended, sections are patched by name (``null`` deletes one), tools resolved.
    ``None`` when there is neither a system message nor a tool.
    """
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = UNDEFINED
    for m in messages:
        if get(m, "role") != "system":
            continue
        if nullish(timestamp):
            timestamp = get(m, "timestamp")
        text = content_text(get(m, "content"))
        if text:
            content.append(text)
        secs = get(m, "sections")
        if type(secs) is dict:
            for name, value in secs.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
    tools = current_tools(messages)
    if timestamp is UNDEFINED and not tools:
        return None
    out: Message = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = tools
    out["timestamp"] = 0 if nullish(timestamp) else timestamp
    return out
