"""Did a model call fail because the context did not fit? (Pi's ``isContextOverflow``)

Providers say it in a dozen ways. The patterns below are the ones Pi 1.6.0 recognises
(docs/pi-format.md §8.2), so sessiond recovers from exactly the failures Pi recovers from; rate
limits and throttling are excluded first because some of them mention "too many tokens".
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..model.js import get, truthy

_I = re.IGNORECASE
OVERFLOW_PATTERNS: Final = tuple(
    re.compile(p, _I)
    for p in (
        r"prompt (?:is )?too long",
        r"prompt exceeds max length",
        r"request_too_large",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"context window exceeded",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"range of input length should be",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
    )
)
NON_OVERFLOW_PATTERNS: Final = (
    re.compile(r"^(Throttling error|Service unavailable):", _I),
    re.compile(r"rate limit", _I),
    re.compile(r"too many requests", _I),
)
CEREBRAS_BODYLESS: Final = re.compile(r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)", _I)


def _input_tokens(message: Any) -> float:
    usage = get(message, "usage")
    total: float = 0
    for name in ("input", "cacheRead"):
        value = get(usage, name)
        total += value if type(value) in (int, float) else float("nan")
    return total


def is_context_overflow(message: Any, context_window: float | None = None) -> bool:
    """An assistant message that failed (or silently truncated) because the input was too big."""
    stop = get(message, "stopReason")
    error = get(message, "errorMessage")
    if (
        stop == "error"
        and type(error) is str
        and error
        and not any(p.search(error) for p in NON_OVERFLOW_PATTERNS)
    ):
        if any(p.search(error) for p in OVERFLOW_PATTERNS):
            return True
        if get(message, "provider") == "cerebras" and CEREBRAS_BODYLESS.search(error):
            return True
    if truthy(context_window) and context_window is not None:
        if stop == "stop" and _input_tokens(message) > context_window:
            return True  # a silent overflow: the provider answered, over the window
        output = get(get(message, "usage"), "output")
        if stop == "length" and output == 0 and _input_tokens(message) >= context_window * 0.99:
            return True  # the input filled the window and left no room to answer
    return False


def is_recoverable_length(message: Any, desired_max_output: float) -> bool:
    """A ``length`` stop below the intended output limit: context pressure, worth one retry."""
    output = get(get(message, "usage"), "output")
    return (
        get(message, "stopReason") == "length"
        and desired_max_output > 0
        and type(output) in (int, float)
        and output < desired_max_output
    )
