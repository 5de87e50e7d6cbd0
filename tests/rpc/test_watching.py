"""Other programs writing session files while the daemon serves them (real daemon, real files)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client
from tests.builders import assistant, user
from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio


def line(entry_id: str, parent: str | None, message: dict[str, Any]) -> bytes:
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
    }
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


async def until(client: Client, sid: str, kind: str, timeout: float = 10) -> dict[str, Any]:
    async for update in client.updates(sid, timeout=timeout):
        if update["sessionUpdate"] == kind:
            return update
    raise AssertionError("unreachable")


async def session_with_file(client: Client) -> tuple[str, Path, str]:
    created = await client.request("session/new", {"cwd": "/w", "subscribe": True})
    sid = created["sessionId"]
    appended = await client.request(
        "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": user("hello")}]}
    )
    return sid, Path(created["path"]), appended["leafId"]


async def test_external_appends_are_followed(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path, leaf = await session_with_file(client)
    client.drain_notifications()
    with open(path, "ab") as f:
        f.write(line("ext00001", leaf, assistant("written outside the daemon", total=120)))
    update = await until(client, sid, "entries_appended")
    assert update["entryIds"] == ["ext00001"] and update["external"] is True
    usage = await until(client, sid, "usage_update")
    assert usage["used"] == 120
    # A partial line is not ingested until its newline arrives.
    with open(path, "ab") as f:
        f.write(line("ext00002", "ext00001", user("more"))[:-20])
    with open(path, "ab") as f:
        f.write(line("ext00002", "ext00001", user("more"))[-20:])
    update = await until(client, sid, "entries_appended")
    assert update["entryIds"] == ["ext00002"]
    # The daemon's own next append hangs below the external entries and is not echoed.
    mine = await client.request(
        "session/append",
        {"sessionId": sid, "entries": [{"type": "message", "message": user("from the daemon")}]},
    )
    entries = [json.loads(x) for x in path.read_bytes().splitlines()[1:]]
    assert [e["id"] for e in entries][-3:] == ["ext00001", "ext00002", mine["leafId"]]
    assert entries[-1]["parentId"] == "ext00002"
    seen = [u for m, p in client.drain_notifications() if m == "session/update" for u in [p["update"]]]
    assert not any(u.get("external") for u in seen if u["sessionUpdate"] == "entries_appended")
    await client.close()


async def test_rewrite_and_replace_give_external_change(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, path, leaf = await session_with_file(client)
    await client.request(
        "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": assistant("two")}]}
    )
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))  # truncated in place: the answer is gone
    change = await until(client, sid, "external_change")
    assert change["reason"] == "rewritten" and change["leafId"] == leaf
    assert change["previousEntryCount"] == 2 and change["entryCount"] == 1
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(lines))
    os.replace(tmp, path)  # atomic replace: a new file under the same name
    change = await until(client, sid, "external_change")
    assert change["reason"] == "replaced" and change["entryCount"] == 2
    with open(path, "ab") as f:  # appends to the new file are still followed
        f.write(line("ext00003", change["leafId"], user("after the replace")))
    update = await until(client, sid, "entries_appended")
    assert update["entryIds"] == ["ext00003"]
    context = await client.request("context/get", {"sessionId": sid})
    assert context["messages"][-1]["entryId"] == "ext00003"
    path.unlink()
    change = await until(client, sid, "external_change")
    assert change["reason"] == "deleted"
    await client.close()


async def test_new_session_files_are_announced_to_list_subscribers(tmp_path: Path) -> None:
    (tmp_path / "pi" / "sessions").mkdir(parents=True)
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        await client.request("session/list", {"subscribe": True})
        directory = tmp_path / "pi" / "sessions" / "--w--"
        directory.mkdir()
        header = {
            "type": "session",
            "version": 3,
            "id": "pi-new-1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        }
        path = directory / "2026-01-01T00-00-00-000Z_pi-new-1.jsonl"
        path.write_bytes(json.dumps(header).encode() + b"\n" + line("a1", None, user("hi from Pi")))
        async for update in client.updates(timeout=10):
            if update["sessionUpdate"] == "session_list_update" and update["path"] == str(path):
                assert update["change"] in ("added", "updated")
                assert update["session"]["sessionId"] == "pi-new-1" and update["session"]["root"] == "pi"
                break
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_kernel_watches_on_the_store_when_configured(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, config="[watch]\nown_poll_interval = 0\n")
    try:
        client = await daemon.client()
        sid, path, leaf = await session_with_file(client)
        client.drain_notifications()
        with open(path, "ab") as f:
            f.write(line("ext00009", leaf, user("outside")))
        update = await until(client, sid, "entries_appended", timeout=5)
        assert update["entryIds"] == ["ext00009"] and update["external"] is True
        await client.close()
    finally:
        assert daemon.stop() == 0
