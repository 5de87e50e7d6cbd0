"""A loopback stand-in of OpenAI's Responses API that Codex talks to in these tests.

Codex (``wire_api = "responses"``) POSTs ``/responses`` with the whole conversation in
``input`` and reads the answer as server-sent events, the way the real API streams it:
``response.created``, then per output item ``response.output_item.added``, its deltas
(``response.output_text.delta``, ``response.reasoning_summary_text.delta``,
``response.function_call_arguments.delta``, ``response.custom_tool_call_input.delta``) and
``response.output_item.done`` with the finished item, and last ``response.completed`` with the
usage (``input_tokens_details.cached_tokens``, ``output_tokens_details.reasoning_tokens``).

Each test scripts the answers: a queue of :class:`Reply` (one per request, in order); every
request body is recorded (:attr:`StandIn.requests`). A request with nothing left in the queue
gets a short plain answer and is counted in :attr:`StandIn.unscripted`, so a test can say
Codex asked more than the script expected. Nothing here leaves the loopback interface.
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.sse import LoopbackServer, send_event_stream, sse_event

Item = dict[str, Any]
HOLD_LIMIT = 300.0
"""The longest a held response stays open (an upper bound, for a test that never releases it)."""


@dataclass
class Usage:
    """What ``response.completed`` reports (the numbers Codex records in ``token_count``)."""

    input_tokens: int = 1000
    cached_tokens: int = 0
    output_tokens: int = 50
    reasoning_tokens: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass
class Reply:
    """One scripted response: its output items in order and its usage."""

    items: list[Item]
    usage: Usage = field(default_factory=Usage)
    cut: bool = False
    """Close the stream after the items, before ``response.completed`` (a dropped connection)."""
    hold: threading.Event | None = None
    """Stream the items, then keep the response open until the test sets this event (a turn
    still in progress: to cancel it, or to overlap it with another); at most :data:`HOLD_LIMIT`."""


def message(text: str) -> Item:
    """An assistant message with one ``output_text`` part."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def reasoning(summary: str, encrypted: str = "gAAAA-scripted-reasoning") -> Item:
    """A reasoning item with a summary and provider-encrypted content."""
    return {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": encrypted,
    }


def function_call(name: str, arguments: dict[str, Any], call_id: str) -> Item:
    """A function tool call (JSON arguments)."""
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
    }


def web_search(query: str) -> Item:
    """A web search the provider ran itself (no output item follows it)."""
    return {"type": "web_search_call", "action": {"type": "search", "query": query}}


def custom_tool_call(name: str, text: str, call_id: str) -> Item:
    """A freeform (custom) tool call, as Codex's ``apply_patch`` grammar tool takes."""
    return {"type": "custom_tool_call", "name": name, "input": text, "call_id": call_id}


class StandIn:
    """The server: ``with StandIn() as api: api.push(...); ... api.base_url``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        """Every ``/responses`` request body, in arrival order."""
        self.other_requests: list[tuple[str, str]] = []
        """Every other request ``(method, path)`` (answered 404)."""
        self.unscripted = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = LoopbackServer(_handler(self))

    @property
    def base_url(self) -> str:
        return f"{self._server.origin}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> StandIn:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    # ------------------------------------------------------------------ serving

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.replies:
                return self.replies.popleft()
            self.unscripted += 1
            return Reply([message("(the stand-in has no scripted reply for this request)")])

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):04d}"

    def events(self, reply: Reply, model: str) -> list[tuple[str, dict[str, Any]]]:
        """The SSE events of one reply, as the real API orders them."""
        rid = self._new_id("resp")
        response = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
        out: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": dict(response)}),
            ("response.in_progress", {"response": dict(response)}),
        ]
        done_items: list[Item] = []
        for index, scripted in enumerate(reply.items):
            item = dict(scripted)
            kind = item["type"]
            prefix = {
                "message": "msg",
                "reasoning": "rs",
                "function_call": "fc",
                "web_search_call": "ws",
            }.get(kind, "ctc")
            item["id"] = self._new_id(prefix)
            item.setdefault("status", "completed")
            out.extend(_item_events(item, index))
            done_items.append(item)
        final = dict(response, status="completed", output=done_items, usage=reply.usage.as_json())
        if not reply.cut:
            out.append(("response.completed", {"response": final}))
        for seq, (name, data) in enumerate(out):
            data["type"] = name
            data["sequence_number"] = seq
        return out


def _item_events(item: Item, index: int) -> list[tuple[str, dict[str, Any]]]:
    kind = item["type"]
    iid = item["id"]
    base = {"output_index": index, "item_id": iid}
    events: list[tuple[str, dict[str, Any]]] = []
    if kind == "message":
        text = item["content"][0]["text"]
        events.append(
            (
                "response.output_item.added",
                {"output_index": index, "item": dict(item, content=[], status="in_progress")},
            )
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        events.append(("response.content_part.added", dict(base, content_index=0, part=part)))
        for piece in _pieces(text):
            events.append(("response.output_text.delta", dict(base, content_index=0, delta=piece)))
        events.append(("response.output_text.done", dict(base, content_index=0, text=text)))
        events.append(("response.content_part.done", dict(base, content_index=0, part=dict(part, text=text))))
    elif kind == "reasoning":
        events.append(
            (
                "response.output_item.added",
                {"output_index": index, "item": dict(item, summary=[], status="in_progress")},
            )
        )
        for si, part in enumerate(item["summary"]):
            text = part["text"]
            empty = {"type": "summary_text", "text": ""}
            events.append(("response.reasoning_summary_part.added", dict(base, summary_index=si, part=empty)))
            for piece in _pieces(text):
                events.append(
                    ("response.reasoning_summary_text.delta", dict(base, summary_index=si, delta=piece))
                )
            events.append(("response.reasoning_summary_text.done", dict(base, summary_index=si, text=text)))
            events.append(
                ("response.reasoning_summary_part.done", dict(base, summary_index=si, part=dict(part)))
            )
    elif kind == "function_call":
        events.append(
            (
                "response.output_item.added",
                {"output_index": index, "item": dict(item, arguments="", status="in_progress")},
            )
        )
        for piece in _pieces(item["arguments"]):
            events.append(("response.function_call_arguments.delta", dict(base, delta=piece)))
        events.append(("response.function_call_arguments.done", dict(base, arguments=item["arguments"])))
    elif kind == "custom_tool_call":
        events.append(
            (
                "response.output_item.added",
                {"output_index": index, "item": dict(item, input="", status="in_progress")},
            )
        )
        for piece in _pieces(item["input"]):
            events.append(("response.custom_tool_call_input.delta", dict(base, delta=piece)))
        events.append(("response.custom_tool_call_input.done", dict(base, input=item["input"])))
    elif kind == "web_search_call":  # run by the provider: progress events, no deltas
        started = dict(item, status="in_progress")
        started.pop("action", None)
        events.append(("response.output_item.added", {"output_index": index, "item": started}))
        for stage in ("in_progress", "searching", "completed"):
            events.append((f"response.web_search_call.{stage}", dict(base)))
    else:  # pragma: no cover - a script error
        raise ValueError(f"the stand-in cannot stream a {kind!r} item")
    events.append(("response.output_item.done", {"output_index": index, "item": item}))
    return events


def _pieces(text: str, size: int = 16) -> list[str]:
    """Deltas as the API sends them: the text in small pieces (one empty piece for no text)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _handler(api: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _not_found(self) -> None:
            api.other_requests.append((self.command, self.path))
            body = b'{"error":{"message":"not found","type":"invalid_request_error"}}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._not_found()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/responses"):
                self._not_found()
                return
            encoding = self.headers.get("Content-Encoding")
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            elif encoding:  # e.g. zstd, which the standard library cannot read before 3.14
                api.other_requests.append((self.command, f"{self.path} (Content-Encoding: {encoding})"))
                self.send_error(415, f"the stand-in cannot read a {encoding} body")
                return
            body = json.loads(raw)
            reply = api._next(body)
            model = body.get("model", "")
            events = api.events(reply, model if isinstance(model, str) else "")

            def stream() -> Iterator[bytes]:
                for name, data in events:
                    if name == "response.completed" and reply.hold is not None:
                        reply.hold.wait(HOLD_LIMIT)  # a turn in progress until the test releases it
                    yield sse_event(name, data)

            try:
                send_event_stream(self, stream())
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up on the response (a cancelled turn)

    return Handler
