"""Moving an open session's leaf: Pi's ``navigateTree`` with the summary supplied by the client.

A function of the host alone, so ``tree/navigate`` and a rewind that also rewinds the
conversation (``fileHistory/rewind`` with ``conversation``) move the leaf the same way.
"""

from __future__ import annotations

from typing import Any

from sessiond_protocol import methods as M

from ..model import entries as E
from ..model.js import get, key
from ..model.messages import content_text
from ..store.journal import Durability
from .host import SessionHost
from .views import require_entry


def prompt_text(content: Any) -> str:
    """The text of a prompt's content (a string or content blocks), for the client's editor."""
    return content_text(content, "") if type(content) in (str, list) else ""


async def navigate(
    host: SessionHost,
    target_id: str | None,
    summary: str | None = None,
    summary_details: Any = None,
    label: str | None = None,
    durability: str | None = None,
) -> M.NavigateResult:
    """Continue from ``target_id`` (None: before the first entry), persisting the move.

    Navigating to a user prompt (or a custom message) continues from its parent and hands the
    prompt's text back for editing, as Pi does. With a ``summary`` the abandoned branch is
    summarised in a ``branch_summary`` entry (which becomes the leaf); without one the move
    is a leaf marker. ``label`` labels the summary (or the target).
    """
    session = host.session
    mode = None if durability is None else Durability(durability)
    previous = session.leaf_id
    if target_id is not None:
        require_entry(session, target_id)
    if key(target_id) == key(previous):
        return M.NavigateResult.model_construct(leafId=previous, moved=False)
    editor_text: str | None = None
    new_leaf: Any = target_id
    if target_id is not None:
        target = session.get(target_id)
        is_user = get(target, "type") == E.MESSAGE and get(get(target, "message"), "role") == "user"
        if is_user or get(target, "type") == E.CUSTOM_MESSAGE:
            new_leaf = get(target, "parentId")
            content = get(get(target, "message"), "content") if is_user else get(target, "content")
            editor_text = prompt_text(content)
    fields: dict[str, Any] = {"moved": True}
    if editor_text is not None:
        fields["editorText"] = editor_text
    if summary is not None:
        spec: dict[str, Any] = {"type": E.BRANCH_SUMMARY, "summary": summary}
        if summary_details is not None:
            spec["details"] = summary_details
        pending = await host.commit(lambda w: w.begin_append([spec], parent_id=new_leaf, durability=mode))
        fields["summaryEntryId"] = pending.entry_ids[0]
    else:
        moved = await host.commit(lambda w: w.begin_move_leaf(new_leaf, durability=mode))
        if moved is not None:
            fields["markerEntryId"] = moved.entry_ids[0]
    if label:
        label_spec = {"type": E.LABEL, "targetId": fields.get("summaryEntryId", target_id), "label": label}
        await host.commit(lambda w: w.begin_append([label_spec], durability=mode))
    host.publish_leaf(previous)
    fields["leafId"] = session.leaf_id
    return M.NavigateResult.model_construct(**fields)
