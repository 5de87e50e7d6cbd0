"""The framing parser under hostile byte streams: unit-level through a connection's byte stream
(its ``data_received``, pieces as they might arrive), then the real daemon over its socket.

The contract (sessiond/rpc/framing.py, stream.py): it hands on message bodies, nothing more at a
clean end, :class:`MessageTooLargeError` for one oversized message (an NDJSON line: skipped, the stream
stays in sync; a Content-Length body: never read, the stream ends) and :class:`FramingError` when
the stream cannot be read any more (the connection closes) — nothing else, never hanging on a
refused header, never buffering a refused body.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiond.rpc.framing import Framing, FramingError, MessageTooLargeError, frame
from sessiond_protocol import ErrorCode
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.streams import opened
from tests.security.conftest import RawClient, wait_for_log
from tests.security.fuzz import fuzz

MAX_MESSAGE = 4096
MAX_HEADER = 256
HANG = 10.0
"""Seconds after which a read counts as hung (a guard, not a timing assertion)."""

bodies = st.lists(
    st.dictionaries(st.text(max_size=8), st.text(max_size=40) | st.integers(), max_size=4).map(
        lambda d: json.dumps({"jsonrpc": "2.0", **d}, ensure_ascii=False).encode()
    ),
    min_size=1,
    max_size=8,
)


async def read_all(
    data: list[bytes], *, header_timeout: float | None = None, eof: bool = True
) -> list[bytes | Exception]:
    """Feed ``data`` chunk by chunk to a connection's byte stream (yielding between chunks) and
    collect every message (or refusal) it hands on until the end."""
    stream, sink, _ = opened(header_timeout, MAX_MESSAGE, MAX_HEADER)
    for chunk in data:
        stream.data_received(chunk)
        await asyncio.sleep(0)
    if eof:
        stream.eof_received()
    elif header_timeout is not None:
        await asyncio.wait_for(asyncio.shield(stream.ended), HANG)
    return sink.got


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(stream[last:p])
        last = p
    pieces.append(stream[last:])
    return [p for p in pieces if p]


def run(coro: Coroutine[Any, Any, list[bytes | Exception]]) -> list[bytes | Exception]:
    return asyncio.run(coro)


# ------------------------------------------------------------------ unit level


@given(bodies, st.lists(st.integers(0, 10_000), max_size=30), st.sampled_from(list(Framing)))
@fuzz(120)
def test_split_and_coalesced_frames_give_the_same_messages(
    messages: list[bytes], cuts: list[int], framing: Framing
) -> None:
    stream = b"".join(frame(m, framing) for m in messages)
    expected = [frame(m, framing) if framing is Framing.NDJSON else m for m in messages]
    assert run(read_all(chunked(stream, cuts))) == expected
    assert run(read_all([stream])) == expected  # all coalesced in one read


@given(st.binary(max_size=600), st.sampled_from([b"", b"Content-Length: 2\r\n\r\n{}", b'{"a":1}\n']))
@fuzz(200)
def test_random_bytes_only_give_bodies_or_framing_errors(data: bytes, prefix: bytes) -> None:
    out = run(read_all([prefix + data]))
    for item in out:
        assert isinstance(item, (bytes, FramingError, MessageTooLargeError)), item
    # a framing error, or a body too large to skip, ends the stream
    assert all(not isinstance(x, FramingError) for x in out[:-1])
    assert all(x.in_sync for x in out[:-1] if isinstance(x, MessageTooLargeError))


@given(st.text(max_size=30) | st.binary(max_size=30).map(lambda b: b.decode("latin-1")))
@fuzz(120)
def test_bad_content_length_values(value: str) -> None:
    raw = b"Content-Length: " + value.encode("utf-8", "surrogateescape") + b"\r\n\r\n" + b"{}" * 4
    out = run(read_all([raw]))
    try:
        n = int(value.strip())
    except ValueError:
        n = None
    if n is None or n < 0 or len(value.encode()) + 20 > MAX_HEADER:
        assert isinstance(out[-1], FramingError), (value, out)
    elif n > MAX_MESSAGE:
        assert isinstance(out[-1], MessageTooLargeError) and not out[-1].in_sync, (value, out)
    else:
        assert all(isinstance(x, (bytes, FramingError)) for x in out)


@pytest.mark.parametrize("length", [MAX_MESSAGE + 1, 10**9, 10**30, 2**63])
def test_a_huge_content_length_is_refused_before_the_body(length: int) -> None:
    """No EOF is fed: the refusal must come from the header alone, not from reading a body."""
    out = run(read_all([b"Content-Length: %d\r\n\r\n" % length, b"x" * 100], eof=False))
    assert len(out) == 1 and isinstance(out[0], MessageTooLargeError), out
    assert not out[0].in_sync and out[0].size == length and "maximum message size" in str(out[0])


@pytest.mark.parametrize(
    "flood",
    [
        b"X-A: b\r\n" * 1000,  # many small header lines
        b"X-" + b"a" * 100_000 + b"\r\n",  # one line longer than the stream's limit
        b"Content-Length: 2\r\n" * 500,  # repeated lengths
    ],
)
def test_header_floods_are_refused_without_eof(flood: bytes) -> None:
    out = run(read_all([flood], eof=False))
    assert len(out) == 1 and isinstance(out[0], FramingError)


@given(
    st.lists(
        st.binary(max_size=80).filter(lambda b: b"\n" not in b) | bodies.map(lambda b: b[0]), max_size=12
    )
)
@fuzz(120)
def test_ndjson_with_embedded_garbage_stays_in_sync(lines: list[bytes]) -> None:
    """Garbage lines come back as bodies (the connection answers them with parse errors); a line
    over the limit is reported and skipped; every valid message still arrives, in order."""
    huge = b'{"pad":"' + b"x" * (MAX_MESSAGE * 3) + b'"}'
    stream = b'{"first":1}\n' + b"\n".join(lines) + b"\n" + huge + b"\n" + b'{"last":1}\n'
    out = run(read_all(chunked(stream, [7, 100, 5000])))
    assert out[0] == b'{"first":1}\n' and out[-1] == b'{"last":1}\n'
    assert sum(isinstance(x, MessageTooLargeError) for x in out) == 1
    # Blank bytes before a message are skipped (they separate messages; JSON ignores them).
    expected = [line.lstrip(b" \t\r") + b"\n" for line in lines if line.strip(b" \t\r\n")]
    assert [x for x in out[1:-1] if isinstance(x, bytes)] == expected


def test_header_timeout_unit() -> None:
    """A silent new connection and a header that stops half-way are refused; a pause *between*
    messages is not (idle agents keep their connection)."""

    async def scenario() -> tuple[Sequence[object], ...]:
        silent = await read_all([], header_timeout=0.2, eof=False)
        half = await read_all([b"Content-Le"], header_timeout=0.2, eof=False)
        half_ndjson = await read_all([b'{"a":1}\n{"b"'], header_timeout=0.2, eof=False)

        stream, sink, _ = opened(0.2, MAX_MESSAGE, MAX_HEADER)
        stream.data_received(frame(b"{}", Framing.LSP))
        await asyncio.sleep(0.6)  # idle between messages, three times the timeout
        stream.data_received(frame(b"[]", Framing.LSP))
        first, second = sink.got
        return silent, half, half_ndjson, [first, second]

    silent, half, half_ndjson, idle = asyncio.run(scenario())
    for out in (silent, half):
        assert len(out) == 1 and isinstance(out[0], FramingError) and "0.2 s" in str(out[0]), out
    assert half_ndjson[0] == b'{"a":1}\n' and isinstance(half_ndjson[1], FramingError)
    assert idle == [b"{}", b"[]"]


# ------------------------------------------------------------------ against the daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(
        tmp_path_factory.mktemp("framing"),
        config="[limits]\nmax_message_bytes = 65536\nmax_header_bytes = 1024\nheader_timeout = 1.0\n",
    )
    yield d
    assert d.stop() == 0, d.log_text()[-3000:]
    assert "internal error" not in d.log_text()


def lsp(body: bytes) -> bytes:
    return frame(body, Framing.LSP)


def test_daemon_answers_garbage_and_keeps_serving(daemon: Daemon) -> None:
    bystander = RawClient.unix(daemon.socket)
    assert "result" in bystander.initialize()
    cases = [
        (b"Content-Length: -5\r\n\r\n", ErrorCode.PARSE_ERROR),
        (b"Content-Length: 99999999999999999999\r\n\r\n", ErrorCode.MESSAGE_TOO_LARGE),
        (b"Content-Length: 2\r\n" + b"X: y\r\n" * 300 + b"\r\n{}", ErrorCode.PARSE_ERROR),
        (b"Content-Length: \xff\xfe\r\n\r\n{}", ErrorCode.PARSE_ERROR),
        (b"\x00\x01\x02garbage\r\n\r\n", ErrorCode.PARSE_ERROR),
        (lsp(b"[" * 3000 + b"]" * 3000), ErrorCode.PARSE_ERROR),  # deeper than any parser goes
        (lsp(b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * 900 + b"]" * 900 + b"}"), -32602),
    ]
    for data, code in cases:
        hostile = RawClient.unix(daemon.socket, timeout=15)
        hostile.send(data)
        answer = hostile.message()
        assert answer["error"]["code"] == code, (data[:60], answer)
        if code in (ErrorCode.PARSE_ERROR, ErrorCode.MESSAGE_TOO_LARGE) and b"[[[" not in data:
            assert hostile.closed_within(HANG), data[:60]  # framing broken: the connection ends
        hostile.close()
        assert "sessions" in bystander.call("session/list", {})
    bystander.close()


def test_daemon_ndjson_with_embedded_garbage(daemon: Daemon) -> None:
    c = RawClient.unix(daemon.socket)
    assert "result" in c.initialize()
    garbage = [b"{not json", b"\xff\xfe\xfd", b"[1,2,3]", b'"just a string"', b"{}", b"{" * 5000, b"null"]
    for i, junk in enumerate(garbage):
        c.send(
            junk
            + b"\n"
            + json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "session/list"}).encode()
            + b"\n"
        )
        err = c.message()
        assert "error" in err and err["id"] is None, (junk, err)
        assert err["error"]["code"] in (ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST)
        assert c.response(100 + i)["result"]["sessions"] == []
    c.send(b'{"pad":"' + b"x" * 70000 + b'"}\n')
    assert c.message()["error"]["code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert "sessions" in c.call("session/list", {})  # in sync after the oversized line
    c.close()


@given(st.lists(st.integers(0, 4000), min_size=1, max_size=12), st.sampled_from(list(Framing)))
@fuzz(8)
def test_daemon_random_chunking_of_a_valid_stream(daemon: Daemon, cuts: list[int], framing: Framing) -> None:
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}]
    requests += [
        {"jsonrpc": "2.0", "id": i, "method": "session/list", "params": {"limit": i}} for i in range(2, 8)
    ]
    stream = b"".join(frame(json.dumps(r).encode(), framing) for r in requests)
    c = RawClient.unix(daemon.socket)
    for piece in chunked(stream, cuts):
        c.send(piece)
        time.sleep(0.005)
    ids = []
    for _ in requests:
        if framing is Framing.LSP:
            assert c.buffer.startswith(b"Content-") or not c.buffer
        msg = c.message()
        assert "result" in msg, msg
        ids.append(msg["id"])
    assert sorted(ids) == list(range(1, 8))  # requests run concurrently: any order
    c.close()


def test_daemon_closes_connections_that_never_finish_a_header(daemon: Daemon) -> None:
    """``header_timeout = 1.0``: silent and half-header connections are closed (and logged);
    an initialized connection idle for longer keeps working."""
    idle = RawClient.unix(daemon.socket)
    assert "result" in idle.initialize()
    silent = RawClient.unix(daemon.socket)
    half = RawClient.unix(daemon.socket)
    half.send(b"Content-Length: 10\r\nX-Slow")
    for c in (silent, half):
        msg = c.message()
        assert (
            msg["error"]["code"] == ErrorCode.PARSE_ERROR and "header within 1 s" in msg["error"]["message"]
        )
        assert c.closed_within(HANG)
    wait_for_log(daemon, "no complete message header within 1 s")
    time.sleep(1.5)
    assert "sessions" in idle.call("session/list", {})
    idle.close()


def test_stdio_has_no_header_timeout(tmp_path: Path) -> None:
    """stdio's one client owns the process: waiting before the first message is no attack."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    (tmp_path / "c.toml").write_text("[limits]\nheader_timeout = 0.3\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessiond", "serve", "--stdio", "--store", str(tmp_path / "s")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**__import__("os").environ, "SESSIOND_CONFIG": str(tmp_path / "c.toml")},
    )
    try:
        time.sleep(1.0)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n')
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
