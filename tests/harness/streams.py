"""A byte stream of the daemon (sessiond/rpc/stream.py) driven by hand: bytes fed to its
``data_received`` in chosen pieces, what it hands on recorded — no socket, no daemon."""

from __future__ import annotations

import asyncio
from typing import Any

from sessiond.rpc.framing import FramingError, MessageTooLargeError
from sessiond.rpc.stream import MessageStream


class Sink:
    """Records what the stream hands on: bodies as they came, refusals as the errors."""

    def __init__(self) -> None:
        self.got: list[bytes | Exception] = []

    def receive(self, body: bytes) -> bool:
        self.got.append(body)
        return True

    def refuse(self, error: FramingError | MessageTooLargeError) -> bool:
        self.got.append(error)
        return isinstance(error, MessageTooLargeError) and error.in_sync


class Transport(asyncio.Transport):
    """Records whether reading is paused; writes go nowhere."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return False

    def write(self, data: Any) -> None:
        return None


def opened(
    timeout: float | None, max_message: int = 1 << 20, max_header: int = 8192
) -> tuple[MessageStream, Sink, Transport]:
    """A stream as a new connection makes it (inside a running loop), with its sink attached."""
    sink = Sink()
    stream = MessageStream(max_message, max_header, timeout, lambda s: s.attach(sink))
    transport = Transport()
    stream.connection_made(transport)
    return stream, sink, transport
