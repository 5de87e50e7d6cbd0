"""The model registry: prices and context windows from PyPI ``genai-prices`` (offline).

``genai-prices`` ships a snapshot of the providers' price tables (cache tiers included) and
each model's ``context_window`` inside the package; sessiond never asks it to update over the
network. It is imported on first use (about a tenth of a second), not at start.

Why a registry and not a table of our own: a hand-written table goes stale the week a model
ships (issue 24 item 9: ``claude-opus-5`` was taken for a 200,000-token model).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from typing import Any, Final

ONE_MILLION_SUFFIX: Final = re.compile(r"\[1m\]$", re.IGNORECASE)
"""Claude Code's ``[1m]`` suffix on a model id: the 1M-token context window was asked for."""

_LOCK = threading.Lock()


def model_name(model_id: str) -> str:
    """The registry's name for a model id: lower case, without a route prefix
    (``anthropic/claude-sonnet-4``, ``models/gemini-2.5-pro``) or the ``[1m]`` suffix."""
    return ONE_MILLION_SUFFIX.sub("", model_id.strip()).lower().rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Found:
    """A model the registry knows: its id there, provider and context window (may be unknown)."""

    provider: str
    model: str
    context_window: int | None
    info: Any
    """``genai_prices.types.ModelInfo`` (its prices by date)."""


def _snapshot() -> Any:
    from genai_prices import data_snapshot  # noqa: PLC0415 (heavy: imported on first use)

    return data_snapshot.get_snapshot()


def preload() -> None:
    """Load the bundled snapshot (the first :func:`lookup` would; this lets it happen early)."""
    with _LOCK:
        _snapshot()


@cache
def lookup(model_id: str) -> Found | None:
    """The registry's entry for a model id, or ``None`` when it does not know the model."""
    name = model_name(model_id)
    if not name:
        return None
    with _LOCK:  # the snapshot's lookup caches are plain dicts
        try:
            provider, info = _snapshot().find_provider_model(name, None, None, None)
        except LookupError:
            return None
    window = info.context_window
    return Found(provider.id, info.id, window if type(window) is int and window > 0 else None, info)


def registry_window(model_id: str) -> int | None:
    """The context window the registry gives a model (``None``: unknown)."""
    found = lookup(model_id)
    return found.context_window if found is not None else None


@cache
def prices_as_of() -> str:
    """The date of the price data: the newest past date the bundled snapshot names (a price's
    start date, or an "as of" in its notes), as ``YYYY-MM-DD`` (``genai-prices`` records no
    build date of its own)."""
    newest = date(2000, 1, 1)
    today = datetime.now(UTC).date()
    pattern = re.compile(r"\b(20\d\d)-(\d\d)-(\d\d)\b")

    def visit(value: Any, depth: int) -> None:
        nonlocal newest
        if depth > 8 or value is None:
            return
        if isinstance(value, date):
            day = value.date() if isinstance(value, datetime) else value
            if day <= today:  # a price announced for later is not what the data is as of
                newest = max(newest, day)
        elif isinstance(value, str):
            for y, m, d in pattern.findall(value):
                try:
                    found = date(int(y), int(m), int(d))
                except ValueError:
                    continue
                if found <= today:
                    newest = max(newest, found)
        elif isinstance(value, list | tuple):
            for item in value:
                visit(item, depth + 1)
        elif hasattr(value, "__dict__"):
            for item in vars(value).values():
                visit(item, depth + 1)

    for provider in _snapshot().providers:
        for info in provider.models:
            visit(info.prices, 0)
            visit(info.price_variants, 0)
            visit(info.price_comments, 0)
    return newest.isoformat()


def registry_version() -> str:
    """``genai-prices``'s version (part of what the stored costs were computed with)."""
    from importlib.metadata import version  # noqa: PLC0415

    return version("genai-prices")
