"""``tail``: the last entries, and with -f live updates from other clients until interrupted."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.builders import user
from tests.cli.conftest import EXAMPLE_ID, Cli, new_session
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


def test_tail_prints_the_last_entries(cli: Cli) -> None:
    r = cli.run("tail", "-n", "3", EXAMPLE_ID)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[2] for line in lines] == ["a1000006", "c1000001", "u1000006"]
    assert "⟳ compaction" in lines[1] and "user" in lines[2] and "docs/auth.md" in lines[2]
    js = [json.loads(line) for line in cli.run("tail", "--json", "-n", "2", EXAMPLE_ID).stdout.splitlines()]
    assert [x["entry"]["id"] for x in js] == ["c1000001", "u1000006"]
    assert all(x["kind"] == "entry" and x["sessionId"] == EXAMPLE_ID for x in js)


def _reader(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next(lines: queue.Queue[str], timeout: float = 10) -> str:
    return lines.get(timeout=timeout)


async def test_tail_follow_prints_appends_of_another_client(
    cli: Cli, cli_daemon: Daemon, tmp_path: Path
) -> None:
    client = await cli_daemon.client()
    sid, ids = await new_session(client, tmp_path, ["one", "two"])
    last = ids[-1]
    for args in (("--json",), ()):
        proc = cli.popen("tail", "-f", "-n", "1", *args, sid)
        try:
            lines = _reader(proc)
            first = _next(lines)
            assert last in first  # the last entry, then following
            appended = await client.request(
                "session/append",
                {"sessionId": sid, "entries": [{"type": "message", "message": user(f"live {len(args)}")}]},
            )
            new_id = last = appended["entryIds"][0]
            seen = [_next(lines)]
            while new_id not in seen[-1]:
                seen.append(_next(lines))
            if args:
                entry = json.loads(seen[-1])
                assert entry["kind"] == "entry"
                assert entry["entry"]["message"]["content"][0]["text"] == "live 1"
                update = json.loads(_next(lines))  # the usage that follows the append
                assert update["kind"] == "update" and update["update"]["sessionUpdate"] == "usage_update"
            else:
                assert "user" in seen[-1] and "live 0" in seen[-1]
                assert "usage" in _next(lines)
        finally:
            time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()  # do not leave it running: the failure is the timeout itself
                proc.wait()
                raise
        assert code == 130
    await client.close()
