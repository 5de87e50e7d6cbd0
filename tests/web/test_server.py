"""The viewer's listener in the real daemon: the page, the WebSocket, and who may use them.

Talks HTTP with the standard library's client and WebSocket with the ``websockets`` client,
to a daemon started as a subprocess on a temporary store.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin

from sessiond.errors import InvalidArgumentError
from sessiond.rpc.server import parse_tcp
from sessiond.service.config import ConfigError, load_config
from sessiond.web.location import parse_address, read_info
from tests.builders import Ledger
from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One daemon for the tests that only read and connect (starting one costs seconds)."""
    d = start_daemon(tmp_path_factory.mktemp("viewer"))
    try:
        yield d
    finally:
        assert d.stop() == 0, d.log_text()
        assert not (d.socket.parent / "ui.json").exists(), "ui.json outlived the daemon"
        assert "Traceback" not in d.log_text(), d.log_text()


def info(d: Daemon) -> dict[str, Any]:
    written: dict[str, Any] = json.loads((d.socket.parent / "ui.json").read_text())
    return written


def get(d: Daemon, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    url = info(d)["url"]
    hostport = url.split("//", 1)[1].rstrip("/")
    conn = http.client.HTTPConnection(hostport, timeout=10)
    headers = {"Host": host} if host is not None else {}
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def ws_url(d: Daemon) -> str:
    url: str = info(d)["url"]
    return url.replace("http://", "ws://") + "rpc"


def token(d: Daemon) -> str:
    return (d.store / "tcp.token").read_text().strip()


async def rpc(ws: Any, msg_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}))
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if message.get("id") == msg_id:
            return message


async def test_the_page_is_served_with_its_headers(daemon: Daemon) -> None:
    data = info(daemon)
    assert data["url"].startswith("http://127.0.0.1:") and data["pid"] == daemon.process.pid
    assert data["tokenPath"] == str(daemon.store / "tcp.token") and data["rpcPath"] == "/rpc"
    assert (daemon.socket.parent / "ui.json").stat().st_mode & 0o077 == 0
    # the page's files on disk, for the VS Code extension's webview (docs/vscode.md)
    static = Path(data["staticDir"])
    assert (static / "index.html").read_bytes() == get(daemon, "/")[2]
    status, headers, body = get(daemon, "/")
    assert status == 200 and b'<div id="app">' in body
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["cache-control"] == "no-cache"
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self' ws://" in csp
    assert headers["x-content-type-options"] == "nosniff"
    script = next(p for p in body.decode().split('"') if p.startswith("/assets/") and p.endswith(".js"))
    status, headers, _ = get(daemon, script)
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert "immutable" in headers["cache-control"]


async def test_unknown_paths_and_traversal_are_404(daemon: Daemon) -> None:
    for path in [
        "/nope",
        "/assets/../../rpc/server.py",
        "/../pyproject.toml",
        "/%2e%2e/etc/passwd",
        "/static",
    ]:
        status, _, body = get(daemon, path)
        assert status == 404, path
        assert b"Not found" in body


async def test_a_foreign_host_is_refused(daemon: Daemon) -> None:
    """DNS rebinding: a page of evil.example resolving to 127.0.0.1 still sends its own Host."""
    port = info(daemon)["url"].rsplit(":", 1)[1].rstrip("/")
    status, _, _ = get(daemon, "/", host=f"evil.example:{port}")
    assert status == 421
    status, _, _ = get(daemon, "/", host=f"localhost:{port}")
    assert status == 200
    assert "refused a request for host 'evil.example" in daemon.log_text()


async def test_a_cross_origin_websocket_is_refused(daemon: Daemon) -> None:
    with pytest.raises(InvalidStatus) as exc:
        async with connect(ws_url(daemon), origin=Origin("http://evil.example")):
            pass
    assert exc.value.response.status_code == 403
    # the page's own origin, and no origin at all (not a browser), are fine
    own = info(daemon)["url"].rstrip("/")
    async with connect(ws_url(daemon), origin=own) as ws:
        assert (await rpc(ws, 1, "initialize", {"protocolVersion": 1, "authToken": token(daemon)}))["result"]


async def test_the_websocket_needs_the_token(daemon: Daemon) -> None:
    async with connect(ws_url(daemon)) as ws:
        answer = await rpc(ws, 1, "session/list")
        assert answer["error"]["code"] == -32002  # not initialized
        answer = await rpc(ws, 2, "initialize", {"protocolVersion": 1, "authToken": "wrong"})
        assert answer["error"]["code"] == -32600 and "Authentication failed" in answer["error"]["message"]
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
    assert "refused: a wrong authToken" in daemon.log_text()


async def test_a_websocket_client_is_a_connection_like_the_others(daemon: Daemon, tmp_path: Path) -> None:
    """Requests, errors with their data, notifications of a subscription, one message per frame."""
    async with connect(ws_url(daemon)) as ws:
        init = await rpc(ws, 1, "initialize", {"protocolVersion": 1, "authToken": token(daemon)})
        assert init["result"]["serverInfo"]["name"] == "sessiond"
        created = await rpc(ws, 2, "session/new", {"cwd": str(tmp_path), "subscribe": True})
        sid = created["result"]["sessionId"]
        bad = await rpc(ws, 3, "tree/label", {"sessionId": sid})
        assert bad["error"]["code"] == -32602 and bad["error"]["data"]["field"] == "entryId"
        # pretty-printed JSON (newlines between tokens) is one message too
        await ws.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "session/append",
                    "params": {
                        "sessionId": sid,
                        "entries": [{"type": "message", "message": {"role": "user", "content": "hi"}}],
                    },
                },
                indent=2,
            )
        )
        kinds: list[str] = []
        answered = False
        while not answered or "entries_appended" not in kinds:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if message.get("id") == 4:
                assert "result" in message, message
                answered = True
            elif message.get("method") == "session/update":
                kinds.append(message["params"]["update"]["sessionUpdate"])
        garbage = await rpc(ws, 5, "no/such")
        assert garbage["error"]["code"] == -32601
        await ws.send("{not json")
        parse_error = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert parse_error["error"]["code"] == -32700
        # the connection goes on after a bad message
        assert "result" in await rpc(ws, 6, "session/list")


async def test_a_message_over_the_limit_closes_the_websocket(tmp_path: Path) -> None:
    d = start_daemon(tmp_path, config="[limits]\nmax_message_bytes = 4096\n")
    try:
        async with connect(ws_url(d), max_size=None) as ws:
            await rpc(ws, 1, "initialize", {"protocolVersion": 1, "authToken": token(d)})
            await ws.send(
                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/list", "pad": "x" * 10_000})
            )
            with pytest.raises(ConnectionClosed) as exc:
                await asyncio.wait_for(ws.recv(), 10)
            assert exc.value.rcvd is not None and exc.value.rcvd.code == 1009  # message too big
    finally:
        assert d.stop() == 0


async def test_the_viewer_can_be_turned_off_or_moved(tmp_path: Path) -> None:
    off = start_daemon(tmp_path / "a", "--ui", "off")
    try:
        assert not (off.socket.parent / "ui.json").exists()
    finally:
        assert off.stop() == 0
    configured = start_daemon(tmp_path / "b", config="[ui]\nenabled = false\n")
    try:
        assert read_info(configured.socket.parent) is None
    finally:
        assert configured.stop() == 0


@pytest.mark.parametrize(("parse", "field"), [(parse_address, "ui.listen"), (parse_tcp, "tcp")])
def test_the_address_must_be_loopback(parse: Callable[[str], tuple[str, int]], field: str) -> None:
    """The viewer and ``--tcp`` share the rule; each error names its own setting."""
    assert parse("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse("[::1]:8080") == ("::1", 8080)
    for bad, words in [
        ("0.0.0.0:80", "only listens on loopback"),
        ("192.168.1.2:80", "only listens on loopback"),
        ("localhost:80", "loopback IP address"),
        ("127.0.0.1", "HOST:PORT"),
        ("127.0.0.1:x", "must be a number"),
        ("127.0.0.1:70000", "0-65535"),
    ]:
        with pytest.raises(InvalidArgumentError, match=words) as exc:
            parse(bad)
        assert exc.value.data["field"] == field


def test_serve_refuses_a_public_address(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "sessiond", "serve", "--store", str(tmp_path), "--ui", "0.0.0.0:0"],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "the viewer only listens on loopback addresses, not 0.0.0.0" in run.stderr
    assert not (tmp_path / "tcp.token").exists()


def test_the_ui_table_of_the_configuration(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"SESSIOND_CONFIG": str(path), "HOME": str(tmp_path)}
    for text, field in [
        ("[ui]\nenabled = 1\n", "ui.enabled"),
        ("[ui]\nlisten = 8080\n", "ui.listen"),
        ("[ui]\nport = 1\n", "ui"),
        ("ui = 3\n", "ui"),
    ]:
        path.write_text(text)
        with pytest.raises(ConfigError) as exc:
            load_config(env, root=tmp_path)
        assert exc.value.data["field"] == field, text
    path.write_text('[ui]\nlisten = "127.0.0.1:8765"\n')
    assert load_config(env, root=tmp_path).ui.listen == "127.0.0.1:8765"


def test_sessiond_ui_starts_the_daemon_and_prints_the_url(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env = {
        **os.environ,
        "SESSIOND_HOME": str(store),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
    }
    env.pop("SESSIOND_CONFIG", None)
    socket = tmp_path / "run" / "sessiond.sock"
    s = Ledger("listed", "/w")
    s.user("hello")
    (store / "sessions" / "--w--").mkdir(parents=True)
    (store / "sessions" / "--w--" / "2026-01-01T00-00-00-000Z_listed.jsonl").write_bytes(s.jsonl())
    args = [sys.executable, "-m", "sessiond", "ui", "--socket", str(socket), "--no-browser"]
    try:
        run = subprocess.run(
            [*args, "--json", "listed"], env=env, capture_output=True, check=False, text=True, timeout=60
        )
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)
        data = json.loads((socket.parent / "ui.json").read_text())
        assert out["viewer"] == data["url"] and out["pid"] == data["pid"]
        token_value = (store / "tcp.token").read_text().strip()
        # a one-time code, never the store's token (issue 24: the URL lands in a browser's
        # command line, which every local user can read)
        assert out["url"].startswith(f"{data['url']}#code=") and out["url"].endswith("&session=listed")
        assert token_value not in out["url"]
        # a second run finds the same daemon, and hands out another code
        again = subprocess.run(args, env=env, capture_output=True, check=False, text=True, timeout=60)
        second = again.stdout.strip()
        assert again.returncode == 0 and second.startswith(f"{data['url']}#code="), again.stderr
        assert second.split("#code=")[1] != out["url"].split("#code=")[1].split("&")[0]
    finally:
        pid = json.loads((socket.parent / "ui.json").read_text())["pid"] if socket.exists() else None
        if pid:
            os.kill(pid, 15)


def test_sessiond_ui_says_when_the_daemon_serves_no_viewer(tmp_path: Path) -> None:
    d = start_daemon(tmp_path, "--ui", "off")
    try:
        run = subprocess.run(
            [sys.executable, "-m", "sessiond", "ui", "--socket", str(d.socket), "--no-browser", "--json"],
            env=d.env,
            capture_output=True,
            check=False,
            text=True,
            timeout=60,
        )
        assert run.returncode == 3
        assert "serves no viewer" in run.stderr and "--ui off" in run.stderr
        assert json.loads(run.stdout)["error"]["exitCode"] == 3
    finally:
        assert d.stop() == 0
