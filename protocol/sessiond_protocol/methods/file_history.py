"""File history: back up files before the agent edits them, checkpoints at prompts, diffs, rewind and its undo."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import EntryId, Open, Result
from .base import EXAMPLE_SESSION_ID, SESSION_ERRORS, WRITE_ERRORS, MethodSpec, SessionRef


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


FILE_ERRORS = (C.PATH_REFUSED, C.READ_ONLY)

METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "fileHistory/track",
            TrackParams,
            TrackResult,
            "Before modifying a file: back up its current content into the prompt's snapshot (phase after: record what the session wrote).",
            (*SESSION_ERRORS, *FILE_ERRORS, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "path": "src/app.py"},
        ),
        MethodSpec(
            "fileHistory/checkpoint",
            CheckpointParams,
            CheckpointResult,
            "At a user prompt: record the state of every tracked file.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "messageId": "a1b2c3d4"},
        ),
        MethodSpec(
            "fileHistory/list",
            SessionRef,
            FileHistoryListResult,
            "The session's checkpoints (prompt, time, files, changes) and tracked files.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
        ),
        MethodSpec(
            "fileHistory/diff",
            DiffParams,
            DiffResult,
            "What changed since a checkpoint: per-file unified diffs and +/- counts against the disk now.",
            (*SESSION_ERRORS, C.CHECKPOINT_NOT_FOUND, C.PATH_REFUSED),
            {"sessionId": EXAMPLE_SESSION_ID, "messageId": "a1b2c3d4"},
        ),
        MethodSpec(
            "fileHistory/rewind",
            RewindParams,
            RewindResult,
            "Put the tracked files back to a checkpoint; conflicts (someone else's changes) are left alone unless forced.",
            (*SESSION_ERRORS, C.CHECKPOINT_NOT_FOUND, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "messageId": "a1b2c3d4", "dryRun": True},
            long_running=True,
        ),
    ]
}
