"""What a response cost: the registry's prices (``genai-prices``), or ``[prices]`` from the config.

Prices are USD per million tokens. Input is priced without the cached part; cache reads at the
cache-read price, cache writes at the 5-minute write price, the 1-hour writes at the 1-hour price
where the agent says which (else all at the 5-minute price); a price the registry lacks for a
cache tier is the input price (what the provider charges when it has no such tier). A tiered
price (e.g. above 200k input tokens) is chosen by the request's whole input, cache included, as
the registry defines it. A model neither the config nor the registry knows is unpriced: its cost
is ``None``, never 0.

``[prices]`` in the config (keys: a model id, or a prefix ending in ``*``)::

    [prices."my-local-model"]
    input = 0.0
    output = 0.0
    [prices."gpt-5*"]
    input = 1.25
    output = 10.0
    cache_read = 0.125
    cache_write = 0.0
    cache_write_1h = 0.0
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

import orjson

from .records import Record
from .registry import lookup, model_name, preload, registry_version

PRICE_KEYS: Final = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
"""The keys of a ``[prices]`` table (USD per million tokens)."""

Tiered = tuple[float, tuple[tuple[int, float], ...]]
"""A base price and ``(start, price)`` tiers, ascending."""


@dataclass(frozen=True, slots=True)
class Price:
    input: Tiered
    output: Tiered
    cache_read: Tiered
    cache_write: Tiered
    cache_write_1h: Tiered

    def cost(self, r: Record) -> float:
        c1h = r.cache_1h if r.cache_5m + r.cache_1h == r.cache_creation else 0
        if (
            not (self.input[1] or self.output[1] or self.cache_read[1] or self.cache_write[1])
            and not (self.cache_write_1h[1])
        ):  # no tier (most models): one price each, whatever the input's size
            return (
                r.input * self.input[0]
                + r.output * self.output[0]
                + r.cache_read * self.cache_read[0]
                + (r.cache_creation - c1h) * self.cache_write[0]
                + c1h * self.cache_write_1h[0]
            ) / 1_000_000
        whole = r.input + r.cache_read + r.cache_creation
        return (
            r.input * _at(self.input, whole)
            + r.output * _at(self.output, whole)
            + r.cache_read * _at(self.cache_read, whole)
            + (r.cache_creation - c1h) * _at(self.cache_write, whole)
            + c1h * _at(self.cache_write_1h, whole)
        ) / 1_000_000


def _at(price: Tiered, whole: int) -> float:
    base, tiers = price
    for start, value in reversed(tiers):
        if whole > start:
            return value
    return base


def _flat(value: float) -> Tiered:
    return (value, ())


def _tiered(value: Any) -> Tiered | None:
    if value is None:
        return None
    if isinstance(value, Decimal | int | float):
        return (float(value), ())
    base = getattr(value, "base", None)
    tiers = getattr(value, "tiers", None)
    if base is None or tiers is None:
        return None
    return (float(base), tuple((int(t.start), float(t.price)) for t in tiers))


class PriceBook:
    """Prices by model (and day: the registry's prices change over time), remembered."""

    def __init__(self, overrides: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.overrides = {k: dict(v) for k, v in (overrides or {}).items()}
        self._known: dict[tuple[str, int], Price | None] = {}

    @property
    def fingerprint(self) -> str:
        """What the stored costs were computed with: the registry's version and the overrides."""
        data = orjson.dumps([registry_version(), self.overrides], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(data).hexdigest()[:16]

    def price(self, model: str, ts: int) -> Price | None:
        day = ts // 86_400_000
        key = (model, day)
        if key not in self._known:
            if len(self._known) > 4096:
                self._known.clear()
            self._known[key] = self._override(model) or self._registry(model, day)
        return self._known[key]

    @staticmethod
    def preload() -> None:
        """Load the registry now (about a second), e.g. in a thread while files are read."""
        preload()

    def cost(self, record: Record) -> float | None:
        """The response's cost in USD, ``None`` when its model is unpriced."""
        price = self.price(record.model, record.ts)
        return price.cost(record) if price is not None else None

    def _override(self, model: str) -> Price | None:
        table = self.overrides.get(model)
        if table is None:
            name = model_name(model)
            table = self.overrides.get(name)
            if table is None:
                best = max(
                    (k for k in self.overrides if k.endswith("*") and name.startswith(k[:-1].lower())),
                    key=len,
                    default=None,
                )
                table = self.overrides[best] if best is not None else None
        if table is None:
            return None
        inp = float(table.get("input", 0.0))
        write = float(table.get("cache_write", inp))
        return Price(
            _flat(inp),
            _flat(float(table.get("output", 0.0))),
            _flat(float(table.get("cache_read", inp))),
            _flat(write),
            _flat(float(table.get("cache_write_1h", write))),
        )

    @staticmethod
    def _registry(model: str, day: int) -> Price | None:
        found = lookup(model)
        if found is None:
            return None
        try:
            prices = found.info.get_prices(datetime.fromtimestamp(day * 86_400, UTC))
        except (ValueError, OverflowError, AttributeError):
            return None
        inp = _tiered(getattr(prices, "input_mtok", None))
        out = _tiered(getattr(prices, "output_mtok", None))
        if inp is None or out is None:
            return None
        read = _tiered(getattr(prices, "cache_read_mtok", None)) or inp
        write = _tiered(getattr(prices, "cache_write_mtok", None)) or inp
        write_1h = _tiered(getattr(prices, "cache_write_1h_mtok", None)) or write
        return Price(inp, out, read, write, write_1h)
