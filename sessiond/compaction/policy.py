"""When to compact after an assistant message: Pi's ``_checkCompaction``, as a pure decision.

The daemon calls :func:`check` after a client appended an assistant message. The answer is
one of: nothing; a threshold compaction (the context is above ``window - reserve``); an
overflow compaction (the request failed, or was silently cut, because the context did not
fit) — with a retry when the failed attempt is taken out of the context first; or the end
of recovery (a second overflow inside one recovery window). The state that spans messages
— "one compact-and-retry already attempted" — is the caller's, reset by
:func:`resets_recovery` (docs/pi-format.md §8.1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from ..model import entries as E
from ..model.js import get, key, truthy
from ..model.projection import Projection
from ..model.tokens import (
    ContextEstimate,
    TokenEstimator,
    assistant_usage,
    calculate_context_tokens,
    estimate_context_tokens,
)
from .overflow import is_context_overflow, is_recoverable_length

OVERFLOW_FAILED: Final = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
LENGTH_FAILED: Final = "Truncated response recovery failed after one compact-and-retry attempt."

Action = Literal["none", "threshold", "overflow", "recovery_failed"]


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    will_retry: bool = False
    omit: list[str] = field(default_factory=list)
    """Entries to hide before compacting: the failed attempt and the results of its tool calls."""
    error: str | None = None
    tokens: float | None = None
    """The context size the threshold was compared with."""
    why: str = ""


NONE: Final = Decision("none")


@dataclass(frozen=True, slots=True)
class ContextView:
    """What :func:`check` reads of the current context: the model and the first context
    entry at once (a light entry will do: its type and timestamp), the projection only when a
    decision needs more — an overflow to confirm, a threshold to look into. A store that keeps
    the context's light entries answers the common check without materialising the context."""

    model: Any
    first: Any
    """The first context entry (the latest compaction when the branch was compacted), or ``None``."""
    projection: Callable[[], Projection]

    @classmethod
    def of(cls, projection: Projection) -> ContextView:
        first = projection.entries[0].source if projection.entries else None
        return cls(projection.settings.model, first, lambda: projection)


def resets_recovery(message: Any) -> bool:
    """Does this appended message end a recovery window? (a user turn, or a normal answer)"""
    role = get(message, "role")
    if role == "user":
        return True
    return role == "assistant" and get(message, "stopReason") not in ("error", "length")


def timestamp_ms(value: Any) -> float | None:
    """An entry's or a message's timestamp in ms (numbers as they are, ISO strings parsed)."""
    if type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if type(value) is str and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
        except ValueError:
            return None
    return None


def _tool_call_ids(message: Any) -> set[Any]:
    content = get(message, "content")
    if type(content) is not list:
        return set()
    return {get(b, "id") for b in content if get(b, "type") == "toolCall"}


def failed_attempt(entry: Any, tail: list[Any]) -> list[str]:
    """An assistant entry and the tool results (among the ``tail`` after it) answering its calls."""
    calls = _tool_call_ids(get(entry, "message"))
    out = [str(get(entry, "id"))]
    for later in tail:
        message = get(later, "message")
        if (
            get(later, "type") == E.MESSAGE
            and get(message, "role") == "toolResult"
            and get(message, "toolCallId") in calls
        ):
            out.append(str(get(later, "id")))
    return out


def _projected(projection: Projection, entry_key: Any) -> bool:
    """Does the entry contribute to the context? (searched from the end: it is a recent one)"""
    for p in reversed(projection.entries):
        if key(get(p.source, "id")) == entry_key:
            return bool(p.messages)
    return False


def check(
    *,
    entry: Any,
    tail: list[Any],
    projection: Projection | ContextView,
    estimate: ContextEstimate,
    estimator: TokenEstimator,
    enabled: bool,
    context_window: int | None,
    reserve_tokens: int,
    max_output_tokens: int | None,
    recovery_attempted: bool,
) -> Decision:
    """What to do after ``entry`` (an assistant ``message`` entry) was appended.

    ``entry`` and ``tail`` (what follows it on the current branch) are full entries,
    ``projection`` is the current context (or a :class:`ContextView` of it) and ``estimate``
    its usage estimate (Pi's ``estimateProjectedContextTokens``). The common case — a normal
    answer well below the threshold — costs a few comparisons and reads no projection; only
    a decision to compact looks further.
    """
    message = get(entry, "message")
    if not enabled or get(message, "role") != "assistant":
        return NONE
    stop = get(message, "stopReason")
    if stop == "aborted":
        return NONE
    view = ContextView.of(projection) if isinstance(projection, Projection) else projection
    model = view.model
    same_model = model is None or (
        get(model, "provider") == get(message, "provider") and get(model, "modelId") == get(message, "model")
    )
    # A message older than the latest checkpoint was measured on a context that is gone.
    # (When the branch is compacted, the latest compaction is the first projected entry.)
    first = view.first
    latest_compaction = first if get(first, "type") == E.COMPACTION else None
    compacted_at = timestamp_ms(get(latest_compaction, "timestamp")) if latest_compaction else None
    if compacted_at is not None:
        sent = timestamp_ms(get(message, "timestamp"))
        if sent is not None and sent <= compacted_at:
            return NONE
    window = context_window if context_window and context_window > 0 else None
    entry_key = key(get(entry, "id"))
    overflow = length = False
    if same_model and (stop in ("error", "length") or (stop == "stop" and window is not None)):
        edited_after = any(get(b, "type") == E.CONTEXT_EDIT for b in tail)
        overflow = (stop == "error" and is_context_overflow(message)) or (
            not edited_after and window is not None and is_context_overflow(message, window)
        )
        length = is_recoverable_length(message, float(max_output_tokens or 0))
        if (overflow or length) and not _projected(view.projection(), entry_key):
            overflow = length = False  # an answer no longer in the context cannot overflow it
    if overflow or length:
        if stop == "stop":
            return Decision("overflow", why="the provider answered over the context window")
        if recovery_attempted:
            return Decision(
                "recovery_failed",
                error=OVERFLOW_FAILED if overflow else LENGTH_FAILED,
                why="a second overflow in one recovery window",
            )
        return Decision(
            "overflow",
            will_retry=True,
            omit=failed_attempt(entry, tail),
            why="context overflow" if overflow else "the answer was cut off by context pressure",
        )
    if window is None:
        return NONE
    limit = window - reserve_tokens
    valid_usage = stop != "error" and assistant_usage(message) is not None
    if valid_usage and calculate_context_tokens(get(message, "usage")) <= limit and estimate.tokens <= limit:
        return NONE  # below the threshold whichever count applies
    projected = view.projection()
    if any(get(p.source, "type") == E.CONTEXT_EDIT for p in projected.entries):
        tokens = estimate.tokens
    elif not valid_usage:
        agent = estimate_context_tokens(projected.messages, estimator)
        if agent.last_usage_index is not None and latest_compaction is not None:
            anchor = projected.messages[agent.last_usage_index]
            anchored_at = timestamp_ms(get(anchor, "timestamp"))
            if anchored_at is None or (compacted_at is not None and anchored_at <= compacted_at):
                return NONE  # the only usage predates the checkpoint
        tokens = agent.tokens
    else:
        tokens = calculate_context_tokens(get(message, "usage"))
    if truthy(tokens) and tokens > limit:
        return Decision("threshold", tokens=tokens, why=f"{int(tokens)} tokens > {window} - {reserve_tokens}")
    return NONE
