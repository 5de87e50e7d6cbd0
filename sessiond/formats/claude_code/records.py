"""Claude Code's record types and the parsed transcript: what a file holds, before any reading of it.

A transcript is kept as parsed (one dict per line, never modified); the indexes built over it
(the chain by ``uuid``, the titles, the load diagnostics) live in :class:`ClaudeTranscript`,
and the small accessors every later stage uses to look into a record are here, so the graph,
the reconstruction and the conversions agree on what a record means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ...model.js import date_ms
from ..lines import LineDiagnostics

# --------------------------------------------------------------------------- record types

USER: Final = "user"
ASSISTANT: Final = "assistant"
SYSTEM: Final = "system"
ATTACHMENT: Final = "attachment"
PROGRESS: Final = "progress"

CHAIN_TYPES: Final = frozenset({USER, ASSISTANT, SYSTEM, ATTACHMENT, PROGRESS})
"""Records with ``uuid``/``parentUuid`` that take part in the conversation tree."""

MESSAGE_TYPES: Final = frozenset({USER, ASSISTANT, SYSTEM, ATTACHMENT})
"""Chain types Claude Code loads into its message map (``progress`` is bridged over)."""

METADATA_TYPES: Final = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "last-prompt",
        "custom-title",
        "ai-title",
        "permission-mode",
        "atis-latch",
        "tag",
        "mode",
        "agent-name",
        "agent-setting",
        "pr-link",
        "bridge-session",
        "cost-state",
        "attribution-snapshot",
        "content-replacement",
        "frame-link",
        "fork-context-ref",
        "worktree-state",
        "continued-in",
        "saved_hook_context",
        # 2.1.3xx bookkeeping: the request Claude Code sent (its shape, content blobs, the
        # request itself) and the tools used so far. Not part of the conversation.
        "api-request-shape",
        "api-request-blob",
        "api-request",
        "tools-used",
    }
)
"""Non-chain record types seen in real files or named by parsers (docs/claude-code.md, Loading)."""

COMPACT_BOUNDARY: Final = "compact_boundary"
SNIP_BOUNDARY: Final = "snip_boundary"
"""A ``system`` entry whose ``snipMetadata.removedUuids`` Claude Code drops when it loads."""


# --------------------------------------------------------------------------- the parsed file


@dataclass(slots=True)
class ClaudeLoadDiagnostics(LineDiagnostics):
    """What the loader skipped or noticed. Nothing here stops a file from loading."""

    physical_lines: int = 0
    non_object_lines: int = 0
    """Valid JSON that is not an object (``null``, numbers, arrays...)."""
    non_object_line_numbers: list[int] = field(default_factory=list)
    torn_tail_parsed: bool = False
    type_counts: dict[str, int] = field(default_factory=dict)
    """Records per ``type`` (``<none>`` for objects without a string type)."""
    unknown_types: dict[str, int] = field(default_factory=dict)
    """Types that are neither chain nor known metadata types (ignored, as Claude Code does)."""
    chain_without_uuid: int = 0
    """Chain-typed records without a string ``uuid`` (not usable; left out of ``chain``)."""
    duplicate_uuids: int = 0
    """Chain records whose uuid an earlier line already used (the last line wins)."""
    duplicate_uuid_examples: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)
    """Distinct ``sessionId`` values of chain entries, first seen first (several = a resume bug)."""
    versions: list[str] = field(default_factory=list)
    """Distinct Claude Code versions that wrote chain entries, first seen first."""
    sidechain_entries: int = 0
    progress_entries: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "physicalLines": self.physical_lines,
            **self.skipped_json(),
            "nonObjectLines": self.non_object_lines,
            "nonObjectLineNumbers": self.non_object_line_numbers,
            "tornTail": self.torn_tail,
            "tornTailParsed": self.torn_tail_parsed,
            "typeCounts": self.type_counts,
            "unknownTypes": self.unknown_types,
            "chainWithoutUuid": self.chain_without_uuid,
            "duplicateUuids": self.duplicate_uuids,
            "duplicateUuidExamples": self.duplicate_uuid_examples,
            "sessionIds": self.session_ids,
            "versions": self.versions,
            "sidechainEntries": self.sidechain_entries,
            "progressEntries": self.progress_entries,
        }


@dataclass(slots=True)
class Titles:
    """Session titles as the file records them (docs/claude-code.md, Titles and listing)."""

    custom_title: str | None = None
    """The last ``custom-title`` (``/rename``, SDK); an empty one clears it."""
    ai_title: str | None = None
    """The last ``ai-title``."""
    summary: str | None = None
    """The last ``summary`` whose ``leafUuid`` is a chain entry of this file."""
    summary_leaf: str | None = None
    last_prompt: str | None = None
    """Text of the last ``last-prompt`` record (truncated by Claude Code)."""
    last_prompt_leaf: str | None = None
    """``leafUuid`` of the last ``last-prompt`` record (written from ~2.1.123), a diagnostic only."""
    summaries: int = 0
    untrusted_summaries: int = 0
    """``summary`` lines whose ``leafUuid`` is not in this file (usually other sessions', 1.0.x)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "customTitle": self.custom_title,
            "aiTitle": self.ai_title,
            "summary": self.summary,
            "summaryLeaf": self.summary_leaf,
            "lastPrompt": self.last_prompt,
            "lastPromptLeaf": self.last_prompt_leaf,
            "summaries": self.summaries,
            "untrustedSummaries": self.untrusted_summaries,
        }


@dataclass(eq=False)
class ClaudeTranscript:
    """A parsed Claude Code transcript. Records are kept as parsed and never modified."""

    source: str
    session_id: str | None
    """``sessionId`` of the first chain entry (for sub-agent files: the parent session's)."""
    cwd: str | None
    """``cwd`` of the first chain entry (it can change later: worktrees, ``/cd``)."""
    version: str | None
    """The Claude Code version of the last chain entry (the newest writer of the file)."""
    records: list[dict[str, Any]]
    """Every parsed JSON object, in file order."""
    lines: list[int]
    """1-based line number of each record (parallel to ``records``)."""
    chain: dict[str, dict[str, Any]]
    """uuid -> chain entry (user/assistant/system/attachment/progress); the last line wins, the
    iteration order is the order in which each uuid was first seen (as in Claude Code's Map)."""
    titles: Titles
    diagnostics: ClaudeLoadDiagnostics
    agent_id: str | None = None
    """``agentId`` of the first chain entry carrying one (sub-agent transcripts, 2.0+)."""
    spans: list[tuple[int, int]] = field(default_factory=list)
    """Byte offset and length of each record's line in the file (parallel to ``records``)."""
    end: int = 0
    """Bytes of the file read (a follower continues from here)."""
    graph_cache: object = field(default=None, repr=False)
    """The parent graph (:func:`~.graph.graph_of`), built once on first use and shared by every
    reconstruction of this transcript."""

    def title(self) -> str | None:
        """The session's display title: custom > AI > trusted summary > last prompt.

        A custom title is the user's explicit choice (``/rename``) and always wins; the AI title
        is Claude Code's own generated title (2.1.x); a ``summary`` is the older equivalent of
        the AI title, trusted only when its ``leafUuid`` is in this file (1.0.x files carry
        other sessions' summaries at the top); the last prompt is the fallback Claude Code's
        picker shows when nothing else is known.
        """
        t = self.titles
        for candidate in (t.custom_title, t.ai_title, t.summary, t.last_prompt):
            if candidate:
                return candidate
        return None

    @property
    def is_sidechain_file(self) -> bool:
        """Every message entry is a sidechain entry (a sub-agent transcript file)."""
        found = False
        for entry in self.chain.values():
            if entry.get("type") == PROGRESS:
                continue
            if entry.get("isSidechain") is not True:
                return False
            found = True
        return found


# --------------------------------------------------------------------------- looking into records


def looks_like_claude_record(obj: dict[str, Any]) -> bool:
    """A parsed object that only Claude Code writes (a chain entry or a known metadata record)."""
    t = obj.get("type")
    if t == "session":
        return False
    if type(obj.get("uuid")) is str and "parentUuid" in obj:
        return t in CHAIN_TYPES or type(obj.get("sessionId")) is str
    return t in METADATA_TYPES


def timestamp_ms(value: Any) -> float:
    """``Date.parse`` of a record timestamp (NaN when invalid), fast for ``...Z`` ISO strings."""
    if type(value) is str and len(value) >= 20 and value[-1] == "Z" and value[10] == "T":
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return date_ms(value)
        return float(math.floor(dt.timestamp()) * 1000 + dt.microsecond // 1000)
    return date_ms(value)


def str_or_none(value: Any) -> str | None:
    return value if type(value) is str and value else None


def content_of(entry: dict[str, Any]) -> Any:
    message = entry.get("message")
    return message.get("content") if type(message) is dict else None


def message_id(entry: dict[str, Any]) -> str | None:
    message = entry.get("message")
    if type(message) is dict:
        mid = message.get("id")
        if type(mid) is str and mid:
            return mid
    return None


def is_tool_result_user(entry: dict[str, Any]) -> bool:
    if entry.get("type") != USER:
        return False
    content = content_of(entry)
    if type(content) is not list:
        return False
    return any(type(b) is dict and b.get("type") == "tool_result" for b in content)


def tool_result_ids(entry: dict[str, Any]) -> list[str]:
    content = content_of(entry)
    if type(content) is not list:
        return []
    return [
        b["tool_use_id"]
        for b in content
        if type(b) is dict and b.get("type") == "tool_result" and type(b.get("tool_use_id")) is str
    ]


def attachment_type(e: dict[str, Any]) -> Any:
    att = e.get("attachment")
    return att.get("type") if type(att) is dict else None


def prompt_text(e: dict[str, Any]) -> str | None:
    content = content_of(e)
    if type(content) is str:
        return content
    if type(content) is list:
        texts = [b.get("text") for b in content if type(b) is dict and b.get("type") == "text"]
        return "\n".join(x for x in texts if type(x) is str) if texts else None
    return None


# --------------------------------------------------------------------------- what a follower keeps

_SKELETON_FIELDS: Final = ("subtype", "compactMetadata", "logicalParentUuid", "snipMetadata")
_SHARED_SKELETONS: dict[tuple[Any, ...], dict[str, Any]] = {}
_MAX_SHARED: Final = 4096


def skeleton(rec: dict[str, Any]) -> dict[str, Any]:
    """What a follower keeps of a chain record once its graph is built: the fields read after
    that (leaf rules, reports): ``type``, ``isSidechain``, ``agentId``, an attachment's type and
    whether it was rendered for the model, and
    a system entry's subtype and compaction/snip metadata. Bodies are read back from the file.

    Records of the same shape share one dict (most entries of a session are ``user`` or
    ``assistant`` entries of the main chain), so keeping a skeleton per entry costs a reference.
    Skeletons are never modified.
    """
    kind = rec.get("type")
    side = rec.get("isSidechain") is True
    agent = rec.get("agentId") if type(rec.get("agentId")) is str else None
    if kind == SYSTEM:
        out: dict[str, Any] = {"type": kind}
        if side:
            out["isSidechain"] = True
        if agent is not None:
            out["agentId"] = agent
        for name in _SKELETON_FIELDS:
            if name in rec:
                out[name] = rec[name]
        return out
    att = attachment_type(rec) if kind == ATTACHMENT else None
    rendered = kind == ATTACHMENT and type(rec.get("rendered")) is list and bool(rec["rendered"])
    shape = (kind, side, agent, att if type(att) is str else None, rendered)
    shared = _SHARED_SKELETONS.get(shape)
    if shared is not None:
        return shared
    out = {"type": kind}
    if side:
        out["isSidechain"] = True
    if agent is not None:
        out["agentId"] = agent
    if shape[3] is not None:
        out["attachment"] = {"type": shape[3]}
    if rendered:
        out["rendered"] = True  # the model saw it: its body is read back for the context
    if len(_SHARED_SKELETONS) < _MAX_SHARED:
        _SHARED_SKELETONS[shape] = out
    return out
