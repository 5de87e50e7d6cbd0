"""Notifications the server sends: ``session/update`` (ACP's name and shape), progress, log."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from .models import Open, Result


class EntriesAppended(Result):
    sessionUpdate: Literal["entries_appended"]
    entryIds: list[str] = Field(description="The new entries, in file order.")
    parentIds: list[str | None]
    types: list[str]
    leafId: str | None = Field(description="The leaf after the append.")
    external: bool = Field(
        False, description="Written by another program (watched file), not through sessiond."
    )


class LeafChanged(Result):
    sessionUpdate: Literal["leaf_changed"]
    leafId: str | None
    previousLeafId: str | None


class SessionInfoUpdate(Result):
    sessionUpdate: Literal["session_info_update"]
    title: str | None
    updatedAt: str | None = None


class LabelUpdate(Result):
    sessionUpdate: Literal["label_update"]
    entryId: str = Field(description="The labelled entry.")
    label: str | None = Field(description="null: the label was cleared.")


class UsageUpdate(Result):
    sessionUpdate: Literal["usage_update"]
    used: int | None
    size: int | None
    percent: float | None
    source: Literal["api", "estimate", "unknown"]


class CompactionUpdate(Result):
    """ACP's compaction_update, with sessiond's reason and retry hint."""

    sessionUpdate: Literal["compaction_update"]
    compactionId: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    reason: Literal["manual", "threshold", "overflow"]
    willRetry: bool = Field(
        False, description="After an overflow: the agent should retry its last request now."
    )
    summary: str | None = None
    error: str | None = None
    entryId: str | None = Field(None, description="The compaction entry (completed).")
    tokensBefore: int | None = None
    tokensAfter: int | None = None


class ExternalChange(Result):
    """The file was changed by someone else in a way that cannot be followed line by line."""

    sessionUpdate: Literal["external_change"]
    reason: Literal["rewritten", "replaced", "deleted"] = Field(
        description="rewritten: truncated or shrunk in place; replaced: a new file under the same name."
    )
    leafId: str | None = Field(None, description="The leaf after reloading (deleted: null).")
    previousLeafId: str | None = None
    entryCount: int = Field(0, description="Entries after reloading.")
    previousEntryCount: int = 0


class FileHistoryUpdate(Result):
    """A checkpoint was recorded or files were rewound."""

    sessionUpdate: Literal["file_history_update"]
    event: Literal["checkpoint", "track", "rewind"]
    messageId: str | None = None
    paths: list[str] = Field(default_factory=list, description="Files concerned.")
    undoId: str | None = Field(None, description="After a rewind: rewind to this to undo it.")


class SessionListUpdate(Result):
    """To connections that listed with ``subscribe: true``: a session appeared, changed or went."""

    sessionUpdate: Literal["session_list_update"]
    change: Literal["added", "updated", "removed"]
    session: Open | None = Field(
        None, description="The session's summary (as session/list); null when removed."
    )
    path: str


class StatsUpdate(Result):
    """To connections that called ``stats/subscribe``: usage arrived (throttled, at most every
    0.2 s). The envelope's ``sessionId`` is the subscribed session, or ``""``."""

    sessionUpdate: Literal["stats_update"]
    today: Open = Field(description="Today's totals of every agent (as `stats/query` totals).")
    sessionId: str | None = None
    session: Open | None = Field(None, description="The subscribed session's totals.")


class ResyncRequired(Result):
    sessionUpdate: Literal["resync_required"]
    reason: str = Field(description="Updates were dropped (a slow reader) or the file changed underneath.")


SessionUpdateKind = Annotated[
    EntriesAppended
    | LeafChanged
    | SessionInfoUpdate
    | LabelUpdate
    | UsageUpdate
    | CompactionUpdate
    | ExternalChange
    | FileHistoryUpdate
    | SessionListUpdate
    | StatsUpdate
    | ResyncRequired,
    Field(discriminator="sessionUpdate"),
]


class SessionUpdate(BaseModel):
    """``session/update``: something changed in a session this connection subscribed to."""

    sessionId: str
    update: SessionUpdateKind


class ProgressValue(Result):
    kind: Literal["begin", "report", "end"]
    title: str | None = None
    message: str | None = None
    percentage: int | None = None


class Progress(BaseModel):
    """``$/progress``: work on a request that carried a ``workDoneToken``."""

    token: str | int
    value: ProgressValue


class LogMessage(BaseModel):
    """``window/logMessage``: a problem in background work that no request can report.

    Sent to every connection using or subscribed to the session concerned: an automatic
    compaction that failed, an overflow retry that could not omit the failed attempt, a
    flush that failed and made the daemon reload the session, an external change to a
    followed file that could not be read. The message starts with ``session <id>:``.
    Opt out with ``notifications.optOut: ["window/logMessage"]``.
    """

    type: int = Field(description="1 error, 2 warning, 3 info, 4 log (LSP's MessageType).")
    message: str


class SummarizeParams(BaseModel):
    """Write one summary for a compaction of a session, with your own model.

    Send ``systemPrompt`` as the system prompt and ``prompt`` as the one user message (it
    already holds the conversation, the previous summary and the instructions); or build your
    own request from the parts. Keep the answer within ``maxTokens``.
    """

    sessionId: str
    compactionId: str = Field(description="The compaction this summary is for (see compaction_update).")
    kind: Literal["history", "turn_prefix"] = Field(
        description="history: the conversation so far; turn_prefix: the beginning of a turn cut in two."
    )
    systemPrompt: str
    prompt: str = Field(description="The complete user message to send.")
    conversation: str = Field(description="The serialized conversation alone (also inside prompt).")
    previousSummary: str | None = Field(description="The summary being updated (also inside prompt).")
    customInstructions: str | None
    maxTokens: int = Field(description="The output budget for the summary.")


class SummarizeResult(BaseModel):
    """The client's answer to ``compaction/summarize``.

    Refused (nothing is written) when ``stopReason`` is ``error`` or ``length``, when
    ``content`` holds a ``toolCall`` block, or when the text is empty. ``summary`` or
    ``content`` (Pi assistant content blocks, text blocks joined with a newline) carries
    the text; answering with a JSON-RPC error fails the compaction with that message.
    """

    summary: str | None = Field(None, description="The summary text.")
    content: list[dict[str, Any]] | None = Field(None, description="Or: the model's content blocks.")
    stopReason: str = Field("stop", description="The model's stop reason.")
    errorMessage: str | None = None
    usage: dict[str, Any] | None = Field(None, description="The model's usage; stored on the checkpoint.")


NOTIFICATIONS: dict[str, type[BaseModel]] = {
    "session/update": SessionUpdate,
    "$/progress": Progress,
    "window/logMessage": LogMessage,
}


SERVER_REQUESTS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "compaction/summarize": (SummarizeParams, SummarizeResult),
}
"""Requests the server sends to clients that declared the matching capability."""
