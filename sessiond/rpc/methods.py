"""The method table: protocol method -> validate its params (``sessiond_protocol``) -> ``Service``.

Params are validated with the pydantic models for precise errors, but entry payloads are
handed to the store as the client sent them (the dicts, not the models), so key order and
fields a newer Pi adds survive. "Omitted" and ``null`` differ for ``parentId`` and
``expectLeafId`` (omitted: the leaf / no check; ``null``: a new root / expect no leaf), so
those are read from the raw params.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiond_protocol import METHODS, PROTOCOL_VERSION
from sessiond_protocol import methods as M

from .. import __version__
from ..model.js import UNDEFINED
from ..service.results import wire

if TYPE_CHECKING:
    from .connection import Connection, Handler


def _raw(params: dict[str, Any], name: str) -> Any:
    return params.get(name, UNDEFINED)


def begin_initialize(conn: Connection, params: dict[str, Any]) -> None:
    """Check and apply ``initialize`` at once, so requests pipelined behind it see its effect."""
    p = M.InitializeParams.model_validate(params)
    conn.check_token(params.get("authToken"))
    if p.capabilities and p.capabilities.notifications:
        conn.opt_out = set(p.capabilities.notifications.optOut)
    conn.client_info = p.clientInfo.model_dump() if p.clientInfo else {}
    conn.summarizer = bool(p.capabilities and p.capabilities.summarizer)


async def initialize(conn: Connection, params: dict[str, Any]) -> Any:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "serverInfo": {"name": "sessiond", "version": __version__},
        "capabilities": {
            "framing": ["content-length", "ndjson"],
            "methods": sorted(METHODS),
            "notifications": ["session/update", "$/progress", "window/logMessage"],
            "sessionUpdates": [
                "entries_appended",
                "leaf_changed",
                "session_info_update",
                "label_update",
                "usage_update",
                "compaction_update",
                "external_change",
                "file_history_update",
                "session_list_update",
                "resync_required",
            ],
            "serverRequests": ["compaction/summarize"],
            "cancellation": ["$/cancelRequest", "$/cancel_request"],
            "durability": ["buffered", "fsync"],
            "estimator": conn.service.estimator.name,
        },
    }


async def shutdown(conn: Connection, params: dict[str, Any]) -> Any:
    conn.shutting_down = True
    return None


async def daemon_status(conn: Connection, params: dict[str, Any]) -> Any:
    from .status import daemon_status as status  # noqa: PLC0415

    M.Empty.model_validate(params)
    return status(conn)


async def session_new(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.NewParams.model_validate(params)
    return wire(await conn.service.new_session(conn, p.cwd, p.sessionId, p.parentSession, p.subscribe))


async def session_load(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.LoadParams.model_validate(params)
    return wire(await conn.service.load(conn, p.sessionId, p.subscribe))


async def session_list(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.ListParams.model_validate(params)
    if p.subscribe:
        conn.service.subscribe_list(conn)
    return wire(await conn.service.list_sessions(p.cwd, p.cursor, p.limit, p.root, p.format))


async def session_close(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    return wire(await conn.service.close(conn, p.sessionId))


async def session_delete(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    return wire(await conn.service.delete(conn, p.sessionId))


async def session_subscribe(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    return wire(await conn.service.load(conn, p.sessionId, True))


async def session_unsubscribe(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    return wire(await conn.service.unsubscribe(conn, p.sessionId))


async def session_append(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.AppendParams.model_validate(params)
    return wire(
        await conn.service.append(
            conn,
            p.sessionId,
            params["entries"],
            parent_id=_raw(params, "parentId"),
            expect_leaf_id=_raw(params, "expectLeafId"),
            durability=p.durability,
        )
    )


async def session_entries(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.EntriesParams.model_validate(params)
    return wire(await conn.service.entries(conn, p.sessionId, p.offset, p.afterId, p.limit))


async def session_set_name(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SetNameParams.model_validate(params)
    return wire(await conn.service.set_name(conn, p.sessionId, p.name, p.durability))


async def session_fork(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.ForkParams.model_validate(params)
    return wire(await conn.service.fork(conn, p.sessionId, p.entryId, p.position))


async def session_configure(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.ConfigureParams.model_validate(params)
    return wire(await conn.service.configure(conn, p.sessionId, p.contextWindow))


async def tree_get(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.TreeParams.model_validate(params)  # the schema's (a wrong workDoneToken is refused)
    return wire(await conn.service.tree(conn, p.sessionId))


async def tree_branch(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.BranchParams.model_validate(params)
    return wire(await conn.service.branch(conn, p.sessionId, p.entryId, p.full))


async def tree_navigate(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.NavigateParams.model_validate(params)
    return wire(
        await conn.service.navigate(
            conn, p.sessionId, p.targetId, p.summary, params.get("summaryDetails"), p.label, p.durability
        )
    )


async def tree_label(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.LabelParams.model_validate(params)
    return wire(await conn.service.label(conn, p.sessionId, p.entryId, p.label, p.durability))


async def context_get(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.ContextParams.model_validate(params)
    return wire(await conn.service.context(conn, p.sessionId, p.leafId))


async def context_usage(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    return wire(await conn.service.usage(conn, p.sessionId))


async def context_edit(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.EditParams.model_validate(params)
    return wire(
        await conn.service.edit(conn, p.sessionId, p.targetId, params.get("replacement"), p.durability)
    )


async def compaction_prepare(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.PrepareParams.model_validate(params)
    return wire(
        await conn.service.compactor.prepare(
            conn, p.sessionId, p.keepRecentTokens, p.reserveTokens, p.customInstructions
        )
    )


async def compaction_commit(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.CommitParams.model_validate(params)
    return wire(
        await conn.service.compactor.commit(
            conn,
            p.sessionId,
            p.summary,
            params["firstKeptEntryId"],
            p.tokensBefore,
            p.preparationId,
            params.get("details"),
            params.get("usage"),
            p.fromHook,
            p.durability,
        )
    )


async def compaction_run(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.RunParams.model_validate(params)
    token = p.workDoneToken

    def progress(message: str, percentage: int | None) -> None:
        if token is not None:
            value: dict[str, Any] = {"message": message}
            if percentage is not None:
                value["percentage"] = percentage
            conn.progress(token, "report", **value)

    return wire(
        await conn.service.compactor.run(
            conn,
            p.sessionId,
            p.reason,
            p.customInstructions,
            p.keepRecentTokens,
            p.reserveTokens,
            p.summarizer,
            progress,
        )
    )


async def compaction_cancel(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    await conn.service.host(p.sessionId, conn)
    cancelled = conn.service.compactor.cancel(p.sessionId)
    return {"cancelled": cancelled is not None, "compactionId": cancelled}


async def compaction_microcompact(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.MicrocompactParams.model_validate(params)
    return wire(
        await conn.service.compactor.microcompact(
            conn, p.sessionId, p.keepRecent, p.tools, p.dryRun, p.durability
        )
    )


async def compaction_snip(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SnipParams.model_validate(params)
    return wire(
        await conn.service.compactor.snip(
            conn, p.sessionId, p.fromEntryId, p.toEntryId, p.dryRun, p.durability
        )
    )


async def compaction_settings(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SettingsParams.model_validate(params)
    return wire(await conn.service.compactor.update_settings(conn, p.sessionId, params.get("set")))


async def file_history_track(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.TrackParams.model_validate(params)
    return wire(await conn.service.file_history.track(conn, p.sessionId, p.path, p.messageId, p.phase))


async def file_history_checkpoint(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.CheckpointParams.model_validate(params)
    return wire(await conn.service.file_history.checkpoint(conn, p.sessionId, p.messageId))


async def file_history_list(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.SessionRef.model_validate(params)
    return wire(await conn.service.file_history.list(conn, p.sessionId))


async def file_history_diff(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.DiffParams.model_validate(params)
    return wire(await conn.service.file_history.diff(conn, p.sessionId, p.messageId, p.path))


async def file_history_rewind(conn: Connection, params: dict[str, Any]) -> Any:
    p = M.RewindParams.model_validate(params)
    return wire(
        await conn.service.file_history.rewind(
            conn, p.sessionId, p.messageId, p.dryRun, p.force, p.conversation
        )
    )


HANDLERS: dict[str, Handler] = {
    "initialize": initialize,
    "shutdown": shutdown,
    "session/new": session_new,
    "daemon/status": daemon_status,
    "session/load": session_load,
    "session/list": session_list,
    "session/close": session_close,
    "session/delete": session_delete,
    "session/subscribe": session_subscribe,
    "session/unsubscribe": session_unsubscribe,
    "session/append": session_append,
    "session/entries": session_entries,
    "session/setName": session_set_name,
    "session/fork": session_fork,
    "session/configure": session_configure,
    "tree/get": tree_get,
    "tree/branch": tree_branch,
    "tree/navigate": tree_navigate,
    "tree/label": tree_label,
    "context/get": context_get,
    "context/usage": context_usage,
    "context/edit": context_edit,
    "compaction/prepare": compaction_prepare,
    "compaction/commit": compaction_commit,
    "compaction/run": compaction_run,
    "compaction/cancel": compaction_cancel,
    "compaction/microcompact": compaction_microcompact,
    "compaction/snip": compaction_snip,
    "compaction/settings": compaction_settings,
    "fileHistory/track": file_history_track,
    "fileHistory/checkpoint": file_history_checkpoint,
    "fileHistory/list": file_history_list,
    "fileHistory/diff": file_history_diff,
    "fileHistory/rewind": file_history_rewind,
}

assert set(HANDLERS) == set(METHODS), set(HANDLERS) ^ set(METHODS)
