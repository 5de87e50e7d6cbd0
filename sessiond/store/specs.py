"""What a client may append, checked the way Pi checks it, and built in Pi's key order.

A *spec* is an entry without ``id``, ``parentId`` and ``timestamp``: ``{"type": ..., fields}``
with Pi's field names. :func:`build` validates one spec against the state it will be
appended to (a :class:`StageView`: the session plus the specs of the same batch before it)
and returns the entry exactly as Pi would have written it. Validation raises the same errors
with the same messages as Pi's ``SessionManager`` (``Entry X not found``, ``Entry X is not on
the active branch``, ...) plus precise ones, naming the field, where Pi has only types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..errors import EntryNotFoundError, EntryNotOnBranchError, InvalidArgumentError, NotEditableError
from ..model import entries as E
from ..model.entries import Entry
from ..model.js import UNDEFINED, date_ms, get, nullish, trim

APPENDABLE_ROLES: Final = frozenset({"system", "user", "assistant", "toolResult", "bashExecution", "custom"})

SPEC_TYPES: Final = (
    E.MESSAGE,
    E.THINKING_LEVEL_CHANGE,
    E.MODEL_CHANGE,
    E.USAGE,
    E.CUSTOM,
    E.CUSTOM_MESSAGE,
    E.LABEL,
    E.SESSION_INFO,
    E.CONTEXT_EDIT,
    E.COMPACTION,
    E.BRANCH_SUMMARY,
)


@dataclass(frozen=True, slots=True)
class StageView:
    """The state one spec of a batch is checked against."""

    exists: Callable[[Any], bool]
    """Whether an id names an entry (of the session, or staged earlier in the batch)."""
    on_branch: Callable[[Any], bool]
    """Whether an id is on the branch the spec extends."""
    lookup: Callable[[Any], Any]
    """The (possibly light) entry with an id, or None."""
    leaf: Any
    """The session's leaf before this spec: the old leaf for the first spec of a batch, the
    previous spec's entry after that (a branch summary records it as ``fromId``)."""
    system_snapshot: Callable[[], Any]
    """The current system prompt replayed into one message (for a compaction), or None."""


def _field(spec: dict[str, Any], name: str) -> Any:
    return spec.get(name, UNDEFINED)


def _require_str(spec: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = _field(spec, name)
    if type(value) is not str or (not allow_empty and not value):
        raise InvalidArgumentError(f"{name} must be a non-empty string", field=name)
    return value


def _optional(spec: dict[str, Any], name: str) -> Any:
    return _field(spec, name)


def sanitize_name(name: str) -> str:
    """Pi's session name rule: runs of CR/LF become one space, then trim."""
    out: list[str] = []
    in_break = False
    for ch in name:
        if ch in "\r\n":
            if not in_break:
                out.append(" ")
            in_break = True
        else:
            out.append(ch)
            in_break = False
    return trim("".join(out))


def build(spec: Any, eid: str, parent: Any, timestamp: str, view: StageView) -> Entry:
    """Validate ``spec`` against ``view`` and build the entry (raises on bad input)."""
    if type(spec) is not dict:
        raise InvalidArgumentError("each entry must be an object with a 'type'", field="type")
    t = spec.get("type")
    if t not in SPEC_TYPES:
        raise InvalidArgumentError(f"type must be one of {', '.join(SPEC_TYPES)}", field="type")
    if t == E.MESSAGE:
        message = _field(spec, "message")
        if type(message) is not dict:
            raise InvalidArgumentError("message must be an object", field="message")
        role = message.get("role")
        if role not in APPENDABLE_ROLES:
            allowed = ", ".join(sorted(APPENDABLE_ROLES))
            hint = (
                " (summaries are appended as compaction / branch_summary entries)"
                if role in ("branchSummary", "compactionSummary")
                else ""
            )
            raise InvalidArgumentError(f"message.role must be one of {allowed}{hint}", field="message.role")
        return E.new_message(eid, parent, timestamp, message)
    if t == E.THINKING_LEVEL_CHANGE:
        level = _require_str(spec, "thinkingLevel")
        return E.new_thinking_level_change(eid, parent, timestamp, level)
    if t == E.MODEL_CHANGE:
        provider = _require_str(spec, "provider")
        model_id = _require_str(spec, "modelId")
        return E.new_model_change(eid, parent, timestamp, provider, model_id)
    if t == E.USAGE:
        kind = _require_str(spec, "kind")
        provider = _require_str(spec, "provider")
        model = _require_str(spec, "model")
        usage = _field(spec, "usage")
        if type(usage) is not dict:
            raise InvalidArgumentError("usage must be an object", field="usage")
        note = _optional(spec, "note")
        if note is not UNDEFINED and type(note) is not str:
            raise InvalidArgumentError("note must be a string", field="note")
        return E.new_usage(eid, parent, timestamp, kind, provider, model, usage, note)
    if t == E.CUSTOM:
        custom_type = _require_str(spec, "customType")
        return E.new_custom(eid, parent, timestamp, custom_type, _optional(spec, "data"))
    if t == E.CUSTOM_MESSAGE:
        custom_type = _require_str(spec, "customType")
        content = _field(spec, "content")
        if type(content) is not str and type(content) is not list:
            raise InvalidArgumentError(
                "content must be a string or an array of content blocks", field="content"
            )
        display = _field(spec, "display")
        if type(display) is not bool:
            raise InvalidArgumentError("display must be a boolean", field="display")
        return E.new_custom_message(
            eid, parent, timestamp, custom_type, content, display, _optional(spec, "details")
        )
    if t == E.LABEL:
        target = _field(spec, "targetId")
        label = _optional(spec, "label")
        if label is not UNDEFINED and label is not None and type(label) is not str:
            raise InvalidArgumentError("label must be a string (empty or absent clears it)", field="label")
        if not view.exists(target):
            raise EntryNotFoundError(target)
        return E.new_label(eid, parent, timestamp, target, UNDEFINED if label is None else label)
    if t == E.SESSION_INFO:
        name = _field(spec, "name")
        if type(name) is not str:
            raise InvalidArgumentError("name must be a string", field="name")
        return E.new_session_info(eid, parent, timestamp, sanitize_name(name))
    if t == E.CONTEXT_EDIT:
        return _context_edit(spec, eid, parent, timestamp, view)
    if t == E.COMPACTION:
        return _compaction(spec, eid, parent, timestamp, view)
    return _branch_summary(spec, eid, parent, timestamp, view)


def _context_edit(spec: dict[str, Any], eid: str, parent: Any, timestamp: str, view: StageView) -> Entry:
    replacement = _field(spec, "replacement")
    if replacement is not None and (
        type(replacement) is not dict
        or "content" not in replacement
        or (type(replacement["content"]) is not str and type(replacement["content"]) is not list)
    ):
        raise InvalidArgumentError(
            "Context edit replacement must be null or contain string/array content", field="replacement"
        )
    target_id = _field(spec, "targetId")
    target = view.lookup(target_id)
    if target is None:
        raise EntryNotFoundError(target_id)
    if not view.on_branch(target_id):
        raise EntryNotOnBranchError(target_id)
    ttype = get(target, "type")
    role = get(get(target, "message"), "role") if ttype == E.MESSAGE else "custom"
    editable = ttype == E.CUSTOM_MESSAGE or (
        ttype == E.MESSAGE and role in ("user", "assistant", "toolResult")
    )
    if not editable:
        raise NotEditableError(target_id)
    normalized = replacement
    if (
        replacement is not None
        and role in ("assistant", "toolResult")
        and type(replacement["content"]) is str
    ):
        normalized = {"content": [{"type": "text", "text": replacement["content"]}]}
    return E.new_context_edit(eid, parent, timestamp, target_id, normalized)


def _compaction(spec: dict[str, Any], eid: str, parent: Any, timestamp: str, view: StageView) -> Entry:
    summary = _require_str(spec, "summary")
    tokens_before = _field(spec, "tokensBefore")
    if type(tokens_before) not in (int, float) or tokens_before < 0:
        raise InvalidArgumentError("tokensBefore must be a non-negative number", field="tokensBefore")
    first_kept = _field(spec, "firstKeptEntryId")
    if first_kept is UNDEFINED:
        raise InvalidArgumentError(
            "firstKeptEntryId is required (null keeps nothing)", field="firstKeptEntryId"
        )
    if first_kept is not None:
        if not view.exists(first_kept):
            raise EntryNotFoundError(first_kept)
        if not view.on_branch(first_kept):
            raise EntryNotOnBranchError(first_kept)
    system = view.system_snapshot()
    snapshot: Any = UNDEFINED
    if system is not None:
        snapshot = dict(system)
        snapshot["timestamp"] = int(date_ms(timestamp))
    return E.new_compaction(
        eid,
        parent,
        timestamp,
        summary,
        first_kept,
        tokens_before,
        _optional(spec, "details"),
        _optional(spec, "usage"),
        _optional(spec, "fromHook"),
        snapshot,
    )


def _branch_summary(spec: dict[str, Any], eid: str, parent: Any, timestamp: str, view: StageView) -> Entry:
    summary = _require_str(spec, "summary", allow_empty=True)
    from_id = _field(spec, "fromId")
    if from_id is UNDEFINED:
        from_id = "root" if nullish(view.leaf) else view.leaf
    elif type(from_id) is not str:
        raise InvalidArgumentError("fromId must be a string", field="fromId")
    return E.new_branch_summary(
        eid,
        parent,
        timestamp,
        from_id,
        summary,
        _optional(spec, "details"),
        _optional(spec, "usage"),
        _optional(spec, "fromHook"),
    )
