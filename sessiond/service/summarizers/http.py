"""The ``http`` summarizer: an OpenAI-compatible chat-completions endpoint writes the summary.

``POST {base_url}/chat/completions`` with the system prompt and the prompt as two messages,
``max_tokens`` set to the request's budget and ``temperature`` 0; the key, when one is
configured, is read from an environment variable at each call (``Authorization: Bearer``).
The answer is reported as it came (``compaction.summary.failure`` decides what is refused):

* ``choices[0].message.content`` (a string, or a list of parts whose ``text`` are joined with
  ``"\\n"`` as Pi joins text blocks) is the text, not stripped;
* ``finish_reason`` ``length`` → stop reason ``length``; ``tool_calls``/``function_call`` or a
  non-empty ``tool_calls`` → ``tool_call``; ``content_filter`` → ``error``;
* ``usage`` is mapped to Pi's usage shape (cached prompt tokens as ``cacheRead``, no cost);
* an HTTP error status, a connection failure, the timeout or a malformed body → ``error``.

The request is made with the event loop's own sockets (anyio; TLS for ``https://`` with the
default SSL context, the one urllib would use), not in a worker thread: cancelling the
awaiting task closes the connection at once, for http and https alike. Not supported: HTTP
proxies (``HTTPS_PROXY`` is not read), redirects (reported as an error), streaming.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import orjson
from anyio.streams.buffered import BufferedByteReceiveStream

from ...compaction.summary import SummaryRequest, SummaryResponse
from . import SummarizerUnavailableError

MAX_RESPONSE = 16 * 1024 * 1024
"""Largest response body accepted."""
MAX_HEADER_LINE = 65536
MAX_HEADERS = 200
_FRAMING = frozenset({"host", "content-length", "connection", "transfer-encoding"})
"""Headers the configuration cannot override (they frame the exchange)."""
EXCERPT = 500
"""Characters of an error body quoted in the error message."""


class _ProtocolError(Exception):
    """The server's answer is not valid HTTP/1.1."""


class HttpSummarizer:
    name = "http"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        extra_headers: Mapping[str, str] | None = None,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``ssl_context`` replaces the default one (a private CA, tests).

        A bad configuration (URL, timeout, headers) raises :class:`SummarizerUnavailableError`."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SummarizerUnavailableError(
                f"the summary endpoint must be an http:// or https:// URL: {base_url!r}"
            )
        if parts.username is not None or parts.password is not None:
            raise SummarizerUnavailableError("the summary endpoint URL must not contain credentials")
        try:
            port = parts.port
        except ValueError as exc:
            raise SummarizerUnavailableError(f"bad port in the summary endpoint URL {base_url!r}") from exc
        if not timeout > 0:
            raise SummarizerUnavailableError("the summary endpoint timeout must be positive")
        headers = dict(extra_headers or {})
        for key, value in headers.items():
            if not _header_safe(key) or not _header_safe(value) or not key or ":" in key:
                raise SummarizerUnavailableError(f"bad extra header {key!r}")
        self.base_url = base_url
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.extra_headers = headers
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = port if port is not None else (443 if self._tls else 80)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        self._host_header = host if port is None else f"{host}:{port}"
        self._target = (parts.path.rstrip("/") or "") + "/chat/completions"
        if parts.query:
            self._target += "?" + parts.query
        self._ssl_context = ssl_context

    def _headers(self, length: int) -> list[tuple[str, str]]:
        headers = [
            ("Host", self._host_header),
            ("User-Agent", "sessiond"),
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
            ("Content-Length", str(length)),
            ("Connection", "close"),
        ]
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "").strip()
            if not key:
                raise SummarizerUnavailableError(
                    f"the summary endpoint's API key variable {self.api_key_env} is not set"
                )
            if not _header_safe(key):
                raise SummarizerUnavailableError(
                    f"the summary endpoint's API key variable {self.api_key_env} has a bad value"
                )
            headers.append(("Authorization", f"Bearer {key}"))
        extra = {k.lower(): (k, v) for k, v in self.extra_headers.items() if k.lower() not in _FRAMING}
        headers = [(k, v) for k, v in headers if k.lower() not in extra]
        headers.extend(extra.values())
        return headers

    async def summarize(self, request: SummaryRequest) -> SummaryResponse:
        body = _request_body(self.model, request)
        headers = self._headers(len(body))  # may raise SummarizerUnavailableError
        head = f"POST {self._target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        raw = head.encode("latin-1") + b"\r\n" + body

        status = 0
        answer = b""
        with anyio.move_on_after(self.timeout) as scope:
            try:
                status, answer = await self._exchange(raw)
            except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
                return _error(f"cannot reach the summary endpoint {self.url}: {_reason(exc)}")
            except (anyio.IncompleteRead, anyio.DelimiterNotFound, _ProtocolError) as exc:
                return _error(f"bad HTTP answer from the summary endpoint {self.url}: {_reason(exc)}")
        if scope.cancelled_caught:
            return _error(f"the summary endpoint {self.url} did not answer within {self.timeout:g} s")
        if not 200 <= status < 300:
            return _error(f"HTTP {status}: {_excerpt(answer)}" if answer.strip() else f"HTTP {status}")
        return parse_completion(answer)

    async def _exchange(self, raw: bytes) -> tuple[int, bytes]:
        """Send the request on a fresh connection; the status and the body of the answer."""
        stream: anyio.abc.ByteStream
        if self._tls:
            context = self._ssl_context or ssl.create_default_context()
            stream = await anyio.connect_tcp(
                self._host,
                self._port,
                ssl_context=context,
                tls_hostname=self._host,
                tls_standard_compatible=False,
            )
        else:
            stream = await anyio.connect_tcp(self._host, self._port)
        async with stream:
            await stream.send(raw)
            reader = BufferedByteReceiveStream(stream)
            while True:
                status, headers = await _read_head(reader)
                if not 100 <= status < 200:
                    break  # 1xx are interim answers: the real one follows
            if status in (204, 304):
                return status, b""
            return status, await _read_body(reader, headers)


def _request_body(model: str, request: SummaryRequest) -> bytes:
    def payload(system: str, prompt: str) -> dict[str, Any]:
        return {
            "model": model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            "max_tokens": request.max_tokens,
            "temperature": 0,
        }

    try:
        return orjson.dumps(payload(request.system_prompt, request.prompt))
    except orjson.JSONEncodeError:  # a lone surrogate (JS strings may hold one): replaced
        return orjson.dumps(payload(_well_formed(request.system_prompt), _well_formed(request.prompt)))


def _well_formed(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _header_safe(value: str) -> bool:
    return not any(c in value for c in "\r\n\0")


async def _read_head(reader: BufferedByteReceiveStream) -> tuple[int, dict[str, str]]:
    line = await reader.receive_until(b"\r\n", MAX_HEADER_LINE)
    parts = line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise _ProtocolError(f"bad status line {line[:100]!r}")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS):
        line = await reader.receive_until(b"\r\n", MAX_HEADER_LINE)
        if not line:
            return int(parts[1]), headers
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise _ProtocolError(f"bad header line {line[:100]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise _ProtocolError("too many header lines")


async def _read_body(reader: BufferedByteReceiveStream, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        while True:
            size_line = await reader.receive_until(b"\r\n", MAX_HEADER_LINE)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _ProtocolError(f"bad chunk size {size_line[:100]!r}") from None
            if size < 0:
                raise _ProtocolError(f"bad chunk size {size_line[:100]!r}")
            if size == 0:
                for _ in range(MAX_HEADERS):  # trailers, up to the empty line
                    if not await reader.receive_until(b"\r\n", MAX_HEADER_LINE):
                        return bytes(out)
                raise _ProtocolError("too many trailer lines")
            if len(out) + size > MAX_RESPONSE:
                raise _ProtocolError(f"answer larger than {MAX_RESPONSE} bytes")
            out += await reader.receive_exactly(size)
            if await reader.receive_until(b"\r\n", 2):
                raise _ProtocolError("chunk not followed by CRLF")
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise _ProtocolError(f"bad Content-Length {headers['content-length']!r}") from None
        if not 0 <= length <= MAX_RESPONSE:
            raise _ProtocolError(f"answer of {length} bytes (at most {MAX_RESPONSE})")
        return await reader.receive_exactly(length) if length else b""
    out = bytearray()  # no length: the body ends with the connection
    while True:
        try:
            out += await reader.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return bytes(out)
        if len(out) > MAX_RESPONSE:
            raise _ProtocolError(f"answer larger than {MAX_RESPONSE} bytes")


def parse_completion(body: bytes) -> SummaryResponse:
    """A chat-completion answer (the JSON body of a 2xx response) as a summary response."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _error(f"the summary endpoint answered with malformed JSON: {_excerpt(body)}")
    if not isinstance(data, dict):
        return _error(f"the summary endpoint answered with unexpected JSON: {_excerpt(body)}")
    if data.get("error") and not data.get("choices"):
        return _error(f"the summary endpoint answered with an error: {_error_text(data['error'])}")
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(message, dict):
        return _error(f"the summary endpoint's answer has no choices[0].message: {_excerpt(body)}")
    usage = _usage(data.get("usage"))

    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and isinstance(part.get("text"), str)
            and part.get("type", "text") in ("text", "output_text")
        )
    elif content is None:
        text = ""
    else:
        return _error(f"the summary endpoint's message content is not text: {_excerpt(body)}")

    finish = choice.get("finish_reason")
    tool_call = finish in ("tool_calls", "function_call") or bool(
        message.get("tool_calls") or message.get("function_call")
    )
    if finish == "length":
        stop_reason = "length"
    elif finish == "content_filter":
        return SummaryResponse(
            text,
            "error",
            error_message="the summary endpoint stopped the output (content_filter)",
            tool_call=tool_call,
            usage=usage,
        )
    elif tool_call:
        stop_reason = "toolUse"
    else:
        stop_reason = "stop"
    return SummaryResponse(text, stop_reason, tool_call=tool_call, usage=usage)


def _usage(raw: Any) -> dict[str, Any] | None:
    """OpenAI's ``usage`` in Pi's shape (as pi-ai's openai-completions provider maps it)."""
    if not isinstance(raw, dict):
        return None

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    details = raw.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    prompt = count(raw.get("prompt_tokens"))
    output = count(raw.get("completion_tokens"))
    inputs = max(prompt - cached, 0)
    total = count(raw.get("total_tokens")) or inputs + output + cached
    return {
        "input": inputs,
        "output": output,
        "cacheRead": cached,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def _error(message: str) -> SummaryResponse:
    return SummaryResponse("", "error", error_message=message)


def _error_text(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return _clip(error["message"])
    if isinstance(error, str):
        return _clip(error)
    return _clip(orjson.dumps(error).decode())


def _excerpt(body: bytes) -> str:
    """The start of a body for an error message; a JSON error's ``message`` when there is one."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and data.get("error"):
        return _error_text(data["error"])
    return _clip(body[: EXCERPT * 4].decode("utf-8", "replace"))


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"


def _reason(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    return text or type(exc).__name__
