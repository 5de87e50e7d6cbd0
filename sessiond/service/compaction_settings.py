"""Compaction settings: the daemon's defaults, a session's own values, and what applies now.

Three layers, later ones winning: built-in defaults (Pi's: reserve 16384, keep 20000), the
``[compaction]`` table of the configuration file, and the session's own values set with
``compaction/settings`` (kept in the session's settings sidecar, never in the transcript).
Token values then resolve per model like Pi's: ``modelOverrides["provider/modelId"]``, else
the plain value.

Values are checked when they are set — a wrong one is refused with the field it came from —
so reading settings never fails later, in the middle of an automatic compaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..compaction.settings import DEFAULT_TOOLS, CompactionSettings
from ..errors import InvalidArgumentError
from ..model.js import get

SUMMARIZERS: Final = ("auto", "client", "command", "http", "extractive")
_MAX_TOKENS: Final = 2**53 - 1


@dataclass(frozen=True, slots=True)
class MicrocompactSettings:
    enabled: bool = False
    """Automatic micro-compaction after appends (the method works either way)."""
    keep_recent: int = 3
    trigger_count: int | None = 20
    """Clear when this many compactable tool results still have their content (None: never)."""
    gap_minutes: float | None = 60.0
    """Clear when a user message comes this long after the last assistant one (None: never)."""
    tools: tuple[str, ...] = DEFAULT_TOOLS

    def as_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "keepRecent": self.keep_recent,
            "triggerCount": self.trigger_count,
            "gapMinutes": self.gap_minutes,
            "tools": list(self.tools),
        }


@dataclass(frozen=True, slots=True)
class Settings:
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    model_overrides: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    context_window: int | None = None
    max_output_tokens: int | None = None
    summarizer: str = "auto"
    microcompact: MicrocompactSettings = field(default_factory=MicrocompactSettings)

    def for_model(self, model: Any) -> CompactionSettings:
        """The token settings for a model (``{provider, modelId}``), each resolved on its own."""
        override: Mapping[str, int] = {}
        if model is not None:
            override = self.model_overrides.get(f"{get(model, 'provider')}/{get(model, 'modelId')}", {})
        return CompactionSettings(
            enabled=self.enabled,
            reserve_tokens=override.get("reserveTokens", self.reserve_tokens),
            keep_recent_tokens=override.get("keepRecentTokens", self.keep_recent_tokens),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
            "modelOverrides": {k: dict(v) for k, v in self.model_overrides.items()},
            "contextWindow": self.context_window,
            "maxOutputTokens": self.max_output_tokens,
            "summarizer": self.summarizer,
            "microcompact": self.microcompact.as_json(),
        }


# --------------------------------------------------------------------------- parsing

_TOP: Final = {
    "enabled": "enabled",
    "reserveTokens": "reserve_tokens",
    "keepRecentTokens": "keep_recent_tokens",
    "modelOverrides": "model_overrides",
    "contextWindow": "context_window",
    "maxOutputTokens": "max_output_tokens",
    "summarizer": "summarizer",
    "microcompact": "microcompact",
}
_MICRO: Final = {
    "enabled": "enabled",
    "keepRecent": "keep_recent",
    "triggerCount": "trigger_count",
    "gapMinutes": "gap_minutes",
    "tools": "tools",
}


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p.title() for p in rest)


def _tokens(value: Any, where: str, *, positive: bool = False, nullable: bool = False) -> int | None:
    if value is None and nullable:
        return None
    if type(value) is not int or value < (1 if positive else 0) or value > _MAX_TOKENS:
        kind = "a positive" if positive else "a non-negative"
        raise InvalidArgumentError(f"{where} must be {kind} integer", field=where)
    return value


def _bool(value: Any, where: str) -> bool:
    if type(value) is not bool:
        raise InvalidArgumentError(f"{where} must be true or false", field=where)
    return value


def _overrides(value: Any, where: str) -> dict[str, dict[str, int]]:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f'{where} must map "provider/modelId" to settings', field=where)
    out: dict[str, dict[str, int]] = {}
    for model, entry in value.items():
        at = f"{where}.{model}"
        if not isinstance(model, str) or not model:
            raise InvalidArgumentError(f"{where} keys must be non-empty strings", field=where)
        if not isinstance(entry, Mapping):
            raise InvalidArgumentError(f"{at} must be an object", field=at)
        clean: dict[str, int] = {}
        for name, number in entry.items():
            camel = _camel(name) if "_" in name else name
            if camel not in ("reserveTokens", "keepRecentTokens"):
                raise InvalidArgumentError(
                    f"{at}.{name}: only reserveTokens and keepRecentTokens can be overridden",
                    field=f"{at}.{name}",
                )
            clean[camel] = _tokens(number, f"{at}.{name}") or 0
        out[model] = clean
    return out


def _micro(base: MicrocompactSettings, value: Any, where: str) -> MicrocompactSettings:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{where} must be an object", field=where)
    changes: dict[str, Any] = {}
    for name, item in value.items():
        attr = _MICRO.get(_camel(name) if "_" in name else name)
        at = f"{where}.{name}"
        if attr is None:
            raise InvalidArgumentError(f"unknown setting {at}", field=at)
        if item is None and attr in ("enabled", "keep_recent", "tools"):
            changes[attr] = getattr(MicrocompactSettings(), attr)
        elif attr == "enabled":
            changes[attr] = _bool(item, at)
        elif attr in ("keep_recent", "trigger_count"):
            changes[attr] = _tokens(item, at, positive=True, nullable=True)
        elif attr == "gap_minutes":
            if item is not None and (type(item) not in (int, float) or not item > 0):
                raise InvalidArgumentError(f"{at} must be a positive number of minutes", field=at)
            changes[attr] = None if item is None else float(item)
        else:
            if not isinstance(item, list) or not all(isinstance(t, str) and t for t in item):
                raise InvalidArgumentError(f"{at} must be a list of tool names", field=at)
            changes[attr] = tuple(item)
    return replace(base, **changes)


def apply(base: Settings, values: Mapping[str, Any], where: str = "") -> Settings:
    """``base`` with ``values`` applied (camelCase or snake_case keys); ``None`` resets a value.

    ``where`` prefixes the field names in errors (``set`` for the method, ``compaction`` for
    the configuration file).
    """
    if not values:
        return base  # the common case, after every append: no per-session settings
    changes: dict[str, Any] = {}
    defaults = Settings()
    for name, value in values.items():
        attr = _TOP.get(_camel(name) if "_" in name else name)
        at = f"{where}.{name}" if where else name
        if attr is None:
            raise InvalidArgumentError(f"unknown compaction setting {at}", field=at)
        if value is None:
            changes[attr] = getattr(defaults, attr)
        elif attr == "enabled":
            changes[attr] = _bool(value, at)
        elif attr in ("reserve_tokens", "keep_recent_tokens"):
            changes[attr] = _tokens(value, at)
        elif attr in ("context_window", "max_output_tokens"):
            changes[attr] = _tokens(value, at, positive=True)
        elif attr == "model_overrides":
            changes[attr] = _overrides(value, at)
        elif attr == "summarizer":
            if value not in SUMMARIZERS:
                raise InvalidArgumentError(f"{at} must be one of {', '.join(SUMMARIZERS)}", field=at)
            changes[attr] = value
        else:
            changes[attr] = _micro(base.microcompact, value, at)
    return replace(base, **changes)


def stored(settings: Settings, base: Settings) -> dict[str, Any]:
    """What a session stores: the values that differ from the daemon's defaults (camelCase)."""
    mine, theirs = settings.as_json(), base.as_json()
    out = {k: v for k, v in mine.items() if v != theirs[k] and k != "contextWindow"}
    if "microcompact" in out:
        micro_base = theirs["microcompact"]
        out["microcompact"] = {k: v for k, v in out["microcompact"].items() if v != micro_base[k]}
    return out
