"""Exceptions of the typed client: one class per ``sessiond_protocol.ErrorCode``, in one table.

Every error answer of the daemon becomes an instance of the class :data:`ERROR_CLASSES` maps its
code to (an unknown code: :class:`SessiondError` itself). :class:`SessiondError` subclasses the
transport's :class:`~sessiond_client.client.RpcError`, so ``except RpcError`` and ``.code``,
``.message``, ``.data`` keep working::

    try:
        await client.append(sid, entries, expect_leaf_id=leaf)
    except LeafMismatch as exc:
        leaf = exc.current_leaf_id      # reload and retry
    except InvalidParams as exc:
        print(exc.field)                # "entries.0.message.role"

A dropped connection is not an error answer: requests in flight then raise
:class:`ConnectionClosed`, and :class:`DaemonUnavailable` says no daemon could be reached or
started.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError

from sessiond_protocol import ErrorCode
from sessiond_protocol.errors import field_path

from .client import ConnectionClosedError, RpcError


class SessiondError(RpcError):
    """An error answer of sessiond (or params refused before sending: :attr:`client_side`).

    ``code`` is the JSON-RPC error code, ``message`` the daemon's text, ``data`` its details
    (a dict, ``{}`` when the daemon sent none), ``method`` the request that failed.
    """

    error_code: ClassVar[ErrorCode | None] = None
    """The code this class stands for (None for the base class)."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        method: str | None = None,
        client_side: bool = False,
    ) -> None:
        super().__init__(code, message, data if data is not None else {})
        self.method = method
        self.client_side = client_side
        """True when the client refused the params before sending anything."""

    def _get(self, key: str) -> Any:
        return self.data.get(key) if isinstance(self.data, dict) else None

    def _str(self, key: str) -> str | None:
        value = self._get(key)
        return value if isinstance(value, str) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, method={self.method!r})"


# --------------------------------------------------------------------------- JSON-RPC's own


class ParseError(SessiondError):
    error_code = ErrorCode.PARSE_ERROR


class InvalidRequest(SessiondError):
    """Not a valid request here: e.g. ``initialize`` twice, or a request after ``shutdown``."""

    error_code = ErrorCode.INVALID_REQUEST


class MethodNotFound(SessiondError):
    error_code = ErrorCode.METHOD_NOT_FOUND


class InvalidParams(SessiondError):
    """A parameter is missing, of the wrong type or breaks a rule: :attr:`field` names it."""

    error_code = ErrorCode.INVALID_PARAMS

    @property
    def field(self) -> str | None:
        """The dotted path of the offending parameter (``entries.0.message.role``)."""
        return self._str("field")

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Every problem found: ``{field, reason}``."""
        return list(self._get("errors") or [])


class InternalError(SessiondError):
    error_code = ErrorCode.INTERNAL_ERROR


class ServerNotInitialized(SessiondError):
    error_code = ErrorCode.SERVER_NOT_INITIALIZED


class RequestCancelled(SessiondError):
    """The request was cancelled (``$/cancelRequest``, or ``compaction/cancel`` for a run).

    Cancelling the task that awaits a request raises ``CancelledError`` as usual, not this.
    """

    error_code = ErrorCode.REQUEST_CANCELLED


class Overloaded(SessiondError):
    """Too many requests in flight on this connection; retry later."""

    error_code = ErrorCode.OVERLOADED


# --------------------------------------------------------------------------- sessiond's own


class NotFound(SessiondError):
    """Base of the errors for something that does not exist (session, entry, checkpoint)."""


class SessionNotFound(NotFound):
    error_code = ErrorCode.SESSION_NOT_FOUND

    @property
    def session_id(self) -> str | None:
        return self._str("sessionId")


class EntryNotFound(NotFound):
    error_code = ErrorCode.ENTRY_NOT_FOUND

    @property
    def entry_id(self) -> str | None:
        return self._str("entryId")


class LeafMismatch(SessiondError):
    """``expectLeafId`` is not the current leaf: :attr:`current_leaf_id` is."""

    error_code = ErrorCode.LEAF_MISMATCH

    @property
    def current_leaf_id(self) -> str | None:
        return self._str("currentLeafId")


class NotOnBranch(SessiondError):
    error_code = ErrorCode.NOT_ON_BRANCH


class NotEditable(SessiondError):
    error_code = ErrorCode.NOT_EDITABLE


class SessionExists(SessiondError):
    error_code = ErrorCode.SESSION_EXISTS


class PathOutsideStore(SessiondError):
    error_code = ErrorCode.PATH_OUTSIDE_STORE


class SessionChanged(SessiondError):
    """The file changed underneath (truncated, replaced, or another writer mid-line): reload, retry."""

    error_code = ErrorCode.SESSION_CHANGED


class StorageError(SessiondError):
    error_code = ErrorCode.STORAGE_ERROR

    @property
    def errno(self) -> int | None:
        value = self._get("errno")
        return value if isinstance(value, int) else None


class ReadOnly(SessiondError):
    """The session belongs to another agent (Claude Code, Pi) and is served read-only."""

    error_code = ErrorCode.READ_ONLY


class NotSaved(SessiondError):
    error_code = ErrorCode.NOT_SAVED


class NotASession(SessiondError):
    error_code = ErrorCode.NOT_A_SESSION


class MessageTooLarge(SessiondError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class CompactionRunning(SessiondError):
    error_code = ErrorCode.COMPACTION_RUNNING

    @property
    def compaction_id(self) -> str | None:
        return self._str("compactionId")


class NothingToCompact(SessiondError):
    error_code = ErrorCode.NOTHING_TO_COMPACT

    @property
    def reason(self) -> str | None:
        """``already_compacted`` or ``nothing_to_compact``."""
        return self._str("reason")


class SummaryRefused(SessiondError):
    error_code = ErrorCode.SUMMARY_REFUSED


class PreparationStale(SessiondError):
    error_code = ErrorCode.PREPARATION_STALE


class SummarizerUnavailable(SessiondError):
    error_code = ErrorCode.SUMMARIZER_UNAVAILABLE


class PathRefused(SessiondError):
    error_code = ErrorCode.PATH_REFUSED

    @property
    def path(self) -> str | None:
        return self._str("path")


class CheckpointNotFound(NotFound):
    error_code = ErrorCode.CHECKPOINT_NOT_FOUND


class ProtocolVersionMismatch(SessiondError):
    """The daemon speaks another protocol version than this client: upgrade the older side.

    Raised by the daemon's ``initialize`` answer, or by this client itself (:attr:`client_side`)
    when a daemon accepted ``initialize`` but answered with another ``protocolVersion``.
    """

    error_code = ErrorCode.PROTOCOL_VERSION_MISMATCH

    @property
    def client_version(self) -> int | None:
        value = self._get("clientVersion")
        return value if isinstance(value, int) else None

    @property
    def server_version(self) -> int | None:
        value = self._get("serverVersion")
        return value if isinstance(value, int) else None


ERROR_CLASSES: dict[int, type[SessiondError]] = {
    cls.error_code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        ServerNotInitialized,
        RequestCancelled,
        Overloaded,
        SessionNotFound,
        EntryNotFound,
        LeafMismatch,
        NotOnBranch,
        NotEditable,
        SessionExists,
        PathOutsideStore,
        SessionChanged,
        StorageError,
        ReadOnly,
        NotSaved,
        NotASession,
        MessageTooLarge,
        CompactionRunning,
        NothingToCompact,
        SummaryRefused,
        PreparationStale,
        SummarizerUnavailable,
        PathRefused,
        CheckpointNotFound,
        ProtocolVersionMismatch,
    )
    if cls.error_code is not None
}
"""Error code -> exception class. Codes not listed raise :class:`SessiondError`."""


def error_from(code: int, message: str, data: Any = None, *, method: str | None = None) -> SessiondError:
    """The exception for an error answer."""
    cls = ERROR_CLASSES.get(code, SessiondError)
    return cls(code, message, data, method=method)


def from_rpc_error(exc: RpcError, method: str | None = None) -> SessiondError:
    if isinstance(exc, SessiondError):
        return exc
    return error_from(exc.code, exc.message, exc.data, method=method)


# --------------------------------------------------------------------------- not error answers


class ConnectionClosed(ConnectionClosedError):
    """The connection to the daemon ended before the request was answered (or was closed)."""


class DaemonUnavailable(ConnectionError):
    """No daemon could be reached (and none started, when starting it was allowed)."""


# --------------------------------------------------------------------------- client-side checks


def invalid_params(exc: ValidationError, params: Any, method: str) -> InvalidParams:
    """The :class:`InvalidParams` the daemon would answer, raised before sending (as it words it)."""
    problems = [
        {"field": field_path(tuple(err["loc"]), params), "reason": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]
    first = problems[0] if problems else {"field": "", "reason": "invalid"}
    message = f"Invalid params: {first['field'] or 'params'}: {first['reason']}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return InvalidParams(
        ErrorCode.INVALID_PARAMS,
        message,
        {"field": first["field"], "errors": problems},
        method=method,
        client_side=True,
    )
