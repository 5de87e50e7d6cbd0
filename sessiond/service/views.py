"""What a client is shown of a session: the results of the read methods, built in one place.

``session/load``, ``tree/get``, ``tree/branch``, ``context/get``, ``context/usage`` and a
``session/list`` row are pure functions of an open session (any ``ReadableSession``: a Pi
``Session`` and the read-only Claude Code, Codex and OpenCode sessions answer the same reads),
so the daemon and the command line's file mode (``sessiond show FILE``, ``--no-start``) call
the same code and cannot drift apart.

The results are the protocol's models built with ``model_construct``: nothing is validated or
copied (the values come from the store, which already holds them in the wire shape), so a
typed result costs a few microseconds whatever its size. Nested payloads — entries, tree
nodes, context messages, session summaries — stay the JSON objects the store made; only the
top level is a model (see :func:`sessiond.service.results.wire`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from sessiond_protocol import methods as M

from ..errors import EntryNotFoundError, InvalidArgumentError
from ..model.js import UNDEFINED, get
from ..model.tokens import TokenEstimator
from ..store.listing import SessionInfo, iso_string
from ..store.session import ReadableSession

if TYPE_CHECKING:
    from .catalog import Listed

WindowFor = Callable[[ReadableSession, Any], int | None]
"""The context window of a session for a model (its own setting, the config, the table)."""


def require_entry(session: ReadableSession, entry_id: str, field: str | None = None) -> None:
    """Refuse an id the session does not hold (-32011), naming the field when asked."""
    if entry_id not in session.tree:
        error = EntryNotFoundError(entry_id)
        if field is not None:
            error.data["field"] = field
        raise error


# ---------------------------------------------------------------------------- one session


def describe(
    session: ReadableSession, *, format: str, root: str, row: SessionInfo | None = None
) -> M.LoadResult:
    """``session/load``: where the session is, its leaf and size, and how it was read.

    ``messageCount`` and ``firstMessage`` are the session's listing row's (``row``), so a header
    shows what the list shows (``None`` without a row)."""
    return M.LoadResult.model_construct(
        messageCount=None if row is None else row.message_count,
        firstMessage=None if row is None else row.first_message,
        sessionId=session.id,
        path=str(session.path),
        cwd=session.cwd,
        name=session.name,
        leafId=session.leaf_id,
        entryCount=session.entry_count,
        header=session.header,
        saved=session.flushed,
        diagnostics=session.diagnostics.as_json(),
        format=format,
        root=root,
        readOnly=session.read_only is not None,
    )


def tree(session: ReadableSession) -> M.TreeResult:
    """``tree/get``: every entry as a flat node (the store's view), and the leaf."""
    view = session.tree_view()
    return M.TreeResult.model_construct(leafId=view["leafId"], nodes=view["nodes"])


def branch(session: ReadableSession, entry_id: str | None, full: bool) -> M.BranchResult:
    """``tree/branch``: root -> ``entry_id`` (default the leaf), ids only unless ``full``.

    With ``full`` the ids are taken from the entries read: one walk (for Claude Code one
    reconstruction), and the two lists cannot disagree if an append lands in between.
    """
    if entry_id is not None:
        require_entry(session, entry_id)
    start = UNDEFINED if entry_id is None else entry_id
    if not full:
        return M.BranchResult.model_construct(entryIds=session.branch_ids(start))
    entries = session.branch(start)
    return M.BranchResult.model_construct(entryIds=[get(e, "id") for e in entries], entries=entries)


def context(session: ReadableSession, leaf_id: str | None) -> M.ContextResult:
    """``context/get``: the messages a model is sent at the leaf (or at ``leaf_id``)."""
    if leaf_id is None:
        projection = session.context()
    else:
        require_entry(session, leaf_id)
        projection = session.context_for(session.tree.branch(leaf_id))
    messages = [
        {"entryId": get(p.source, "id"), "message": m} for p in projection.entries for m in p.messages
    ]
    return M.ContextResult.model_construct(
        messages=messages,
        thinkingLevel=projection.settings.thinking_level,
        model=projection.settings.model,
        entryIds=[get(p.source, "id") for p in projection.entries],
    )


def _whole(tokens: float) -> int | None:
    return int(tokens) if tokens == tokens else None  # NaN: unknown


def usage(session: ReadableSession, estimator: TokenEstimator, window_for: WindowFor) -> M.UsageResult:
    """``context/usage``: how full the context is, and where the number comes from.

    From the session's usage view, not its projection: a ``usage_update`` follows every append,
    and materialising the context for it would keep every watched session's context in memory
    (docs/configuration.md, ``[memory]``)."""
    view = session.usage_view(estimator)
    estimate = view.estimate
    model = view.model
    size = window_for(session, model)
    if not view.messages:
        used: int | None = 0
        source = "unknown"
    else:
        used = _whole(estimate.tokens)
        anchored = estimate.last_usage_index is not None
        source = "api" if anchored and estimate.trailing_tokens == 0 else "estimate"
    return M.UsageResult.model_construct(
        used=used,
        size=size,
        percent=round(used * 100 / size, 1) if size and used is not None else None,
        source=source,
        usageTokens=_whole(estimate.usage_tokens),
        trailingTokens=_whole(estimate.trailing_tokens),
        estimator=estimator.name,
        model=None if model is None else model,
    )


# ---------------------------------------------------------------------------- listing


def summary(listed: Listed) -> dict[str, Any]:
    """A ``session/list`` row (the ``SessionSummary`` shape; also ``session_list_update``'s)."""
    info, root = listed.info, listed.root
    return {
        "sessionId": info.id,
        "path": info.path,
        "cwd": info.cwd,
        "title": info.name,
        "firstMessage": info.first_message,
        "createdAt": iso_string(info.created_ms),
        "updatedAt": iso_string(info.modified_ms),
        "messageCount": info.message_count,
        "parentSession": info.parent_session_path,
        "format": root.format,
        "root": root.name,
        "readOnly": not root.writable,
        "exportOf": info.export_of,
    }


def page(listed: list[Listed], cursor: str | None, limit: int | None) -> M.ListResult:
    """One page of a listing (newest first) after ``cursor``; ``limit`` None: all of it."""
    start = 0
    if cursor:
        after = decode_cursor(cursor)
        start = next((i + 1 for i, x in enumerate(listed) if x.info.path == after), None) or _bad_cursor()
    end = len(listed) if limit is None else start + limit
    rows = listed[start:end]
    more = end < len(listed)
    return M.ListResult.model_construct(
        sessions=[summary(x) for x in rows],
        nextCursor=encode_cursor(rows[-1].info.path) if more and rows else None,
    )


def encode_cursor(path: str) -> str:
    """An opaque cursor: the path of the last session of the page (paths are stable, ids not
    unique across roots)."""
    return base64.urlsafe_b64encode(orjson.dumps({"after": path})).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        after = data["after"]
        if type(after) is not str:
            raise TypeError
        return after
    except (ValueError, KeyError, TypeError):
        raise InvalidArgumentError("cursor is not one this server issued", field="cursor") from None


def _bad_cursor() -> int:
    raise InvalidArgumentError("cursor refers to a session no longer listed; list again", field="cursor")
