"""Every request a client can send: its params, its result, the errors it can raise, an example."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from .errors import ErrorCode as C
from .models import (
    ContextMessage,
    Durability,
    Entry,
    EntryId,
    EntrySpec,
    Open,
    Params,
    Replacement,
    Result,
    SessionId,
    SessionSummary,
    TreeNode,
    Usage,
    WorkDone,
)

# --------------------------------------------------------------------------- lifecycle


class ClientInfo(Params):
    name: str
    version: str | None = None


class NotificationOptions(Params):
    optOut: list[str] = Field(
        default_factory=list,
        description="Notification methods or `session/update` kinds (e.g. `usage_update`) not to send.",
    )


class ClientCapabilities(Params):
    notifications: NotificationOptions | None = None
    summarizer: bool = Field(False, description="The client can answer `compaction/summarize` requests.")


class InitializeParams(Params):
    protocolVersion: int = Field(ge=1, description="The protocol version the client speaks (1).")
    clientInfo: ClientInfo | None = None
    capabilities: ClientCapabilities | None = None
    authToken: str | None = Field(
        None, description="Required on TCP: the content of the server's token file."
    )


class ServerInfo(Result):
    name: str
    version: str


class InitializeResult(Result):
    protocolVersion: int
    serverInfo: ServerInfo
    capabilities: Open


class Empty(Params):
    pass


class EmptyResult(Result):
    pass


class StatusClient(Result):
    id: int = Field(description="The connection's number in this daemon.")
    peer: str = Field(description="How it is connected: `unix uid=…`, `tcp (host, port)`, `stdio`.")
    name: str | None = Field(None, description="`initialize.clientInfo.name`.")
    version: str | None = None
    connectedAt: str = Field(description="ISO 8601, UTC.")
    subscriptions: list[str] = Field(description="Session ids it subscribed to.")
    current: bool = Field(False, description="This is the connection that asked.")


class StatusSession(Result):
    sessionId: str
    path: str
    root: str = Field(description="`sessiond`, `pi` or `claude`.")
    format: str
    readOnly: bool
    subscribers: int
    users: int = Field(description="Connections that used it since it was opened (subscribed or not).")


class DaemonStatusResult(Result):
    pid: int
    version: str
    protocolVersion: int
    startedAt: str = Field(description="ISO 8601, UTC.")
    uptimeSeconds: float
    store: str
    socket: str | None = Field(description="The Unix socket it listens on (null with `--stdio`).")
    tcp: str | None = Field(None, description="`host:port` when it also listens on loopback TCP.")
    log: str | None = Field(
        None,
        description="The file its log goes to, when it is a file (a daemon started by the CLI or `connect`).",
    )
    sessions: list[StatusSession] = Field(description="Open sessions.")
    clients: list[StatusClient] = Field(description="Open connections, the asking one included.")


# --------------------------------------------------------------------------- sessions


class SessionRef(Params):
    sessionId: SessionId


class NewParams(Params):
    cwd: str = Field(min_length=1, description="Absolute working directory of the session.")
    sessionId: SessionId | None = Field(None, description="A custom id (Pi's rule); default a UUIDv7.")
    parentSession: str | None = Field(
        None, description="Path of the session this one continues (header field)."
    )
    subscribe: bool = Field(False, description="Also subscribe this connection to the session's updates.")


class NewResult(Result):
    sessionId: str
    path: str
    cwd: str


class LoadParams(SessionRef, WorkDone):
    subscribe: bool = Field(False, description="Also subscribe this connection to the session's updates.")


class LoadResult(Result):
    sessionId: str
    path: str = Field(description="The session file.")
    cwd: str = Field(description="Working directory from the header.")
    name: str | None = Field(description="The session name (latest session_info), if set.")
    leafId: str | None = Field(description="The current leaf (null: before the first entry).")
    entryCount: int = Field(description="Distinct entry ids.")
    header: Open = Field(description="The session header line.")
    saved: bool = Field(description="Whether the file exists yet (Pi's first-flush rule).")
    diagnostics: Open = Field(description="What the loader skipped or repaired (junk lines, torn tail...).")
    format: Literal["pi", "claude-code", "codex", "opencode"] = "pi"
    root: str = Field("sessiond", description="`sessiond`, `pi`, `claude`, `codex` or `opencode`.")
    readOnly: bool = Field(False, description="Writes are refused with -32019 READ_ONLY.")


class ListParams(WorkDone):
    cwd: str | None = Field(None, description="Only the sessions of this working directory.")
    root: Literal["sessiond", "pi", "claude", "codex", "opencode"] | None = Field(
        None, description="Only this root."
    )
    format: Literal["pi", "claude-code", "codex", "opencode"] | None = Field(
        None, description="Only this format."
    )
    subscribe: bool = Field(
        False, description="Also send this connection `session_list_update` when sessions appear or change."
    )
    cursor: str | None = Field(None, description="The `nextCursor` of the previous page.")
    limit: int = Field(50, ge=1, le=1000)


class ListResult(Result):
    sessions: list[SessionSummary]
    nextCursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last.")


class DeleteResult(Result):
    trashedPath: str


class AppendParams(SessionRef):
    entries: list[EntrySpec] = Field(min_length=1, max_length=1000)
    parentId: EntryId | None = Field(
        None, description="Parent of the first entry. Omitted: the current leaf; null: a new root."
    )
    expectLeafId: EntryId | None = Field(
        None, description="Append only if the leaf is still this entry (omitted: no check; null: no leaf)."
    )
    durability: Durability | None = Field(
        None, description="buffered | fsync; default: the daemon's setting."
    )


class AppendResult(Result):
    entryIds: list[str]
    leafId: str


class EntriesParams(SessionRef):
    offset: int | None = Field(None, ge=0, description="Position in file order (default 0).")
    afterId: EntryId | None = Field(None, description="Start after this entry (file order).")
    limit: int = Field(100, ge=1, le=5000)


class EntriesResult(Result):
    entries: list[Entry]
    offset: int
    nextOffset: int | None
    total: int


class SetNameParams(SessionRef):
    name: str
    durability: Durability | None = None


class SetNameResult(Result):
    entryId: str
    name: str | None


class TreeParams(SessionRef, WorkDone):
    pass


class ForkParams(SessionRef):
    entryId: EntryId
    position: Literal["before", "at"] = Field(
        "before", description="before: fork before a user message (its parent); at: clone up to the entry."
    )


class ForkResult(Result):
    sessionId: str = Field(description="The new session.")
    path: str
    leafId: str | None
    saved: bool = Field(description="Written at once iff the copied path holds a user or assistant message.")
    selectedText: str | None = Field(
        None, description="For `before`: the text of the user message forked at."
    )


# --------------------------------------------------------------------------- tree


class TreeResult(Result):
    leafId: str | None
    nodes: list[TreeNode] = Field(description="Every entry, in file order.")


class BranchParams(SessionRef):
    entryId: EntryId | None = Field(None, description="Default: the leaf.")
    full: bool = Field(False, description="Include the entries, not only their ids.")


class BranchResult(Result):
    entryIds: list[str] = Field(description="Root to entry.")
    entries: list[Entry] | None = None


class NavigateParams(SessionRef):
    targetId: EntryId | None = Field(description="The entry to continue from; null: before the first entry.")
    summary: str | None = Field(
        None, description="A summary of the branch being left (becomes a branch summary)."
    )
    summaryDetails: Any = None
    label: str | None = None
    durability: Durability | None = None


class NavigateResult(Result):
    leafId: str | None
    editorText: str | None = Field(
        None, description="The text of a user message navigated to, for the editor."
    )
    summaryEntryId: str | None = None
    markerEntryId: str | None = None
    moved: bool


class LabelParams(SessionRef):
    entryId: EntryId
    label: str | None = Field(description="null or empty clears it.")
    durability: Durability | None = None


class LabelResult(Result):
    entryId: str


# --------------------------------------------------------------------------- context


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


class ConfigureParams(SessionRef):
    contextWindow: int | None = Field(
        None, ge=1, description="Override the model's context window; null resets."
    )


class ConfigureResult(Result):
    contextWindow: int | None


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class MethodSpec:
    name: str
    params: type[BaseModel]
    result: type[BaseModel] | None
    summary: str
    errors: tuple[C, ...] = ()
    example: dict[str, Any] = field(default_factory=dict)
    example_result: Any = None
    long_running: bool = False
    """Accepts a ``workDoneToken`` and reports ``$/progress``."""


_S = (C.INVALID_PARAMS, C.SESSION_NOT_FOUND)
_W = (C.STORAGE_ERROR, C.SESSION_CHANGED, C.READ_ONLY)

METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "initialize",
            InitializeParams,
            InitializeResult,
            "Start the connection: protocol version, client info and capabilities (incl. notification opt-out).",
            (C.INVALID_PARAMS,),
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "my-editor", "version": "1.0"},
                "capabilities": {"notifications": {"optOut": ["usage_update"]}},
            },
            {
                "protocolVersion": 1,
                "serverInfo": {"name": "sessiond", "version": "0.1.0"},
                "capabilities": {"framing": ["content-length", "ndjson"]},
            },
        ),
        MethodSpec(
            "shutdown",
            Empty,
            None,
            "Prepare to close: no more requests are accepted on this connection.",
            (),
            {},
            None,
        ),
        MethodSpec(
            "daemon/status",
            Empty,
            DaemonStatusResult,
            "The daemon itself: pid, version, uptime, store, socket, open sessions and connected clients (what `sessiond status` shows).",
            (),
            {},
            {
                "pid": 4242,
                "version": "0.1.0",
                "protocolVersion": 1,
                "startedAt": "2026-07-29T09:00:00.000Z",
                "uptimeSeconds": 3600.5,
                "store": "/home/dev/.local/share/sessiond",
                "socket": "/run/user/1000/sessiond/sessiond.sock",
                "tcp": None,
                "log": "/home/dev/.local/share/sessiond/daemon.log",
                "sessions": [
                    {
                        "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                        "path": "/home/dev/.local/share/sessiond/sessions/--home-dev-webapp--/2026-07-29T09-00-00-000Z_019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001.jsonl",
                        "root": "sessiond",
                        "format": "pi",
                        "readOnly": False,
                        "subscribers": 1,
                        "users": 1,
                    }
                ],
                "clients": [
                    {
                        "id": 3,
                        "peer": "unix uid=1000",
                        "name": "my-editor",
                        "version": "1.0",
                        "connectedAt": "2026-07-29T09:10:00.000Z",
                        "subscriptions": ["019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"],
                        "current": False,
                    }
                ],
            },
        ),
        MethodSpec(
            "session/new",
            NewParams,
            NewResult,
            "Create a session in the store (its file appears with the first user or assistant message).",
            (C.INVALID_PARAMS, C.SESSION_EXISTS, C.STORAGE_ERROR),
            {"cwd": "/home/dev/webapp", "subscribe": True},
            {
                "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                "path": "/home/dev/.local/share/sessiond/sessions/--home-dev-webapp--/2026-12-02T13-15-53-822Z_019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001.jsonl",
                "cwd": "/home/dev/webapp",
            },
        ),
        MethodSpec(
            "session/load",
            LoadParams,
            LoadResult,
            "Open a session (and optionally subscribe this connection to its updates).",
            (*_S, C.NOT_A_SESSION),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001", "subscribe": True},
            None,
            long_running=True,
        ),
        MethodSpec(
            "session/list",
            ListParams,
            ListResult,
            "Sessions of the store (or of one cwd), newest first, a page at a time.",
            (C.INVALID_PARAMS,),
            {"cwd": "/home/dev/webapp", "limit": 20},
            None,
            long_running=True,
        ),
        MethodSpec(
            "session/close",
            SessionRef,
            EmptyResult,
            "Unsubscribe this connection and release the session when nobody uses it.",
            _S,
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
            {},
        ),
        MethodSpec(
            "session/delete",
            SessionRef,
            DeleteResult,
            "Move the session file to the store's trash folder (nothing is unlinked). Another "
            "agent's session (a read-only root) is refused with `READ_ONLY`: sessiond never moves "
            "its files.",
            (*_S, C.READ_ONLY, C.STORAGE_ERROR),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
            None,
        ),
        MethodSpec(
            "session/subscribe",
            SessionRef,
            LoadResult,
            "Receive `session/update` notifications for this session on this connection.",
            _S,
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
            None,
        ),
        MethodSpec(
            "session/unsubscribe",
            SessionRef,
            EmptyResult,
            "Stop receiving updates for the session.",
            _S,
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
            {},
        ),
        MethodSpec(
            "session/append",
            AppendParams,
            AppendResult,
            "Append a batch of entries (written at once, or not at all). The first hangs below `parentId` "
            "(default: the leaf), each next one below the previous; `expectLeafId` makes it compare-and-append.",
            (*_S, C.ENTRY_NOT_FOUND, C.LEAF_MISMATCH, C.NOT_ON_BRANCH, C.NOT_EDITABLE, *_W),
            {
                "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                "entries": [
                    {
                        "type": "message",
                        "message": {
                            "role": "user",
                            "content": [{"type": "text", "text": "Add tests"}],
                            "timestamp": 1785315780000,
                        },
                    }
                ],
                "durability": "fsync",
            },
            {"entryIds": ["a1b2c3d4"], "leafId": "a1b2c3d4"},
        ),
        MethodSpec(
            "session/entries",
            EntriesParams,
            EntriesResult,
            "Entries in file order, a page at a time (by offset or after an id).",
            (*_S, C.ENTRY_NOT_FOUND),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001", "limit": 100},
        ),
        MethodSpec(
            "session/setName",
            SetNameParams,
            SetNameResult,
            "Set the session's name (empty clears it).",
            (*_S, *_W),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001", "name": "Auth rewrite"},
            {"entryId": "5e6f7a8b", "name": "Auth rewrite"},
        ),
        MethodSpec(
            "session/fork",
            ForkParams,
            ForkResult,
            "Fork (`before` a user message) or clone (`at` an entry) into a new session. A read-only "
            "session's fork goes into sessiond's store; a Codex or OpenCode session's fork is the "
            "context at that point written as a new Pi session (an export).",
            (*_S, C.ENTRY_NOT_FOUND, C.NOT_SAVED, C.STORAGE_ERROR),
            {
                "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                "entryId": "a1b2c3d4",
                "position": "before",
            },
        ),
        MethodSpec(
            "session/configure",
            ConfigureParams,
            ConfigureResult,
            "Per-session settings kept beside the transcript (not in it): the context window.",
            _S,
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001", "contextWindow": 200000},
            {"contextWindow": 200000},
        ),
        MethodSpec(
            "tree/get",
            TreeParams,
            TreeResult,
            "Every entry as a node (id, parentId, type, role, preview, label, timestamp, child count) and the leaf.",
            _S,
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
            None,
            long_running=True,
        ),
        MethodSpec(
            "tree/branch",
            BranchParams,
            BranchResult,
            "The path root → entry (default: the leaf). For a Claude Code transcript: the chain "
            "`claude --resume` rebuilds up to the entry, parallel tool calls and results it "
            "recovers from sibling records included.",
            (*_S, C.ENTRY_NOT_FOUND),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
        ),
        MethodSpec(
            "tree/navigate",
            NavigateParams,
            NavigateResult,
            "Continue from another entry (Pi's /tree): a user message target leaves the leaf on its parent and "
            "returns its text for the editor; a `summary` becomes a branch summary; the move is persisted.",
            (*_S, C.ENTRY_NOT_FOUND, *_W),
            {
                "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                "targetId": "a1b2c3d4",
                "summary": "Tried JWT first; switched to cookies.",
            },
        ),
        MethodSpec(
            "tree/label",
            LabelParams,
            LabelResult,
            "Set or clear the label of an entry.",
            (*_S, C.ENTRY_NOT_FOUND, *_W),
            {
                "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                "entryId": "a1b2c3d4",
                "label": "checkpoint",
            },
            {"entryId": "9c8d7e6f"},
        ),
        MethodSpec(
            "context/get",
            ContextParams,
            ContextResult,
            "What the model sees: the projected messages with their source entries, model and thinking level.",
            (*_S, C.ENTRY_NOT_FOUND),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
        ),
        MethodSpec(
            "context/usage",
            SessionRef,
            UsageResult,
            "How full the context is: last provider usage plus an estimate of what came after.",
            _S,
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"},
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
            (*_S, C.ENTRY_NOT_FOUND, C.NOT_ON_BRANCH, C.NOT_EDITABLE, *_W),
            {
                "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                "targetId": "a1b2c3d4",
                "replacement": None,
            },
            {"entryId": "0f1e2d3c"},
        ),
    ]
}


# --------------------------------------------------------------------------- compaction


class CompactionOptions(SessionRef):
    keepRecentTokens: int | None = Field(
        None, ge=0, description="Override the session's setting for this call."
    )
    reserveTokens: int | None = Field(None, ge=0, description="Override the session's setting for this call.")
    customInstructions: str | None = Field(
        None, description="Extra focus for the summary (`Additional focus: ...`)."
    )


class PrepareParams(CompactionOptions):
    pass


class PrepareResult(Result):
    prepared: bool = Field(description="false: nothing to compact (see `reason`).")
    reason: Literal["already_compacted", "nothing_to_compact"] | None = None
    message: str | None = None
    preparationId: str | None = Field(None, description="Pass to `compaction/commit`; refused once stale.")
    firstKeptEntryId: str | None = None
    isSplitTurn: bool | None = None
    tokensBefore: int | None = None
    previousSummary: str | None = None
    messagesToSummarize: list[Open] | None = Field(None, description="The agent messages to summarise.")
    turnPrefixMessages: list[Open] | None = None
    conversation: str | None = Field(
        None, description="messagesToSummarize serialized as a summarizer sees them."
    )
    turnPrefix: str | None = Field(None, description="The split turn's beginning, serialized.")
    readFiles: list[str] | None = None
    modifiedFiles: list[str] | None = None
    fileOps: Open | None = Field(None, description="{read, written, edited} paths.")
    prompts: Open | None = Field(
        None, description="{systemPrompt, history, turnPrefix}: the exact texts sessiond would send."
    )
    settings: Open | None = None


class CommitParams(SessionRef):
    summary: str = Field(min_length=1)
    firstKeptEntryId: EntryId | None = Field(description="The first entry kept verbatim; null keeps nothing.")
    tokensBefore: int = Field(ge=0)
    preparationId: str | None = Field(
        None, description="From compaction/prepare: refused if the branch moved since."
    )
    details: Any = Field(
        None, description="Default with a preparationId: {readFiles, modifiedFiles} of the preparation."
    )
    usage: Open | None = None
    fromHook: bool | None = None
    durability: Durability | None = None


class CompactionResult(Result):
    compactionId: str
    entryId: str = Field(description="The compaction entry.")
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: int | None = Field(description="Estimated tokens of the context after the checkpoint.")
    summary: str
    summarizer: str | None = None


class RunParams(CompactionOptions, WorkDone):
    reason: Literal["manual", "threshold", "overflow"] = "manual"
    summarizer: Literal["auto", "client", "command", "http", "extractive"] = Field(
        "auto", description="auto: a capable client, else the configured command/http, else extractive."
    )


class CancelResult(Result):
    cancelled: bool = Field(description="false: no compaction of the session was running.")
    compactionId: str | None = None


class MicrocompactParams(SessionRef):
    keepRecent: int | None = Field(
        None, ge=1, description="Tool results kept intact (newest); default: the setting."
    )
    tools: list[str] | None = Field(
        None, description="Tools whose results may be cleared; default: the setting."
    )
    dryRun: bool = False
    durability: Durability | None = None


class ClearedResult(Result):
    entryId: str = Field(description="The tool result whose content is replaced.")
    toolName: str | None = None
    tokensSaved: int


class MicrocompactResult(Result):
    cleared: list[ClearedResult]
    entryIds: list[str] = Field(description="The context_edit entries written (none on a dry run).")
    tokensSaved: int


class SnipParams(SessionRef):
    fromEntryId: EntryId = Field(description="First entry of the range (on the current branch).")
    toEntryId: EntryId = Field(description="Last entry of the range.")
    dryRun: bool = False
    durability: Durability | None = None


class SnipResult(Result):
    hidden: list[str] = Field(description="Entries whose messages leave the context.")
    entryIds: list[str] = Field(description="The context_edit entries written (none on a dry run).")


class SettingsParams(SessionRef):
    set: Open | None = Field(
        None, description="Settings to change (a partial object); null values reset to the default."
    )


class SettingsResult(Result):
    enabled: bool = Field(description="Automatic (threshold and overflow) compaction.")
    reserveTokens: int
    keepRecentTokens: int
    modelOverrides: Open = Field(description='"provider/modelId" -> {reserveTokens?, keepRecentTokens?}')
    contextWindow: int | None = Field(
        description="Override of the model's window (null: from the model table)."
    )
    maxOutputTokens: int | None = Field(
        description="The model's output limit, for recoverable `length` stops."
    )
    summarizer: str
    microcompact: Open = Field(description="{enabled, keepRecent, triggerCount, gapMinutes, tools}")
    effective: Open = Field(
        description="What applies now, for the model in use: {reserveTokens, keepRecentTokens, contextWindow}."
    )


_C = (C.COMPACTION_RUNNING,)
_SID = "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"
METHODS.update(
    {
        m.name: m
        for m in [
            MethodSpec(
                "compaction/prepare",
                PrepareParams,
                PrepareResult,
                "What a compaction would summarise and keep now, with the exact texts a summarizer would get; or why there is nothing to compact.",
                _S,
                {"sessionId": _SID, "keepRecentTokens": 20000},
            ),
            MethodSpec(
                "compaction/commit",
                CommitParams,
                CompactionResult,
                "Store a checkpoint an agent summarised itself (validated against the branch and the preparation).",
                (*_S, C.ENTRY_NOT_FOUND, C.NOT_ON_BRANCH, C.PREPARATION_STALE, *_C, *_W),
                {
                    "sessionId": _SID,
                    "preparationId": "p-1",
                    "summary": "## Goal\n...",
                    "firstKeptEntryId": "a1b2c3d4",
                    "tokensBefore": 150000,
                },
            ),
            MethodSpec(
                "compaction/run",
                RunParams,
                CompactionResult,
                "Compact now: prepare, get a summary from a summarizer, store the checkpoint (progress as compaction_update).",
                (
                    *_S,
                    C.NOTHING_TO_COMPACT,
                    C.SUMMARY_REFUSED,
                    C.SUMMARIZER_UNAVAILABLE,
                    C.REQUEST_CANCELLED,
                    *_C,
                    *_W,
                ),
                {"sessionId": _SID, "reason": "manual", "customInstructions": "Focus on the failing tests"},
                long_running=True,
            ),
            MethodSpec(
                "compaction/cancel",
                SessionRef,
                CancelResult,
                "Cancel the session's running compaction, whoever started it (nothing is written).",
                _S,
                {"sessionId": _SID},
            ),
            MethodSpec(
                "compaction/microcompact",
                MicrocompactParams,
                MicrocompactResult,
                "Clear the content of old tool results (all but the newest `keepRecent`) with a fixed placeholder, as context edits.",
                (*_S, *_W),
                {"sessionId": _SID, "keepRecent": 3},
            ),
            MethodSpec(
                "compaction/snip",
                SnipParams,
                SnipResult,
                "Hide a range of the branch from the context (context edits); never splits a tool call from its result.",
                (*_S, C.ENTRY_NOT_FOUND, C.NOT_ON_BRANCH, *_W),
                {"sessionId": _SID, "fromEntryId": "a1b2c3d4", "toEntryId": "e5f6a7b8"},
            ),
            MethodSpec(
                "compaction/settings",
                SettingsParams,
                SettingsResult,
                "Get (and with `set`, change) the session's compaction settings.",
                _S,
                {"sessionId": _SID, "set": {"enabled": True, "reserveTokens": 16384}},
            ),
        ]
    }
)


# --------------------------------------------------------------------------- file history


class TrackParams(SessionRef):
    path: str = Field(
        min_length=1, description="The file (relative to the session's cwd, or absolute in a root)."
    )
    messageId: EntryId | None = Field(
        None, description="The prompt this edit belongs to; default: the latest checkpoint."
    )
    phase: Literal["before", "after"] = Field(
        "before", description="before: about to modify it (back it up); after: the session wrote it."
    )


class TrackResult(Result):
    path: str = Field(description="The file's key: relative to the cwd, or absolute.")
    messageId: str
    state: Open = Field(description="What was recorded: {kind, blob?, mode?, size?, target?}.")
    entryId: str = Field(description="The sessiond.fileSnapshot entry written.")


class CheckpointParams(SessionRef):
    messageId: EntryId = Field(description="The user prompt's entry id.")


class CheckpointResult(Result):
    messageId: str
    files: int = Field(description="Tracked files recorded.")
    changed: int = Field(description="Files whose content differs from the previous checkpoint.")
    entryId: str | None = Field(description="The sessiond.fileSnapshot entry (null: nothing tracked yet).")


class FileHistoryListResult(Result):
    checkpoints: list[Open] = Field(
        description="Oldest first: {messageId, kind, prompt, timestamp, files, changed, entryId?}."
    )
    tracked: list[str]


class DiffParams(SessionRef):
    messageId: EntryId
    path: str | None = Field(None, description="Only this file.")


class DiffResult(Result):
    files: list[Open] = Field(
        description="{path, status, added, removed, binary, diff?, tooLarge?, sizes}: checkpoint -> disk now."
    )
    added: int
    removed: int


class RewindParams(SessionRef):
    messageId: EntryId = Field(description="A checkpoint, or the undoId of an earlier rewind.")
    dryRun: bool = False
    force: bool = Field(False, description="Also overwrite files someone else changed (never refused paths).")
    conversation: bool = Field(False, description="Also move the leaf to before that prompt (Pi's navigate).")


class RewindResult(Result):
    dryRun: bool
    files: list[Open] = Field(description="{path, action, status, reason?} per tracked file.")
    written: int
    deleted: int
    conflicts: int
    refused: int
    undoId: str | None = Field(
        description="Rewind to this to undo (null on a dry run or when nothing changed)."
    )
    leafId: str | None = None
    editorText: str | None = Field(None, description="With conversation: the prompt's text.")


_FH = (C.PATH_REFUSED, C.READ_ONLY)
METHODS.update(
    {
        m.name: m
        for m in [
            MethodSpec(
                "fileHistory/track",
                TrackParams,
                TrackResult,
                "Before modifying a file: back up its current content into the prompt's snapshot (phase after: record what the session wrote).",
                (*_S, *_FH, *_W),
                {"sessionId": _SID, "path": "src/app.py"},
            ),
            MethodSpec(
                "fileHistory/checkpoint",
                CheckpointParams,
                CheckpointResult,
                "At a user prompt: record the state of every tracked file.",
                (*_S, C.ENTRY_NOT_FOUND, *_W),
                {"sessionId": _SID, "messageId": "a1b2c3d4"},
            ),
            MethodSpec(
                "fileHistory/list",
                SessionRef,
                FileHistoryListResult,
                "The session's checkpoints (prompt, time, files, changes) and tracked files.",
                _S,
                {"sessionId": _SID},
            ),
            MethodSpec(
                "fileHistory/diff",
                DiffParams,
                DiffResult,
                "What changed since a checkpoint: per-file unified diffs and +/- counts against the disk now.",
                (*_S, C.CHECKPOINT_NOT_FOUND, C.PATH_REFUSED),
                {"sessionId": _SID, "messageId": "a1b2c3d4"},
            ),
            MethodSpec(
                "fileHistory/rewind",
                RewindParams,
                RewindResult,
                "Put the tracked files back to a checkpoint; conflicts (someone else's changes) are left alone unless forced.",
                (*_S, C.CHECKPOINT_NOT_FOUND, C.PATH_REFUSED, *_W),
                {"sessionId": _SID, "messageId": "a1b2c3d4", "dryRun": True},
                long_running=True,
            ),
        ]
    }
)
