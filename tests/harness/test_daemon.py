"""The daemon harness itself: ready means answering, and a failure says why."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.daemon import DaemonNotReady, start_daemon, wait_until_ready


def test_a_stale_socket_file_is_not_ready(tmp_path: Path) -> None:
    """A socket file nobody listens on (what a killed daemon leaves) must not pass as ready."""
    path = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()  # the file stays, nothing accepts
    assert path.is_socket()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = time.monotonic()
        with pytest.raises(DaemonNotReady, match="not ready in time") as failure:
            wait_until_ready(path, sleeper, None, timeout=1.0)
        assert time.monotonic() - started >= 0.9
        assert "ConnectionRefusedError" in str(failure.value)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_daemon_that_exits_fails_with_its_log(tmp_path: Path) -> None:
    with pytest.raises(DaemonNotReady, match="exited with 2") as failure:
        start_daemon(tmp_path, config="[limits]\nmax_in_flight = 'many'\n")
    assert "max_in_flight" in str(failure.value)  # the daemon's own message, from its log


def test_a_daemon_replacing_a_stale_socket_is_ready_and_answers(tmp_path: Path) -> None:
    path = tmp_path / "run" / "sessiond.sock"
    path.parent.mkdir()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    daemon = start_daemon(tmp_path)
    try:
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(str(daemon.socket))  # accepted at once: the daemon listens
    finally:
        assert daemon.stop() == 0
    assert "Traceback" not in daemon.log_text()


def test_the_probe_is_gone_when_the_daemon_is_returned(tmp_path: Path) -> None:
    """With room for one connection, the test's first client gets it: the harness's probe
    connection has been closed by then."""
    daemon = start_daemon(tmp_path, config="[limits]\nmax_connections = 1\n")
    try:
        with socket.socket(socket.AF_UNIX) as c:
            c.settimeout(10)
            c.connect(str(daemon.socket))
            c.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n')
            answer = c.recv(65536)
        assert b'"result"' in answer and b"too many connections" not in answer, answer
    finally:
        assert daemon.stop() == 0


def test_tcp_address_is_the_bound_port(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, "--tcp", "127.0.0.1:0")
    try:
        assert daemon.tcp is not None
        host, port = daemon.tcp
        assert host == "127.0.0.1" and port > 0
        socket.create_connection((host, port), timeout=5).close()
    finally:
        assert daemon.stop() == 0
