"""Reading and writing JSON-RPC messages in both framings, sniffed per connection.

* LSP base protocol: ``Content-Length: N\\r\\n`` (+ optional other headers) ``\\r\\n\\r\\n``
  then N bytes — what editors (vscode-jsonrpc, pygls) speak;
* newline-delimited JSON: one message per line — what ACP clients and Codex speak.

The first non-blank byte decides: ``{`` or ``[`` is NDJSON, anything else a header. Replies
use the client's framing. Limits apply before anything is buffered: a header block or a
message over the limit is refused, never read into memory whole (an NDJSON line over it is
skipped and the stream goes on; a Content-Length body over it is never read, so the stream
cannot go on).

Slow or silent peers are bounded by ``header_timeout``: a new connection must complete its
first message header (the LSP header block, or the first NDJSON line) within it, and every
later header (or NDJSON line) must be complete within it once its first byte arrived. Waiting
*between* messages is unbounded — agents sit idle for hours. Otherwise a client that opens
connections and never finishes a header would hold connection slots forever.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ..net.framing import Framing


class FramingError(Exception):
    """The byte stream cannot be read as messages any more (the connection must close)."""


class MessageTooLargeError(Exception):
    """One message is over the size limit (answered -32022 MESSAGE_TOO_LARGE either way).

    An NDJSON line was skipped unread and the stream is in sync (``in_sync``). A Content-Length
    body is not read at all — skipping it would mean waiting for as many bytes as the header
    claims, however many that is — so the stream cannot go on and the connection ends.
    """

    def __init__(self, limit: int, size: int | None = None, *, in_sync: bool = True) -> None:
        what = "a message" if size is None else f"a message of {size} bytes"
        super().__init__(f"{what} exceeds the maximum message size of {limit} bytes")
        self.limit = limit
        self.size = size
        self.in_sync = in_sync


_BLANK = b" \t\r\n"


class MessageSource(Protocol):
    """Whole incoming messages, whatever carries them: a framed byte stream or a WebSocket."""

    @property
    def framing(self) -> Framing | None:
        """How replies are framed (``None`` until the first message decided it)."""
        ...

    async def read(self) -> bytes | None:
        """The next message body; ``None`` once the peer is done."""
        ...

    def feed_eof(self) -> None:
        """Stop reading: the next :meth:`read` returns ``None``."""
        ...


class MessageReader:
    """Reads whole messages from a stream, in whichever framing its first byte announces."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        max_message: int,
        max_header: int,
        header_timeout: float | None = None,
    ) -> None:
        self._reader = reader
        self.max_message = max_message
        self.max_header = max_header
        self.header_timeout = header_timeout
        """Seconds to complete a header once it started (and the first one from the start);
        ``None``: no limit (stdio, whose one client owns the process)."""
        self.framing: Framing | None = None
        self._prefix = b""

    def feed_eof(self) -> None:
        """End the stream from this side: the next :meth:`read` returns ``None``."""
        self._reader.feed_eof()

    async def sniff(self) -> Framing | None:
        """Decide the framing from the first non-blank byte; ``None`` at end of stream."""
        while True:
            chunk = await self._reader.read(1)
            if not chunk:
                return None
            if chunk in (b" ", b"\t", b"\r", b"\n"):
                continue
            self._prefix = chunk
            self.framing = Framing.NDJSON if chunk in (b"{", b"[") else Framing.LSP
            return self.framing

    async def read(self) -> bytes | None:
        """The next message body; ``None`` at a clean end of stream.

        Raises :class:`FramingError` when a header is not complete within ``header_timeout``.
        """
        if self.framing is not None and not await self._await_start():
            return None
        if self.header_timeout is None or (self.framing is not None and self._header_buffered()):
            head = await self._read_head()
        else:
            try:
                async with asyncio.timeout(self.header_timeout):
                    head = await self._read_head()
            except TimeoutError:
                raise FramingError(f"no complete message header within {self.header_timeout:g} s") from None
        if head is None or isinstance(head, bytes):
            return head
        return await self._read_body(head)

    async def _read_head(self) -> bytes | int | None:
        """A whole NDJSON message, or the Content-Length of an LSP one; ``None`` at a clean end."""
        if self.framing is None and await self.sniff() is None:
            return None
        if self.framing is Framing.NDJSON:
            return await self._read_line()
        return await self._read_header()

    def _header_buffered(self) -> bool:
        """Whether the next header (the NDJSON line) already arrived whole: reading it cannot
        wait, so it needs no deadline.

        Arming ``asyncio.timeout`` for every message cost 8.7 µs of the 15.7 µs of reading one
        (``benchmarks.rpc --hops``), while a client sending requests back to back almost always
        has the whole header in the buffer already. Looks at ``StreamReader._buffer``, the one
        private attribute used here (present in every CPython since 3.4); without it every
        header gets its deadline, as before. The first blank line after the header's first byte
        ends an LSP header (blank lines before it were skipped).
        """
        buffer = getattr(self._reader, "_buffer", None)
        if type(buffer) is not bytearray:
            return False
        if self.framing is Framing.NDJSON:
            return b"\n" in buffer
        return b"\n\r\n" in buffer or b"\n\n" in buffer

    async def _await_start(self) -> bool:
        """Wait (without a deadline) for the first non-blank byte of the next message."""
        if self._prefix:
            return True
        while True:
            chunk = await self._reader.read(1)
            if not chunk:
                return False
            if chunk not in (b" ", b"\t", b"\r", b"\n"):
                self._prefix = chunk
                return True

    async def _readuntil_newline(self) -> bytes:
        line = await self._reader.readuntil(b"\n")
        if self._prefix:
            line, self._prefix = self._prefix + line, b""
        return line

    async def _read_header(self) -> int | None:
        """The Content-Length of the next LSP message; ``None`` at a clean end of stream."""
        length: int | None = None
        header_bytes = 0
        while True:
            try:
                line = await self._readuntil_newline()
            except asyncio.IncompleteReadError as exc:
                if not (self._prefix + exc.partial).strip() and header_bytes == 0:
                    return None
                raise FramingError("the stream ended inside a message header") from None
            except asyncio.LimitOverrunError:
                raise FramingError("a header line is too long") from None
            header_bytes += len(line)
            if header_bytes > self.max_header:
                raise FramingError(f"message headers exceed {self.max_header} bytes")
            stripped = line.strip()
            if not stripped:
                if header_bytes == len(line):
                    header_bytes = 0
                    continue  # blank lines between messages
                break
            name, sep, value = stripped.partition(b":")
            if not sep:
                raise FramingError(f"malformed header line: {stripped[:80]!r}")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FramingError(f"bad Content-Length: {value.strip()[:40]!r}") from None
                if length < 0:
                    raise FramingError("negative Content-Length")
        if length is None:
            raise FramingError("a message header without Content-Length")
        if length > self.max_message:
            raise MessageTooLargeError(self.max_message, length, in_sync=False)
        return length

    async def _read_body(self, length: int) -> bytes:
        try:
            return await self._reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise FramingError("the stream ended inside a message body") from None

    async def _read_line(self) -> bytes | None:
        while True:
            try:
                line = await self._readuntil_newline()
            except asyncio.IncompleteReadError as exc:
                rest = self._prefix + exc.partial
                self._prefix = b""
                return rest if rest.strip(_BLANK) else None  # a last message without newline
            except asyncio.LimitOverrunError as exc:
                self._prefix = b""
                await self._discard_line(exc.consumed)
                raise MessageTooLargeError(self.max_message) from None
            if len(line) > self.max_message:
                raise MessageTooLargeError(self.max_message)
            if line.strip(_BLANK):
                return line

    async def _discard_line(self, consumed: int) -> None:
        """Drop bytes up to and including the next newline without buffering the line."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return


def frame(body: bytes, framing: Framing) -> bytes:
    if framing is Framing.NDJSON:
        return body + b"\n"
    return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


class MessageTap:
    """Follows the message boundaries of a byte stream in either framing, without holding it.

    ``feed`` takes the bytes as they pass (the caller forwards them untouched) and returns the
    bodies of the messages completed by them that are at most ``keep`` bytes long; longer ones are
    counted (:attr:`large`) and skipped without being buffered. ``sessiond connect`` uses one per
    direction to notice an ``exit`` and an error the daemon closed the connection on. Bytes it
    cannot read as messages stop it (:attr:`lost`): what it returned so far stays valid.
    """

    def __init__(self, keep: int = 4096, max_header: int = 8192) -> None:
        self.keep = keep
        self.max_header = max_header
        self.framing: Framing | None = None
        self.lost = False
        self.large = 0
        """Messages skipped because they were longer than ``keep``."""
        self.last_large = False
        """The last message that ended (or began, for Content-Length) was a long one."""
        self._buffer = b""
        self._skip = 0
        """Body bytes of a long Content-Length message still to pass."""
        self._body: int | None = None
        """The length of the Content-Length body being collected."""
        self._overlong = False
        """The NDJSON line being read is already longer than ``keep``."""

    def feed(self, data: bytes) -> list[bytes]:
        if self.lost or not data:
            return []
        if self.framing is None:
            start = len(data) - len(data.lstrip(_BLANK))
            if start == len(data):
                return []
            data = data[start:]
            self.framing = Framing.NDJSON if data[:1] in (b"{", b"[") else Framing.LSP
        if self.framing is Framing.NDJSON:
            return self._lines(data)
        return self._frames(data)

    def _lines(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        while data:
            end = data.find(b"\n")
            if end < 0:
                if not self._overlong:
                    self._buffer += data
                    if len(self._buffer) > self.keep:
                        self._buffer, self._overlong = b"", True
                return out
            line, data = data[:end], data[end + 1 :]
            body = b"" if self._overlong else (self._buffer + line).strip(_BLANK)
            if self._overlong or len(body) > self.keep:
                self.large += 1
                self.last_large = True
            elif body:
                out.append(body)
                self.last_large = False
            self._buffer, self._overlong = b"", False
        return out

    def _frames(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        while True:
            if self._skip:
                taken = min(self._skip, len(data))
                self._skip -= taken
                data = data[taken:]
                if self._skip:
                    return out
            if data:
                self._buffer += data
                data = b""
            if self._body is not None:
                if len(self._buffer) < self._body:
                    return out
                out.append(self._buffer[: self._body])
                self._buffer, self._body = self._buffer[self._body :], None
                self.last_large = False
                continue
            self._buffer = self._buffer.lstrip(_BLANK)
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > self.max_header:
                    self._lose()
                return out
            length = self._content_length(self._buffer[:end])
            if length is None:
                self._lose()
                return out
            data, self._buffer = self._buffer[end + 4 :], b""
            if length > self.keep:
                self.large += 1
                self.last_large = True
                self._skip = length
            else:
                self._body = length

    @staticmethod
    def _content_length(header: bytes) -> int | None:
        for line in header.split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if sep and name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    return None
                return length if length >= 0 else None
        return None

    def _lose(self) -> None:
        self.lost, self._buffer = True, b""


__all__ = [
    "Framing",  # defined in sessiond.net.framing (the viewer's transport names it too)
    "FramingError",
    "MessageReader",
    "MessageSource",
    "MessageTap",
    "MessageTooLargeError",
    "frame",
]
