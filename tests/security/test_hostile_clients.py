"""Hostile clients against a real daemon (issue 24): messages that once dropped the connection.

Each test here failed before its fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from sessiond_protocol import ErrorCode
from tests.builders import user
from tests.harness.daemon import Daemon, start_daemon
from tests.security.conftest import RawClient, assert_no_traceback


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("hostile"))
    yield d
    assert d.stop() == 0, d.log_text()[-3000:]


def _line(message: Mapping[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize(
    "method,params,field",
    [
        ("$/cancelRequest", {"id": {"a": 1}}, "id"),
        ("$/cancelRequest", {"id": [1, 2]}, "id"),
        ("$/cancelRequest", {"id": 1.5}, "id"),
        ("$/cancel_request", {"requestId": {"a": 1}}, "requestId"),
        ("$/cancel_request", {"requestId": [7]}, "requestId"),
    ],
)
def test_a_cancel_with_an_id_that_is_no_id(
    daemon: Daemon, tmp_path: Path, method: str, params: dict[str, object], field: str
) -> None:
    """-32602 naming the field, and the append sent in the same packet before it is stored once
    and acknowledged; the connection goes on."""
    c = RawClient.unix(daemon.socket)
    c.initialize()
    sid = c.call("session/new", {"cwd": str(tmp_path)})["sessionId"]
    append = {
        "jsonrpc": "2.0",
        "id": 100,
        "method": "session/append",
        "params": {"sessionId": sid, "entries": [{"type": "message", "message": user("before")}]},
    }
    cancel = {"jsonrpc": "2.0", "method": method, "params": params}
    c.send(_line(append) + _line(cancel))
    answers = [c.message(), c.message()]
    acked = [a for a in answers if a.get("id") == 100]
    refused = [a for a in answers if a.get("id") is None]
    assert len(acked) == 1 and "result" in acked[0], answers
    assert len(refused) == 1, answers
    error = refused[0]["error"]
    assert error["code"] == ErrorCode.INVALID_PARAMS and error["data"]["field"] == field, error
    assert_no_traceback(error)
    # the connection survives, and the entry is there once
    entries = c.call("session/entries", {"sessionId": sid})["entries"]
    texts = [json.dumps(e) for e in entries if e.get("type") == "message"]
    assert sum("before" in t for t in texts) == 1, entries
    c.close()
