"""Where to cut: keep about ``keepRecentTokens`` of the newest context, summarise the rest.

The walk goes from the newest entry backwards, adding estimates, and cuts at the first
*cut point* (a user-like or assistant message, never a tool result: a result must follow its
call) at or after the entry where the budget is reached. Metadata entries just before the cut
are pulled into the kept part, and a cut inside a turn reports where that turn started, so
the beginning of the turn can be summarised separately (a *split turn*).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..model import entries as E
from ..model.entries import Message
from ..model.js import get, key
from ..model.messages import entry_messages
from ..model.projection import ProjectedEntry
from ..model.tokens import PI, TokenEstimator

CUT_POINT_ROLES: Final = frozenset(
    {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
TURN_START_ROLES: Final = CUT_POINT_ROLES - {"assistant"}


@dataclass(frozen=True, slots=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int
    """Index of the entry that starts the turn the cut falls in, or -1."""
    is_split_turn: bool


def _has_role(messages: list[Message], roles: frozenset[str]) -> bool:
    return any(get(m, "role") in roles for m in messages)


def _tokens(messages: list[Message], estimator: TokenEstimator) -> float:
    total: float = 0
    for m in messages:
        total += estimator.message_tokens(m)
    return total


def _cut(
    start: int,
    end: int,
    keep_recent_tokens: float,
    is_compaction: Callable[[int], bool],
    messages_at: Callable[[int], list[Message]],
    estimator: TokenEstimator,
) -> tuple[bool, int, bool]:
    """Steps shared by both variants: cut points, the budget walk. Returns (any point, cut, exceeded).

    Pi lists every cut point of the range first; only three of them can matter (the first, the
    first at or after where the budget is reached, else the last), so they are looked for where
    they are: the walk then costs what is kept, not the whole branch (issue 30).
    """

    def is_point(i: int) -> bool:
        return not is_compaction(i) and _has_role(messages_at(i), CUT_POINT_ROLES)

    first = next((i for i in range(start, end) if is_point(i)), -1)
    if first < 0:
        return False, start, False
    accumulated: float = 0
    for i in range(end - 1, start - 1, -1):
        tokens = _tokens(messages_at(i), estimator)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            at_or_after = next((p for p in range(max(i, first), end) if is_point(p)), -1)
            if at_or_after >= 0:
                return True, at_or_after, True
            last = next(p for p in range(i - 1, first - 1, -1) if is_point(p))  # first is one
            return True, last, True
    return True, first, False


def _finish(
    cut: int,
    start: int,
    is_compaction: Callable[[int], bool],
    messages_at: Callable[[int], list[Message]],
) -> CutPoint:
    while cut > start:
        if is_compaction(cut - 1) or messages_at(cut - 1):
            break
        cut -= 1

    def starts_turn(i: int) -> bool:
        return not is_compaction(i) and _has_role(messages_at(i), TURN_START_ROLES)

    if starts_turn(cut):
        return CutPoint(cut, -1, False)
    turn_start = next((i for i in range(cut, start - 1, -1) if starts_turn(i)), -1)
    return CutPoint(cut, turn_start, turn_start != -1)


def find_projected_cut_point(
    entries: Sequence[ProjectedEntry],
    start: int,
    end: int,
    keep_recent_tokens: float,
    estimator: TokenEstimator = PI,
) -> CutPoint:
    """The cut over projected entries (what ``prepare_compaction`` uses).

    Besides the shared steps, a *recovery suffix* moves the cut one entry forward: when the
    budget was exceeded and everything after the cut is an omitted failed attempt (an
    assistant message hidden by a ``context_edit(null)``) plus invisible metadata, keeping
    the cut there would keep nothing the model can see.
    """

    def is_compaction(i: int) -> bool:
        return bool(get(entries[i].source, "type") == E.COMPACTION)

    def messages_at(i: int) -> list[Message]:
        return entries[i].messages

    points, cut, exceeded = _cut(start, end, keep_recent_tokens, is_compaction, messages_at, estimator)
    if not points:
        return CutPoint(start, -1, False)
    if exceeded and _is_recovery_suffix(entries[cut + 1 : end]):
        cut += 1
    return _finish(cut, start, is_compaction, messages_at)


def _is_recovery_suffix(suffix: Sequence[ProjectedEntry]) -> bool:
    def intrinsically_visible(p: ProjectedEntry) -> bool:
        return get(p.source, "type") != E.CONTEXT_EDIT and bool(entry_messages(p.source))

    def omitted(p: ProjectedEntry) -> bool:
        return intrinsically_visible(p) and not p.messages

    omitted_ids = {key(get(p.source, "id")) for p in suffix if omitted(p)}
    for p in suffix:
        if (
            get(p.source, "type") == E.CONTEXT_EDIT
            and get(p.source, "replacement") is not None
            and key(get(p.source, "targetId")) not in omitted_ids
        ):
            return False
    has_omitted_attempt = any(
        get(p.source, "type") == E.MESSAGE
        and get(get(p.source, "message"), "role") == "assistant"
        and omitted(p)
        for p in suffix
    )
    if not has_omitted_attempt:
        return False
    return all(
        get(p.source, "type") != E.COMPACTION and (not intrinsically_visible(p) or omitted(p)) for p in suffix
    )


def find_cut_point(
    entries: list[Any],
    start: int,
    end: int,
    keep_recent_tokens: float,
    estimator: TokenEstimator = PI,
) -> CutPoint:
    """The same cut over raw path entries, without context edits (Pi's exported ``findCutPoint``)."""
    cache: dict[int, list[Message]] = {}

    def is_compaction(i: int) -> bool:
        return bool(get(entries[i], "type") == E.COMPACTION)

    def messages_at(i: int) -> list[Message]:
        if i not in cache:
            cache[i] = entry_messages(entries[i])
        return cache[i]

    points, cut, _ = _cut(start, end, keep_recent_tokens, is_compaction, messages_at, estimator)
    if not points:
        return CutPoint(start, -1, False)
    return _finish(cut, start, is_compaction, messages_at)
