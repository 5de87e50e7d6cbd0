"""``daemon/status`` shows how other writers are followed and what that wakes (issue 30), through
the real daemon: both watchers on inotify by default (the store too), no watcher wake-up while
nothing changes, and one when another program appends to a session file in the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiond.service import inotify
from tests.builders import user
from tests.harness.daemon import start_daemon

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not inotify.available(), reason="no inotify here"),
]


async def test_an_idle_daemons_watchers_do_not_wake(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        created = await client.request("session/new", {"cwd": str(tmp_path)})
        sid = created["sessionId"]
        entries = [{"type": "message", "message": user("hello")}]
        leaf = (await client.request("session/append", {"sessionId": sid, "entries": entries}))["leafId"]
        await client.request("session/subscribe", {"sessionId": sid})
        watching: dict[str, Any] = {}
        with anyio.fail_after(10):
            while watching.get("storeMode") is None:  # both watchers started
                watching = (await client.request("daemon/status", {}))["watching"]
                await anyio.sleep(0.05)
        assert watching["enabled"] and watching["mode"] == "inotify" and watching["storeMode"] == "inotify"
        assert isinstance(watching["processWakeups"], int) and watching["processWakeups"] > 0
        await anyio.sleep(0.3)  # the look at the daemon's own append is done
        quiet = (await client.request("daemon/status", {}))["watching"]["wakeups"]
        await anyio.sleep(1.5)  # longer than any old step, poll or directory-check period
        assert (await client.request("daemon/status", {}))["watching"]["wakeups"] == quiet

        entry = {
            "type": "message",
            "id": "ext00001",
            "parentId": leaf,
            "timestamp": "2026-01-01T00:00:00.000Z",
        }
        with Path(created["path"]).open("ab") as f:  # another program appends to a file in the store
            f.write(json.dumps({**entry, "message": user("from outside")}).encode() + b"\n")
        async for update in client.updates(sid, timeout=10):
            if update["sessionUpdate"] == "entries_appended":
                assert update["entryIds"] == ["ext00001"] and update["external"] is True
                break
        else:
            pytest.fail("the external append to the store was not followed")
        assert (await client.request("daemon/status", {}))["watching"]["wakeups"] > quiet
        await client.close()
    finally:
        assert daemon.stop() == 0
