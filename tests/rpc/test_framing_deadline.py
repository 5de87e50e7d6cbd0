"""The header deadline: armed only for a header that has not arrived whole (a header already in
the buffer cannot keep the reader waiting), and still enforced for one that has not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sessiond.rpc.framing import Framing, FramingError, MessageReader, frame

pytestmark = pytest.mark.anyio

BODY = b'{"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{}}'


@pytest.fixture
def deadlines(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    armed: list[float] = []
    real = asyncio.timeout

    def counting(delay: float) -> Any:
        armed.append(delay)
        return real(delay)

    monkeypatch.setattr(asyncio, "timeout", counting)  # what framing.py calls
    return armed


@pytest.mark.parametrize("kind", [Framing.LSP, Framing.NDJSON])
async def test_buffered_messages_are_read_without_a_deadline(kind: Framing, deadlines: list[float]) -> None:
    stream = asyncio.StreamReader()
    stream.feed_data(frame(BODY, kind) * 3)
    stream.feed_eof()
    reader = MessageReader(stream, 1 << 20, 8192, 5.0)
    assert [(await reader.read() or b"").strip() for _ in range(3)] == [BODY, BODY, BODY]
    assert await reader.read() is None
    assert deadlines == [5.0]  # the first message only: its framing was not known yet


@pytest.mark.parametrize("kind", [Framing.LSP, Framing.NDJSON])
async def test_a_header_that_stops_halfway_still_times_out(kind: Framing, deadlines: list[float]) -> None:
    stream = asyncio.StreamReader()
    whole = frame(BODY, kind)
    stream.feed_data(whole + whole[:10])
    reader = MessageReader(stream, 1 << 20, 8192, 0.2)
    assert (await reader.read() or b"").strip() == BODY
    with pytest.raises(FramingError, match=r"no complete message header within 0\.2 s"):
        await asyncio.wait_for(reader.read(), 5)
    assert deadlines == [0.2, 0.2]


async def test_a_header_completed_later_is_read(deadlines: list[float]) -> None:
    stream = asyncio.StreamReader()
    whole = frame(BODY, Framing.LSP)
    stream.feed_data(whole + whole[:10])
    reader = MessageReader(stream, 1 << 20, 8192, 5.0)
    assert await reader.read() == BODY
    asyncio.get_running_loop().call_later(0.05, stream.feed_data, whole[10:])
    assert await reader.read() == BODY
    assert deadlines == [5.0, 5.0]
