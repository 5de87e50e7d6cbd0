"""Session files truncated, replaced or deleted under the running daemon while clients use them.

Two cases, with the real daemon: a store session that one client keeps appending to while
another is subscribed, and a Pi session in Pi's (read-only) directory that a client has open
and subscribed. For each change:

* the daemon keeps running and answers;
* the subscriber gets ``external_change`` with the documented reason (rewritten / replaced /
  deleted), and a writer gets either an acknowledgement or -32017 ``SESSION_CHANGED`` (or,
  once the file is gone, -32010 ``SESSION_NOT_FOUND``) — never an internal error;
* nothing is written to the wrong file: every acknowledged append is in exactly one of the
  old inode (kept through a hard link) and the new file, none after the daemon noticed the
  replacement goes to the old inode, and every file still loads; a read-only Pi file is
  never written at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond_client import Client
from sessiond_client.client import ConnectionClosedError, RpcError
from tests.reliability.common import load_checked, message, read_lines, restart, stop_cleanly

pytestmark = pytest.mark.anyio

SESSION_CHANGED = -32017
SESSION_NOT_FOUND = -32010
ALLOWED = {SESSION_CHANGED, SESSION_NOT_FOUND}


async def until(client: Client, sid: str, kind: str, timeout: float = 15) -> dict[str, Any]:
    async for update in client.updates(sid, timeout=timeout):
        if update["sessionUpdate"] == kind:
            return update
    raise AssertionError("unreachable")


class Appender:
    """A client appending in a loop; records what was acknowledged and what was refused."""

    def __init__(self, client: Client, sid: str) -> None:
        self.client, self.sid = client, sid
        self.acked: list[tuple[str, str]] = []
        self.refused: list[int] = []
        self.stop = asyncio.Event()
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            text = f"appender {n}"
            n += 1
            try:
                result = await self.client.request(
                    "session/append",
                    {
                        "sessionId": self.sid,
                        "entries": [{"type": "message", "message": message("user", text)}],
                    },
                )
            except RpcError as exc:
                assert exc.code in ALLOWED, exc  # a documented error, never an internal one
                self.refused.append(exc.code)
                await asyncio.sleep(0.01)
                continue
            self.acked.append((result["leafId"], text))
            await asyncio.sleep(0.002)

    async def pause(self) -> int:
        """Stop, and return how many appends were acknowledged so far."""
        self.stop.set()
        await asyncio.wait_for(self.task, 30)
        return len(self.acked)

    def resume(self) -> None:
        self.stop = asyncio.Event()
        self.task = asyncio.ensure_future(self._run())


def ids_in(path: Path) -> set[str]:
    return set(read_lines(path).ids) if path.exists() else set()


async def test_store_session_changed_under_a_writer_and_a_subscriber(tmp_path: Path) -> None:
    daemon = restart(tmp_path, 0)
    try:
        writer = await daemon.client(notifications={"optOut": ["session/update"]})
        watcher = await daemon.client(notifications={"optOut": ["usage_update"]})
        created = await writer.request("session/new", {"cwd": "/watched"})
        sid, path = created["sessionId"], Path(created["path"])
        await writer.request(
            "session/append",
            {"sessionId": sid, "entries": [{"type": "message", "message": message("user", "0")}]},
        )
        await watcher.request("session/subscribe", {"sessionId": sid})
        appender = Appender(writer, sid)
        await asyncio.sleep(0.3)

        # 1. Truncated in place (to the header and first entry) while appends keep coming.
        keep = b"".join(path.read_bytes().splitlines(keepends=True)[:2])
        with open(path, "r+b") as f:
            f.truncate(len(keep))
        change = await until(watcher, sid, "external_change")
        assert change["reason"] == "rewritten"
        await asyncio.sleep(0.3)
        count = await appender.pause()
        lines = read_lines(path)
        assert not lines.junk and not lines.tail
        assert lines.raw_lines[:2] == keep.splitlines()
        load_checked(path)
        served = await writer.request("session/entries", {"sessionId": sid, "limit": 5000})
        assert [e["id"] for e in served["entries"]] == lines.ids  # memory follows the file
        assert count > 0
        appender.resume()
        await asyncio.sleep(0.3)

        # 2. Replaced by rename while appends keep coming: keep the old inode to look into it.
        old = tmp_path / "old-inode.jsonl"
        acked_before = await appender.pause()
        os.link(path, old)
        replacement = path.with_name(".replacement")
        replacement.write_bytes(keep)
        appender.resume()
        await asyncio.sleep(0.05)
        os.replace(replacement, path)
        change = await until(watcher, sid, "external_change")
        assert change["reason"] == "replaced" and change["entryCount"] == 1
        noticed = len(appender.acked)
        await asyncio.sleep(0.3)
        await appender.pause()
        old_ids, new_ids = ids_in(old), ids_in(path)
        for index, (eid, _text) in enumerate(appender.acked):
            if index < count:
                continue  # acknowledged before the truncation, which removed them (as intended)
            assert (eid in old_ids) != (eid in new_ids), f"{eid} is in both files or in neither"
            if index >= noticed:
                assert eid in new_ids, "an append after the replacement went to the old file"
        assert all(eid in old_ids for eid, _ in appender.acked[count:acked_before])
        assert len(appender.acked) > noticed, "no append after the replacement was acknowledged"
        load_checked(path)
        load_checked(old)
        appender.resume()
        await asyncio.sleep(0.2)

        # 3. Deleted while appends keep coming: refused with a documented error from then on.
        path.unlink()
        change = await until(watcher, sid, "external_change")
        assert change["reason"] == "deleted"
        await asyncio.sleep(0.3)
        before = len(appender.acked)
        await asyncio.sleep(0.3)
        await appender.pause()
        assert len(appender.acked) == before, "appends were acknowledged into a deleted file"
        assert appender.refused and set(appender.refused) <= ALLOWED
        assert not path.exists(), "the daemon recreated a deleted session file"
        # The daemon is still fine: new sessions work.
        other = await writer.request("session/new", {"cwd": "/watched/after"})
        await writer.request(
            "session/append",
            {
                "sessionId": other["sessionId"],
                "entries": [{"type": "message", "message": message("user", "ok")}],
            },
        )
        assert len(read_lines(Path(other["path"])).ids) == 1
        for c in (writer, watcher):
            with contextlib.suppress(ConnectionClosedError):
                await c.close()
    finally:
        stop_cleanly(daemon)


def pi_file(directory: Path, session_id: str, n: int) -> tuple[Path, bytes]:
    """A Pi v3 session file with ``n`` alternating messages."""
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/pi/project",
    }
    lines = [orjson.dumps(header)]
    parent = None
    for i in range(n):
        eid = f"{i:08x}"
        role = "user" if i % 2 == 0 else "assistant"
        entry = {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": message(role, f"pi {i}", i),
        }
        lines.append(orjson.dumps(entry))
        parent = eid
    data = b"\n".join(lines) + b"\n"
    path = directory / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl"
    path.write_bytes(data)
    return path, data


async def test_read_only_pi_file_changed_under_a_subscriber(tmp_path: Path) -> None:
    sessions = tmp_path / "pi" / "sessions" / "--pi-project--"
    sessions.mkdir(parents=True)
    sid = "0194d3e1-7c4e-7a51-9d2b-5be0c1a4f0aa"
    path, data = pi_file(sessions, sid, 6)
    daemon = restart(tmp_path, 0)
    try:
        client = await daemon.client(notifications={"optOut": ["usage_update"]})
        loaded = await client.request("session/load", {"sessionId": sid, "subscribe": True})
        assert loaded["root"] == "pi" and loaded["readOnly"] is True and loaded["entryCount"] == 6

        shorter = b"".join(data.splitlines(keepends=True)[:4])
        path.write_bytes(shorter)  # rewritten in place, shorter
        change = await until(client, sid, "external_change")
        assert change["reason"] == "rewritten" and change["entryCount"] == 3

        tmp = path.with_name(".pi-save.tmp")
        _, fresh = pi_file(tmp_path, sid, 8)
        tmp.write_bytes(fresh)
        os.replace(tmp, path)  # Pi's own rewrite: a new file under the same name
        change = await until(client, sid, "external_change")
        assert change["reason"] == "replaced" and change["entryCount"] == 8
        entries = await client.request("session/entries", {"sessionId": sid, "limit": 100})
        assert len(entries["entries"]) == 8

        with pytest.raises(RpcError) as raised:  # still read-only: refused, nothing written
            await client.request(
                "session/append",
                {"sessionId": sid, "entries": [{"type": "message", "message": message("user", "no")}]},
            )
        assert raised.value.code == -32019
        assert path.read_bytes() == fresh

        path.unlink()
        change = await until(client, sid, "external_change")
        assert change["reason"] == "deleted"
        assert not path.exists()
        with pytest.raises(RpcError) as raised:
            await client.request("context/get", {"sessionId": sid})
        assert raised.value.code == SESSION_NOT_FOUND
        listed = await client.request("session/list", {})
        assert sid not in [s["sessionId"] for s in listed["sessions"]]
        await client.close()
    finally:
        stop_cleanly(daemon)
