"""pygls, behind this one module: one ``JsonRPCProtocol`` per connection.

pygls runs each request as a task (except a ``session/append`` answered at receipt:
:meth:`Engine.request`), answers it (result, error or cancellation), cancels it on
``$/cancelRequest``, and matches the client's answers to the requests the server sends it
(``compaction/summarize``). Everything else a connection needs — both framings, limits, the
lifecycle, backpressure, the method table — is sessiond's (``connection.py``, ``dispatch.py``).

Used through pygls' public API: handlers are registered with ``JsonRPCServer.feature`` (on a
connection's first request of each method), cancellations and the client's answers go in through
``handle_message``, server requests out through ``send_request``; the requests in flight are
counted here, not read from pygls' tables.

Two places are not public API, each measured (CPU time per message, in-process, pygls 2.1.1,
CPython 3.11, ``tests``-free micro-benchmark; ratios hold under load):

* **Requests in**: ``handle_message`` picks the handler method with three ``isinstance`` checks
  against runtime-checkable ``Protocol`` classes, 13–15 µs each on 3.11 (it walks the protocol's
  attributes every time): 30.9 µs to dispatch a request against 15.7 µs for calling
  ``_handle_request`` — which does the rest of what ``handle_message`` does — directly. 15 µs is
  ~15% of the daemon's CPU budget for one append (≤ 100 µs), so requests call it directly;
  cancellations and answers (rare) go through ``handle_message``.
* **Messages out**: pygls serialises with the standard library (``json.dumps`` plus cattrs'
  ``unstructure`` of the whole result, which copies it): 9.5 µs for an append's answer against
  3.1 µs with orjson and framing, and 79 ms against 20 ms for a 10,000-node ``tree/get``. It also
  breaks what the daemon sends: entries must go out exactly as JavaScript's ``JSON.stringify``
  writes them (``model/js_json``: ``1.0`` as ``1``, integer-like keys first, ``undefined``
  omitted), and pygls frames only ``Content-Length`` (never NDJSON, which ACP clients speak). So
  ``_send_data`` is overridden: it hands each message, as a dict, to the connection's ``send``.

What breaks if a pygls release renames either: the tests of every request (``_handle_request``)
and of every answer (``_send_data``) — nothing silently.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Any

from lsprotocol import converters
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.server import JsonRPCServer

from sessiond_protocol.errors import ErrorCode

from ..errors import ClientRequestError
from .dispatch import Caller, Method, answer, begin
from .errors import ErrorAnswer

log = logging.getLogger("sessiond.rpc")

# pygls logs every error answer at ERROR level with a traceback (formatting it costs more than
# the answer); sessiond logs the errors that matter itself (dispatch.py, errors.py).
logging.getLogger("pygls").setLevel(logging.CRITICAL)

Json = dict[str, Any]

_server_request_ids = itertools.count(1)
_ABSENT = object()
_CONVERTER: Any = None


def _converter() -> Any:
    """pygls wants a cattrs converter; sessiond's messages never go through it, so one is shared.

    Building lsprotocol's converter costs ~20 ms (it generates code): once per process.
    """
    global _CONVERTER  # noqa: PLW0603 (a lazily built process-wide constant)
    if _CONVERTER is None:
        _CONVERTER = converters.get_converter()
    return _CONVERTER


class _Server(JsonRPCServer):
    """pygls' server object, one per connection; errors are reported by sessiond, not pygls."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        pass


class _Protocol(JsonRPCProtocol):
    engine: Engine

    def _send_data(self, data: Any) -> None:
        """Every message pygls sends (answers, server requests) goes to the connection as a dict
        (see the module docstring for why this is not pygls' writer)."""
        self.engine._outgoing(data)


_REST = "$/sessiond/rest"
"""The pygls feature that runs what an ``at_receipt`` handler left to await (never a method a
client can call: requests reach pygls only through the method table)."""


async def _await_rest(rest: Awaitable[Any]) -> Any:
    try:
        return await rest
    except ErrorAnswer as error:
        raise JsonRpcException(code=error.code, message=error.message, data=error.data) from None


class Engine:
    """One connection's JSON-RPC engine: its requests in flight, its requests to the client."""

    def __init__(self, send: Callable[[Json], Any], caller: Caller, context: Mapping[str, Any]) -> None:
        """``send`` queues a message to the client; requests are answered by ``dispatch.answer``
        for ``caller`` (the connection), their params validated with ``context``."""
        self._send = send
        self._caller = caller
        self._context = context
        self._server = _Server(_Protocol, _converter)
        self._protocol: _Protocol = self._server.protocol  # type: ignore[assignment]
        self._protocol.engine = self
        self._registered: set[str] = set()
        self._pending: dict[Any, None] = {}
        """Ids of the client's requests dispatched and not answered yet (in arrival order)."""
        self._idle = asyncio.Event()
        self._idle.set()
        self._asked: dict[str, concurrent.futures.Future[Any]] = {}
        """The server's requests to the client waiting for an answer."""

    # ------------------------------------------------------------------ the client's requests

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def running(self, msg_id: Any) -> bool:
        return msg_id in self._pending

    def request(self, msg_id: Any, method: Method, params: Json) -> None:
        """Dispatch a request to its handler, run as a pygls task; its answer is sent when done.

        An ``at_receipt`` method with nothing else in flight on the connection is run here
        instead (``dispatch.begin``) and answered at once; only what it leaves to await becomes
        the request's pygls task (cancellable like any other). Behind another request it is a
        task like the rest, so the connection's requests start in the order they were sent.
        """
        if method.at_receipt and not self._pending:
            context = contextvars.copy_context()
            try:
                outcome = context.run(begin, method, self._caller, params, self._context)
            except ErrorAnswer as error:
                self._send({"jsonrpc": "2.0", "id": msg_id, "error": error.to_wire()})
                return
            if not inspect.isawaitable(outcome):
                self._send({"jsonrpc": "2.0", "id": msg_id, "result": outcome})
                return
            if _REST not in self._registered:
                self._server.feature(_REST)(_await_rest)
                self._registered.add(_REST)
            self._pending[msg_id] = None
            self._idle.clear()
            context.run(self._protocol._handle_request, msg_id, _REST, outcome)
            return
        name = method.spec.name
        if name not in self._registered:
            self._server.feature(name)(self._handler(method))
            self._registered.add(name)
        self._pending[msg_id] = None
        self._idle.clear()
        contextvars.copy_context().run(self._protocol._handle_request, msg_id, name, params)

    def _handler(self, method: Method) -> Callable[[Json], Awaitable[Any]]:
        caller, context = self._caller, self._context

        async def handle(params: Json) -> Any:
            try:
                return await answer(method, caller, params, context)
            except ErrorAnswer as error:
                raise JsonRpcException(code=error.code, message=error.message, data=error.data) from None

        return handle

    def cancel(self, msg_id: Any) -> None:
        """``$/cancelRequest``: the request, if still running, ends with REQUEST_CANCELLED."""
        if msg_id in self._pending:
            note = JsonRPCNotification(
                method="$/cancelRequest", jsonrpc="2.0", params=SimpleNamespace(id=msg_id)
            )
            self._protocol.handle_message(note)

    async def idle(self) -> None:
        """Until every request dispatched so far has been answered."""
        await self._idle.wait()

    # ------------------------------------------------------------------ requests to the client

    async def ask(self, method: str, params: Any) -> Any:
        """A server -> client request; its result.

        Raises :class:`ClientRequestError` when the client answers with an error and
        ``ConnectionError`` when the connection ends first. Cancelling the awaiting task sends
        ``$/cancelRequest`` so the client can stop working on it.
        """
        msg_id = f"sessiond-{next(_server_request_ids)}"
        future = self._protocol.send_request(method, params, msg_id=msg_id)
        self._asked[msg_id] = future
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                self._send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})
                raise
            raise ConnectionError(f"the connection closed before the client answered {method}") from None
        except JsonRpcException as exc:
            raise ClientRequestError(method, exc.code, exc.message) from None
        finally:
            self._asked.pop(msg_id, None)

    def answer(self, message: Json) -> None:
        """The client's answer to one of the server's requests."""
        msg_id = message["id"]
        error = message.get("error")
        if error is not None:
            err = ResponseError(
                code=error.get("code", ErrorCode.INTERNAL_ERROR),
                message=str(error.get("message", "")),
                data=error.get("data"),
            )
            reply: Any = ResponseErrorMessage(id=msg_id, error=err)
        else:
            reply = JsonRPCResponseMessage(id=msg_id, jsonrpc="2.0", result=message.get("result"))
        # InvalidStateError: an answer to a request the server no longer waits for (cancelled)
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self._protocol.handle_message(reply)

    def cancel_asked(self) -> None:
        """Give up every request to the client (it can no longer answer: it closed)."""
        for future in list(self._asked.values()):
            future.cancel()

    def cancel_all(self) -> None:
        """The connection is ending: cancel everything in flight, both ways."""
        self.cancel_asked()
        for msg_id in list(self._pending):
            self.cancel(msg_id)

    # ------------------------------------------------------------------ out

    def _outgoing(self, data: Any) -> None:
        cls = type(data)
        if cls is JsonRPCResponseMessage:
            payload: Json = {"jsonrpc": "2.0", "id": data.id, "result": data.result}
            self._answered(data.id)
        elif cls is ResponseErrorMessage and data.error is not None:
            error: Json = {"code": data.error.code, "message": data.error.message}
            if data.error.code == ErrorCode.REQUEST_CANCELLED:  # pygls' own answer to a cancel
                error["message"] = f"Request {data.id} was cancelled"
                error["data"] = {"requestId": data.id}
            else:  # every error carries data (the SPEC), pygls' own ones too
                error["data"] = data.error.data if data.error.data is not None else {}
            payload = {"jsonrpc": "2.0", "id": data.id, "error": error}
            self._answered(data.id)
        elif cls is JsonRPCRequestMessage:
            payload = {"jsonrpc": "2.0", "id": data.id, "method": data.method, "params": data.params}
        elif cls is JsonRPCNotification:
            payload = {"jsonrpc": "2.0", "method": data.method, "params": data.params}
        else:
            log.error("cannot send %r", cls.__name__)
            return
        self._send(payload)

    def _answered(self, msg_id: Any) -> None:
        pending = self._pending
        if pending.pop(msg_id, _ABSENT) is not _ABSENT and not pending:
            self._idle.set()
