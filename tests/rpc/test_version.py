"""The protocol version rule: ``protocolVersion`` is the protocol's major version; a client and a
daemon of different ones refuse each other with -32030 PROTOCOL_VERSION_MISMATCH naming both.

The daemon refuses an ``initialize`` for another version (the connection stays, uninitialized);
the Python client refuses a daemon that accepted it but answered another version (a daemon from
before the rule). The TypeScript client's side: clients/typescript/test/version.test.ts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sessiond_client import SessiondClient
from sessiond_client.errors import ProtocolVersionMismatch
from sessiond_protocol import PROTOCOL_VERSION, ErrorCode
from tests.rpc.conftest import Daemon, start_daemon
from tests.security.conftest import RawClient

pytestmark = pytest.mark.anyio


def test_the_daemon_refuses_another_major_version(daemon: Daemon) -> None:
    c = RawClient.unix(daemon.socket)
    answer = c.request("initialize", {"protocolVersion": PROTOCOL_VERSION + 1})
    error = answer["error"]
    assert error["code"] == ErrorCode.PROTOCOL_VERSION_MISMATCH
    assert error["message"] == (
        f"Protocol version mismatch: the client speaks version {PROTOCOL_VERSION + 1}, this server "
        f"(sessiond) speaks version {PROTOCOL_VERSION}; upgrade the server"
    )
    assert error["data"] == {"clientVersion": PROTOCOL_VERSION + 1, "serverVersion": PROTOCOL_VERSION}
    # not initialized, still connected: the version it speaks is accepted
    assert c.request("session/list", {})["error"]["code"] == ErrorCode.SERVER_NOT_INITIALIZED
    assert c.request("initialize", {"protocolVersion": PROTOCOL_VERSION})["result"]["protocolVersion"] == 1
    c.close()


# A daemon of the next protocol version: the real one, told so before it starts.
_NEWER = """
import sessiond_protocol, sessiond_protocol.version
sessiond_protocol.PROTOCOL_VERSION = sessiond_protocol.version.PROTOCOL_VERSION = {version}
"""


async def test_the_client_is_told_to_upgrade_by_a_newer_daemon(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(_NEWER.format(version=PROTOCOL_VERSION + 1))
    d = start_daemon(tmp_path, env={"PYTHONPATH": str(shim)})
    try:
        with pytest.raises(ProtocolVersionMismatch) as refused:
            await SessiondClient.connect(socket=d.socket, start=False)
        assert not refused.value.client_side
        assert refused.value.client_version == PROTOCOL_VERSION
        assert refused.value.server_version == PROTOCOL_VERSION + 1
        assert "upgrade the client" in refused.value.message
    finally:
        assert d.stop() == 0, d.log_text()


async def test_the_client_refuses_a_daemon_that_answers_another_version(tmp_path: Path) -> None:
    """A daemon from before the rule accepts any version and answers its own."""

    async def older_daemon(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        header = await reader.readuntil(b"\r\n\r\n")
        request = json.loads(await reader.readexactly(int(header.split(b":")[1].split(b"\r\n")[0])))
        result = {
            "protocolVersion": 0,
            "serverInfo": {"name": "sessiond", "version": "0.0.9"},
            "capabilities": {},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        await reader.read()  # until the client closes

    path = tmp_path / "older.sock"
    server = await asyncio.start_unix_server(older_daemon, path=str(path))
    try:
        with pytest.raises(ProtocolVersionMismatch) as refused:
            await SessiondClient.connect(socket=path, start=False)
        assert refused.value.client_side and refused.value.method == "initialize"
        assert refused.value.message == (
            f"Protocol version mismatch: this client (sessiond_client) speaks version {PROTOCOL_VERSION}, "
            "the daemon (sessiond 0.0.9) speaks version 0; upgrade the daemon"
        )
        assert refused.value.server_version == 0
    finally:
        server.close()
