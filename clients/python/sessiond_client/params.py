"""From a typed method's Python arguments to a request's params: names, ``UNSET``, checks.

The typed methods (``methods.py``, generated) take snake_case arguments; :func:`build_params`
turns them into the camelCase params of the wire, leaves out what the daemon would treat as
absent anyway, and checks the result with the method's ``sessiond_protocol`` params model before
anything is sent (an :class:`~sessiond_client.errors.InvalidParams` with ``client_side=True``).
Values are sent as given, so entries keep their key order and fields.
"""

from __future__ import annotations

import enum
import inspect
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from sessiond_protocol import METHODS

from .errors import invalid_params

F = TypeVar("F", bound=Callable[..., Any])


class _UnsetType(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _UnsetType.UNSET
"""Leave a parameter out of the request (for the ones where omitted and ``None`` differ)."""
Unset = Literal[_UnsetType.UNSET]

JsonObject = Mapping[str, Any]
EntryLike = JsonObject | BaseModel
"""An entry to append: a dict (sent as it is) or an entry spec model from ``sessiond_protocol.models``."""


def python_name(method: str) -> str:
    """The typed method's name: ``session/setName`` -> ``session_set_name``."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", method.replace("/", "_"))
    return snake.lower()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


_NULL_SENT: dict[str, frozenset[str]] = {}
"""Per method, the fields whose typed argument defaults to ``UNSET``: there ``None`` means null."""


def build_params(method: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The wire params of ``method`` from snake_case arguments, checked with its params model.

    ``UNSET`` leaves a field out. ``None`` for an optional field whose default is null is left
    out too (the same to the daemon) — except where the typed method defaults to ``UNSET``
    (``parent_id``, ``expect_leaf_id``): there ``None`` is sent as null. Everything else is
    sent as given.
    """
    model = METHODS[method].params
    fields = model.model_fields
    null_sent = _NULL_SENT.get(method, frozenset())
    wire: dict[str, Any] = {}
    for name, value in args.items():
        if value is UNSET:
            continue
        key = _camel(name)
        info = fields[key]
        if value is None and not info.is_required() and info.default is None and key not in null_sent:
            continue
        wire[key] = _jsonable(value)
    try:
        model.model_validate(wire)
    except ValidationError as exc:
        raise invalid_params(exc, wire, method) from None
    return wire


def arguments(values: dict[str, Any]) -> dict[str, Any]:
    """A typed method's ``locals()`` without the client itself."""
    return {k: v for k, v in values.items() if k not in ("self", "__class__")}


def rpc(method: str) -> Callable[[F], F]:
    """Mark a typed method as the one for ``method``."""

    def mark(fn: F) -> F:
        fn.__sessiond_method__ = method  # type: ignore[attr-defined]
        parameters = inspect.signature(fn).parameters.values()
        _NULL_SENT[method] = frozenset(_camel(p.name) for p in parameters if p.default is UNSET)
        return fn

    return mark
