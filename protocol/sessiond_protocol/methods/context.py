"""What the model sees: the projected context, how full it is, and edits of what an entry contributes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import ContextMessage, Durability, EntryId, Open, Replacement, Result, Usage
from .base import EXAMPLE_SESSION_ID, SESSION_ERRORS, WRITE_ERRORS, MethodSpec, SessionRef


class ContextParams(SessionRef):
    leafId: EntryId | None = Field(None, description="Project another branch than the current one.")


class ContextResult(Result):
    messages: list[ContextMessage]
    thinkingLevel: str | None
    model: Open | None = Field(description="{provider, modelId} in effect at the leaf, or null.")
    entryIds: list[str] = Field(
        description="The context entries: latest compaction, kept range, what follows."
    )


class UsageResult(Usage):
    usageTokens: int | None = None
    trailingTokens: int | None = None
    estimator: str
    model: Any = None


class EditParams(SessionRef):
    targetId: EntryId
    replacement: Replacement | None
    durability: Durability | None = None


class EditResult(Result):
    entryId: str


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "context/get",
            ContextParams,
            ContextResult,
            "What the model sees: the projected messages with their source entries, model and thinking level.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND),
            {"sessionId": EXAMPLE_SESSION_ID},
        ),
        MethodSpec(
            "context/usage",
            SessionRef,
            UsageResult,
            "How full the context is: last provider usage plus an estimate of what came after.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
            {
                "used": 48213,
                "size": 200000,
                "percent": 24.1,
                "source": "estimate",
                "usageTokens": 47900,
                "trailingTokens": 313,
                "estimator": "pi",
                "model": {"provider": "anthropic", "modelId": "claude-sonnet-4-5"},
            },
        ),
        MethodSpec(
            "context/edit",
            EditParams,
            EditResult,
            "Replace (or with null hide) what an entry of the branch contributes to the context.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, C.NOT_ON_BRANCH, C.NOT_EDITABLE, *WRITE_ERRORS),
            {
                "sessionId": EXAMPLE_SESSION_ID,
                "targetId": "a1b2c3d4",
                "replacement": None,
            },
            {"entryId": "0f1e2d3c"},
        ),
    ]
}
