"""Messages out: what a connection queues in one loop tick goes out in one ``write``, in order (a
byte stream; a transport that frames each message itself, a WebSocket, still gets them one by
one), and an update published to several subscribers is encoded once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.model import js_json
from sessiond.rpc import connection as connection_module
from sessiond.rpc.connection import Connection
from sessiond.rpc.methods import HANDLERS
from sessiond.rpc.stream import MessageStream
from sessiond.service.config import load_config
from sessiond.service.service import Service

pytestmark = pytest.mark.anyio


class Transport:
    """The connection's writer: records each ``write`` call."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


class Messages:
    """A message source that is not a byte stream (what ``web/transport.py`` is)."""

    framing = None

    async def read(self) -> bytes | None:
        await asyncio.sleep(3600)
        return None

    def feed_eof(self) -> None:
        return None


def bodies(data: bytes) -> list[Any]:
    out = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        out.append(orjson.loads(rest[:length]))
        data = rest[length:]
    return out


async def _burst(tmp_path: Path, reader: Any) -> list[bytes]:
    config = load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock")
    transport = Transport()
    conn = Connection(reader, transport, HANDLERS, Service(config), config.limits)
    writer = asyncio.ensure_future(conn._write_loop())
    try:
        for i in range(3):
            conn.log_message(3, f"message {i}")
        for _ in range(5):
            await asyncio.sleep(0)
        return transport.writes
    finally:
        writer.cancel()


async def test_messages_queued_in_one_tick_are_written_at_once(tmp_path: Path) -> None:
    writes = await _burst(tmp_path, MessageStream(1 << 20, 8192, None))
    assert len(writes) == 1
    assert [m["params"]["message"] for m in bodies(writes[0])] == ["message 0", "message 1", "message 2"]


async def test_a_message_transport_gets_one_write_per_message(tmp_path: Path) -> None:
    writes = await _burst(tmp_path, Messages())
    assert [bodies(w)[0]["params"]["message"] for w in writes] == ["message 0", "message 1", "message 2"]


async def test_an_update_is_encoded_once_for_all_its_subscribers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock")
    service = Service(config)
    transports = [Transport() for _ in range(3)]
    conns = [
        Connection(MessageStream(1 << 20, 8192, None), t, HANDLERS, service, config.limits)
        for t in transports
    ]
    for conn in conns:
        service.hub.subscribe("s1", conn)
    conns[2].opt_out = {"label_update"}
    encoded = 0
    real = js_json.dumps

    def counting(value: Any) -> bytes:
        nonlocal encoded
        encoded += 1
        return real(value)

    monkeypatch.setattr(connection_module, "dumps", counting)
    writers = [asyncio.ensure_future(c._write_loop()) for c in conns]
    try:
        service.hub.publish("s1", {"sessionUpdate": "entries_appended", "entryIds": ["a"]})
        service.hub.publish("s1", {"sessionUpdate": "label_update", "entryId": "a", "label": "x"})
        service.hub.publish("s1", {"sessionUpdate": "entries_appended", "entryIds": ["b"]})
        for _ in range(5):
            await asyncio.sleep(0)
    finally:
        for w in writers:
            w.cancel()
    assert encoded == 3
    got = [[m["params"] for w in t.writes for m in bodies(w)] for t in transports]
    assert got[0] == got[1]
    assert [p["update"]["entryIds"] for p in got[2]] == [["a"], ["b"]]
    assert [p["update"]["sessionUpdate"] for p in got[0]] == [
        "entries_appended",
        "label_update",
        "entries_appended",
    ]
    assert all(p["sessionId"] == "s1" for p in got[0])
