"""Every exception a request can end in, turned into a JSON-RPC error answer — in this one place.

Clients get a code from ``sessiond_protocol.ErrorCode``, a message a person can read, and
``data`` with the specifics (``field``, ``entryId``, ``currentLeafId``, ``errno`` ...). The code
is the exception's own (``error_code`` on every type of ``sessiond.errors`` and
``sessiond.filehistory``), so a new error type needs no entry here. No traceback ever leaves the
daemon: an exception without a code (a bug) is logged here with its traceback and answered as
an internal error naming only its type and message.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from sessiond_protocol.errors import ErrorCode, field_path

from ..errors import SessiondError

log = logging.getLogger("sessiond.rpc")


class ErrorAnswer(Exception):
    """The error answer of a request: what the JSON-RPC ``error`` object holds."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data: dict[str, Any] = {} if data is None else data
        """Always an object, possibly empty: the SPEC promises every error carries ``data``."""

    def to_wire(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": self.data}


def from_validation(exc: ValidationError, params: Any = None) -> ErrorAnswer:
    """INVALID_PARAMS naming the first offending field as a path into what was sent."""
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        problems.append({"field": field_path(tuple(err["loc"]), params), "reason": err["msg"]})
    first = problems[0] if problems else {"field": "", "reason": "invalid"}
    message = f"Invalid params: {first['field'] or 'params'}: {first['reason']}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return ErrorAnswer(ErrorCode.INVALID_PARAMS, message, {"field": first["field"], "errors": problems})


def error_answer(exc: BaseException, method: str, params: Any = None) -> ErrorAnswer:
    """The error answer for any exception a request ended in."""
    if isinstance(exc, ErrorAnswer):
        return exc
    if isinstance(exc, ValidationError):
        return from_validation(exc, params)
    code = exc.error_code if isinstance(exc, SessiondError) else None
    if code is not None and code != ErrorCode.INTERNAL_ERROR:
        assert isinstance(exc, SessiondError)
        data = {k: v for k, v in exc.data.items() if v is not None}
        return ErrorAnswer(code, exc.message, data)
    if isinstance(exc, OSError):
        log.warning("%s failed with an OS error: %s", method, exc)
        return ErrorAnswer(
            ErrorCode.STORAGE_ERROR, f"{exc.strerror or exc}", {"errno": exc.errno, "path": exc.filename}
        )
    log.error("internal error in %s", method, exc_info=exc)
    return ErrorAnswer(
        ErrorCode.INTERNAL_ERROR,
        f"Internal error in {method}: {type(exc).__name__}: {exc}",
        {"method": method},
    )
