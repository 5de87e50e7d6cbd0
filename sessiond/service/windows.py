"""Context windows of models, so ``usage_update`` can say how full the context is.

In this order: a Claude Code ``[1m]`` model suffix (the agent asked for the 1M-token window:
1,000,000), the configuration (``[context_windows]``: ``provider/modelId``, ``modelId`` or a
``prefix*``), then the model registry (PyPI ``genai-prices``, offline; see
:mod:`sessiond.usage.registry`). A model none of them knows has no window (``None``: "window
unknown"), never a guess. What a session records itself (Codex's ``model_context_window``) and
its own setting come first; :func:`sessiond.service.host.default_window_for` asks those.

There is no hand-written table any more: it was stale the week a model shipped (issue 24
item 9: ``claude-opus-5`` was shown at 277% of a 200,000-token window; its window is 1,000,000).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..usage.registry import ONE_MILLION_SUFFIX, registry_window

ONE_MILLION: Final = 1_000_000


def context_window(
    provider: object, model_id: object, overrides: Mapping[str, int] | None = None
) -> int | None:
    """The context window for a model, or ``None`` when nothing knows it (window unknown).

    ``overrides`` keys are ``provider/modelId`` (exact), ``modelId`` (exact) or a model-id
    prefix ending in ``*``; they win over the registry.
    """
    if type(model_id) is not str or not model_id:
        return None
    if ONE_MILLION_SUFFIX.search(model_id):
        return ONE_MILLION
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
    return registry_window(model_id)
