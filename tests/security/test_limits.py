"""Every limit exists in ``Limits`` with a default, is documented, and holds against the daemon.

``header_timeout`` is exercised in test_framing_fuzz.py (silent and half-header connections).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiond.service.config import ConfigError, Limits, load_config
from sessiond_protocol import ErrorCode
from tests.builders import user
from tests.conftest import REPO
from tests.harness.daemon import Daemon, start_daemon
from tests.security.conftest import Closed, RawClient, snapshot, wait_for_log

SMALL = """[limits]
max_message_bytes = 65536
max_header_bytes = 512
max_entries_per_append = 5
max_connections = 4
max_in_flight = 2
header_timeout = 2.0
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("limits"), config=SMALL)
    yield d
    assert d.stop() == 0, d.log_text()[-3000:]


def test_every_limit_has_a_documented_default() -> None:
    defaults = Limits()
    security = (REPO / "docs" / "security.md").read_text()
    configuration = (REPO / "docs" / "configuration.md").read_text()
    for name in defaults.__dataclass_fields__:
        value = getattr(defaults, name)
        assert re.search(rf"^{name} = {value!r}\b", configuration, re.M), name
        row = re.search(rf"^\| `{name}` \| `([^`]+)` \|", security, re.M)
        assert row is not None, f"{name} missing from the limits table of docs/security.md"
        assert row.group(1) == repr(value), (name, row.group(1), value)


@pytest.mark.parametrize(
    "key,value", [("max_connections", 0), ("header_timeout", -1.0), ("max_in_flight", "8"), ("nope", 1)]
)
def test_wrong_limits_stop_the_daemon_with_the_key(tmp_path: Path, key: str, value: object) -> None:
    (tmp_path / "c.toml").write_text(f"[limits]\n{key} = {json.dumps(value)}\n")
    with pytest.raises(ConfigError) as exc:
        load_config({"SESSIOND_CONFIG": str(tmp_path / "c.toml")}, root=tmp_path / "s")
    assert exc.value.data["field"] in (f"limits.{key}", "limits")


def test_entries_per_append(daemon: Daemon) -> None:
    c = RawClient.unix(daemon.socket)
    c.initialize()
    sid = c.call("session/new", {"cwd": "/tmp/limits"})["sessionId"]
    c.call("session/append", {"sessionId": sid, "entries": [{"type": "message", "message": user("a")}]})
    before = snapshot(daemon.store)
    six = [{"type": "message", "message": user(str(i))} for i in range(6)]
    answer = c.request("session/append", {"sessionId": sid, "entries": six})
    assert (
        answer["error"]["code"] == ErrorCode.INVALID_PARAMS and answer["error"]["data"]["field"] == "entries"
    )
    assert "at most 5" in answer["error"]["message"]
    assert snapshot(daemon.store) == before
    assert len(c.call("session/append", {"sessionId": sid, "entries": six[:5]})["entryIds"]) == 5
    c.close()


def test_the_entry_limit_is_the_configured_one_above_a_thousand_too(tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """One owner of the rule, driven by the setting: the protocol model used to cap it at 1,000."""
    d = start_daemon(tmp_path_factory.mktemp("limit1500"), config="[limits]\nmax_entries_per_append = 1500\n")
    try:
        c = RawClient.unix(d.socket)
        c.initialize()
        sid = c.call("session/new", {"cwd": "/tmp/limits"})["sessionId"]
        many = [{"type": "message", "message": user(str(i))} for i in range(1501)]
        assert len(c.call("session/append", {"sessionId": sid, "entries": many[:1200]})["entryIds"]) == 1200
        answer = c.request("session/append", {"sessionId": sid, "entries": many})
        assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert answer["error"]["data"]["field"] == "entries"
        assert answer["error"]["message"] == "Invalid params: entries: at most 1500 entries per append"
        c.close()
    finally:
        assert d.stop() == 0, d.log_text()[-3000:]


def test_message_and_header_size(daemon: Daemon) -> None:
    c = RawClient.unix(daemon.socket)
    c.initialize()
    c.send(b'{"jsonrpc":"2.0","id":5,"method":"session/list","params":{"pad":"' + b"x" * 70_000 + b'"}}\n')
    err = c.message()["error"]
    assert err["code"] == ErrorCode.MESSAGE_TOO_LARGE and err["data"]["limit"] == 65536
    assert "sessions" in c.call("session/list", {})  # NDJSON: the line is skipped, the stream in sync
    c.close()
    lsp = RawClient.unix(daemon.socket)
    lsp.send(b"Content-Length: 70000\r\n\r\n")
    err = lsp.message()["error"]
    assert err["code"] == ErrorCode.MESSAGE_TOO_LARGE and err["data"]["limit"] == 65536
    assert err["message"] == "a message of 70000 bytes exceeds the maximum message size of 65536 bytes"
    assert lsp.closed_within(10)  # the body is never read: the connection is given up
    flood = RawClient.unix(daemon.socket)
    flood.send(b"Content-Length: 2\r\n" + b"X-Pad: " + b"p" * 600 + b"\r\n\r\n{}")
    err = flood.message()["error"]
    assert err["code"] == ErrorCode.PARSE_ERROR and "headers exceed 512 bytes" in err["message"]
    assert flood.closed_within(10)
    wait_for_log(daemon, "message headers exceed 512 bytes")


def test_in_flight_requests_per_connection(daemon: Daemon) -> None:
    c = RawClient.unix(daemon.socket)
    c.initialize()
    burst = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "session/list", "params": {}}).encode() + b"\n"
        for i in range(100, 140)
    )
    c.send(burst)  # one write: dispatched before any of them has run
    answers = [c.message() for _ in range(40)]
    overloaded = [a for a in answers if "error" in a]
    assert overloaded and all(a["error"]["code"] == ErrorCode.OVERLOADED for a in overloaded)
    assert (
        overloaded[0]["error"]["data"] == {"maxInFlight": 2} and "retry" in overloaded[0]["error"]["message"]
    )
    assert any("result" in a for a in answers)
    assert "sessions" in c.call("session/list", {})  # and the connection goes on
    c.close()


def test_connections(daemon: Daemon) -> None:
    held = [RawClient.unix(daemon.socket) for _ in range(4)]
    for c in held:
        assert "result" in c.initialize()
    extra = RawClient.unix(daemon.socket)
    err = extra.message()["error"]
    assert err["code"] == ErrorCode.OVERLOADED and "too many connections" in err["message"]
    assert extra.closed_within(10)
    wait_for_log(daemon, "refusing a connection: 4 connections open")
    held.pop().close()
    deadline = time.monotonic() + 10
    while True:  # the daemon notices the close asynchronously
        again = RawClient.unix(daemon.socket)
        try:
            answer = again.initialize()
        except (OSError, Closed):
            answer = {}
        if "result" in answer or time.monotonic() > deadline:
            break
        again.close()
        time.sleep(0.1)
    assert "result" in answer
    for c in [*held, again]:
        c.close()
