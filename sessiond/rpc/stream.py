"""A byte-stream connection as an asyncio protocol: messages cut out in ``data_received`` and
handed to the connection there, answers written with flow control.

The Unix socket, TCP and stdio carry JSON-RPC as bytes. Reading them through a
``StreamReader`` cost a read-loop task step and a few coroutines per message between the
socket's readiness and the connection (docs/append-path.md, "The read side without
StreamReader"); here the event loop's callback itself feeds the bytes to a
:class:`~sessiond.rpc.framing.MessageSplitter` and gives each whole message to
:meth:`MessageSink.receive` before it returns, so a request that is answered at receipt (a
buffered append) is handled in the same callback that read it.

What the read loop gave for free is kept explicitly:

* **order**: messages of one connection are handed on in the order sent, one callback at a time;
* **the header deadline**: a new connection must complete its first header within
  ``header_timeout`` and every later header once it started (a timer, armed only while a
  header is incomplete at the end of a read — back-to-back requests arrive whole and arm none);
* **half-close**: the peer's end of stream keeps the transport open for the answers
  (``eof_received`` returns True) and tells the connection to answer what it was asked;
* **backpressure**: while the transport holds more unsent answers than its high-water mark
  (``pause_writing``), no more requests are read (``pause_reading``) — a client that sends
  faster than it reads its answers waits in its own socket buffer, not in the daemon's memory;
  reading resumes when the transport drained (``resume_writing``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Protocol, cast

from .framing import Framing, FramingError, MessageSplitter, MessageTooLargeError


class MessageSink(Protocol):
    """What a stream hands its messages to (a :class:`~sessiond.rpc.connection.Connection`)."""

    def receive(self, body: bytes) -> bool:
        """Handle one message; False: read no more (``exit``, or the connection is closing)."""
        ...

    def refuse(self, error: FramingError | MessageTooLargeError) -> bool:
        """Answer bytes that are not a message; False: the stream cannot go on."""
        ...


class OutFlow(asyncio.Protocol):
    """The writing half: ``write``/``drain``/``close`` over a transport, ``drain`` waiting while
    the transport is over its high-water mark. stdio's output pipe is one on its own; a socket's
    is the :class:`MessageStream` that also reads it."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self._paused = False
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._lost = False
        self.on_backed_up: MessageStream | None = None
        """A reader to pause while this side is backed up (stdio: the input pipe's stream)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    async def drain(self) -> None:
        if self._lost:
            raise ConnectionResetError("the connection was lost")
        if not self._paused:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self._paused = True
        if self.on_backed_up is not None:
            self.on_backed_up.hold(True)

    def resume_writing(self) -> None:
        self._paused = False
        self._wake(None)
        if self.on_backed_up is not None:
            self.on_backed_up.hold(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._wake(exc or ConnectionResetError("the connection was lost"))

    def _wake(self, error: Exception | None) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)


class MessageStream(OutFlow):
    """One byte-stream connection: reads (and, on a socket, writes) it for a :class:`MessageSink`.

    ``on_open`` runs in ``connection_made`` and attaches the sink (:meth:`attach`), or closes
    the transport to refuse the peer. :attr:`ended` resolves when reading stopped: True when
    what the peer asked is still to be answered (its end of stream, ``exit``, unreadable
    bytes), False when it is gone.
    """

    def __init__(
        self,
        max_message: int,
        max_header: int,
        header_timeout: float | None,
        on_open: OpenCallback | None = None,
    ) -> None:
        super().__init__()
        self.splitter = MessageSplitter(max_message, max_header)
        self.header_timeout = header_timeout
        """Seconds to complete a header once it started (and the first one from the start);
        ``None``: no limit (stdio, whose one client owns the process)."""
        self._on_open = on_open
        self._sink: MessageSink | None = None
        self._read: asyncio.ReadTransport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._headers = 0
        self._held = False
        """Reading is paused because the answers are backed up."""
        self._done = False
        self._loop = asyncio.get_running_loop()
        self.ended: asyncio.Future[bool] = self._loop.create_future()

    @property
    def framing(self) -> Framing | None:
        return self.splitter.framing

    def attach(self, sink: MessageSink) -> None:
        self._sink = sink

    # ------------------------------------------------------------------ asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._read = cast(asyncio.ReadTransport, transport)
        if isinstance(transport, asyncio.WriteTransport):
            super().connection_made(transport)
            self.on_backed_up = self
        if self.header_timeout is not None:
            self._arm()
        if self._on_open is not None:
            self._on_open(self)

    def data_received(self, data: bytes) -> None:
        if self._done:
            return
        if self._pass_on(self.splitter.feed(data)) and self.header_timeout is not None:
            if self.splitter.headers != self._headers:
                self._headers = self.splitter.headers
                if self._deadline is not None:
                    self._deadline.cancel()
                    self._deadline = None
            if self._deadline is None and self.splitter.in_header:
                self._arm()

    def eof_received(self) -> bool:
        if not self._done and self._pass_on(self.splitter.feed_eof()):
            self._end(True)
        return True  # keep the transport open: the answers are still to be written

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._end(exc is None)

    # ------------------------------------------------------------------ reading

    def _pass_on(self, pieces: list[bytes | MessageTooLargeError | FramingError]) -> bool:
        """Hand the pieces to the sink in order; False once reading stopped."""
        sink = self._sink
        if sink is None:
            if pieces or self.splitter.stopped:
                self._end(False)  # refused in on_open: nothing is read
            return not self._done
        for piece in pieces:
            if type(piece) is bytes:
                if not sink.receive(piece):
                    self._end(True)
                    return False
            elif not sink.refuse(cast(FramingError | MessageTooLargeError, piece)):
                self._end(True)
                return False
        if self.splitter.stopped:
            self._end(True)
            return False
        return True

    def _arm(self) -> None:
        assert self.header_timeout is not None
        self._deadline = self._loop.call_later(self.header_timeout, self._too_slow)

    def _too_slow(self) -> None:
        self._deadline = None
        if self._done:
            return
        self.splitter.stopped = True
        error = FramingError(f"no complete message header within {self.header_timeout:g} s")
        if self._sink is not None:
            self._sink.refuse(error)
            self._end(True)
        else:
            self._end(False)

    def hold(self, backed_up: bool) -> None:
        """Pause reading while the answers are backed up; resume once they drained."""
        self._held = backed_up
        if self._done or self._read is None or self._read.is_closing():
            return
        with contextlib.suppress(RuntimeError, AttributeError):
            if backed_up:
                self._read.pause_reading()
            else:
                self._read.resume_reading()

    def feed_eof(self) -> None:
        """Stop reading from this side (the daemon stops, or the connection is closed)."""
        self._end(True)

    def _end(self, answer: bool) -> None:
        if self._done:
            return
        self._done = True
        self.splitter.stopped = True
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._read is not None and not self._read.is_closing() and not self._held:
            with contextlib.suppress(RuntimeError, AttributeError):
                self._read.pause_reading()
        if not self.ended.done():
            self.ended.set_result(answer)


class OpenCallback(Protocol):
    def __call__(self, stream: MessageStream, /) -> None: ...


__all__ = ["MessageSink", "MessageStream", "OpenCallback", "OutFlow"]
