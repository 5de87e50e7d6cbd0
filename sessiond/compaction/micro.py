"""Micro-compaction and snip: shrinking the context without a model, as persisted edits.

Micro-compaction replaces the content of old tool results — the bulky, quickly stale output
of reading files or running commands — with one fixed placeholder, keeping the newest few
intact. Snip hides a whole range of the branch. Both are ``context_edit`` entries, so they
are part of the session (Pi and sessiond project them the same way) and deterministic (the
same text every time), which keeps the projected prefix byte-stable for prompt caching.

Neither may separate a tool call from its result: micro-compaction keeps every result (only
its text changes), and a snip that would cut a pair is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidArgumentError
from ..model import entries as E
from ..model.entries import Message
from ..model.js import get, key
from ..model.projection import Projection
from ..model.tokens import PI, TokenEstimator

PLACEHOLDER: Final = "[Old tool result content cleared]"
PLACEHOLDER_CONTENT: Final = [{"type": "text", "text": PLACEHOLDER}]


@dataclass(frozen=True, slots=True)
class Clearing:
    entry_id: str
    tool_name: Any
    tokens_saved: int


def _is_cleared(message: Message) -> bool:
    return bool(get(message, "content") == PLACEHOLDER_CONTENT)


def plan_microcompact(
    projection: Projection,
    keep_recent: int,
    tools: tuple[str, ...] | list[str],
    estimator: TokenEstimator = PI,
) -> list[Clearing]:
    """Which tool results to clear: all compactable ones but the newest ``keep_recent`` (>= 1)."""
    wanted = {t.lower() for t in tools}
    candidates: list[tuple[str, Message]] = []
    for projected in projection.entries:
        source = projected.source
        if get(source, "type") != E.MESSAGE or len(projected.messages) != 1:
            continue
        message = projected.messages[0]
        if get(message, "role") != "toolResult":
            continue
        name = get(message, "toolName")
        if type(name) is not str or name.lower() not in wanted:
            continue
        candidates.append((str(get(source, "id")), message))
    keep = max(1, keep_recent)
    clear = candidates[:-keep] if len(candidates) > keep else []
    out: list[Clearing] = []
    for entry_id, message in clear:
        if _is_cleared(message):
            continue
        before = estimator.message_tokens(message)
        after = estimator.message_tokens({**message, "content": PLACEHOLDER_CONTENT})
        out.append(Clearing(entry_id, get(message, "toolName"), max(0, int(before - after))))
    return out


def active_compactable(projection: Projection, tools: tuple[str, ...] | list[str]) -> int:
    """How many tool results of those tools still have their content in the context."""
    wanted = {t.lower() for t in tools}
    count = 0
    for m in projection.messages:
        if (
            get(m, "role") == "toolResult"
            and str(get(m, "toolName")).lower() in wanted
            and not _is_cleared(m)
        ):
            count += 1
    return count


def microcompact_specs(clearings: list[Clearing]) -> list[dict[str, Any]]:
    return [
        {"type": E.CONTEXT_EDIT, "targetId": c.entry_id, "replacement": {"content": PLACEHOLDER_CONTENT}}
        for c in clearings
    ]


def _tool_call_ids(message: Any) -> list[Any]:
    content = get(message, "content")
    if type(content) is not list:
        return []
    return [get(b, "id") for b in content if get(b, "type") == "toolCall"]


def plan_snip(branch: list[Any], projection: Projection, from_id: Any, to_id: Any) -> list[str]:
    """The entries of ``branch[from..to]`` that contribute messages, checked for tool pairs.

    Raises :class:`InvalidArgumentError` (field ``fromEntryId``/``toEntryId``) when the range
    would leave a tool call in the context without its result or a result without its call.
    """
    ids = [key(get(e, "id")) for e in branch]
    try:
        start = ids.index(key(from_id))
    except ValueError:
        raise InvalidArgumentError(
            f"Entry {from_id} is not on the active branch", field="fromEntryId"
        ) from None
    try:
        end = ids.index(key(to_id))
    except ValueError:
        raise InvalidArgumentError(f"Entry {to_id} is not on the active branch", field="toEntryId") from None
    if end < start:
        raise InvalidArgumentError("toEntryId comes before fromEntryId on the branch", field="toEntryId")
    visible: dict[Any, list[Message]] = {key(get(p.source, "id")): p.messages for p in projection.entries}
    inside = {ids[i] for i in range(start, end + 1)}
    calls_inside: set[Any] = set()
    results_inside: set[Any] = set()
    for i in range(start, end + 1):
        for m in visible.get(ids[i], []):
            if get(m, "role") == "assistant":
                calls_inside.update(_tool_call_ids(m))
            elif get(m, "role") == "toolResult":
                results_inside.add(get(m, "toolCallId"))
    for entry_id, messages in visible.items():
        if entry_id in inside:
            continue
        for m in messages:
            role = get(m, "role")
            if role == "toolResult" and get(m, "toolCallId") in calls_inside:
                raise InvalidArgumentError(
                    f"The range hides tool call {get(m, 'toolCallId')} but not its result "
                    f"{entry_id}; extend it",
                    field="toEntryId",
                )
            if role == "assistant":
                for call in _tool_call_ids(m):
                    if call in results_inside:
                        raise InvalidArgumentError(
                            f"The range hides the result of tool call {call} but not the call "
                            f"in {entry_id}; extend it",
                            field="fromEntryId",
                        )
    return [str(get(branch[i], "id")) for i in range(start, end + 1) if visible.get(ids[i])]


def snip_specs(entry_ids: list[str]) -> list[dict[str, Any]]:
    return [{"type": E.CONTEXT_EDIT, "targetId": i, "replacement": None} for i in entry_ids]
