"""Micro-compaction and snip in the daemon: the plans of ``compaction.micro``, written as edits.

Automatic micro-compaction (off by default: it rewrites the context's middle, which costs a
prompt-cache miss once) runs after a client's append, on two triggers counted in tool
results and minutes, not tokens, as Claude Code's own micro-compaction counts them
(docs/compaction.md): enough compactable tool results still have their content
(``triggerCount``), or a user message arrives after an idle gap (``gapMinutes``: the cache
has gone cold anyway, so rewriting the prefix costs nothing extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiond_protocol import methods as M

from ..compaction import micro
from ..compaction.policy import timestamp_ms
from ..model.js import get
from ..model.tokens import TokenEstimator
from ..store.journal import Durability
from .compaction_settings import MicrocompactSettings
from .views import require_entry

if TYPE_CHECKING:
    from .host import SessionHost


def automatic(
    host: SessionHost,
    settings: MicrocompactSettings,
    messages: list[tuple[Any, Any]],
    estimator: TokenEstimator,
) -> list[dict[str, Any]] | None:
    """The edits clearing old tool results if an appended batch (``(entryId, role)`` pairs)
    triggers it (the caller writes them)."""
    session = host.session
    projection = session.context()
    roles = {role for _, role in messages}
    trigger = False
    if "toolResult" in roles and settings.trigger_count is not None:
        trigger = micro.active_compactable(projection, settings.tools) >= settings.trigger_count
    if not trigger and "user" in roles and settings.gap_minutes is not None:
        user_id = next(i for i, role in reversed(messages) if role == "user")
        sent = timestamp_ms(get(get(session.get(user_id), "message"), "timestamp"))
        previous = next((m for m in reversed(projection.messages) if get(m, "role") == "assistant"), None)
        answered = timestamp_ms(get(previous, "timestamp"))
        if sent is not None and answered is not None:
            trigger = sent - answered >= settings.gap_minutes * 60_000
    if not trigger:
        return None
    clearings = micro.plan_microcompact(projection, settings.keep_recent, settings.tools, estimator)
    if not clearings:
        return None
    return micro.microcompact_specs(clearings)


async def clear_old_results(
    host: SessionHost,
    keep_recent: int,
    tools: tuple[str, ...] | list[str],
    estimator: TokenEstimator,
    dry_run: bool,
    durability: Durability | None,
) -> M.MicrocompactResult:
    """``compaction/microcompact``."""
    clearings = micro.plan_microcompact(host.session.context(), keep_recent, tools, estimator)
    written: list[str] = []
    if clearings and not dry_run:
        specs = micro.microcompact_specs(clearings)
        written = (await host.commit(lambda w: w.begin_append(specs, durability=durability))).entry_ids
    return M.MicrocompactResult.model_construct(
        cleared=[
            {
                "entryId": c.entry_id,
                "toolName": c.tool_name if type(c.tool_name) is str else None,
                "tokensSaved": c.tokens_saved,
            }
            for c in clearings
        ],
        entryIds=written,
        tokensSaved=sum(c.tokens_saved for c in clearings),
    )


async def snip(
    host: SessionHost, from_id: str, to_id: str, dry_run: bool, durability: Durability | None
) -> M.SnipResult:
    """``compaction/snip``: hide ``from..to`` of the current branch from the context."""
    session = host.session
    for name, entry_id in (("fromEntryId", from_id), ("toEntryId", to_id)):
        require_entry(session, entry_id, name)  # -32011, as documented (was -32602)
    hidden = micro.plan_snip(session.current_branch(), session.context(), from_id, to_id)
    written: list[str] = []
    if hidden and not dry_run:
        specs = micro.snip_specs(hidden)
        written = (await host.commit(lambda w: w.begin_append(specs, durability=durability))).entry_ids
    return M.SnipResult.model_construct(hidden=hidden, entryIds=written)
