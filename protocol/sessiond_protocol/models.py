"""Shapes shared by several methods: entries, specs, nodes, usage."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

Durability = Literal["buffered", "fsync"]
"""``buffered``: acknowledged after ``write()``; ``fsync``: after ``fdatasync`` (shared)."""

EntryId = Annotated[str, Field(min_length=1, max_length=256)]
MAX_SESSION_ID = 128
"""The longest session id: a store file is named ``<24-character timestamp>_<id>.jsonl``, and a
file name longer than 255 bytes cannot be created (the write failed with "File name too long"
instead of the id being refused); 128 leaves room and is over three times a UUID."""
SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SESSION_ID,
        pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$",
    ),
]


def _path_text(value: str) -> str:
    """A path must be one the file system can name: no NUL (every system call stops there) and
    no lone surrogate (it has no UTF-8 form). Refused here as -32602 naming the field, rather
    than failing inside a system call as an internal error."""
    if "\x00" in value:
        raise PydanticCustomError("path_nul", "a path must not contain a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError(
            "path_surrogate", "a path must be valid Unicode (it holds a lone surrogate)"
        ) from None
    return value


PathText = Annotated[str, AfterValidator(_path_text)]
"""A string naming a file or directory (a ``cwd``, a file's path)."""


class Params(BaseModel):
    """Base of every params model: unknown fields are ignored (forward compatible)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class WorkDone(Params):
    """Params of a request that may take long: a token makes the server report ``$/progress``."""

    workDoneToken: str | int | None = Field(
        None, description="Report `$/progress` (begin/end) under this token."
    )


class Result(BaseModel):
    model_config = ConfigDict(extra="allow")


class Open(BaseModel):
    """A JSON object whose other fields are kept as they are (messages, usage, details)."""

    model_config = ConfigDict(extra="allow")


class AgentMessage(Open):
    """A Pi agent message. Only ``role`` is checked here; the rest is stored as sent."""

    role: Literal["system", "user", "assistant", "toolResult", "bashExecution", "custom"]
    # (spelled out, not ``Role``: the published schema is generated from this annotation)


# --------------------------------------------------------------------------- entry specs
# What a client appends: a Pi entry without id/parentId/timestamp (sessiond assigns them).


class MessageSpec(Params):
    type: Literal["message"]
    message: AgentMessage


class ThinkingLevelChangeSpec(Params):
    type: Literal["thinking_level_change"]
    thinkingLevel: str = Field(min_length=1)


class ModelChangeSpec(Params):
    type: Literal["model_change"]
    provider: str = Field(min_length=1)
    modelId: str = Field(min_length=1)


class UsageSpec(Params):
    type: Literal["usage"]
    kind: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    usage: Open
    note: str | None = None


class CustomSpec(Params):
    type: Literal["custom"]
    customType: str = Field(min_length=1)
    data: Any = None


class CustomMessageSpec(Params):
    type: Literal["custom_message"]
    customType: str = Field(min_length=1)
    content: str | list[Open]
    display: bool
    details: Any = None


class LabelSpec(Params):
    type: Literal["label"]
    targetId: EntryId
    label: str | None = Field(None, description="Absent, null or empty clears the label.")


class SessionInfoSpec(Params):
    type: Literal["session_info"]
    name: str = Field(description="Newlines become spaces, trimmed; empty clears the name.")


class Replacement(Params):
    content: str | list[Open]


class ContextEditSpec(Params):
    type: Literal["context_edit"]
    targetId: EntryId
    replacement: Replacement | None = Field(description="null hides the target from the context.")


class CompactionSpec(Params):
    type: Literal["compaction"]
    summary: str = Field(min_length=1)
    firstKeptEntryId: EntryId | None = Field(description="The first entry kept verbatim; null keeps nothing.")
    tokensBefore: int = Field(ge=0)
    details: Any = None
    usage: Open | None = None
    fromHook: bool | None = None


class BranchSummarySpec(Params):
    type: Literal["branch_summary"]
    summary: str
    fromId: str | None = Field(None, description="Default: the leaf before the append, or 'root'.")
    details: Any = None
    usage: Open | None = None
    fromHook: bool | None = None


EntrySpec = Annotated[
    MessageSpec
    | ThinkingLevelChangeSpec
    | ModelChangeSpec
    | UsageSpec
    | CustomSpec
    | CustomMessageSpec
    | LabelSpec
    | SessionInfoSpec
    | ContextEditSpec
    | CompactionSpec
    | BranchSummarySpec,
    Field(discriminator="type"),
]


Role = Literal["system", "user", "assistant", "toolResult", "bashExecution", "custom"]


class _MessageRole(TypedDict):
    role: Role


class _MessageEnvelope(TypedDict):
    type: Literal["message"]
    message: _MessageRole


EntryEnvelope = Annotated[
    _MessageEnvelope
    | ThinkingLevelChangeSpec
    | ModelChangeSpec
    | UsageSpec
    | CustomSpec
    | CustomMessageSpec
    | LabelSpec
    | SessionInfoSpec
    | ContextEditSpec
    | CompactionSpec
    | BranchSummarySpec,
    Field(discriminator="type"),
]
"""What the daemon checks of an entry spec: :data:`EntrySpec` with a message checked as a
``TypedDict`` (its ``type`` and ``message.role``, all that ``MessageSpec`` checks) instead of two
models that copy the message — the same errors at the same fields, for ~1 µs less per appended
message (the daemon passes on the entries as sent, not the models)."""


# --------------------------------------------------------------------------- views


class Entry(Open):
    """A session entry exactly as stored (Pi v3 format): ``type``, ``id``, ``parentId``, ``timestamp``…"""

    type: str


class SessionSummary(Result):
    sessionId: str
    path: str
    cwd: str
    title: str | None = Field(description="The session name, if set.")
    firstMessage: str
    createdAt: str | None
    updatedAt: str | None = Field(description="Time of the last user/assistant message (ISO).")
    messageCount: int = Field(
        description="The `message` entries of the session's tree on every branch (prompts, replies, tool "
        "results; not summaries, injected context or bookkeeping): one rule for every agent, Pi's "
        "(docs/concepts.md#messages)."
    )
    parentSession: str | None
    format: Literal["pi", "claude-code", "codex", "opencode"] = "pi"
    root: str = Field(
        "sessiond",
        description="Where it lives: `sessiond` (the store), `pi`, `claude`, `codex`, `opencode`.",
    )
    readOnly: bool = Field(False, description="Another agent's file: sessiond reads it, never writes it.")
    exportOf: str | None = Field(
        None, description="The id of the session this one is an export of (`sessiond export`), else null."
    )


class TreeNode(Result):
    id: str = Field(description="The entry's id.")
    parentId: str | None = Field(description="Its parent (null for a root).")
    type: str = Field(description="The entry type (message, compaction, label, ...).")
    role: str | None = Field(None, description="For message entries, the message role.")
    preview: str = Field(description="A one-line preview (at most 80 UTF-16 units).")
    label: str | None = Field(None, description="The entry's label, if any.")
    timestamp: str | None = Field(None, description="When the entry was written (ISO).")
    childCount: int = Field(description="How many entries hang below it.")


class ContextMessage(Result):
    entryId: str = Field(description="The entry the message comes from (a compaction, a message, ...).")
    message: Open


class Usage(Result):
    used: int | None = Field(description="Tokens in the context now.")
    size: int | None = Field(description="The model's context window, if known.")
    percent: float | None
    source: Literal["api", "estimate", "unknown"] = Field(
        description="api: the provider's last usage; estimate: partly or wholly estimated; unknown: empty context"
    )
