"""What a session list shows for a Claude Code transcript."""

from __future__ import annotations

import math
from typing import Any, Final

from ...model.titles import prompt_title
from .graph import graph_of
from .records import ASSISTANT, USER, ClaudeTranscript, is_tool_result_user, prompt_text


def listing_fields(t: ClaudeTranscript) -> dict[str, Any]:
    """What a session list shows for a transcript.

    ``created_ms``/``modified_ms``: earliest/latest valid timestamp of a main-session user or assistant entry
    (``None`` when there is none); ``message_count``: user and assistant entries of every branch,
    the tree's ``message`` entries (inline sidechains too; docs/concepts.md, "Messages");
    ``first_message``: the text of the first prompt a human typed (meta, tool-result, compact
    summary and local-command entries skipped), or ``None``.
    """
    g = graph_of(t)
    created = math.inf
    modified = -math.inf
    count = 0
    first: str | None = None
    for u in g.order:
        e = t.chain[u]
        etype = e.get("type")
        if etype not in (USER, ASSISTANT):
            continue
        count += 1  # a message entry of the tree, inline sidechains (Claude Code 1.x) included
        if e.get("isSidechain") is True:
            continue
        ts = g.ts[u]
        if ts == ts:
            created = min(created, ts)
            modified = max(modified, ts)
        if first is None and etype == USER and not is_tool_result_user(e):
            if e.get("isMeta") is True or e.get("isCompactSummary") is True:
                continue
            text = prompt_text(e)
            if text is not None and not text.lstrip().startswith(_NOT_PROMPTS):
                first = prompt_title(text)
    return {
        "created_ms": None if created == math.inf else created,
        "modified_ms": None if modified == -math.inf else modified,
        "message_count": count,
        "first_message": first,
    }


_NOT_PROMPTS: Final = ("<local-command-", "<command-name>", "<command-message>", "[Request interrupted")
