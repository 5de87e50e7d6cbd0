"""The method table: each protocol method's handler, declared once, and how a request reaches it.

A handler is declared for its ``sessiond_protocol`` method spec::

    @HANDLERS.method("session/fork")
    async def session_fork(call: Caller, p: M.ForkParams) -> M.ForkResult:
        ...

It receives the params already validated with the spec's model (its ``validated_by`` when it
has one; a pydantic error is answered INVALID_PARAMS, naming the field, before the handler
runs) and — when it declares a third parameter — the params as sent, where the wire shape
matters: entries keep their key order and the fields a newer Pi adds, open objects
(``details``, ``replacement``) pass as they are.
Omitted versus ``null`` is ``"parentId" in p.model_fields_set``. Registration checks the
handler's annotations against the spec (params model in, result model out), so a handler cannot
drift from the protocol, and ``complete()`` that every spec has its handler.

A handler returns its result model — as ``Service`` does, built with ``model_construct`` (no
validation, no copy) — and :func:`answer` turns it into the JSON object sent, here and nowhere
else (:func:`sessiond.service.results.wire`: the fields set, nested values as they are).

A plain function runs at receipt, before the next message is read (the lifecycle: ``initialize``
applies the client's options to requests pipelined right behind it); a coroutine function runs
as its own task. A method declared ``at_receipt=True`` (``session/append``) is a plain function
that returns its result, or an awaitable of it when it must wait: it runs at receipt when the
connection has no other request in flight (no task, no loop iteration to hand its answer on —
the hot path, docs/append-path.md) and what it returns to await runs as the request's task;
behind other requests it runs as a task too, so a connection's requests still start in the
order they were sent. What a params model cannot know by itself (the configured limit of entries per
append) reaches its validators as pydantic's validation context, which the connection builds.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from sessiond_protocol import MethodSpec
from sessiond_protocol.errors import ErrorCode

from ..service.peer import Peer
from ..service.results import wire
from .errors import ErrorAnswer, error_answer, from_validation

if TYPE_CHECKING:
    from ..service.service import Service

log = logging.getLogger("sessiond.rpc")

Json = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])

_REFUSALS = frozenset({ErrorCode.PATH_OUTSIDE_STORE, ErrorCode.PATH_REFUSED, ErrorCode.READ_ONLY})
"""Errors that refuse access (not mere mistakes): logged as warnings, with the peer."""


class Daemon(Protocol):
    """What ``daemon/status`` reads of the daemon serving a connection (``rpc.server.Daemon``)."""

    @property
    def started_at(self) -> float: ...

    @property
    def socket_path(self) -> Path | None: ...

    @property
    def tcp_address(self) -> str | None: ...

    @property
    def connections(self) -> Iterable[Caller]: ...

    def admission_status(self) -> dict[str, int | None]:
        """Connections not yet initialized, refused, timed out; the open-file limit."""
        ...

    def viewer_code(self, new_token: bool) -> dict[str, Any]:
        """``daemon/viewerCode``: a one-time code (after rotating the token if asked)."""
        ...


class Caller(Peer, Protocol):
    """What a handler sees of the connection its request came on (``rpc.connection.Connection``).

    It is the :class:`~sessiond.service.peer.Peer` the service keeps — a subscriber of session
    updates, a user of open sessions, a summarizing client — plus what the lifecycle and
    ``daemon/status`` handlers read and set.
    """

    id: int
    peer: str
    service: Service
    daemon: Daemon | None
    """The daemon serving it (``daemon/status`` reports on it); None outside one."""
    connected_at: float
    client_info: dict[str, Any]
    opt_out: set[str]
    summarizer: bool
    shutting_down: bool

    @property
    def anonymous(self) -> bool:
        """Not initialized yet on a transport that needs a credential (TCP, the viewer)."""
        ...

    @property
    def owner(self) -> bool:
        """On the Unix socket (uid checked) or stdio: no credential needed."""
        ...

    def check_token(self, token: str | None) -> str | None:
        """Raise ``AuthenticationError`` unless ``token`` is a credential of this server (TCP,
        the viewer); the viewer token to hand back when it was a one-time code."""

    def progress(self, token: str | int, kind: str, **value: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Method:
    """A method's spec and its handler."""

    spec: MethodSpec
    handler: Callable[..., Any]
    takes_raw: bool
    """The handler's third parameter receives the params as sent."""
    immediate: bool
    """A plain function: answered at receipt (see the module docstring)."""
    reports_progress: bool
    """Its params have a ``workDoneToken`` (looked up once here: ``getattr`` with a default on a
    pydantic model without the field costs ~1 µs per request)."""
    at_receipt: bool = False
    """A plain function returning its result or an awaitable of it (see the module docstring)."""
    params: type[BaseModel] | None = None
    """What the params are validated with: the spec's ``validated_by`` or ``params``."""

    def validate(self, params: Json, context: Mapping[str, Any]) -> Any:
        return (self.params or self.spec.params).model_validate(params, context=context)


class MethodTable(Mapping[str, Method]):
    """Every protocol method's handler, declared with :meth:`method`."""

    def __init__(self, specs: Mapping[str, MethodSpec]) -> None:
        self.specs = specs
        self._methods: dict[str, Method] = {}

    def method(self, name: str, *, at_receipt: bool = False) -> Callable[[F], F]:
        """Declare the handler of ``name`` (a method of ``sessiond_protocol.METHODS``);
        ``at_receipt``: see the module docstring."""
        spec = self.specs.get(name)
        if spec is None:
            raise ValueError(f"{name} is not a method of the protocol (add its spec to sessiond_protocol)")

        def register(fn: F) -> F:
            if name in self._methods:
                raise ValueError(f"{name} already has a handler: {self._methods[name].handler.__qualname__}")
            takes_raw = _check_signature(spec, fn, at_receipt)
            progress = "workDoneToken" in spec.params.model_fields
            if at_receipt and (inspect.iscoroutinefunction(fn) or progress):
                raise TypeError(f"{name}: an at_receipt handler is a plain function without workDoneToken")
            immediate = not at_receipt and not inspect.iscoroutinefunction(fn)
            params = spec.validated_by or spec.params
            self._methods[name] = Method(spec, fn, takes_raw, immediate, progress, at_receipt, params)
            return fn

        return register

    def complete(self) -> MethodTable:
        """Check that every method of the protocol has its handler."""
        missing = [name for name in self.specs if name not in self._methods]
        if missing:
            raise ValueError(f"methods without a handler: {', '.join(missing)}")
        return self

    def __getitem__(self, name: str) -> Method:
        return self._methods[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._methods)

    def __len__(self) -> int:
        return len(self._methods)


def _check_signature(spec: MethodSpec, fn: Callable[..., Any], at_receipt: bool = False) -> bool:
    """Whether ``fn`` takes the raw params; raises when its annotations contradict the spec."""
    where = f"the handler of {spec.name} ({fn.__qualname__})"
    parameters = list(inspect.signature(fn).parameters.values())
    if len(parameters) not in (2, 3):
        raise TypeError(f"{where} takes (call, params) or (call, params, raw)")
    hints = typing.get_type_hints(fn)
    params = spec.validated_by or spec.params
    if hints.get(parameters[1].name) is not params:
        raise TypeError(f"{where} must take {params.__name__}, not {hints.get(parameters[1].name)}")
    returned = hints.get("return")
    expected = type(None) if spec.result is None else spec.result
    if at_receipt:
        if typing.get_args(returned) != (expected, Awaitable[expected]):  # type: ignore[valid-type]
            raise TypeError(f"{where} must return {expected.__name__} | Awaitable[{expected.__name__}]")
    elif returned is not expected:
        raise TypeError(f"{where} must return {expected.__name__}, not {returned}")
    return len(parameters) == 3


# --------------------------------------------------------------------------- answering


def answer_now(method: Method, call: Caller, params: Json, context: Mapping[str, Any]) -> Any:
    """Answer a request of an immediate (plain function) handler: its result, or raise
    :class:`ErrorAnswer`."""
    try:
        p = method.validate(params, context)
    except ValidationError as exc:
        raise from_validation(exc, params) from None
    try:
        result = method.handler(call, p, params) if method.takes_raw else method.handler(call, p)
    except Exception as exc:
        raise _failed(exc, method, call, params) from None
    return wire(result)


async def answer(method: Method, call: Caller, params: Json, context: Mapping[str, Any]) -> Any:
    """Answer a request: validate, report progress under its ``workDoneToken``, run the handler.

    Its result in the wire's shape, or :class:`ErrorAnswer` raised. The path of every request:
    kept to one call per step (see ``benchmarks/rpc.py --profile``).
    """
    try:
        p = method.validate(params, context)
    except ValidationError as exc:
        raise from_validation(exc, params) from None
    token = getattr(p, "workDoneToken", None) if method.reports_progress else None
    if token is not None:
        call.progress(token, "begin", title=method.spec.name)
    try:
        result = method.handler(call, p, params) if method.takes_raw else method.handler(call, p)
        if not method.at_receipt or inspect.isawaitable(result):
            result = await result
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise _failed(exc, method, call, params) from None
    finally:
        if token is not None:
            call.progress(token, "end")
    return wire(result)


def begin(method: Method, call: Caller, params: Json, context: Mapping[str, Any]) -> Any:
    """Run an ``at_receipt`` handler now: its result in the wire's shape, or — when it must
    wait — an awaitable of that (run it as the request's task); or raise :class:`ErrorAnswer`.

    The same validation and error mapping as :func:`answer`."""
    try:
        p = method.validate(params, context)
    except ValidationError as exc:
        raise from_validation(exc, params) from None
    try:
        result = method.handler(call, p, params) if method.takes_raw else method.handler(call, p)
    except Exception as exc:
        raise _failed(exc, method, call, params) from None
    if inspect.isawaitable(result):
        return _rest(method, call, params, result)
    return wire(result)


async def _rest(method: Method, call: Caller, params: Json, pending: Awaitable[Any]) -> Any:
    """What an ``at_receipt`` handler left to await, answered as :func:`answer` does."""
    try:
        result = await pending
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise _failed(exc, method, call, params) from None
    return wire(result)


def _failed(exc: Exception, method: Method, call: Caller, params: Json) -> ErrorAnswer:
    error = error_answer(exc, method.spec.name, params)
    if error.code in _REFUSALS:
        log.warning("connection %s (%s): refused %s: %s", call.id, call.peer, method.spec.name, error.message)
    return error
