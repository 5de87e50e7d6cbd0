"""Context windows of common models, so ``usage_update`` can say how full the context is.

Matched on the model id by prefix (longest wins), the provider is only a tie-breaker. The
table is a default: configuration (``[context_windows]``) and per-session settings override
it. Numbers are the providers' documented input windows as of late 2026.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

BUILTIN: Final[dict[str, int]] = {
    # Anthropic
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    "claude": 200_000,
    # OpenAI
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    "gpt-oss": 131_072,
    # Google
    "gemini-2.5": 1_048_576,
    "gemini-2.0": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-3": 1_048_576,
    # Others
    "deepseek": 128_000,
    "mistral-large": 128_000,
    "codestral": 256_000,
    "grok-4": 256_000,
    "grok-3": 131_072,
    "qwen3-coder": 262_144,
    "kimi-k2": 131_072,
    "glm-4.5": 131_072,
    "llama-3.1": 128_000,
    "llama-3.3": 128_000,
    "llama-4": 1_048_576,
}


def context_window(
    provider: object, model_id: object, overrides: Mapping[str, int] | None = None
) -> int | None:
    """The context window for a model, or ``None`` when neither overrides nor the table know it.

    ``overrides`` keys are ``provider/modelId`` (exact), ``modelId`` (exact) or a model-id
    prefix ending in ``*``; they win over the built-in table.
    """
    if type(model_id) is not str or not model_id:
        return None
    model = model_id.lower()
    if overrides:
        for exact in (f"{provider}/{model_id}", model_id):
            if exact in overrides:
                return overrides[exact]
        best = max(
            (k for k in overrides if k.endswith("*") and model.startswith(k[:-1].lower())),
            key=len,
            default=None,
        )
        if best is not None:
            return overrides[best]
    # Provider-routed ids such as "anthropic/claude-sonnet-4" or "models/gemini-2.5-pro".
    name = model.rsplit("/", 1)[-1]
    best_key = max((k for k in BUILTIN if name.startswith(k)), key=len, default=None)
    return BUILTIN[best_key] if best_key is not None else None
