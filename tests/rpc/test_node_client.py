"""A real third-party client: npm vscode-jsonrpc (Node) against the daemon, over both transports.

``tests/rpc/node/client_test.mjs`` runs the same scenario over the Unix socket and over stdio
through ``sessiond connect``: initialize, session/new (subscribed), session/append, the
``entries_appended`` and ``usage_update`` notifications, a second subscribed connection, a
cancelled session/load (-32800), requests without params, shutdown and exit. Its npm
dependencies are installed by ``scripts/setup-node-tests``; without them (or without node)
this test is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.builders import Ledger
from tests.harness.daemon import Daemon, start_daemon

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "client_test.mjs"
NODE = shutil.which("node")
BIG_SESSIONS = {"socket": "big-socket", "stdio": "big-stdio"}
MESSAGES_IN_BIG_SESSION = 40_000

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "vscode-jsonrpc" / "package.json").exists(),
        reason="vscode-jsonrpc is not installed in tests/rpc/node (run scripts/setup-node-tests)",
    ),
]


def write_big_sessions(d: Daemon) -> None:
    """One large session per transport, so that loading it takes long enough to be cancelled."""
    directory = d.store / "sessions" / "--big--"
    directory.mkdir(parents=True)
    for session_id in BIG_SESSIONS.values():
        s = Ledger(session_id, "/big")
        for i in range(MESSAGES_IN_BIG_SESSION):
            s.user(f"message {i} " + "x" * 200)
        (directory / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl").write_bytes(s.jsonl())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_run(run: dict[str, Any], transport: str) -> None:
    assert "error" not in run, run.get("error")
    assert run["initialize"]["protocolVersion"] == 1
    assert run["initialize"]["serverInfo"]["name"] == "sessiond"
    sid = run["session"]["sessionId"]
    first = run["firstAppend"]["entryIds"]
    second = run["secondAppend"]["entryIds"]
    assert run["entriesAppended"]["entryIds"] == first
    assert run["entriesAppended"]["types"] == ["model_change", "message", "message"]
    assert run["usageUpdate"] == {
        "sessionUpdate": "usage_update",
        "used": 50_000,
        "size": 200_000,
        "percent": 25,
        "source": "api",
    }
    assert run["secondConnection"]["subscribe"]["sessionId"] == sid
    assert run["secondConnection"]["entriesAppended"]["entryIds"] == second
    assert run["cancel"]["code"] == -32800
    assert sid in run["listWithoutParams"]["sessionIds"]
    assert run["loadWithoutParams"]["code"] == -32602
    assert run["loadWithoutParams"]["data"]["field"] == "sessionId"
    # what each connection was told about this session, in order
    appended_a = [u["entryIds"] for u in run["updates"]["A"] if u["sessionUpdate"] == "entries_appended"]
    appended_b = [u["entryIds"] for u in run["updates"]["B"] if u["sessionUpdate"] == "entries_appended"]
    assert appended_a == [first, second]
    assert appended_b == [second]
    assert run["connectionErrors"] == []
    if transport == "stdio":
        for closed in run["close"].values():
            assert closed["bridgeExitCode"] == 0, closed
    else:
        assert all(closed == {"socketClosed": True} for closed in run["close"].values()), run["close"]


def check_session_file(run: dict[str, Any], transport: str) -> None:
    """The session written through Node is on disk: header, then the 4 entries in append order."""
    path = Path(run["session"]["path"])
    lines = read_jsonl(path)
    header, entries = lines[0], lines[1:]
    assert header["type"] == "session" and header["id"] == run["session"]["sessionId"]
    assert header["cwd"] == f"/node-client/{transport}"
    ids = run["firstAppend"]["entryIds"] + run["secondAppend"]["entryIds"]
    assert [e["id"] for e in entries] == ids
    assert [e["parentId"] for e in entries] == [None, *ids[:-1]]
    model_change, user, assistant, second_user = entries
    assert model_change["type"] == "model_change"
    assert (model_change["provider"], model_change["modelId"]) == ("anthropic", "claude-sonnet-4-5")
    assert user["message"]["role"] == "user"
    assert user["message"]["content"] == [
        {"type": "text", "text": f"hello from vscode-jsonrpc over {transport}"}
    ]
    assert assistant["message"]["role"] == "assistant"
    assert assistant["message"]["usage"]["totalTokens"] == 50_000
    assert assistant["message"]["model"] == "claude-sonnet-4-5"
    assert second_user["message"]["content"][0]["text"] == "seen by the second connection"


def test_vscode_jsonrpc_client_over_socket_and_stdio(tmp_path: Path) -> None:
    assert NODE is not None
    d = start_daemon(tmp_path)
    try:
        write_big_sessions(d)
        connect = [sys.executable, "-m", "sessiond", "connect", "--socket", str(d.socket)]
        args = [
            NODE,
            str(SCRIPT),
            "--socket",
            str(d.socket),
            "--connect-cmd",
            json.dumps(connect),
            "--big-socket",
            BIG_SESSIONS["socket"],
            "--big-stdio",
            BIG_SESSIONS["stdio"],
        ]
        # d.env carries SESSIOND_HOME: the bridges reach the same store (and daemon)
        proc = subprocess.run(args, env=d.env, capture_output=True, text=True, timeout=180, check=False)
        assert proc.returncode == 0, f"stderr:\n{proc.stderr}\nstdout:\n{proc.stdout}\n{d.log_text()}"
        summary = json.loads(proc.stdout)
        assert summary["ok"] is True and set(summary["runs"]) == {"socket", "stdio"}
        for transport, run in summary["runs"].items():
            check_run(run, transport)
            check_session_file(run, transport)
        # the bridges used the daemon under test rather than starting their own
        assert d.process.poll() is None
        assert "Traceback" not in d.log_text(), d.log_text()
    finally:
        assert d.stop() == 0, d.log_text()
    assert not d.socket.exists()
