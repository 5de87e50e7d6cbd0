"""Compaction: prepare and commit (the client summarises), run (sessiond does), cancel, micro-compaction, snip, settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import Durability, EntryId, Open, Result, WorkDone
from .base import EXAMPLE_SESSION_ID, SESSION_ERRORS, WRITE_ERRORS, MethodSpec, SessionRef


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


COMPACTION_ERRORS = (C.COMPACTION_RUNNING,)

METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "compaction/prepare",
            PrepareParams,
            PrepareResult,
            "What a compaction would summarise and keep now, with the exact texts a summarizer would get; or why there is nothing to compact.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID, "keepRecentTokens": 20000},
        ),
        MethodSpec(
            "compaction/commit",
            CommitParams,
            CompactionResult,
            "Store a checkpoint an agent summarised itself (validated against the branch and the preparation).",
            (
                *SESSION_ERRORS,
                C.ENTRY_NOT_FOUND,
                C.NOT_ON_BRANCH,
                C.PREPARATION_STALE,
                *COMPACTION_ERRORS,
                *WRITE_ERRORS,
            ),
            {
                "sessionId": EXAMPLE_SESSION_ID,
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
                *SESSION_ERRORS,
                C.NOTHING_TO_COMPACT,
                C.SUMMARY_REFUSED,
                C.SUMMARIZER_UNAVAILABLE,
                C.REQUEST_CANCELLED,
                *COMPACTION_ERRORS,
                *WRITE_ERRORS,
            ),
            {
                "sessionId": EXAMPLE_SESSION_ID,
                "reason": "manual",
                "customInstructions": "Focus on the failing tests",
            },
            long_running=True,
        ),
        MethodSpec(
            "compaction/cancel",
            SessionRef,
            CancelResult,
            "Cancel the session's running compaction, whoever started it (nothing is written).",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
        ),
        MethodSpec(
            "compaction/microcompact",
            MicrocompactParams,
            MicrocompactResult,
            "Clear the content of old tool results (all but the newest `keepRecent`) with a fixed placeholder, as context edits.",
            (*SESSION_ERRORS, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "keepRecent": 3},
        ),
        MethodSpec(
            "compaction/snip",
            SnipParams,
            SnipResult,
            "Hide a range of the branch from the context (context edits); never splits a tool call from its result.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, C.NOT_ON_BRANCH, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "fromEntryId": "a1b2c3d4", "toEntryId": "e5f6a7b8"},
        ),
        MethodSpec(
            "compaction/settings",
            SettingsParams,
            SettingsResult,
            "Get (and with `set`, change) the session's compaction settings.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID, "set": {"enabled": True, "reserveTokens": 16384}},
        ),
    ]
}
