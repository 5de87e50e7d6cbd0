"""The codes of bad input, through the real daemon on its real socket (issue 24, item 8).

Each case was answered with the wrong code before: a NUL or a lone surrogate in ``cwd`` as an
internal error (-32603) — the ``ValueError``/``UnicodeEncodeError`` of a system call — a long id
or ``cwd`` as a storage error (-32018 "File name too long"), the framing's and lifecycle's own
errors without ``data``, a Content-Length that Python's ``int`` reads (``+2``, ``1_0``) or a
repeated one taken, a string ``protocolVersion`` coerced, and a repeated ``Host`` header made
the viewer answer HTTP 500 with a traceback in the log.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond_protocol import ErrorCode
from tests.harness.daemon import Daemon, start_daemon

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientInfo": {"name": "pytest"}},
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("codes"))
    try:
        yield d
    finally:
        assert d.stop() == 0, d.log_text()
        assert "Traceback" not in d.log_text(), d.log_text()


def exchange(d: Daemon, data: bytes, answers: int) -> list[dict[str, Any]]:
    """Send raw bytes, read NDJSON or Content-Length answers until ``answers`` came or it closed."""
    out: list[dict[str, Any]] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(d.socket))
        s.sendall(data)
        buffer = b""
        while len(out) < answers:
            chunk = s.recv(65536)
            if not chunk:
                break
            buffer += chunk
            while True:
                if buffer.startswith(b"Content-Length: "):
                    head, sep, rest = buffer.partition(b"\r\n\r\n")
                    size = int(head.split(b":")[1])
                    if not sep or len(rest) < size:
                        break
                    out.append(orjson.loads(rest[:size]))
                    buffer = rest[size:]
                elif b"\n" in buffer:
                    line, _, buffer = buffer.partition(b"\n")
                    out.append(orjson.loads(line))
                else:
                    break
    return out


def request(d: Daemon, method: str, params: Any, *, raw: bytes | None = None) -> dict[str, Any]:
    """One request after initialize, over NDJSON; its error object."""
    body = raw or orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    answers = exchange(d, orjson.dumps(INIT) + b"\n" + body + b"\n", 2)
    answer = next(a for a in answers if a.get("id") == 1)
    error: dict[str, Any] = answer["error"]
    return error


@pytest.mark.parametrize("method", ["session/new", "session/list"])
def test_a_nul_in_cwd_is_invalid_params(daemon: Daemon, method: str) -> None:
    error = request(daemon, method, {"cwd": "/tmp/a\x00b"})
    assert error["code"] == ErrorCode.INVALID_PARAMS, error
    assert error["data"]["field"] == "cwd"
    assert "NUL" in error["message"]


@pytest.mark.parametrize("method", ["session/new", "session/list"])
def test_a_lone_surrogate_in_cwd_is_invalid_params(daemon: Daemon, method: str) -> None:
    raw = b'{"jsonrpc":"2.0","id":1,"method":"%s","params":{"cwd":"/tmp/\\ud800x"}}' % method.encode()
    error = request(daemon, method, None, raw=raw)
    assert error["code"] == ErrorCode.INVALID_PARAMS, error
    assert error["data"]["field"] == "cwd"


def test_a_256_character_id_is_invalid_params(daemon: Daemon) -> None:
    error = request(daemon, "session/new", {"cwd": "/tmp", "sessionId": "a" * 256})
    assert error["code"] == ErrorCode.INVALID_PARAMS, error
    assert error["data"]["field"] == "sessionId"


def test_a_cwd_too_long_for_a_directory_name_is_invalid_params(daemon: Daemon) -> None:
    error = request(daemon, "session/new", {"cwd": "/tmp/" + "b" * 300})
    assert error["code"] == ErrorCode.INVALID_PARAMS, error
    assert error["data"]["field"] == "cwd"
    assert not any((daemon.store / "sessions").glob("*bbbb*")), "nothing is created"


def test_a_long_cwd_that_fits_is_taken(daemon: Daemon) -> None:
    answers = exchange(
        daemon,
        orjson.dumps(INIT)
        + b"\n"
        + orjson.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/" + "c" * 240}}
        )
        + b"\n",
        2,
    )
    assert answers[1].get("result", {}).get("cwd") == "/" + "c" * 240, answers[1]


def test_not_initialized_carries_data(daemon: Daemon) -> None:
    [answer] = exchange(daemon, b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n', 1)
    assert answer["error"]["code"] == ErrorCode.SERVER_NOT_INITIALIZED
    assert answer["error"]["data"] == {"method": "session/list"}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":5}', "method"),
        (b'{"jsonrpc":"1.0","id":1,"method":"daemon/status"}', "jsonrpc"),
        (b'{"jsonrpc":"2.0","id":[1],"method":"daemon/status"}', "id"),
        (b"[1, 2]", ""),
        (b"7", ""),
    ],
)
def test_invalid_requests_carry_data(daemon: Daemon, raw: bytes, field: str) -> None:
    answers = exchange(daemon, orjson.dumps(INIT) + b"\n" + raw + b"\n", 2)
    error = answers[1]["error"]
    assert error["code"] == ErrorCode.INVALID_REQUEST, error
    assert error["data"] == {"field": field}


def test_a_parse_error_carries_data(daemon: Daemon) -> None:
    answers = exchange(daemon, orjson.dumps(INIT) + b"\n{nope\n", 2)
    error = answers[1]["error"]
    assert error["code"] == ErrorCode.PARSE_ERROR
    assert error["data"] == {"closing": False}


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: +{n}\r\n\r\n",
        b"Content-Length:  0{n}\r\nX: y\r\n\r\n",  # the slow path: leading zero is still digits
        b"Content-Length: {n}\r\nContent-Length: {n}\r\n\r\n",
        b"content-length: 1_{n}\r\n\r\n",
        b"Content-Length: \xd9\xa3\r\n\r\n",  # an Arabic-Indic digit
    ],
    ids=["plus", "padded-ok", "twice", "underscore", "unicode-digit"],
)
def test_content_length_is_ascii_digits_once(daemon: Daemon, header: bytes) -> None:
    body = orjson.dumps(INIT).ljust(120)  # 120 bytes: int() reads "1_20" as the body's length
    n = b"20" if b"1_" in header else str(len(body)).encode()
    data = header.replace(b"{n}", n) + body
    answers = exchange(daemon, data, 1)
    assert len(answers) == 1, answers
    if header.startswith(b"Content-Length:  0"):
        assert "result" in answers[0], answers
        return
    error = answers[0]["error"]
    assert error["code"] == ErrorCode.PARSE_ERROR, answers
    assert error["data"]["closing"] is True


@pytest.mark.parametrize("version", ["1", 1.0, True])
def test_protocol_version_must_be_a_number(daemon: Daemon, version: Any) -> None:
    init = {**INIT, "params": {"protocolVersion": version, "clientInfo": {"name": "pytest"}}}
    [answer] = exchange(daemon, orjson.dumps(init) + b"\n", 1)
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, answer
    assert answer["error"]["data"]["field"] == "protocolVersion"


def test_a_repeated_host_header_is_400_without_a_traceback(tmp_path: Path) -> None:
    d = start_daemon(tmp_path)
    try:
        url = json.loads((d.socket.parent / "ui.json").read_text())["url"]
        hostport = url.split("//", 1)[1].rstrip("/")
        for name in ("Host", "Origin"):
            conn = http.client.HTTPConnection(hostport, timeout=10)
            conn.putrequest("GET", "/rpc" if name == "Origin" else "/", skip_host=True)
            conn.putheader("Host", hostport)
            conn.putheader(name, hostport if name == "Host" else f"http://{hostport}")
            if name == "Origin":
                conn.putheader("Origin", "http://evil.example")
            conn.endheaders()
            response = conn.getresponse()
            response.read()
            conn.close()
            assert response.status == 400, (name, response.status)
    finally:
        assert d.stop() == 0
    assert "Traceback" not in d.log_text(), d.log_text()
