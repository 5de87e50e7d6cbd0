"""sessiond's exception types.

Every failure a client or a command-line user can cause has its own type here, carrying what
is needed to explain it (which file, which id, which field) and the JSON-RPC error code a
client gets for it (``error_code``, as the Python client's exception classes carry theirs).
The protocol layer turns any of them into an error answer with one function
(``rpc/errors.py``), without knowing the types; the command line maps them to messages and
exit codes. A type without a code is a bug if it reaches a client: it is answered as an
internal error, never as a guess.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sessiond_protocol.errors import ErrorCode


class SessiondError(Exception):
    """Base of every error sessiond reports on purpose (as opposed to a bug)."""

    error_code: ClassVar[ErrorCode | None] = None
    """What a client is answered with; every subclass declares its own (a test checks that
    each is in the SPEC's table). ``None`` (this base only): an internal error."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class PathError(SessiondError):
    """Base of the errors about one file or directory, for one reason: the message is the
    type's ``template`` filled with both, ``data`` carries ``path`` and ``reason`` (then
    anything more the type adds). A storage error unless the type says otherwise."""

    error_code = ErrorCode.STORAGE_ERROR
    template: ClassVar[str] = "{path!r}: {reason}"

    def __init__(self, path: str, reason: str, **data: Any) -> None:
        super().__init__(self.template.format(path=path, reason=reason), path=path, reason=reason, **data)
        self.path = path
        self.reason = reason


class NotASessionError(PathError):
    """A file that is not a session in the format it was read as."""

    error_code = ErrorCode.NOT_A_SESSION
    template = "{path} is not a valid Pi session: {reason}"


class EntryNotFoundError(SessiondError):
    """An id that names no entry of the session (Pi's ``Entry <id> not found``)."""

    error_code = ErrorCode.ENTRY_NOT_FOUND

    def __init__(self, entry_id: Any) -> None:
        super().__init__(f"Entry {entry_id} not found", entryId=entry_id)
        self.entry_id = entry_id


class InvalidSessionIdError(SessiondError):
    """A session id that fails Pi's rule (alphanumerics, ``.``, ``_``, ``-``; alphanumeric ends)."""

    error_code = ErrorCode.INVALID_PARAMS

    def __init__(self, session_id: Any) -> None:
        super().__init__(
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
            "and start and end with an alphanumeric character",
            sessionId=session_id,
        )
        self.session_id = session_id


class PathEscapeError(SessiondError):
    """A path derived from client input that would leave the root it must stay in."""

    error_code = ErrorCode.PATH_OUTSIDE_STORE

    def __init__(self, path: str, root: str, reason: str) -> None:
        super().__init__(f"Path {path!r} is outside {root}: {reason}", path=path, root=root, reason=reason)
        self.path = path
        self.root = root
        self.reason = reason


class InvalidArgumentError(SessiondError):
    """A value that breaks a rule of the operation; ``field`` names the offending argument."""

    error_code = ErrorCode.INVALID_PARAMS

    def __init__(self, message: str, field: str | None = None, **data: Any) -> None:
        super().__init__(message, field=field, **data)
        self.field = field


class BatchTooLargeError(InvalidArgumentError):
    """One write is bigger than the shared store takes in one message (JetStream's
    ``max_payload``). An append is one message so that it commits all or nothing, once, in one
    order for every daemon (docs/scale-out.md): it is refused rather than split."""

    def __init__(self, session: str, size: int, limit: int) -> None:
        super().__init__(
            f"The batch is {size:,} bytes as Pi lines; the shared session store takes at most "
            f"{limit:,} bytes per write (the cluster's max_payload, less the headers): "
            "send the entries in several appends",
            field="entries",
            sessionId=session,
            size=size,
            limit=limit,
        )
        self.size = size
        self.limit = limit


class EntryNotOnBranchError(SessiondError):
    """Pi's ``Entry <id> is not on the active branch``."""

    error_code = ErrorCode.NOT_ON_BRANCH

    def __init__(self, entry_id: Any) -> None:
        super().__init__(f"Entry {entry_id} is not on the active branch", entryId=entry_id)
        self.entry_id = entry_id


class NotEditableError(SessiondError):
    """Pi's ``Entry <id> does not contribute editable model content``."""

    error_code = ErrorCode.NOT_EDITABLE

    def __init__(self, entry_id: Any) -> None:
        super().__init__(f"Entry {entry_id} does not contribute editable model content", entryId=entry_id)
        self.entry_id = entry_id


class SessionExistsError(SessiondError):
    """The file a new session would be created as already exists (exclusive create failed)."""

    error_code = ErrorCode.SESSION_EXISTS

    def __init__(self, path: str) -> None:
        super().__init__(f"Session file already exists: {path}", path=path)
        self.path = path


class SessionNotSavedError(SessiondError):
    """An operation that needs the session's file before the file exists."""

    error_code = ErrorCode.NOT_SAVED

    def __init__(self, message: str = "This session has not been saved yet") -> None:
        super().__init__(message)


class JournalError(SessiondError):
    """Writing a session file failed; nothing was acknowledged."""

    error_code = ErrorCode.STORAGE_ERROR

    def __init__(self, message: str, path: str, errno: int | None = None) -> None:
        super().__init__(message, path=path, errno=errno)
        self.path = path
        self.errno = errno


class JournalBrokenError(JournalError):
    """A flush to disk failed earlier; the session must be reopened before it accepts writes.

    After a failed ``fdatasync`` the kernel may have dropped the dirty pages, so whether the
    earlier lines are on disk is unknown; going on would acknowledge entries on top of that.
    """


class ClusterUnavailableError(JournalError):
    """The JetStream cluster holding the session did not acknowledge a write (docs/scale-out.md).

    Reported as a storage error: nothing was acknowledged. ``stored`` says whether the write may
    still have reached the stream (an acknowledgement lost in flight): it then shows up as
    another writer's entry once the cluster is back, never twice.
    """

    def __init__(
        self, session: str, reason: str, *, stored: str = "no", outcome: str = "nothing was acknowledged"
    ) -> None:
        JournalError.__init__(
            self, f"The session store's cluster is unavailable ({reason}); {outcome}", session
        )
        self.data.update(cluster="unavailable", reason=reason, maybeStored=stored != "no")
        self.reason = reason


class SessionChangedError(PathError):
    """The session file was truncated, replaced or deleted by someone else; reload it."""

    error_code = ErrorCode.SESSION_CHANGED
    template = "Session file {path} changed underneath sessiond: {reason}"


class LeafMismatchError(SessiondError):
    """A compare-and-append found another leaf than the one the client expected."""

    error_code = ErrorCode.LEAF_MISMATCH

    def __init__(self, expected: Any, current: Any) -> None:
        super().__init__(
            f"Expected the leaf to be {expected}, but it is {current}",
            expectedLeafId=expected,
            currentLeafId=current,
        )
        self.expected = expected
        self.current = current


class ClientRequestError(SessiondError):
    """A client answered a request of the server (e.g. ``compaction/summarize``) with an error.

    The one server request is ``compaction/summarize``: a summarizing client that answers with
    an error has refused the summary, which is what a compaction reports.
    """

    error_code = ErrorCode.SUMMARY_REFUSED

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"The client answered {method} with error {code}: {message}", code=code)
        self.method = method
        self.code = code


class CompactionRunningError(SessiondError):
    """A second compaction of a session while one runs (they would both cut the same branch)."""

    error_code = ErrorCode.COMPACTION_RUNNING

    def __init__(self, session_id: str, compaction_id: str) -> None:
        super().__init__(
            f"A compaction of session {session_id} is already running ({compaction_id})",
            sessionId=session_id,
            compactionId=compaction_id,
        )
        self.compaction_id = compaction_id


class NothingToCompactError(SessiondError):
    """Pi's ``Already compacted`` / ``Nothing to compact (session too small)``."""

    error_code = ErrorCode.NOTHING_TO_COMPACT

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, reason=reason)
        self.reason = reason


class SummaryRefusedError(SessiondError):
    """A summarizer's answer that must not become a checkpoint (error, cut off, tool call, empty,
    timeout); nothing was written."""

    error_code = ErrorCode.SUMMARY_REFUSED

    def __init__(self, message: str, summarizer: str, reason: str) -> None:
        super().__init__(message, summarizer=summarizer, reason=reason)
        self.summarizer = summarizer
        self.reason = reason


class PreparationStaleError(SessiondError):
    """A preparation (or a running compaction) whose branch changed in a way the cut no longer fits."""

    error_code = ErrorCode.PREPARATION_STALE

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message, **data)


class SummarizerUnavailableError(SessiondError):
    """The chosen summarizer cannot be used at all (not configured, no capable client, ...)."""

    error_code = ErrorCode.SUMMARIZER_UNAVAILABLE

    def __init__(self, message: str, summarizer: str | None = None) -> None:
        super().__init__(message, summarizer=summarizer)
        self.summarizer = summarizer


class ReadOnlySessionError(SessiondError):
    """A write to a session sessiond only reads (another agent's transcript).

    The refusal names the way forward, in the message and as ``data.hint`` (a command a client
    can show or run) and ``data.exportMethod`` (the request that does the same): an export
    copies the session into the store as a Pi session, which takes every write."""

    error_code = ErrorCode.READ_ONLY

    def __init__(self, session_id: str, reason: str) -> None:
        hint = f"sessiond export {session_id}"
        super().__init__(
            f"Session {session_id} is read-only: {reason}. To change it, copy it into sessiond's "
            f"store first: {hint}",
            sessionId=session_id,
            reason=reason,
            hint=hint,
            exportMethod="session/export",
        )
        self.session_id = session_id
        self.reason = reason


class SessionNotFoundError(SessiondError):
    error_code = ErrorCode.SESSION_NOT_FOUND

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session {session_id} not found", sessionId=session_id)
        self.session_id = session_id


class CheckpointNotFoundError(SessiondError):
    """A file-history checkpoint (or undo id) the session does not have."""

    error_code = ErrorCode.CHECKPOINT_NOT_FOUND

    def __init__(self, message_id: str) -> None:
        super().__init__(f"No file-history checkpoint for message {message_id}", messageId=message_id)
        self.message_id = message_id


class OwnerOnlyError(SessiondError):
    """A request only the daemon's owner may make (on the Unix socket or stdio), sent over TCP or
    the viewer's WebSocket."""

    error_code = ErrorCode.INVALID_REQUEST

    def __init__(self, method: str) -> None:
        super().__init__(f"{method} is answered on the Unix socket only", method=method)


class AuthenticationError(SessiondError):
    """``initialize`` without the TCP token of this server (or with a wrong one)."""

    error_code = ErrorCode.INVALID_REQUEST

    def __init__(self) -> None:
        super().__init__(
            "Authentication failed: initialize needs the authToken of this server", field="authToken"
        )


class ProtocolVersionError(SessiondError):
    """A client built for another major version of the protocol than this server speaks."""

    error_code = ErrorCode.PROTOCOL_VERSION_MISMATCH

    def __init__(self, client_version: int, server_version: int) -> None:
        super().__init__(
            f"Protocol version mismatch: the client speaks version {client_version}, this server "
            f"(sessiond) speaks version {server_version}; upgrade the "
            f"{'server' if client_version > server_version else 'client'}",
            clientVersion=client_version,
            serverVersion=server_version,
        )
        self.client_version = client_version
        self.server_version = server_version
