"""What every method group builds on: the method spec, the session reference, the empty shapes,
the error sets most methods share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..errors import ErrorCode as C
from ..models import Params, Result, SessionId


@dataclass(frozen=True)
class MethodSpec:
    """One request a client can send: its params and result models, the errors it can raise, an
    example. The daemon declares one handler per spec and the Python client one method per spec;
    the schema and SPEC.md are generated from them."""

    name: str
    params: type[BaseModel]
    result: type[BaseModel] | None
    summary: str
    errors: tuple[C, ...] = ()
    example: dict[str, Any] = field(default_factory=dict)
    example_result: Any = None
    long_running: bool = False
    """Accepts a ``workDoneToken`` and reports ``$/progress``."""
    validated_by: type[BaseModel] | None = None
    """What the daemon validates the params with, when not ``params``: a model with the same
    fields, errors and field names that builds less (``session/append``: ``AppendEnvelope``).
    Clients and the schema use ``params``."""


class SessionRef(Params):
    sessionId: SessionId


class Empty(Params):
    pass


class EmptyResult(Result):
    pass


SESSION_ERRORS = (C.INVALID_PARAMS, C.SESSION_NOT_FOUND)
"""What any method naming a session can answer."""
WRITE_ERRORS = (C.STORAGE_ERROR, C.SESSION_CHANGED, C.READ_ONLY)
"""What any method writing to a session can answer."""
EXAMPLE_SESSION_ID = "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"
