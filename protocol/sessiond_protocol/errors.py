"""Error codes. JSON-RPC's reserved range for the protocol, -32000..-32099 for sessiond's own.

Every error carries ``data`` with the details a client needs to react without parsing the
message: ``field`` for invalid params, ``currentLeafId`` for a leaf mismatch, ``errno`` for
an I/O failure, ``entryId``/``sessionId`` for what was not found.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    REQUEST_CANCELLED = -32800
    OVERLOADED = -32001
    SESSION_NOT_FOUND = -32010
    ENTRY_NOT_FOUND = -32011
    LEAF_MISMATCH = -32012
    NOT_ON_BRANCH = -32013
    NOT_EDITABLE = -32014
    SESSION_EXISTS = -32015
    PATH_OUTSIDE_STORE = -32016
    SESSION_CHANGED = -32017
    STORAGE_ERROR = -32018
    READ_ONLY = -32019
    NOT_SAVED = -32020
    NOT_A_SESSION = -32021
    MESSAGE_TOO_LARGE = -32022
    COMPACTION_RUNNING = -32023
    NOTHING_TO_COMPACT = -32024
    SUMMARY_REFUSED = -32025
    PREPARATION_STALE = -32026
    SUMMARIZER_UNAVAILABLE = -32027
    PATH_REFUSED = -32028
    CHECKPOINT_NOT_FOUND = -32029
    PROTOCOL_VERSION_MISMATCH = -32030


ERRORS: dict[ErrorCode, str] = {
    ErrorCode.PARSE_ERROR: "The message is not valid JSON (or its framing is broken).",
    ErrorCode.INVALID_REQUEST: "The message is JSON but not a JSON-RPC 2.0 request or notification.",
    ErrorCode.METHOD_NOT_FOUND: "No such method.",
    ErrorCode.INVALID_PARAMS: "A parameter is missing, of the wrong type or breaks a rule; `data.field` names it.",
    ErrorCode.INTERNAL_ERROR: "A bug in sessiond. The message names it; no traceback is sent.",
    ErrorCode.SERVER_NOT_INITIALIZED: "A request arrived before `initialize`.",
    ErrorCode.REQUEST_CANCELLED: "The request was cancelled with `$/cancelRequest` or `$/cancel_request`.",
    ErrorCode.OVERLOADED: "Too many requests in flight on this connection; retry later.",
    ErrorCode.SESSION_NOT_FOUND: "No session with this id in the store (`data.sessionId`).",
    ErrorCode.ENTRY_NOT_FOUND: "No entry with this id in the session (`data.entryId`); Pi's `Entry X not found`.",
    ErrorCode.LEAF_MISMATCH: "`expectLeafId` is not the current leaf; `data.currentLeafId` is.",
    ErrorCode.NOT_ON_BRANCH: "The entry is not on the branch the operation works on (Pi's message).",
    ErrorCode.NOT_EDITABLE: "The entry contributes no editable model content (Pi's message).",
    ErrorCode.SESSION_EXISTS: "A session with this id or file already exists.",
    ErrorCode.PATH_OUTSIDE_STORE: "A path would leave the store (`..`, absolute escape, symlink).",
    ErrorCode.SESSION_CHANGED: "The session file was truncated, replaced or deleted underneath; reload it.",
    ErrorCode.STORAGE_ERROR: "Writing failed; nothing was acknowledged. `data.errno`: the OS error "
    "(disk full, I/O error; absent when none); `data.path`: the file, or the session id of a shared "
    "session; a shared (JetStream) session's cluster not answering adds `data.cluster` "
    '(`"unavailable"`), `data.reason` and `data.maybeStored` (true: the write may still reach the '
    "stream; it then shows up once, as another writer's entry).",
    ErrorCode.READ_ONLY: "The session belongs to another agent and is read-only; `data.hint` is the "
    "command that copies it into the store, where it can be changed (`sessiond export <id>`), "
    "`data.exportMethod` the request that does it (`session/export`).",
    ErrorCode.NOT_SAVED: "The session has no file yet (no user or assistant message was appended).",
    ErrorCode.NOT_A_SESSION: "The file is not a valid session.",
    ErrorCode.MESSAGE_TOO_LARGE: "The message exceeds the maximum message size.",
    ErrorCode.COMPACTION_RUNNING: "A compaction of this session is already running (`data.compactionId`).",
    ErrorCode.NOTHING_TO_COMPACT: "Nothing to compact: `data.reason` is `already_compacted` or `nothing_to_compact`.",
    ErrorCode.SUMMARY_REFUSED: "The summarizer's answer cannot be a checkpoint (error, cut off, a tool call, empty); nothing was written.",
    ErrorCode.PREPARATION_STALE: "The preparation no longer matches the branch (it moved, or was already compacted).",
    ErrorCode.PATH_REFUSED: "The path leaves the session's cwd and configured roots, or passes through a symlink (`data.path`, `data.reason`); for a rewind: the session's directory is not the one its file history was recorded in (`data.recorded`, `data.current`: `{dev, ino}`).",
    ErrorCode.CHECKPOINT_NOT_FOUND: "No file-history checkpoint with this messageId in the session.",
    ErrorCode.SUMMARIZER_UNAVAILABLE: "The chosen summarizer cannot be used (not configured, no capable client connected).",
    ErrorCode.PROTOCOL_VERSION_MISMATCH: "`initialize` asked for another protocol version than the server's (`data.clientVersion`, `data.serverVersion`); upgrade the older side.",
}


def field_path(loc: tuple[Any, ...], params: Any) -> str:
    """The dotted path (``data.field``) of a pydantic error location into what was sent.

    pydantic puts a discriminated union's tag and its own function/union markers into the
    location (``entries.0.message.role`` comes back as ``entries.0.message.message.role``);
    the daemon and the client both name the field by the path into the input instead.
    """
    parts: list[str] = []
    current = params
    tag_checked = False
    for item in loc:
        if isinstance(current, dict) and not tag_checked and current.get("type") == item:
            tag_checked = True
            continue  # the union variant's tag, not a field
        tag_checked = False
        if (isinstance(current, dict) and item in current) or (
            isinstance(current, list) and isinstance(item, int) and 0 <= item < len(current)
        ):
            current = current[item]
        elif isinstance(item, str) and item.startswith(("function-", "union[", "tagged-union")):
            continue
        else:
            current = None
        parts.append(str(item))
    return ".".join(parts)
