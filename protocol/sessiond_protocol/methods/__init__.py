"""Every request a client can send: its params, its result, the errors it can raise, an example.

One module per method group (lifecycle, sessions, tree, context, compaction, fileHistory), each
declaring its models and its specs; this package joins them into ``METHODS`` in the order the
SPEC documents them. Every model is importable from here (``from sessiond_protocol import
methods as M``; ``M.AppendParams``).
"""

from __future__ import annotations

from .base import (
    Empty,
    EmptyResult,
    MethodSpec,
    SessionRef,
)
from .compaction import METHODS as _COMPACTION
from .compaction import (
    CancelResult,
    ClearedResult,
    CommitParams,
    CompactionOptions,
    CompactionResult,
    MicrocompactParams,
    MicrocompactResult,
    PrepareParams,
    PrepareResult,
    RunParams,
    SettingsParams,
    SettingsResult,
    SnipParams,
    SnipResult,
)
from .context import METHODS as _CONTEXT
from .context import (
    ContextParams,
    ContextResult,
    EditParams,
    EditResult,
    UsageResult,
)
from .daemon import METHODS as _DAEMON
from .daemon import (
    DaemonStatusResult,
    StatusAdmission,
    StatusClient,
    StatusFiles,
    StatusMemory,
    StatusSession,
    ViewerCodeParams,
    ViewerCodeResult,
)
from .file_history import METHODS as _FILE_HISTORY
from .file_history import (
    CheckpointParams,
    CheckpointResult,
    DiffFile,
    DiffParams,
    DiffResult,
    FileHistoryListResult,
    RewindParams,
    RewindResult,
    TrackParams,
    TrackResult,
)
from .lifecycle import METHODS as _LIFECYCLE
from .lifecycle import (
    ClientCapabilities,
    ClientInfo,
    InitializeParams,
    InitializeResult,
    NotificationOptions,
    ServerInfo,
)
from .search import METHODS as _SEARCH
from .search import SearchHit, SearchParams, SearchProgress, SearchResult
from .sessions import (
    MAX_ENTRIES_PER_APPEND,
    AppendEnvelope,
    AppendParams,
    AppendResult,
    ConfigureParams,
    ConfigureResult,
    DeleteResult,
    EntriesParams,
    EntriesResult,
    ExportParams,
    ExportResult,
    ForkParams,
    ForkResult,
    ListParams,
    ListResult,
    LoadParams,
    LoadResult,
    NewParams,
    NewResult,
    SetNameParams,
    SetNameResult,
    TailParams,
    TailResult,
)
from .sessions import METHODS as _SESSIONS
from .stats import METHODS as _STATS
from .stats import (
    StatsIndexing,
    StatsQueryParams,
    StatsQueryResult,
    StatsRow,
    StatsSubscribeParams,
    StatsTotals,
    StatsUpdateResult,
)
from .tree import METHODS as _TREE
from .tree import (
    BranchParams,
    BranchResult,
    LabelParams,
    LabelResult,
    NavigateParams,
    NavigateResult,
    TreeParams,
    TreeResult,
)

METHODS: dict[str, MethodSpec] = {
    **_LIFECYCLE,
    **_DAEMON,
    **_SESSIONS,
    **_TREE,
    **_CONTEXT,
    **_COMPACTION,
    **_FILE_HISTORY,
    **_SEARCH,
    **_STATS,
}
"""Every method by name, in the SPEC's order."""

__all__ = [
    "MAX_ENTRIES_PER_APPEND",
    "METHODS",
    "AppendEnvelope",
    "AppendParams",
    "AppendResult",
    "BranchParams",
    "BranchResult",
    "CancelResult",
    "CheckpointParams",
    "CheckpointResult",
    "ClearedResult",
    "ClientCapabilities",
    "ClientInfo",
    "CommitParams",
    "CompactionOptions",
    "CompactionResult",
    "ConfigureParams",
    "ConfigureResult",
    "ContextParams",
    "ContextResult",
    "DaemonStatusResult",
    "DeleteResult",
    "DiffFile",
    "DiffParams",
    "DiffResult",
    "EditParams",
    "EditResult",
    "Empty",
    "EmptyResult",
    "EntriesParams",
    "EntriesResult",
    "ExportParams",
    "ExportResult",
    "FileHistoryListResult",
    "ForkParams",
    "ForkResult",
    "InitializeParams",
    "InitializeResult",
    "LabelParams",
    "LabelResult",
    "ListParams",
    "ListResult",
    "LoadParams",
    "LoadResult",
    "MethodSpec",
    "MicrocompactParams",
    "MicrocompactResult",
    "NavigateParams",
    "NavigateResult",
    "NewParams",
    "NewResult",
    "NotificationOptions",
    "PrepareParams",
    "PrepareResult",
    "RewindParams",
    "RewindResult",
    "RunParams",
    "SearchHit",
    "SearchParams",
    "SearchProgress",
    "SearchResult",
    "ServerInfo",
    "SessionRef",
    "SetNameParams",
    "SetNameResult",
    "SettingsParams",
    "SettingsResult",
    "SnipParams",
    "SnipResult",
    "StatsIndexing",
    "StatsQueryParams",
    "StatsQueryResult",
    "StatsRow",
    "StatsSubscribeParams",
    "StatsTotals",
    "StatsUpdateResult",
    "StatusAdmission",
    "StatusClient",
    "StatusFiles",
    "StatusMemory",
    "StatusSession",
    "TailParams",
    "TailResult",
    "TrackParams",
    "TrackResult",
    "TreeParams",
    "TreeResult",
    "UsageResult",
    "ViewerCodeParams",
    "ViewerCodeResult",
]
