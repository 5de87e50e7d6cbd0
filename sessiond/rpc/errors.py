"""Every exception a request can end in, mapped to a JSON-RPC error — in this one place.

Clients get a code from ``sessiond_protocol.ErrorCode``, a message a person can read, and
``data`` with the specifics (``field``, ``entryId``, ``currentLeafId``, ``errno`` ...). No
traceback ever leaves the daemon: an unexpected exception is logged here with its traceback
and reported to the client as an internal error naming only its type and message.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from pygls.exceptions import JsonRpcException

from sessiond_protocol import ErrorCode
from sessiond_protocol.errors import field_path

from .. import errors as E
from ..filehistory import BlobCorruptError, BlobMissingError, FileAccessError, PathRefusedError
from ..service.config import ConfigError

log = logging.getLogger("sessiond.rpc")

_CODES: list[tuple[type[BaseException], ErrorCode]] = [
    (E.SessionNotFoundError, ErrorCode.SESSION_NOT_FOUND),
    (E.EntryNotFoundError, ErrorCode.ENTRY_NOT_FOUND),
    (E.LeafMismatchError, ErrorCode.LEAF_MISMATCH),
    (E.EntryNotOnBranchError, ErrorCode.NOT_ON_BRANCH),
    (E.NotEditableError, ErrorCode.NOT_EDITABLE),
    (E.SessionExistsError, ErrorCode.SESSION_EXISTS),
    (E.PathEscapeError, ErrorCode.PATH_OUTSIDE_STORE),
    (E.SessionChangedError, ErrorCode.SESSION_CHANGED),
    (E.JournalError, ErrorCode.STORAGE_ERROR),
    (E.SessionNotSavedError, ErrorCode.NOT_SAVED),
    (E.NotASessionError, ErrorCode.NOT_A_SESSION),
    (E.ReadOnlySessionError, ErrorCode.READ_ONLY),
    (E.CheckpointNotFoundError, ErrorCode.CHECKPOINT_NOT_FOUND),
    (PathRefusedError, ErrorCode.PATH_REFUSED),
    (FileAccessError, ErrorCode.STORAGE_ERROR),
    (BlobMissingError, ErrorCode.STORAGE_ERROR),
    (BlobCorruptError, ErrorCode.STORAGE_ERROR),
    (E.CompactionRunningError, ErrorCode.COMPACTION_RUNNING),
    (E.NothingToCompactError, ErrorCode.NOTHING_TO_COMPACT),
    (E.SummaryRefusedError, ErrorCode.SUMMARY_REFUSED),
    (E.PreparationStaleError, ErrorCode.PREPARATION_STALE),
    (E.SummarizerUnavailableError, ErrorCode.SUMMARIZER_UNAVAILABLE),
    (E.InvalidSessionIdError, ErrorCode.INVALID_PARAMS),
    (E.InvalidArgumentError, ErrorCode.INVALID_PARAMS),
    (ConfigError, ErrorCode.INVALID_PARAMS),
]


class RpcError(JsonRpcException):
    """A JSON-RPC error with a sessiond code (what pygls sends as the response)."""

    def __init__(self, code: ErrorCode | int, message: str, data: Any = None) -> None:
        super().__init__(message=message, code=int(code), data=data)


def from_validation(exc: ValidationError, params: Any = None) -> RpcError:
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        problems.append({"field": field_path(tuple(err["loc"]), params), "reason": err["msg"]})
    first = problems[0] if problems else {"field": "", "reason": "invalid"}
    message = f"Invalid params: {first['field'] or 'params'}: {first['reason']}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return RpcError(ErrorCode.INVALID_PARAMS, message, {"field": first["field"], "errors": problems})


def to_rpc_error(exc: BaseException, method: str, params: Any = None) -> RpcError:
    """The JSON-RPC error for any exception a handler raised."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, ValidationError):
        return from_validation(exc, params)
    if isinstance(exc, E.SessiondError):
        for cls, code in _CODES:
            if isinstance(exc, cls):
                data = {k: v for k, v in exc.data.items() if v is not None}
                return RpcError(code, exc.message, data or None)
        return RpcError(ErrorCode.INVALID_PARAMS, exc.message, exc.data or None)
    if isinstance(exc, JsonRpcException):
        return RpcError(exc.code, exc.message, exc.data)
    if isinstance(exc, OSError):
        log.warning("%s failed with an OS error: %s", method, exc)
        return RpcError(
            ErrorCode.STORAGE_ERROR, f"{exc.strerror or exc}", {"errno": exc.errno, "path": exc.filename}
        )
    log.error("internal error in %s", method, exc_info=exc)
    return RpcError(ErrorCode.INTERNAL_ERROR, f"Internal error in {method}: {type(exc).__name__}: {exc}")
