"""Every protocol method's handler: validated params (``sessiond_protocol``) in, ``Service`` called,
typed result out. One declaration per method (``dispatch.MethodTable``); the table is complete
or the daemon does not import.

Entry payloads go to the store as the client sent them (the raw dicts, not the models), so key
order and fields a newer Pi adds survive. "Omitted" and ``null`` differ for ``parentId`` and
``expectLeafId`` (omitted: the leaf / no check; ``null``: a new root / expect no leaf): a field
the client left out is not in the model's ``model_fields_set``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from sessiond_protocol import METHODS, PROTOCOL_VERSION
from sessiond_protocol import methods as M

from .. import __version__
from ..errors import OwnerOnlyError, ProtocolVersionError
from ..model.js import UNDEFINED
from .dispatch import Caller, Json, MethodTable
from .status import daemon_status as status

HANDLERS = MethodTable(METHODS)


# --------------------------------------------------------------------------- lifecycle

SESSION_UPDATES = (
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
)


@HANDLERS.method("initialize")
def initialize(call: Caller, p: M.InitializeParams) -> M.InitializeResult:
    """Check and apply ``initialize`` at receipt, so requests pipelined behind it see its effect."""
    issued = call.check_token(p.authToken)
    if p.protocolVersion != PROTOCOL_VERSION:
        raise ProtocolVersionError(p.protocolVersion, PROTOCOL_VERSION)
    capabilities = p.capabilities
    if capabilities is not None and capabilities.notifications is not None:
        call.opt_out = set(capabilities.notifications.optOut)
    call.client_info = p.clientInfo.model_dump() if p.clientInfo else {}
    call.summarizer = bool(capabilities and capabilities.summarizer)
    return M.InitializeResult.model_construct(
        protocolVersion=PROTOCOL_VERSION,
        serverInfo={"name": "sessiond", "version": __version__},
        capabilities={
            "framing": ["content-length", "ndjson"],
            "methods": sorted(METHODS),
            "notifications": ["session/update", "$/progress", "window/logMessage"],
            "sessionUpdates": list(SESSION_UPDATES),
            "serverRequests": ["compaction/summarize"],
            "cancellation": ["$/cancelRequest", "$/cancel_request"],
            "durability": ["buffered", "fsync"],
            "estimator": call.service.estimator.name,
        },
        viewerToken=issued,
    )


@HANDLERS.method("daemon/viewerCode")
async def viewer_code(call: Caller, p: M.ViewerCodeParams) -> M.ViewerCodeResult:
    """Only the owner's connections mint codes: a client that got in with a code or the token
    gains nothing by it, but must not be able to rotate the owner's token away."""
    if not call.owner or call.daemon is None:
        raise OwnerOnlyError("daemon/viewerCode")
    return M.ViewerCodeResult.model_construct(**call.daemon.viewer_code(p.newToken))


@HANDLERS.method("shutdown")
def shutdown(call: Caller, p: M.Empty) -> None:
    call.shutting_down = True


@HANDLERS.method("daemon/status")
async def daemon_status(call: Caller, p: M.Empty) -> M.DaemonStatusResult:
    return status(call)


# --------------------------------------------------------------------------- sessions


@HANDLERS.method("session/new")
async def session_new(call: Caller, p: M.NewParams) -> M.NewResult:
    return await call.service.new_session(call, p.cwd, p.sessionId, p.parentSession, p.subscribe)


@HANDLERS.method("session/load")
async def session_load(call: Caller, p: M.LoadParams) -> M.LoadResult:
    return await call.service.load(call, p.sessionId, p.subscribe)


@HANDLERS.method("session/list")
async def session_list(call: Caller, p: M.ListParams) -> M.ListResult:
    if p.subscribe:
        call.service.subscribe_list(call)
    return await call.service.list_sessions(p.cwd, p.cursor, p.limit, p.root, p.format)


@HANDLERS.method("session/close")
async def session_close(call: Caller, p: M.SessionRef) -> M.EmptyResult:
    return await call.service.close(call, p.sessionId)


@HANDLERS.method("session/delete")
async def session_delete(call: Caller, p: M.SessionRef) -> M.DeleteResult:
    return await call.service.delete(call, p.sessionId)


@HANDLERS.method("session/subscribe")
async def session_subscribe(call: Caller, p: M.SessionRef) -> M.LoadResult:
    return await call.service.load(call, p.sessionId, True)


@HANDLERS.method("session/unsubscribe")
async def session_unsubscribe(call: Caller, p: M.SessionRef) -> M.EmptyResult:
    return await call.service.unsubscribe(call, p.sessionId)


@HANDLERS.method("session/append", at_receipt=True)
def session_append(
    call: Caller, p: M.AppendEnvelope, raw: Json
) -> M.AppendResult | Awaitable[M.AppendResult]:
    """The hot path: a buffered append to an open session is answered at receipt."""
    given = p.model_fields_set
    return call.service.append_now(
        call,
        p.sessionId,
        raw["entries"],
        parent_id=p.parentId if "parentId" in given else UNDEFINED,
        expect_leaf_id=p.expectLeafId if "expectLeafId" in given else UNDEFINED,
        durability=p.durability,
    )


@HANDLERS.method("session/entries")
async def session_entries(call: Caller, p: M.EntriesParams) -> M.EntriesResult:
    return await call.service.entries(call, p.sessionId, p.offset, p.afterId, p.limit)


@HANDLERS.method("session/tail")
async def session_tail(call: Caller, p: M.TailParams) -> M.TailResult:
    return await call.service.tail(call, p.sessionId, p.limit)


@HANDLERS.method("session/setName")
async def session_set_name(call: Caller, p: M.SetNameParams) -> M.SetNameResult:
    return await call.service.set_name(call, p.sessionId, p.name, p.durability)


@HANDLERS.method("session/fork")
async def session_fork(call: Caller, p: M.ForkParams) -> M.ForkResult:
    return await call.service.fork(call, p.sessionId, p.entryId, p.position)


@HANDLERS.method("session/export")
async def session_export(call: Caller, p: M.ExportParams) -> M.ExportResult:
    return await call.service.export(call, p.sessionId, p.leafId, again=p.again)


@HANDLERS.method("session/configure")
async def session_configure(call: Caller, p: M.ConfigureParams) -> M.ConfigureResult:
    return await call.service.configure(call, p.sessionId, p.contextWindow)


# --------------------------------------------------------------------------- tree


@HANDLERS.method("tree/get")
async def tree_get(call: Caller, p: M.TreeParams) -> M.TreeResult:
    return await call.service.tree(call, p.sessionId)


@HANDLERS.method("tree/branch")
async def tree_branch(call: Caller, p: M.BranchParams) -> M.BranchResult:
    return await call.service.branch(call, p.sessionId, p.entryId, p.full)


@HANDLERS.method("tree/navigate")
async def tree_navigate(call: Caller, p: M.NavigateParams) -> M.NavigateResult:
    return await call.service.navigate(
        call, p.sessionId, p.targetId, p.summary, p.summaryDetails, p.label, p.durability
    )


@HANDLERS.method("tree/label")
async def tree_label(call: Caller, p: M.LabelParams) -> M.LabelResult:
    return await call.service.label(call, p.sessionId, p.entryId, p.label, p.durability)


# --------------------------------------------------------------------------- context


@HANDLERS.method("context/get")
async def context_get(call: Caller, p: M.ContextParams) -> M.ContextResult:
    return await call.service.context(call, p.sessionId, p.leafId)


@HANDLERS.method("context/usage")
async def context_usage(call: Caller, p: M.SessionRef) -> M.UsageResult:
    return await call.service.usage(call, p.sessionId)


@HANDLERS.method("context/edit")
async def context_edit(call: Caller, p: M.EditParams, raw: Json) -> M.EditResult:
    return await call.service.edit(call, p.sessionId, p.targetId, raw.get("replacement"), p.durability)


# --------------------------------------------------------------------------- compaction


@HANDLERS.method("compaction/prepare")
async def compaction_prepare(call: Caller, p: M.PrepareParams) -> M.PrepareResult:
    return await call.service.compactor.prepare(
        call, p.sessionId, p.keepRecentTokens, p.reserveTokens, p.customInstructions
    )


@HANDLERS.method("compaction/commit")
async def compaction_commit(call: Caller, p: M.CommitParams, raw: Json) -> M.CompactionResult:
    return await call.service.compactor.commit(
        call,
        p.sessionId,
        p.summary,
        p.firstKeptEntryId,
        p.tokensBefore,
        p.preparationId,
        p.details,
        raw.get("usage"),
        p.fromHook,
        p.durability,
    )


@HANDLERS.method("compaction/run")
async def compaction_run(call: Caller, p: M.RunParams) -> M.CompactionResult:
    token = p.workDoneToken

    def progress(message: str, percentage: int | None) -> None:
        if token is not None:
            value: dict[str, Any] = {"message": message}
            if percentage is not None:
                value["percentage"] = percentage
            call.progress(token, "report", **value)

    return await call.service.compactor.run(
        call,
        p.sessionId,
        p.reason,
        p.customInstructions,
        p.keepRecentTokens,
        p.reserveTokens,
        p.summarizer,
        progress,
    )


@HANDLERS.method("compaction/cancel")
async def compaction_cancel(call: Caller, p: M.SessionRef) -> M.CancelResult:
    await call.service.host(p.sessionId, call)
    cancelled = call.service.compactor.cancel(p.sessionId)
    return M.CancelResult.model_construct(cancelled=cancelled is not None, compactionId=cancelled)


@HANDLERS.method("compaction/microcompact")
async def compaction_microcompact(call: Caller, p: M.MicrocompactParams) -> M.MicrocompactResult:
    return await call.service.compactor.microcompact(
        call, p.sessionId, p.keepRecent, p.tools, p.dryRun, p.durability
    )


@HANDLERS.method("compaction/snip")
async def compaction_snip(call: Caller, p: M.SnipParams) -> M.SnipResult:
    return await call.service.compactor.snip(
        call, p.sessionId, p.fromEntryId, p.toEntryId, p.dryRun, p.durability
    )


@HANDLERS.method("compaction/settings")
async def compaction_settings(call: Caller, p: M.SettingsParams, raw: Json) -> M.SettingsResult:
    return await call.service.compactor.update_settings(call, p.sessionId, raw.get("set"))


# --------------------------------------------------------------------------- file history


@HANDLERS.method("fileHistory/track")
async def file_history_track(call: Caller, p: M.TrackParams) -> M.TrackResult:
    return await call.service.file_history.track(call, p.sessionId, p.path, p.messageId, p.phase)


@HANDLERS.method("fileHistory/checkpoint")
async def file_history_checkpoint(call: Caller, p: M.CheckpointParams) -> M.CheckpointResult:
    return await call.service.file_history.checkpoint(call, p.sessionId, p.messageId)


@HANDLERS.method("fileHistory/list")
async def file_history_list(call: Caller, p: M.SessionRef) -> M.FileHistoryListResult:
    return await call.service.file_history.list(call, p.sessionId)


@HANDLERS.method("fileHistory/diff")
async def file_history_diff(call: Caller, p: M.DiffParams) -> M.DiffResult:
    return await call.service.file_history.diff(call, p.sessionId, p.messageId, p.path)


@HANDLERS.method("fileHistory/rewind")
async def file_history_rewind(call: Caller, p: M.RewindParams) -> M.RewindResult:
    return await call.service.file_history.rewind(
        call, p.sessionId, p.messageId, p.dryRun, p.force, p.conversation
    )


@HANDLERS.method("stats/query")
async def stats_query(call: Caller, p: M.StatsQueryParams) -> M.StatsQueryResult:
    return await call.service.stats_query(p)


@HANDLERS.method("stats/subscribe")
async def stats_subscribe(call: Caller, p: M.StatsSubscribeParams) -> M.StatsUpdateResult:
    return await call.service.stats_subscribe(call, p.sessionId, p.timezone)


@HANDLERS.method("stats/unsubscribe")
async def stats_unsubscribe(call: Caller, p: M.Empty) -> M.EmptyResult:
    call.service.stats.unsubscribe(call)
    return M.EmptyResult()


# --------------------------------------------------------------------------- search


@HANDLERS.method("search/query")
async def search_query(call: Caller, p: M.SearchParams) -> M.SearchResult:
    token = p.workDoneToken

    def progress(done: int, total: int) -> None:
        if token is not None:
            percentage = 100 * done // total if total else 100
            call.progress(token, "report", message=f"{done}/{total} session files", percentage=percentage)

    return await call.service.search.query(
        p, progress if token is not None else None, call.service.known_session
    )


HANDLERS.complete()
