"""Export: any readable session written as a new native Pi session in the store.

The new session holds the conversation the source agent would resume with — the source's
context, not its whole tree — as Pi entries: ``user``, ``assistant`` and ``toolResult``
messages as they are, ``custom`` messages (Codex developer messages, provider-held compaction
placeholders) as ``custom_message`` entries, and any other role (a Pi compaction or branch
summary, a shell execution) as the user message Pi itself sends for it. A first ``custom``
entry (``sessiond.export``) records where it came from; the source's title becomes the
session name. Pi, or an agent using sessiond, opens the result with the same context and can
continue, branch and compact it; the source is never touched.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from ..errors import InvalidArgumentError
from ..model.js import UNDEFINED
from ..model.messages import convert_to_llm
from .journal import Durability
from .session import Session

EXPORT_MARKER: Final = "sessiond.export"
PASSTHROUGH: Final = frozenset({"user", "assistant", "toolResult"})


def export_to_pi(
    source: Session,
    directory_for: Callable[[str], Path],
    *,
    source_info: dict[str, Any],
    leaf: Any = UNDEFINED,
    durability: Durability = Durability.BUFFERED,
) -> Session:
    """Write ``source``'s context (at ``leaf``, default its leaf) as a new Pi session.

    ``directory_for(cwd)`` is the store directory for the session's working directory.
    Returns the new session, written and closed for writing.
    """
    if leaf is UNDEFINED:
        projection = source.context()
        leaf_id = source.leaf_id
    else:
        projection = source.context_for(source.tree.branch(leaf) if leaf is not None else [])
        leaf_id = leaf
    cwd = source.cwd or "/"
    target = Session.create(directory_for(cwd), cwd, durability=durability)
    now = datetime.now(UTC)
    exported = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    target.append_custom(
        EXPORT_MARKER,
        {
            "source": {**source_info, "sessionId": source.id, "leafId": leaf_id},
            "exportedAt": exported,
            "messages": len(projection.messages),
        },
    )
    for message in projection.messages:
        role = message.get("role")
        if role in PASSTHROUGH:
            target.append_message(message)
        elif role == "custom":
            target.append_custom_message(
                message.get("customType") or "sessiond.custom",
                message.get("content", []),
                bool(message.get("display", False)),
                message.get("details", UNDEFINED),
            )
        else:
            for converted in convert_to_llm([message]):
                target.append_message(converted)
    name = source.name
    if name:
        target.set_name(name)
    if not target.flushed:
        # Pi creates the file with the first user or assistant message: there was none.
        raise InvalidArgumentError(
            f"nothing to export: the context of {source.id} holds no user or assistant message",
            field="session",
        )
    return target


def exported_leaf(path: str) -> Any:
    """The ``leafId`` an export's first entry (``sessiond.export``) records; None if unreadable:
    with the listing's ``export_of``, what tells a second export at the same leaf (the same copy)."""
    import json  # noqa: PLC0415

    try:
        with open(path, "rb") as f:
            f.readline()
            marker = json.loads(f.readline())
        return marker["data"]["source"]["leafId"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


__all__ = ["EXPORT_MARKER", "export_to_pi", "exported_leaf"]
