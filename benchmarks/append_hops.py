"""Where the daemon's CPU goes for one buffered ``session/append``, hop by hop, in one process.

``benchmarks.rpc --hops`` runs this in a fresh process. The daemon's real objects are used —
a ``Service`` on a fresh store, a ``Connection`` with the method table, the store's
``Session`` — but no client process: each hop is timed by calling it directly, many times, in
CPU time of this process (``time.process_time``: what a busy neighbour on a shared machine
takes is not counted), the median of several rounds. The last row sends the same request
through the whole connection (``Connection._receive`` → pygls → validation → handler →
``Service`` → store → answer encoded, framed and written), so the sum of the hops can be
checked against it; what is left is the cost of the connection's checks, pygls' task and the
event loop's wake-ups, which cannot be called on their own.

Why a separate harness: cProfile on a loaded 2-core machine charges its own overhead and the
time the daemon was descheduled to whatever function was running (``socket.send`` looked like
200 µs per append), so it tells what is called, not what it costs.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROUNDS = 5
"""Rounds per hop; the median is reported."""


def _median_us(samples: list[float], n: int) -> float:
    return 1e6 * statistics.median(samples) / n


def _time(fn: Callable[[int], object], n: int, rounds: int = ROUNDS) -> float:
    """CPU µs per call of ``fn(i)``, median over ``rounds`` rounds of ``n`` calls."""
    samples = []
    for _ in range(rounds):
        t0 = time.process_time()
        for i in range(n):
            fn(i)
        samples.append(time.process_time() - t0)
    return _median_us(samples, n)


async def _atime(fn: Callable[[int], Any], n: int, rounds: int = ROUNDS) -> float:
    samples = []
    for _ in range(rounds):
        t0 = time.process_time()
        for i in range(n):
            await fn(i)
        samples.append(time.process_time() - t0)
    return _median_us(samples, n)


class _Writer:
    """The connection's transport: collects what the connection writes, one ``write`` each."""

    def __init__(self) -> None:
        self.writes = 0
        self.last = b""
        self.waiter: asyncio.Future[None] | None = None
        self.transport = self
        """As ``asyncio.StreamWriter.transport``: the connection writes directly while the
        transport holds nothing (:meth:`get_write_buffer_size`), as it does on a socket."""

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.last = data
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def hops(n: int) -> dict[str, Any]:
    """Every hop of one buffered append, CPU µs per append (``n`` appends per round)."""
    return asyncio.run(_hops(n))


async def _socket_to_connection(framed: list[bytes], n: int) -> float:
    """CPU µs per message from a socket to the connection's hand: a socketpair, one framed
    request sent at a time (plain ``send``), the loop run until the stream handed it on.

    The StreamReader path this replaced cost 43-45 µs here against 26-27 (docs/append-path.md,
    "The read side without StreamReader"); the harness's own send and future are in both."""
    from sessiond.rpc.framing import FramingError, MessageTooLargeError  # noqa: PLC0415
    from sessiond.rpc.stream import MessageStream  # noqa: PLC0415

    loop = asyncio.get_running_loop()
    waiter: list[asyncio.Future[None]] = []

    class Sink:
        def receive(self, body: bytes) -> bool:
            waiter[0].set_result(None)
            return True

        def refuse(self, error: FramingError | MessageTooLargeError) -> bool:
            raise error

    client, server = socket.socketpair()
    client.setblocking(False)
    transport, _ = await loop.connect_accepted_socket(
        lambda: MessageStream(1 << 24, 8192, 60.0, lambda stream: stream.attach(Sink())), server
    )

    async def one(i: int) -> None:
        waiter[:] = [loop.create_future()]
        client.send(framed[i % len(framed)])
        await waiter[0]

    try:
        return await _atime(one, n)
    finally:
        transport.close()
        client.close()


async def _hops(n: int) -> dict[str, Any]:
    from benchmarks.rpc import make_messages  # noqa: PLC0415
    from sessiond.formats.pi import encode_line  # noqa: PLC0415
    from sessiond.model.js_json import dumps, parse  # noqa: PLC0415
    from sessiond.rpc.connection import Connection  # noqa: PLC0415
    from sessiond.rpc.framing import Framing, MessageSplitter, frame  # noqa: PLC0415
    from sessiond.rpc.methods import HANDLERS  # noqa: PLC0415
    from sessiond.rpc.stream import MessageStream  # noqa: PLC0415
    from sessiond.service.config import load_config  # noqa: PLC0415
    from sessiond.service.service import Service  # noqa: PLC0415
    from sessiond_protocol.methods import MAX_ENTRIES_PER_APPEND  # noqa: PLC0415

    msgs = make_messages(64, 1)
    rows: list[dict[str, Any]] = []

    def row(hop: str, us: float, note: str = "", part: bool = True) -> None:
        rows.append({"hop": hop, "us": us, "note": note, "part": part})

    with tempfile.TemporaryDirectory(prefix="sessiond-hops-") as tmp:
        root = Path(tmp)
        config = load_config({}, root=root / "store", socket=root / "s.sock")
        service = Service(config)
        writer = _Writer()
        stream = MessageStream(config.limits.max_message_bytes, config.limits.max_header_bytes, None)
        conn = Connection(stream, writer, HANDLERS, service, config.limits, peer="hops")
        write_task = asyncio.ensure_future(conn._write_loop())
        loop = asyncio.get_running_loop()
        ids = iter(range(1, 1 << 30))

        async def call(method: str, params: dict[str, Any]) -> Any:
            writer.waiter = loop.create_future()
            rid = next(ids)
            conn._receive(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
            await writer.waiter
            body = writer.last.partition(b"\r\n\r\n")[2]
            return orjson.loads(body)

        await call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "hops"}})
        sid = (await call("session/new", {"cwd": "/bench/hops"}))["result"]["sessionId"]

        def request(i: int, rid: int = 1) -> dict[str, Any]:
            entry = {"type": "message", "message": msgs[i % 64]}
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "session/append",
                "params": {"sessionId": sid, "entries": [entry]},
            }

        bodies = [orjson.dumps(request(i, 1000 + i)) for i in range(64)]
        framed = [frame(b, Framing.LSP) for b in bodies]

        # 1. cut one message out of the bytes, in its framing (one read per message, as a client
        # waiting for each answer sends them)
        splitter = MessageSplitter(1 << 24, 8192)
        row("read + frame (MessageSplitter.feed)", _time(lambda i: splitter.feed(framed[i % 64]), n))
        row(
            "  from the socket to the connection (MessageStream.data_received)",
            await _socket_to_connection(framed, n),
            "event loop, recv(2), splitter, hand-over; with the harness's send(2) and wake-up",
            part=False,
        )
        # 2. parse
        row("parse the message (orjson via js_json.parse)", _time(lambda i: parse(bodies[i % 64]), n))
        # 3. validate the params
        ctx = {MAX_ENTRIES_PER_APPEND: config.limits.max_entries_per_append}
        params = [request(i)["params"] for i in range(64)]
        method = HANDLERS["session/append"]
        row(
            "validate the params (AppendEnvelope.model_validate)",
            _time(lambda i: method.validate(params[i % 64], ctx), n),
        )

        # 4. the handler -> Service.append_now -> store + publish + compaction checks
        def handler(i: int) -> None:
            p = params[i % 64]
            method.handler(conn, method.validate(p, ctx), p)

        validate_us = rows[-1]["us"]
        row(
            "handler: Service.append_now (store, publish, compaction checks)",
            _time(handler, n) - validate_us,
            "the handler with its validation, less the validation",
        )
        # 4a.. the parts of Service.append, called on their own
        host = service.hosts[sid]
        session = host.writer()
        last_ids = [session.leaf_id]

        def begin(i: int) -> None:
            pending = session.begin_append([{"type": "message", "message": msgs[i % 64]}])
            last_ids[0] = pending.entry_ids[0]

        row("  store: Session.begin_append (build, encode, write, index)", _time(begin, n), part=False)
        entry = session.get(last_ids[0])
        encode_us = _time(lambda i: encode_line(entry), n)
        row("    encode the line (formats.pi.encode_line)", encode_us, part=False)
        line = encode_line(entry)
        fd = os.open(root / "w.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            write_us = _time(lambda i: os.write(fd, line), n)
            row("    write(2) of one line (O_APPEND file)", write_us, part=False)
        finally:
            os.close(fd)
        row(
            "  compaction checks (Compactor.after_append)",
            _time(lambda i: service.compactor.after_append(host, last_ids), n),
            part=False,
        )
        row(
            "  publish, no subscriber (SessionHost.announce)",
            _time(lambda i: host.announce(last_ids), n),
            part=False,
        )
        service.hub.subscribe(sid, conn)
        row(
            "  publish to 1 subscriber (entries_appended + usage_update queued)",
            _time(lambda i: host.announce(last_ids), n),
            "usage_update only when the numbers changed: here they do not",
            part=False,
        )
        service.hub.unsubscribe(sid, conn)
        conn._out.clear()
        conn._out_bytes = 0
        # 5. the answer: encoded, framed
        answer = {"jsonrpc": "2.0", "id": 7, "result": {"entryIds": ["0a1b2c3d"], "leafId": "0a1b2c3d"}}
        row(
            "encode + frame the answer (js_json.dumps, frame)",
            _time(lambda i: frame(dumps(answer), Framing.LSP), n),
        )
        # 6. the socket write (the other end drained between rounds, not timed)
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.setblocking(False)
        data = frame(dumps(answer), Framing.LSP)
        try:
            samples = []
            for _ in range(ROUNDS):
                t0 = time.process_time()
                for i in range(n):
                    a.send(data)
                    if i % 64 == 63:
                        t1 = time.process_time()
                        while True:
                            try:
                                b.recv(1 << 20, socket.MSG_DONTWAIT)
                            except BlockingIOError:
                                break
                        t0 += time.process_time() - t1
                samples.append(time.process_time() - t0)
                b.recv(1 << 20, socket.MSG_DONTWAIT)
            row("socket write of the answer (send(2), Unix socket)", _median_us(samples, n))
        finally:
            a.close()
            b.close()
        # 7. the whole request through the connection (no socket: the transport is in memory)
        counter = iter(range(10_000, 1 << 30))

        async def whole(i: int) -> None:
            writer.waiter = loop.create_future()
            body = orjson.dumps(request(i, next(counter)))
            conn._receive(body)
            await writer.waiter

        encode_request = _time(lambda i: orjson.dumps(request(i, 5)), n)
        total = await _atime(whole, n) - encode_request
        row("whole request in process (Connection._receive -> answer written)", total, part=False)
        noop = await _atime(
            lambda i: _noop(conn, writer, loop, sid, next(counter)),
            n,
        )
        row("  a no-op request the same way (session/unsubscribe)", noop, part=False)
        write_task.cancel()
        entries = session.entry_count

    parts = sum(r["us"] for r in rows if r["part"])
    whole_us = next(r["us"] for r in rows if r["hop"].startswith("whole request"))
    in_process = sum(r["us"] for r in rows if r["part"] and not r["hop"].startswith(("read", "socket")))
    return {"n": n, "rows": rows, "sumOfHops": parts, "rest": whole_us - in_process, "entries": entries}


async def _noop(conn: Any, writer: _Writer, loop: asyncio.AbstractEventLoop, sid: str, rid: int) -> None:
    writer.waiter = loop.create_future()
    message = {"jsonrpc": "2.0", "id": rid, "method": "session/unsubscribe", "params": {"sessionId": sid}}
    conn._receive(orjson.dumps(message))
    await writer.waiter


def print_hops(res: dict[str, Any]) -> None:
    print(f"\nhops: one buffered session/append, CPU us per append in one process ({res['n']} per round,")
    print(f"median of {ROUNDS} rounds; the session grows to {res['entries']:,} entries on the way);")
    print("indented rows are parts of the row above them")
    print(f"   {'hop':<72}{'us':>8}")
    for r in res["rows"]:
        print(f"   {r['hop']:<72}{r['us']:>8.1f}  {r['note']}")
    print(f"   {'sum of the top-level hops (read .. socket write)':<72}{res['sumOfHops']:>8.1f}")
    print(
        f"   {'whole request less its hops: connection checks, pygls, loop wake-ups':<72}{res['rest']:>8.1f}"
    )
