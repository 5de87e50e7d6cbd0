"""Framing, bad input, lifecycle, transports and the process model, against the real daemon."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client, RpcError
from sessiond_protocol import ErrorCode
from tests.builders import user
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.fixtures import SharedDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """One daemon for the tests of the default configuration (each opens connections of its own
    and closes them; ``shared_daemon`` checks that none is left); a test that configures its
    daemon, or stops it, starts its own."""
    return shared_daemon


def raw_exchange(path: Path, data: bytes, *, read: bool = True, timeout: float = 5) -> bytes:
    """Send raw bytes on a fresh Unix connection and return everything read until close/timeout."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(str(path))
    s.sendall(data)
    out = b""
    if read:
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                if out.count(b"\n") >= data.count(b"\n") and b'"id"' in out:
                    break
        except TimeoutError:
            pass
    s.close()
    return out


def lsp(body: dict[str, Any] | bytes) -> bytes:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: " + str(len(raw)).encode() + b"\r\n\r\n" + raw


async def test_both_framings_answered_in_kind(daemon: Daemon) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    out = raw_exchange(daemon.socket, json.dumps(init).encode() + b"\n")
    assert out.startswith(b'{"jsonrpc":"2.0","id":1,"result"') and out.endswith(b"\n")
    out = raw_exchange(daemon.socket, lsp(init))
    assert out.startswith(b"Content-Length: ")
    header, _, body = out.partition(b"\r\n\r\n")
    assert int(header.split(b":")[1]) == len(body) and json.loads(body)["id"] == 1


async def test_non_ascii_content_length_counts_bytes(daemon: Daemon) -> None:
    client = await daemon.client()
    result = await client.request("session/new", {"cwd": "/tmp/ünïcødé 😀"})
    assert result["cwd"] == "/tmp/ünïcødé 😀"
    await client.close()


@pytest.mark.parametrize("framing", ["content-length", "ndjson"])
async def test_bad_input_gets_precise_errors(daemon: Daemon, framing: str) -> None:
    client = await daemon.client(framing)
    frame = (lambda b: b + b"\n") if framing == "ndjson" else lsp
    await client.send_raw(frame(b"{not json"))
    method, err = await client.notification()
    assert method == "$/error" and err["code"] == ErrorCode.PARSE_ERROR
    await client.send_raw(frame(b"[1,2]"))
    assert (await client.notification())[1]["code"] == ErrorCode.INVALID_REQUEST
    await client.send_raw(frame(b'{"jsonrpc":"1.0","id":5,"method":"x"}'))
    with pytest.raises(asyncio.TimeoutError):
        await client.notification(timeout=0.3)  # answered with id 5: not a notification
    for method, params, code in [
        ("nope/nothing", {}, ErrorCode.METHOD_NOT_FOUND),
        ("session/load", {"sessionId": 42}, ErrorCode.INVALID_PARAMS),
        ("session/load", [1, 2], ErrorCode.INVALID_PARAMS),
        ("session/list", {"limit": "many"}, ErrorCode.INVALID_PARAMS),
    ]:
        with pytest.raises(RpcError) as exc:
            await client.request(method, params)
        assert exc.value.code == code
        assert "Traceback" not in exc.value.message and "traceback" not in json.dumps(exc.value.data or {})
    # the connection still works after all of that
    assert "sessions" in await client.request("session/list", {})
    await client.close()


async def test_requests_without_params_are_answered(daemon: Daemon) -> None:
    client = await daemon.client()
    assert "sessions" in await client.request("session/list")
    with pytest.raises(RpcError) as exc:
        await client.request("session/load")
    assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == "sessionId"
    await client.close()


async def test_broken_headers_close_the_connection_with_an_error(daemon: Daemon) -> None:
    for data in [b"Content-Length: abc\r\n\r\n{}", b"X-Other: 1\r\n\r\n{}", b"Garbage line\r\n\r\n"]:
        out = raw_exchange(daemon.socket, data)
        assert json.loads(out.partition(b"\r\n\r\n")[2])["error"]["code"] == ErrorCode.PARSE_ERROR


async def test_oversized_messages(tmp_path: Path) -> None:
    d = start_daemon(tmp_path, config="[limits]\nmax_message_bytes = 4096\n")
    try:
        client = await d.client("ndjson")
        big = {"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {"pad": "x" * 10000}}
        await client.send_raw(json.dumps(big).encode() + b"\n")
        _method, err = await client.notification()
        assert err["code"] == ErrorCode.MESSAGE_TOO_LARGE and err["data"]["limit"] == 4096
        assert "sessions" in await client.request("session/list", {})  # NDJSON stays in sync
        await client.close()
        out = raw_exchange(d.socket, b"Content-Length: 100000\r\n\r\n")  # answered in its framing
        err = json.loads(out.partition(b"\r\n\r\n")[2])["error"]
        assert err["code"] == ErrorCode.MESSAGE_TOO_LARGE and err["data"]["limit"] == 4096
    finally:
        assert d.stop() == 0


async def test_lifecycle_shutdown_and_exit(daemon: Daemon) -> None:
    client = await daemon.client(initialize=False)
    with pytest.raises(RpcError) as exc:
        await client.request("session/list", {})
    assert exc.value.code == ErrorCode.SERVER_NOT_INITIALIZED
    await client.initialize("t")
    assert await client.request("shutdown") is None
    with pytest.raises(RpcError) as exc:
        await client.request("session/list", {})
    assert exc.value.code == ErrorCode.INVALID_REQUEST
    await client.notify("exit")
    await asyncio.wait_for(client._closed.wait(), 5)
    assert daemon.process.poll() is None  # one client leaving does not stop the daemon


async def test_cancel_request_both_forms(tmp_path: Path) -> None:
    from tests.builders import Ledger  # noqa: PLC0415

    d = start_daemon(tmp_path)
    try:
        # a large session, so that loading it takes long enough to be cancelled
        directory = d.store / "sessions" / "--big--"
        directory.mkdir(parents=True)
        s = Ledger("big-session", "/big")
        for i in range(40_000):
            s.user(f"message {i} " + "x" * 200)
        (directory / "2026-01-01T00-00-00-000Z_big-session.jsonl").write_bytes(s.jsonl())
        for form in ("$/cancelRequest", "$/cancel_request"):
            client = await d.client()
            task = asyncio.ensure_future(
                client.request("session/load", {"sessionId": "big-session"}, msg_id=77)
            )
            await asyncio.sleep(0.05)
            params = {"id": 77} if form == "$/cancelRequest" else {"requestId": 77}
            await client.notify(form, params)
            with pytest.raises(RpcError) as exc:
                await task
            assert exc.value.code == ErrorCode.REQUEST_CANCELLED
            assert "sessions" in await client.request("session/list", {})
            await client.close()
    finally:
        assert d.stop() == 0


async def test_progress_for_requests_with_a_token(client: Client) -> None:
    await client.request("session/list", {"workDoneToken": "tok-1"})
    notes = [p for m, p in client.drain_notifications() if m == "$/progress"]
    assert [n["value"]["kind"] for n in notes] == ["begin", "end"] and notes[0]["token"] == "tok-1"


async def test_too_many_requests_in_flight(tmp_path: Path) -> None:
    d = start_daemon(tmp_path, config="[limits]\nmax_in_flight = 2\n")
    try:
        client = await d.client()
        results = await asyncio.gather(
            *(client.request("session/list", {}) for _ in range(30)), return_exceptions=True
        )
        overloaded = [r for r in results if isinstance(r, RpcError) and r.code == ErrorCode.OVERLOADED]
        assert overloaded and "retry" in overloaded[0].message
        assert any(isinstance(r, dict) for r in results)
        await client.close()
    finally:
        assert d.stop() == 0


async def test_a_subscriber_that_stops_reading_is_bounded(tmp_path: Path) -> None:
    d = start_daemon(tmp_path, config="[limits]\nnotification_queue = 16\n")
    try:
        writer = await d.client()
        sid = (await writer.request("session/new", {"cwd": "/slow"}))["sessionId"]
        # a raw subscriber that subscribes and then does not read
        reader = socket.socket(socket.AF_UNIX)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(str(d.socket))
        for i, (method, params) in enumerate(
            [("initialize", {"protocolVersion": 1}), ("session/subscribe", {"sessionId": sid})], 1
        ):
            reader.sendall(
                json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n"
            )
        await asyncio.sleep(0.3)
        payload = "y" * 2000
        # Enough updates to fill the kernel's socket buffers as well as the queue: the daemon
        # writes what one loop tick queued in one write(), so 300 appends' updates (~120 kB in
        # a few large writes) can fit in the kernel's buffers without any backpressure at all.
        appends = 1500
        for _ in range(appends):
            await writer.request(
                "session/append",
                {"sessionId": sid, "entries": [{"type": "message", "message": user(payload)}]},
            )
        status = Path(f"/proc/{d.process.pid}/status").read_text()
        rss_kb = int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])
        assert rss_kb < 200_000
        # now read everything: the subscriber is told to resync instead of getting 300 updates
        reader.settimeout(2)
        data = b""
        try:
            while True:
                chunk = reader.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            pass
        messages = [json.loads(line) for line in data.splitlines() if line.strip()]
        kinds = [
            m["params"]["update"]["sessionUpdate"] for m in messages if m.get("method") == "session/update"
        ]
        assert "resync_required" in kinds
        assert kinds.count("entries_appended") < appends
        reader.close()
        await writer.close()
    finally:
        assert d.stop() == 0


async def test_tcp_needs_loopback_and_the_token(tmp_path: Path) -> None:
    d = start_daemon(tmp_path, "--tcp", "127.0.0.1:0")
    assert d.tcp is not None and d.tcp[0] == "127.0.0.1"
    try:
        port = d.tcp[1]
        token_file = d.store / "tcp.token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        token = token_file.read_text().strip()
        bad = await Client.connect_tcp("127.0.0.1", port)
        with pytest.raises(RpcError) as exc:
            await bad.initialize("t", auth_token="wrong")
        assert exc.value.code == ErrorCode.INVALID_REQUEST and "Authentication" in exc.value.message
        await asyncio.wait_for(bad._closed.wait(), 5)
        anonymous = await Client.connect_tcp("127.0.0.1", port)
        with pytest.raises(RpcError):
            await anonymous.initialize("t")
        good = await Client.connect_tcp("127.0.0.1", port)
        await good.initialize("t", auth_token=token)
        assert "sessions" in await good.request("session/list", {})
        await good.close()
    finally:
        assert d.stop() == 0
    proc = subprocess.run(
        [sys.executable, "-m", "sessiond", "serve", "--store", str(tmp_path / "s2"), "--tcp", "0.0.0.0:9999"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "loopback" in proc.stderr


async def test_one_daemon_per_store(daemon: Daemon) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sessiond", "serve", "--socket", str(daemon.socket) + ".2"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
        env=daemon.env,
    )
    assert proc.returncode == 3
    assert "already running" in proc.stderr and str(daemon.process.pid) in proc.stderr
    assert proc.stderr.count("\n") == 1


async def test_a_daemon_of_another_store_does_not_take_over_a_live_socket(
    daemon: Daemon, tmp_path: Path
) -> None:
    """The store lock cannot exclude a daemon of another store given the same ``--socket``: it
    must refuse instead of unlinking the live socket (which handed the first daemon's clients to
    the wrong store), and the first daemon keeps answering there."""
    other = tmp_path / "other-store"
    proc = subprocess.run(
        [sys.executable, "-m", "sessiond", "serve", "--store", str(other), "--socket", str(daemon.socket)],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
        env=daemon.env,
    )
    assert proc.returncode == 3, proc.stderr
    assert f"already running on the socket {daemon.socket}" in proc.stderr
    assert "Traceback" not in proc.stderr
    client = await daemon.client()
    info = await client.request("daemon/status", {})
    assert info["store"] == str(daemon.store)
    await client.close()


def test_a_socket_path_too_long_for_unix_sockets_is_bad_input(tmp_path: Path) -> None:
    """Linux's ``sun_path`` holds 107 bytes: a longer ``--socket`` (a deep test or home
    directory) failed in ``bind`` as "internal error: OSError: AF_UNIX path too long", exit 1.
    It is bad input: exit 2, the path, its length and the limit."""
    store = tmp_path / "store"
    sock = tmp_path / ("d" * 120) / "sessiond.sock"
    proc = subprocess.run(
        [sys.executable, "-m", "sessiond", "serve", "--store", str(store), "--socket", str(sock)],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"the socket path {sock} is {len(os.fsencode(sock))} bytes" in proc.stderr
    assert "at most 107" in proc.stderr and "internal error" not in proc.stderr
    assert "Traceback" not in proc.stderr


async def test_socket_permissions(daemon: Daemon) -> None:
    assert oct(daemon.socket.stat().st_mode & 0o777) == "0o600"
    assert oct(daemon.socket.parent.stat().st_mode & 0o777) == "0o700"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
async def test_peers_of_another_uid_are_refused(tmp_path: Path) -> None:
    import shutil  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    run = Path(tempfile.mkdtemp(prefix="sd-uid-", dir="/tmp"))  # a path the other uid can reach
    sock = run / "sessiond.sock"
    daemon = start_daemon(tmp_path, socket_path=sock)
    try:
        os.chmod(run, 0o711)  # loosen what sessiond set up (0700/0600): the uid check must still hold
        os.chmod(sock, 0o666)
        script = (
            "import os, socket\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"s.connect({str(sock)!r})\n"
            "try:\n"
            '    s.sendall(b\'{"jsonrpc":"2.0","id":1,"method":"initialize",'
            '"params":{"protocolVersion":1}}\\n\')\n'
            "    s.settimeout(5)\n"
            "    print(repr(s.recv(100)))\n"
            "except (ConnectionResetError, BrokenPipeError):\n    print('reset')\n"
        )
        out_proc = subprocess.run(
            [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=30
        )
        assert out_proc.stdout.strip() in ("b''", "reset"), out_proc.stdout + out_proc.stderr
        await asyncio.sleep(0.1)
        assert "refused a Unix-socket client of uid 65534" in daemon.log_text()
    finally:
        assert daemon.stop() == 0
        shutil.rmtree(run, ignore_errors=True)


async def test_stdio_server(tmp_path: Path) -> None:
    env = {**os.environ, "SESSIOND_HOME": str(tmp_path / "store")}
    client = await Client.spawn(sys.executable, "-m", "sessiond", "serve", "--stdio", env=env)
    await client.initialize("stdio-test")
    sid = (await client.request("session/new", {"cwd": "/stdio", "subscribe": True}))["sessionId"]
    await client.request(
        "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": user("hi")}]}
    )
    _method, params = await client.notification()
    assert params["update"]["sessionUpdate"] == "entries_appended"
    await client.request("shutdown")
    await client.notify("exit")
    assert client._process is not None
    assert await asyncio.wait_for(client._process.wait(), 10) == 0


@pytest.mark.parametrize("framing", ["content-length", "ndjson"])
async def test_connect_bridge_starts_the_daemon(tmp_path: Path, framing: str) -> None:
    store = tmp_path / "store"
    sock = tmp_path / "run" / "s.sock"
    env = {**os.environ, "SESSIOND_HOME": str(store)}
    args = [sys.executable, "-m", "sessiond", "connect", "--socket", str(sock)]
    client = await Client.spawn(*args, env=env, framing=framing)
    await client.initialize("bridge")
    sid = (await client.request("session/new", {"cwd": "/bridge"}))["sessionId"]
    second = await Client.spawn(*args, env=env, framing=framing)  # shares the daemon started by the first
    await second.initialize("bridge-2")
    await second.request("session/subscribe", {"sessionId": sid})
    await client.request(
        "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": user("x")}]}
    )
    _method, params = await second.notification()
    assert params["sessionId"] == sid
    await client.close()
    await second.close()
    pid = int((store / "daemon.lock").read_text())
    os.kill(pid, 15)
    for _ in range(200):
        if not sock.exists():
            break
        await asyncio.sleep(0.05)
    assert not sock.exists()
