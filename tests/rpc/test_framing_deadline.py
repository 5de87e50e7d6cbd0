"""The header deadline of a byte stream (sessiond/rpc/stream.py): armed only for a header that
has not arrived whole at the end of a read (back-to-back messages arm none), and still enforced
for one that has not."""

from __future__ import annotations

import asyncio

import pytest

from sessiond.rpc.framing import Framing, FramingError, frame
from sessiond.rpc.stream import MessageStream
from tests.harness.streams import opened

pytestmark = pytest.mark.anyio

BODY = b'{"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{}}'


def stripped(got: list[bytes | Exception]) -> list[bytes | Exception]:
    return [b.strip() if isinstance(b, bytes) else b for b in got]


@pytest.fixture
def deadlines(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The header deadlines armed (each a timer on the loop)."""
    armed: list[float] = []
    real = MessageStream._arm

    def counting(self: MessageStream) -> None:
        assert self.header_timeout is not None
        armed.append(self.header_timeout)
        real(self)

    monkeypatch.setattr(MessageStream, "_arm", counting)
    return armed


@pytest.mark.parametrize("kind", [Framing.LSP, Framing.NDJSON])
async def test_whole_messages_are_read_without_a_deadline(kind: Framing, deadlines: list[float]) -> None:
    stream, sink, _ = opened(5.0)
    for _ in range(3):
        stream.data_received(frame(BODY, kind) * 3)
    assert stripped(sink.got) == [BODY] * 9
    assert deadlines == [5.0]  # the first message's, from the start of the connection
    stream.eof_received()
    assert stream.ended.result() is True


@pytest.mark.parametrize("kind", [Framing.LSP, Framing.NDJSON])
async def test_a_header_that_stops_halfway_still_times_out(kind: Framing, deadlines: list[float]) -> None:
    stream, sink, transport = opened(0.2)
    whole = frame(BODY, kind)
    stream.data_received(whole + whole[:10])
    assert stripped(sink.got) == [BODY]
    assert await asyncio.wait_for(stream.ended, 5) is True
    error = sink.got[-1]
    assert isinstance(error, FramingError) and "no complete message header within 0.2 s" in str(error)
    assert deadlines == [0.2, 0.2] and not transport.reading
    stream.data_received(whole)  # nothing more is read
    assert len(sink.got) == 2


async def test_a_header_completed_later_is_read(deadlines: list[float]) -> None:
    stream, sink, _ = opened(5.0)
    whole = frame(BODY, Framing.LSP)
    stream.data_received(whole + whole[:10])
    stream.data_received(whole[10:30])  # still the same header: no second deadline
    stream.data_received(whole[30:])
    assert stripped(sink.got) == [BODY, BODY]
    assert deadlines == [5.0, 5.0]
    assert not stream.ended.done()


async def test_idle_between_messages_is_not_limited() -> None:
    stream, sink, _ = opened(0.1)
    stream.data_received(frame(b"{}", Framing.LSP))
    await asyncio.sleep(0.4)
    stream.data_received(frame(b"[]", Framing.LSP))
    assert sink.got == [b"{}", b"[]"] and not stream.ended.done()


async def test_reading_pauses_while_answers_are_backed_up() -> None:
    stream, _, transport = opened(5.0)
    stream.pause_writing()
    assert not transport.reading
    drained = asyncio.ensure_future(stream.drain())
    await asyncio.sleep(0)
    assert not drained.done()
    stream.resume_writing()
    await asyncio.wait_for(drained, 1)
    assert transport.reading
    stream.eof_received()
    stream.pause_writing()
    stream.resume_writing()
    assert not transport.reading  # once reading ended it is not resumed
