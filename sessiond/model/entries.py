"""Session entries: the Pi v3 entry types, their messages, and constructors in Pi's key order.

An entry is kept as the dict parsed from its line, not converted into a class. That is what
makes round trips lossless: unknown fields, unknown entry types, absent-versus-``null`` and
key order all survive because nothing is rebuilt. The ``TypedDict`` shapes below document
and type what each entry type carries; readers use the accessors, which never raise on the
malformed lines that real files contain.

Constructors build new entries with exactly the keys, in exactly the order, that Pi 1.6.0
writes (docs/pi-format.md §1.3), so a line sessiond appends is the line Pi would have appended.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

from .js import UNDEFINED, get

Entry = dict[str, Any]
"""One parsed JSONL line. Usually a dict; :func:`is_entry_like` tells when it is not."""

Message = dict[str, Any]
"""An agent message (``entry["message"]`` or one projected from an entry)."""

CURRENT_VERSION: Final = 3

HEADER: Final = "session"
MESSAGE: Final = "message"
THINKING_LEVEL_CHANGE: Final = "thinking_level_change"
MODEL_CHANGE: Final = "model_change"
USAGE: Final = "usage"
COMPACTION: Final = "compaction"
BRANCH_SUMMARY: Final = "branch_summary"
CUSTOM: Final = "custom"
CUSTOM_MESSAGE: Final = "custom_message"
LABEL: Final = "label"
SESSION_INFO: Final = "session_info"
CONTEXT_EDIT: Final = "context_edit"

ENTRY_TYPES: Final = frozenset(
    {
        MESSAGE,
        THINKING_LEVEL_CHANGE,
        MODEL_CHANGE,
        USAGE,
        COMPACTION,
        BRANCH_SUMMARY,
        CUSTOM,
        CUSTOM_MESSAGE,
        LABEL,
        SESSION_INFO,
        CONTEXT_EDIT,
    }
)
"""The eleven entry types of Pi 1.6.0. Others are legal in files and kept as they are."""

LEAF_MARKER: Final = "sessiond.leaf"
"""``customType`` of the ``custom`` entry that persists a leaf move (``tree/navigate``): its
``parentId`` is the entry navigated to. Pi has no persisted leaf, so the marker stands for its
parent wherever Pi derives something from the branch: it is no context entry
(:func:`~sessiond.model.projection.context_entries`), and decisions taken from the end of the
branch look past it (:func:`last_decisive`)."""

ROLES: Final = frozenset(
    {
        "system",
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
    }
)
"""Message roles. ``branchSummary``/``compactionSummary`` are only ever derived from entries."""

THINKING_LEVELS: Final = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


# --------------------------------------------------------------------------- shapes


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str
    mimeType: str


class ThinkingContent(TypedDict):
    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[str]
    redacted: NotRequired[bool]


class ToolCall(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]
    thoughtSignature: NotRequired[str]
    namespace: NotRequired[str]
    argumentsError: NotRequired[str]


class Cost(TypedDict):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float
    totalFromProvider: NotRequired[float]


class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    cacheWrite1h: NotRequired[int]
    reasoning: NotRequired[int]
    totalTokens: int
    cost: Cost


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str | list[TextContent]
    sections: NotRequired[dict[str, str | None]]
    toolsAdded: NotRequired[list[dict[str, Any]]]
    toolsRemoved: NotRequired[list[dict[str, Any]]]
    timestamp: int


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[TextContent | ImageContent]
    timestamp: int


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[TextContent | ThinkingContent | ToolCall]
    api: str
    provider: str
    model: str
    usage: Usage
    stopReason: Literal["stop", "length", "toolUse", "error", "aborted", "deferred"]
    errorMessage: NotRequired[str]
    timestamp: int


class NestedCall(TypedDict):
    id: str
    name: str
    arguments: NotRequired[dict[str, Any]]
    status: Literal["ok", "error", "unfinished"]


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[TextContent | ImageContent]
    details: NotRequired[Any]
    nestedCalls: NotRequired[dict[str, Any]]
    isError: bool
    timestamp: int


class BashExecutionMessage(TypedDict):
    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: int | None
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]
    excludeFromContext: NotRequired[bool]
    timestamp: int


class CustomMessage(TypedDict):
    role: Literal["custom"]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: NotRequired[Any]
    timestamp: float


class BranchSummaryMessage(TypedDict):
    role: Literal["branchSummary"]
    summary: str
    fromId: str
    timestamp: float


class CompactionSummaryMessage(TypedDict):
    role: Literal["compactionSummary"]
    summary: str
    tokensBefore: int
    timestamp: float


class SessionHeader(TypedDict):
    type: Literal["session"]
    version: NotRequired[int]
    id: str
    timestamp: str
    cwd: NotRequired[str]
    parentSession: NotRequired[str]


class _Base(TypedDict):
    id: str
    parentId: str | None
    timestamp: str


class MessageEntry(_Base):
    type: Literal["message"]
    message: dict[str, Any]


class ThinkingLevelChangeEntry(_Base):
    type: Literal["thinking_level_change"]
    thinkingLevel: str


class ModelChangeEntry(_Base):
    type: Literal["model_change"]
    provider: str
    modelId: str


class UsageEntry(_Base):
    type: Literal["usage"]
    kind: str
    provider: str
    model: str
    usage: Usage
    note: NotRequired[str]


class CompactionEntry(_Base):
    type: Literal["compaction"]
    summary: str
    firstKeptEntryId: str
    tokensBefore: int
    details: NotRequired[Any]
    usage: NotRequired[Usage]
    fromHook: NotRequired[bool]
    systemMessage: NotRequired[SystemMessage]


class BranchSummaryEntry(_Base):
    type: Literal["branch_summary"]
    fromId: str
    summary: str
    details: NotRequired[Any]
    usage: NotRequired[Usage]
    fromHook: NotRequired[bool]


class CustomEntry(_Base):
    type: Literal["custom"]
    customType: str
    data: NotRequired[Any]


class CustomMessageEntry(_Base):
    type: Literal["custom_message"]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: NotRequired[Any]


class LabelEntry(_Base):
    type: Literal["label"]
    targetId: str
    label: NotRequired[str]


class SessionInfoEntry(_Base):
    type: Literal["session_info"]
    name: NotRequired[str]


class ContextEditEntry(_Base):
    type: Literal["context_edit"]
    targetId: str
    replacement: dict[str, Any] | None


# --------------------------------------------------------------------------- accessors


def is_entry_like(line: Any) -> bool:
    """A parsed line that has properties (a JSON object). Pi keeps other truthy values too."""
    return type(line) is dict


def entry_type(entry: Any) -> Any:
    """``entry.type`` (``UNDEFINED`` when absent or when the line is not an object)."""
    return get(entry, "type")


def entry_id(entry: Any) -> Any:
    return get(entry, "id")


def parent_id(entry: Any) -> Any:
    return get(entry, "parentId")


def message_of(entry: Any) -> Any:
    """The message of a ``message`` entry, ``UNDEFINED`` for every other entry."""
    if type(entry) is dict and entry.get("type") == MESSAGE:
        return entry.get("message", UNDEFINED)
    return UNDEFINED


def message_role(entry: Any) -> Any:
    """Role of a ``message`` entry's message (``UNDEFINED`` for other entries)."""
    return get(message_of(entry), "role")


def is_leaf_marker(entry: Any) -> bool:
    """A persisted leaf move (a ``custom`` entry with ``customType`` :data:`LEAF_MARKER`)."""
    return type(entry) is dict and entry.get("type") == CUSTOM and entry.get("customType") == LEAF_MARKER


def last_decisive(path: list[Any]) -> Any:
    """The last entry of ``path`` that is not a leaf marker (``None`` when there is none).

    After a client navigated to an entry, Pi's leaf *is* that entry, while sessiond's is the
    marker that persists the move below it. What Pi derives from the end of the branch ("the
    branch ends in a compaction: already compacted") must be derived from this entry, or the
    marker would change a decision Pi makes. Markers contribute nothing else: no messages, no
    settings, no usage.
    """
    for i in range(len(path) - 1, -1, -1):
        if not is_leaf_marker(path[i]):
            return path[i]
    return None


def is_header(entry: Any) -> bool:
    return type(entry) is dict and entry.get("type") == HEADER


def is_valid_header(entry: Any) -> bool:
    """The rule a file's first parsed line must pass: ``{type: "session", id: <string>}``."""
    return type(entry) is dict and entry.get("type") == HEADER and type(entry.get("id")) is str


# --------------------------------------------------------------------------- constructors


def _omit_undefined(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if v is not UNDEFINED}


def new_header(session_id: str, timestamp: str, cwd: str, parent_session: Any = UNDEFINED) -> dict[str, Any]:
    return _omit_undefined(
        {
            "type": HEADER,
            "version": CURRENT_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": cwd,
            "parentSession": parent_session,
        }
    )


def new_message(entry_id: str, parent: str | None, timestamp: str, message: Message) -> Entry:
    return {"type": MESSAGE, "id": entry_id, "parentId": parent, "timestamp": timestamp, "message": message}


def new_thinking_level_change(entry_id: str, parent: str | None, timestamp: str, level: str) -> Entry:
    return {
        "type": THINKING_LEVEL_CHANGE,
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "thinkingLevel": level,
    }


def new_model_change(
    entry_id: str, parent: str | None, timestamp: str, provider: str, model_id: str
) -> Entry:
    return {
        "type": MODEL_CHANGE,
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "provider": provider,
        "modelId": model_id,
    }


def new_usage(
    entry_id: str,
    parent: str | None,
    timestamp: str,
    kind: str,
    provider: str,
    model: str,
    usage: Any,
    note: Any = UNDEFINED,
) -> Entry:
    entry: Entry = {
        "type": USAGE,
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "kind": kind,
        "provider": provider,
        "model": model,
        "usage": usage,
    }
    if type(note) is str and note:
        entry["note"] = note
    return entry


def new_compaction(
    entry_id: str,
    parent: str | None,
    timestamp: str,
    summary: str,
    first_kept_entry_id: str | None,
    tokens_before: int,
    details: Any = UNDEFINED,
    usage: Any = UNDEFINED,
    from_hook: Any = UNDEFINED,
    system_message: Any = UNDEFINED,
) -> Entry:
    """A compaction entry. ``first_kept_entry_id=None`` keeps nothing (the entry's own id)."""
    return _omit_undefined(
        {
            "type": COMPACTION,
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,
            "summary": summary,
            "firstKeptEntryId": entry_id if first_kept_entry_id is None else first_kept_entry_id,
            "tokensBefore": tokens_before,
            "details": details,
            "usage": usage,
            "fromHook": from_hook,
            "systemMessage": system_message,
        }
    )


def new_branch_summary(
    entry_id: str,
    parent: str | None,
    timestamp: str,
    from_id: str,
    summary: str,
    details: Any = UNDEFINED,
    usage: Any = UNDEFINED,
    from_hook: Any = UNDEFINED,
) -> Entry:
    return _omit_undefined(
        {
            "type": BRANCH_SUMMARY,
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,
            "fromId": from_id,
            "summary": summary,
            "details": details,
            "usage": usage,
            "fromHook": from_hook,
        }
    )


def new_custom(
    entry_id: str, parent: str | None, timestamp: str, custom_type: str, data: Any = UNDEFINED
) -> Entry:
    """A ``custom`` entry. Pi writes ``id`` *after* ``data`` for this type."""
    return _omit_undefined(
        {
            "type": CUSTOM,
            "customType": custom_type,
            "data": data,
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,
        }
    )


def new_custom_message(
    entry_id: str,
    parent: str | None,
    timestamp: str,
    custom_type: str,
    content: Any,
    display: bool,
    details: Any = UNDEFINED,
) -> Entry:
    return _omit_undefined(
        {
            "type": CUSTOM_MESSAGE,
            "customType": custom_type,
            "content": content,
            "display": display,
            "details": details,
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,
        }
    )


def new_label(
    entry_id: str, parent: str | None, timestamp: str, target_id: str, label: Any = UNDEFINED
) -> Entry:
    """A label entry; clearing a label (``label`` absent) writes no ``label`` key."""
    return _omit_undefined(
        {
            "type": LABEL,
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,
            "targetId": target_id,
            "label": label,
        }
    )


def new_session_info(entry_id: str, parent: str | None, timestamp: str, name: str) -> Entry:
    return {"type": SESSION_INFO, "id": entry_id, "parentId": parent, "timestamp": timestamp, "name": name}


def new_context_edit(
    entry_id: str, parent: str | None, timestamp: str, target_id: str, replacement: dict[str, Any] | None
) -> Entry:
    return {
        "type": CONTEXT_EDIT,
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "targetId": target_id,
        "replacement": replacement,
    }
