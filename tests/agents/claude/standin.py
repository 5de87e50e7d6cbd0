"""A loopback stand-in of the Anthropic Messages API that answers from a per-test script.

Claude Code talks to whatever ``ANTHROPIC_BASE_URL`` names. This server takes its place: each
*main* request (a turn of the conversation the test drives) is answered with the next reply of
the script, streamed as the real API streams it (``message_start``, ``content_block_start`` /
``*_delta`` / ``content_block_stop`` per block, ``message_delta`` with the usage,
``message_stop``). Everything else Claude Code asks on the side (a session title, a quota
probe, a topic check, token counting) is answered by shape, without using the script, and the
summary request of ``/compact`` takes the script's next :class:`Summary` (or a default one).

Every request body is recorded (``requests``), in arrival order, with the kind it was
recognised as; ``main_requests()`` gives the conversation's, whose ``messages`` are what the
agent believes the session is. The server only listens on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.sse import LoopbackServer, send_event_stream, sse_event

MODEL = "claude-sonnet-4-5-20250929"
"""The model name the stand-in reports; tests pass it as ``--model`` so every request names it."""

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_standin{next(_ids):06d}"


@dataclass(frozen=True)
class Text:
    """A text block of a scripted reply."""

    text: str


@dataclass(frozen=True)
class Thinking:
    """A thinking block, streamed as ``thinking_delta`` then ``signature_delta``."""

    thinking: str
    signature: str


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` block; its input is streamed as ``input_json_delta`` pieces.

    ``id`` defaults to a fresh ``toolu_…`` id; give one to refer to it from the test.
    """

    name: str
    input: dict[str, Any]
    id: str = field(default_factory=lambda: _next_id("toolu"))


@dataclass(frozen=True)
class RedactedThinking:
    """A ``redacted_thinking`` block (its ``data`` is opaque, sent whole at block start)."""

    data: str


Block = Text | Thinking | RedactedThinking | ToolUse


@dataclass(frozen=True)
class Reply:
    """One assistant message of the script. ``stop_reason`` defaults to ``tool_use`` when the
    reply calls a tool, else ``end_turn``."""

    blocks: Sequence[Block]
    stop_reason: str | None = None
    input_tokens: int = 1200
    output_tokens: int = 40
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def resolved_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


@dataclass(frozen=True)
class Summary:
    """The answer to ``/compact``'s summary request (a plain text reply)."""

    text: str = "<summary>\n1. Primary Request and Intent: the scripted test session.\n</summary>"


@dataclass(frozen=True)
class HttpError:
    """An API error instead of a reply (e.g. 400 ``prompt is too long``)."""

    status: int
    error_type: str
    message: str


Scripted = Reply | Summary | HttpError


def say(text: str) -> Reply:
    """A plain text reply that ends the turn."""
    return Reply([Text(text)])


def call(*uses: ToolUse, text: str | None = None) -> Reply:
    """A reply calling one or more tools in one step (parallel calls), with optional text first."""
    blocks: list[Block] = [Text(text)] if text else []
    blocks.extend(uses)
    return Reply(blocks)


@dataclass
class Recorded:
    """One request the stand-in received: path, parsed body and what it was taken for."""

    path: str
    body: dict[str, Any]
    kind: str  # "main", "compact", "side", "count_tokens", "other"


COMPACT_MARKERS = (
    "create a detailed summary of the conversation",
    "Your task is to create a detailed summary",
)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def classify(path: str, body: dict[str, Any]) -> str:
    """What a request is, by its shape.

    * ``count_tokens``: the token-counting endpoint.
    * ``compact``: the last user message asks for a summary of the conversation (``/compact``
      and auto-compaction).
    * ``main``: a turn of the conversation — it offers the agent's tools (Claude Code's side
      requests offer none).
    * ``side``: anything else (titles, topic checks, quota probes).
    """
    if path.endswith("/count_tokens"):
        return "count_tokens"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "other"
    if messages:
        last = messages[-1]
        if isinstance(last, dict) and last.get("role") == "user":
            text = _text_of(last.get("content"))
            if any(m in text for m in COMPACT_MARKERS):
                return "compact"
    tools = body.get("tools")
    if isinstance(tools, list) and len(tools) > 0:
        return "main"
    return "side"


def side_answer(body: dict[str, Any]) -> str:
    """A sensible answer to a side request, recognised by what its prompt asks for."""
    system = body.get("system")
    system_text = system if isinstance(system, str) else _text_of(system)
    asks = (system_text + "\n" + _text_of((body.get("messages") or [{}])[-1].get("content"))).lower()
    if "json" in asks and "title" in asks:
        return json.dumps({"title": "Scripted test session"})
    if "title" in asks:
        return "Scripted test session"
    if "isnewtopic" in asks or "new topic" in asks:
        return json.dumps({"isNewTopic": False, "title": None})
    return "ok"


def _chunks(s: str, n: int) -> Iterator[str]:
    for i in range(0, len(s), n):
        yield s[i : i + n]
    if not s:
        yield ""


def stream_events(reply: Reply, model: str) -> Iterator[bytes]:
    """The SSE byte stream of ``reply``, event by event, as the Messages API sends it."""
    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": reply.cache_creation_input_tokens,
        "cache_read_input_tokens": reply.cache_read_input_tokens,
    }
    message: dict[str, Any] = {
        "id": _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield sse_event("message_start", {"type": "message_start", "message": message})
    yield sse_event("ping", {"type": "ping"})
    for index, block in enumerate(reply.blocks):
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in _chunks(block.text, 64)]
        elif isinstance(block, RedactedThinking):
            start = {"type": "redacted_thinking", "data": block.data}
            deltas = []
        elif isinstance(block, Thinking):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c} for c in _chunks(block.thinking, 64)]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            raw = json.dumps(block.input)
            deltas = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(raw, 48)]
        yield sse_event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for delta in deltas:
            delta_event = {"type": "content_block_delta", "index": index, "delta": delta}
            yield sse_event("content_block_delta", delta_event)
        yield sse_event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield sse_event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.resolved_stop_reason(), "stop_sequence": None},
            "usage": {**usage, "output_tokens": reply.output_tokens},
        },
    )
    yield sse_event("message_stop", {"type": "message_stop"})


def message_json(reply: Reply, model: str) -> dict[str, Any]:
    """The non-streamed form of ``reply`` (for a request without ``stream: true``)."""
    content: list[dict[str, Any]] = []
    for block in reply.blocks:
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, RedactedThinking):
            content.append({"type": "redacted_thinking", "data": block.data})
        elif isinstance(block, Thinking):
            content.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        else:
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return {
        "id": _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.resolved_stop_reason(),
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": reply.cache_creation_input_tokens,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
        },
    }


class ScriptExhaustedError(AssertionError):
    """The agent asked for more main turns than the test scripted."""


class StandIn:
    """The stand-in server. Use as a context manager; ``url`` is its ``ANTHROPIC_BASE_URL``.

    ``script(*replies)`` queues replies for main (and compact) requests; ``requests`` records
    every request received. A main request with nothing queued gets a 500 and is recorded in
    ``errors``, so the test fails with a clear message instead of hanging.
    """

    def __init__(self, model: str = MODEL) -> None:
        self.model = model
        self.requests: list[Recorded] = []
        self.errors: list[str] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._handler_class())

    @property
    def url(self) -> str:
        return self._server.origin

    def __enter__(self) -> StandIn:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def script(self, *replies: Scripted) -> None:
        """Queue replies, answered in order to the next main (or compact) requests."""
        with self._lock:
            self._queue.extend(replies)

    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._queue)

    def main_requests(self) -> list[dict[str, Any]]:
        """The bodies of the conversation's requests, in order."""
        with self._lock:
            return [r.body for r in self.requests if r.kind == "main"]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.kind == kind]

    def mark(self) -> int:
        """The number of requests so far, to find the ones a later run sends (``since``)."""
        with self._lock:
            return len(self.requests)

    def since(self, mark: int, kind: str = "main") -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests[mark:] if r.kind == kind]

    def _take(self, kind: str) -> Scripted | None:
        with self._lock:
            if kind == "compact":
                if self._queue and isinstance(self._queue[0], Summary):
                    return self._queue.popleft()
                return Summary()
            if self._queue and not isinstance(self._queue[0], Summary):
                return self._queue.popleft()
            return None

    def _record(self, path: str, body: dict[str, Any]) -> str:
        kind = classify(path, body)
        with self._lock:
            self.requests.append(Recorded(path, body, kind))
        return kind

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send_json(self, status: int, obj: dict[str, Any]) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", _next_id("req"))
                self.end_headers()
                self.wfile.write(data)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._send_json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
                )

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsable": raw.decode(errors="replace")}
                path = self.path.split("?", 1)[0]
                kind = standin._record(path, body if isinstance(body, dict) else {})
                if kind == "count_tokens":
                    self._send_json(200, {"input_tokens": 1000})
                    return
                if kind == "other":
                    self._send_json(
                        404, {"type": "error", "error": {"type": "not_found_error", "message": path}}
                    )
                    return
                if kind == "side":
                    self._answer(Reply([Text(side_answer(body))], input_tokens=50, output_tokens=8), body)
                    return
                scripted = standin._take(kind)
                if scripted is None:
                    msg = f"no scripted reply left for main request #{len(standin.main_requests())}"
                    standin.errors.append(msg)
                    self._send_json(500, {"type": "error", "error": {"type": "api_error", "message": msg}})
                    return
                if isinstance(scripted, HttpError):
                    self._send_json(
                        scripted.status,
                        {
                            "type": "error",
                            "error": {"type": scripted.error_type, "message": scripted.message},
                        },
                    )
                    return
                if isinstance(scripted, Summary):
                    scripted = Reply([Text(scripted.text)], input_tokens=5000, output_tokens=300)
                self._answer(scripted, body)

            def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
                model = str(body.get("model") or standin.model)
                if not body.get("stream"):
                    self._send_json(200, message_json(reply, model))
                    return
                send_event_stream(self, stream_events(reply, model), {"request-id": _next_id("req")})

        return Handler
