"""Sessions as a whole: create, open, list, close, delete, subscribe, append, page, name, fork, configure."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, JsonValue, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from ..errors import ErrorCode as C
from ..models import (
    Durability,
    Entry,
    EntryEnvelope,
    EntryId,
    EntrySpec,
    Open,
    Params,
    PathText,
    Result,
    SessionId,
    SessionSummary,
    WorkDone,
)
from .base import EXAMPLE_SESSION_ID, SESSION_ERRORS, WRITE_ERRORS, EmptyResult, MethodSpec, SessionRef


class NewParams(Params):
    cwd: PathText = Field(min_length=1, description="Absolute working directory of the session.")
    sessionId: SessionId | None = Field(None, description="A custom id (Pi's rule); default a UUIDv7.")
    parentSession: PathText | None = Field(
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
    messageCount: int | None = Field(
        None, description="The session's `messageCount` in `session/list` (the same number, by definition)."
    )
    firstMessage: str | None = Field(
        None,
        description="The session's `firstMessage` in `session/list`: the first prompt a person typed, "
        "injected context skipped. A session's title is `name`, else this (as in the list).",
    )


class ListParams(WorkDone):
    cwd: PathText | None = Field(None, description="Only the sessions of this working directory.")
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


OMITTED_IS_NOT_NULL: dict[str, JsonValue] = {"x-omitted-is-not-null": True}
"""A field's schema marker: leaving the field out means something else than sending ``null``
(clients must be able to do either; the Python client's argument defaults to ``UNSET``)."""

MAX_ENTRIES_PER_APPEND = "maxEntriesPerAppend"
"""The validation context's key for the server's limit of entries per append (its setting
``limits.max_entries_per_append``): ``AppendParams.model_validate(params, context={...})``."""


class AppendParams(SessionRef):
    """Refused before any entry is validated when there are more entries than the server's limit
    (``MAX_ENTRIES_PER_APPEND`` in the validation context; no limit without one)."""

    entries: list[EntrySpec] = Field(
        min_length=1,
        description="At most the server's `limits.max_entries_per_append` (default 1000); a longer "
        "batch is refused whole (-32602, `data.field` = `entries`).",
    )
    parentId: EntryId | None = Field(
        None,
        description="Parent of the first entry. Omitted: the current leaf; null: a new root.",
        json_schema_extra=OMITTED_IS_NOT_NULL,
    )
    expectLeafId: EntryId | None = Field(
        None,
        description="Append only if the leaf is still this entry (omitted: no check; null: no leaf).",
        json_schema_extra=OMITTED_IS_NOT_NULL,
    )
    durability: Durability | None = Field(
        None, description="buffered | fsync; default: the daemon's setting."
    )

    @field_validator("entries", mode="before")
    @classmethod
    def _within_the_servers_limit(cls, value: Any, info: ValidationInfo) -> Any:
        return _within_limit(value, info)


class AppendEnvelope(SessionRef):
    """``AppendParams`` as the daemon validates them: the same fields, rules and error fields,
    with each entry checked as an :data:`~sessiond_protocol.models.EntryEnvelope` (a message
    is not built into models: the daemon stores the entries as sent, and the store checks them
    once more the way Pi does). ``tests/protocol`` checks both refuse the same params at the
    same field."""

    entries: list[EntryEnvelope] = Field(min_length=1)
    parentId: EntryId | None = None
    expectLeafId: EntryId | None = None
    durability: Durability | None = None

    @field_validator("entries", mode="before")
    @classmethod
    def _within_the_servers_limit(cls, value: Any, info: ValidationInfo) -> Any:
        return _within_limit(value, info)


def _within_limit(value: Any, info: ValidationInfo) -> Any:
    limit = info.context.get(MAX_ENTRIES_PER_APPEND) if isinstance(info.context, dict) else None
    if limit is not None and isinstance(value, list) and len(value) > limit:
        raise PydanticCustomError("too_many_entries", "at most {limit} entries per append", {"limit": limit})
    return value


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


class TailParams(SessionRef):
    limit: int = Field(100, ge=1, le=1000, description="How many of the newest entries.")


class TailResult(Result):
    sessionId: str
    path: str = Field(description="The session file.")
    cwd: str = Field(description="Working directory (from the header, or the records; empty if unknown).")
    format: Literal["pi", "claude-code", "codex", "opencode"] = "pi"
    root: str = Field("sessiond", description="`sessiond`, `pi`, `claude`, `codex` or `opencode`.")
    readOnly: bool = Field(False, description="Writes are refused with -32019 READ_ONLY.")
    entries: list[Entry] = Field(description="The newest entries, in file order.")
    exact: bool = Field(
        description="Served by the open session (the same as `session/entries` at the end); false: read "
        "from the end of the file without opening the session, a preview that `tree/get` supersedes."
    )


class SetNameParams(SessionRef):
    name: str
    durability: Durability | None = None


class SetNameResult(Result):
    entryId: str
    name: str | None


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


class ExportParams(SessionRef):
    leafId: EntryId | None = Field(
        None, description="Export the context at this entry instead of the current leaf."
    )
    again: bool = Field(
        False,
        description="Write another copy even when the store holds an export of this session at "
        "the same leaf (otherwise that export is answered, `existing: true`).",
    )


class ExportResult(Result):
    sessionId: str = Field(description="The new Pi session in sessiond's store.")
    path: str
    cwd: str
    entryCount: int = Field(description="Entries written (the export marker included).")
    source: dict[str, Any] = Field(description="Where it came from: {sessionId, root, format, path, leafId}.")
    existing: bool = Field(
        False, description="An earlier export of the same session at the same leaf, not a new copy."
    )


class ConfigureParams(SessionRef):
    contextWindow: int | None = Field(
        None, ge=1, description="Override the model's context window; null resets."
    )


class ConfigureResult(Result):
    contextWindow: int | None


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "session/new",
            NewParams,
            NewResult,
            "Create a session in the store (its file appears with the first user or assistant message).",
            (C.INVALID_PARAMS, C.SESSION_EXISTS, C.STORAGE_ERROR),
            {"cwd": "/home/dev/webapp", "subscribe": True},
            {
                "sessionId": EXAMPLE_SESSION_ID,
                "path": "/home/dev/.local/share/sessiond/sessions/--home-dev-webapp--/2026-12-02T13-15-53-822Z_019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001.jsonl",
                "cwd": "/home/dev/webapp",
            },
        ),
        MethodSpec(
            "session/load",
            LoadParams,
            LoadResult,
            "Open a session (and optionally subscribe this connection to its updates).",
            (*SESSION_ERRORS, C.NOT_A_SESSION),
            {"sessionId": EXAMPLE_SESSION_ID, "subscribe": True},
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
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
            {},
        ),
        MethodSpec(
            "session/delete",
            SessionRef,
            DeleteResult,
            "Move the session file to the store's trash folder (nothing is unlinked). Another "
            "agent's session (a read-only root) is refused with `READ_ONLY`: sessiond never moves "
            "its files.",
            (*SESSION_ERRORS, C.READ_ONLY, C.STORAGE_ERROR),
            {"sessionId": EXAMPLE_SESSION_ID},
            None,
        ),
        MethodSpec(
            "session/subscribe",
            SessionRef,
            LoadResult,
            "Receive `session/update` notifications for this session on this connection.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
            None,
        ),
        MethodSpec(
            "session/unsubscribe",
            SessionRef,
            EmptyResult,
            "Stop receiving updates for the session.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
            {},
        ),
        MethodSpec(
            "session/append",
            AppendParams,
            AppendResult,
            "Append a batch of entries (written at once, or not at all). The first hangs below `parentId` "
            "(default: the leaf), each next one below the previous; `expectLeafId` makes it compare-and-append.",
            (
                *SESSION_ERRORS,
                C.ENTRY_NOT_FOUND,
                C.LEAF_MISMATCH,
                C.NOT_ON_BRANCH,
                C.NOT_EDITABLE,
                *WRITE_ERRORS,
            ),
            {
                "sessionId": EXAMPLE_SESSION_ID,
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
            validated_by=AppendEnvelope,
        ),
        MethodSpec(
            "session/entries",
            EntriesParams,
            EntriesResult,
            "Entries in file order, a page at a time (by offset or after an id).",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND),
            {"sessionId": EXAMPLE_SESSION_ID, "limit": 100},
        ),
        MethodSpec(
            "session/tail",
            TailParams,
            TailResult,
            "The newest entries, cheaply: a session that is not open is not opened (its file's last bytes "
            "are read instead, for Pi and Claude Code files), so a viewer paints the end of a large session "
            "before `session/subscribe` has loaded it.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID, "limit": 100},
        ),
        MethodSpec(
            "session/setName",
            SetNameParams,
            SetNameResult,
            "Set the session's name (empty clears it).",
            (*SESSION_ERRORS, *WRITE_ERRORS),
            {"sessionId": EXAMPLE_SESSION_ID, "name": "Auth rewrite"},
            {"entryId": "5e6f7a8b", "name": "Auth rewrite"},
        ),
        MethodSpec(
            "session/fork",
            ForkParams,
            ForkResult,
            "Fork (`before` a user message) or clone (`at` an entry) into a new session. A read-only "
            "session's fork goes into sessiond's store; a Codex or OpenCode session's fork is the "
            "context at that point written as a new Pi session (an export).",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, C.NOT_SAVED, C.STORAGE_ERROR),
            {
                "sessionId": EXAMPLE_SESSION_ID,
                "entryId": "a1b2c3d4",
                "position": "before",
            },
        ),
        MethodSpec(
            "session/export",
            ExportParams,
            ExportResult,
            "Write the conversation any session's agent would resume with (its context at the leaf, "
            "or at `leafId`) as a new native Pi session in sessiond's store, whatever its format "
            "(Claude Code, Codex, OpenCode, Pi, sessiond). The source is only read. What `sessiond "
            "export` does, through the daemon.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, C.STORAGE_ERROR),
            {"sessionId": EXAMPLE_SESSION_ID},
        ),
        MethodSpec(
            "session/configure",
            ConfigureParams,
            ConfigureResult,
            "Per-session settings kept beside the transcript (not in it): the context window.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID, "contextWindow": 200000},
            {"contextWindow": 200000},
        ),
    ]
}
