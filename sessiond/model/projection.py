"""Projection: from the selected branch to the context a model sees.

``branch -> context entries -> projected entries -> messages``, exactly as Pi 1.6.0 builds it
(docs/pi-format.md §5):

* settings (thinking level, model) come from the *whole* path, compaction does not cut them;
* the latest compaction on the path comes first, then the kept range that starts at its
  ``firstKeptEntryId`` (system messages there dropped), then everything after it;
* ``context_edit`` entries among the context entries rewrite (or, with ``null``, hide) what
  their target contributes; the last edit of a target wins;
* an older compaction inside the kept range contributes nothing;
* sessiond's persisted leaf moves (``sessiond.leaf`` markers) are not context entries: Pi's
  leaf move is not an entry at all, and the marker must not show where Pi's would not (in
  ``context/get``'s entry ids, or as a first kept entry of a compaction).

Each projected entry keeps its source entry, so usage anchoring and cut points can map a
message back to the line it came from.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Protocol

from . import entries as E
from .entries import Entry, Message
from .js import UNDEFINED, get, key
from .messages import apply_replacement, entry_messages


@dataclass(slots=True)
class ProjectedEntry:
    """A context entry and the messages it contributes (possibly none)."""

    source: Any
    messages: list[Message]


@dataclass(slots=True)
class ContextSettings:
    thinking_level: Any = "off"
    """The last ``thinking_level_change`` on the path (``UNDEFINED`` if that entry had none)."""
    model: Any = None
    """``{"provider", "modelId"}`` from the last model change or assistant message, or ``None``."""


@dataclass(slots=True)
class Projection:
    entries: list[ProjectedEntry]
    messages: list[Message]
    settings: ContextSettings


class ProjectionView(Protocol):
    """What reading a projection needs: :class:`Projection`, or one whose entries are read on
    demand (``sessiond.compaction.lazy``)."""

    @property
    def entries(self) -> Sequence[ProjectedEntry]: ...

    @property
    def messages(self) -> Sequence[Message]: ...


def context_settings(path: list[Any]) -> ContextSettings:
    """Thinking level and model in effect at the end of ``path`` (Pi's ``getSessionContextSettings``).

    Pi applies every entry from the root; the last setter of each wins, so each is looked for
    from the leaf back: the model (a model change or an assistant message, usually among the
    last entries) entry by entry, the thinking level (often set once, at the root) in the
    entries' types listed at once (a path of 50,000 entries cost ~45 ms the other way).
    """
    settings = ContextSettings()
    types = entry_types(path)
    thinking = _last_index(types, E.THINKING_LEVEL_CHANGE)
    if thinking >= 0:
        settings.thinking_level = path[thinking].get("thinkingLevel", UNDEFINED)
    model_change, message_type = E.MODEL_CHANGE, E.MESSAGE
    for i in range(len(path) - 1, -1, -1):
        t = types[i]
        if t == model_change:
            entry = path[i]
            settings.model = {"provider": get(entry, "provider"), "modelId": get(entry, "modelId")}
            break
        if t == message_type:
            message = path[i].get("message")
            if get(message, "role") == "assistant":
                settings.model = {"provider": get(message, "provider"), "modelId": get(message, "model")}
                break
    return settings


def entry_types(path: list[Any]) -> list[Any]:
    """Each entry's ``type`` (``None`` when absent or not an object), listed in one C loop."""
    try:
        return list(map(dict.get, path, repeat("type")))
    except TypeError:  # a non-object line on the path
        return [entry.get("type") if type(entry) is dict else None for entry in path]


def _last_index(values: list[Any], value: Any) -> int:
    """The index of the last item equal to ``value``, or -1."""
    try:
        return len(values) - 1 - values[::-1].index(value)
    except ValueError:
        return -1


def next_settings(settings: ContextSettings, entry: Any) -> ContextSettings:
    """The settings after one more entry at the end of the path (a new object)."""
    after = ContextSettings(settings.thinking_level, settings.model)
    _apply_setting(after, entry)
    return after


def _apply_setting(settings: ContextSettings, entry: Any) -> None:
    t = get(entry, "type")
    if t == E.THINKING_LEVEL_CHANGE:
        settings.thinking_level = entry.get("thinkingLevel", UNDEFINED)
    elif t == E.MODEL_CHANGE:
        settings.model = {"provider": get(entry, "provider"), "modelId": get(entry, "modelId")}
    elif t == E.MESSAGE:
        message = entry.get("message")
        if get(message, "role") == "assistant":
            settings.model = {"provider": get(message, "provider"), "modelId": get(message, "model")}


def latest_compaction(path: list[Any]) -> tuple[int, Any]:
    """Index and entry of the last compaction on ``path``, or ``(-1, None)``."""
    for i in range(len(path) - 1, -1, -1):
        if get(path[i], "type") == E.COMPACTION:
            return i, path[i]
    return -1, None


def context_entries(path: list[Any], *, unique_ids: bool = False) -> list[Any]:
    """Pi's ``buildContextEntries`` over an already selected path, leaf markers left out.

    One backward pass finds the latest compaction and notes leaf markers after it, so a path
    without markers costs what it cost before they were left out (and is returned as is).
    ``unique_ids``: no two entries of ``path`` have the same id (a path a
    :class:`~sessiond.model.tree.SessionTree` walked: each step is the entry its id names),
    so the compaction and its first kept entry, which Pi finds by id from the root, are
    looked for from the compaction back (a 50,000-entry path: a few entries, not 25,000).
    """
    types = entry_types(path)
    index = _last_index(types, E.COMPACTION)
    custom = E.CUSTOM
    markers = custom in types[index + 1 :] and any(
        E.is_leaf_marker(path[i]) for i in range(index + 1, len(path)) if types[i] == custom
    )
    if index < 0:
        return [e for e in path if not E.is_leaf_marker(e)] if markers else path
    compaction = path[index]
    # Pi locates the compaction again by id; with duplicate ids that can be an earlier entry.
    latest = index
    first_kept = key(get(compaction, "firstKeptEntryId"))
    out: list[Any] = [compaction]
    if unique_ids:
        start = next((i for i in range(index - 1, -1, -1) if _id_key(path[i]) == first_kept), index)
    else:
        cid = key(get(compaction, "id"))
        index = next(i for i in range(index + 1) if _id_key(path[i]) == cid)  # (the compaction at worst)
        start = next((i for i in range(index) if _id_key(path[i]) == first_kept), index)
    message, custom = E.MESSAGE, E.CUSTOM
    for i in range(start, index):
        entry = path[i]
        t = get(entry, "type")
        if t == message and get(entry.get("message"), "role") == "system":
            continue
        if t != custom or not E.is_leaf_marker(entry):
            out.append(entry)
    tail = path[index + 1 :]
    out.extend([e for e in tail if not E.is_leaf_marker(e)] if markers or index != latest else tail)
    return out


def _id_key(entry: Any) -> Hashable:
    """``key(get(entry, "id"))``, a string id without the calls (ids are nearly always strings)."""
    if type(entry) is dict:
        eid = entry.get("id", UNDEFINED)
        return eid if type(eid) is str else key(eid)
    return key(UNDEFINED)


def project(path: list[Any]) -> Projection:
    """Project a selected path (root -> leaf) into context (Pi's ``buildSessionProjection``)."""
    return project_entries(context_entries(path), context_settings(path))


def project_entries(ctx: list[Any], settings: ContextSettings) -> Projection:
    """Project already chosen context entries (the second half of :func:`project`).

    Split out so a store can choose the context entries on a light index and read only
    those in full.
    """
    edits: dict[Hashable, Entry] = {}
    for entry in ctx:
        if get(entry, "type") == E.CONTEXT_EDIT:
            edits[key(entry.get("targetId", UNDEFINED))] = entry
    projected: list[ProjectedEntry] = []
    messages: list[Message] = []
    add, extend = projected.append, messages.extend
    message_type, compaction = E.MESSAGE, E.COMPACTION
    for index, source in enumerate(ctx):
        msgs: list[Message]
        if type(source) is not dict:
            msgs = []  # (entry_messages: a non-object contributes nothing)
        else:
            t = source.get("type")
            message = source.get("message") if t == message_type else None
            if type(message) is dict and message.get("content") is not None:
                msgs = [message]  # the usual entry, as entry_messages gives it, without the call
            elif index > 0 and t == compaction:
                msgs = []
            else:
                msgs = entry_messages(source)
            if edits:
                edit = edits.get(key(source.get("id", UNDEFINED)))
                if edit is not None:
                    msgs = apply_replacement(msgs, edit)
        add(ProjectedEntry(source, msgs))
        extend(msgs)
    return Projection(projected, messages, settings)
