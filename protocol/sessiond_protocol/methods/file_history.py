"""File history: back up files before the agent edits them, checkpoints at prompts, diffs, rewind and its undo."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import EntryId, Open, Result, WorkDone
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
    state: Open = Field(
        description='The file as this call found it: `{kind: "file", blob, mode?, size?}`, '
        '`{kind: "symlink", target}` or `{kind: "missing"}` (`blob`: the SHA-256 of the content; '
        "`mode` and `size` when it was backed up)."
    )
    backedUp: bool = Field(
        description="This call stored the file as the prompt's backup (false: the prompt had it "
        "already, or phase `after`, which only records what the session wrote)."
    )
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


class DiffFile(Result):
    """One tracked file: its state at the checkpoint against the disk now."""

    path: str = Field(description="The file's key: relative to the cwd, or absolute.")
    changed: bool | None = Field(
        description="It differs from the checkpoint (content, kind or mode); null when the file "
        "cannot be read now (`error` says why): whether it changed is unknown."
    )
    binary: bool = Field(description="Binary content: no `diff`, sizes only.")
    tooLarge: bool = Field(description="Larger than the diff limit (4 MiB): no `diff`, sizes only.")
    added: int = Field(description="Lines added since the checkpoint.")
    removed: int = Field(description="Lines removed since the checkpoint.")
    diff: str | None = Field(
        description="The unified diff, checkpoint -> disk (empty when equal); null when binary, too "
        "large, or no diff could be made (`error`)."
    )
    oldSize: int = Field(description="Bytes at the checkpoint.")
    newSize: int | None = Field(description="Bytes now; null when the file cannot be read.")
    from_: Open = Field(
        alias="from", description="The state at the checkpoint: {kind, blob?, mode?, size?, target?}."
    )
    to: Open | None = Field(description="The state now; null when the file cannot be read.")
    error: str | None = Field(
        None,
        description="Why no diff could be made: the path is refused now (a symlink, a directory...), "
        "cannot be read, or its backup is missing.",
    )


class DiffResult(Result):
    files: list[DiffFile] = Field(description="Per tracked file (or only `path`): checkpoint -> disk now.")
    added: int
    removed: int


class RewindParams(SessionRef, WorkDone):
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


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "fileHistory/track",
            TrackParams,
            TrackResult,
            "Before modifying a file: back up its current content into the prompt's snapshot (phase after: record what the session wrote).",
            (*SESSION_ERRORS, C.PATH_REFUSED, *WRITE_ERRORS),
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
            (*SESSION_ERRORS, C.CHECKPOINT_NOT_FOUND, C.PATH_REFUSED, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "messageId": "a1b2c3d4", "dryRun": True},
            long_running=True,
        ),
    ]
}
