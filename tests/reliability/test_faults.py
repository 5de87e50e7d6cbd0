"""Disk full and I/O errors in the real daemon's write and flush paths.

The daemon runs with ``SESSIOND_FAULTS`` naming a control file (``sessiond/store/faults.py``):
the test writes a rule into it, makes one append fail, and removes it again — all while the
daemon runs. Checked through the protocol and on disk:

* the append gets -32018 ``STORAGE_ERROR`` with ``data.errno`` (ENOSPC / EIO) and no entry id;
* after a failed ``write()`` (at once, or after half the line went out) nothing of the entry
  is anywhere: not in ``session/entries``, not in ``context/get``, not announced to a
  subscriber, not one byte in the file;
* after a failed ``fdatasync`` the entry was not acknowledged and its fate on disk is unknown,
  so the daemon reloads the session from its file (subscribers get ``resync_required``):
  what it serves is then exactly what the file holds;
* once the fault is cleared the next append works, hangs below the last entry, and every file
  loads with sessiond's loader (and Pi's, when pi-oracle is installed).

A real full disk (a small tmpfs) is covered by ``tests/store/test_crash.py::test_real_full_disk``
where mounting is permitted; here the failure is injected so that it also runs unprivileged.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client
from sessiond_client.client import RpcError
from tests.reliability.common import load_checked, message, pi_loads, read_lines, restart, stop_cleanly

pytestmark = pytest.mark.anyio

STORAGE_ERROR = -32018


def set_faults(control: Path, *rules: dict[str, Any]) -> None:
    tmp = control.with_suffix(".tmp")
    tmp.write_text(json.dumps({"rules": list(rules)}))
    tmp.replace(control)


async def append(client: Client, sid: str, text: str, durability: str, role: str = "user") -> Any:
    return await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [{"type": "message", "message": message(role, text)}],
            "durability": durability,
        },
    )


async def served_ids(client: Client, sid: str) -> list[str]:
    page = await client.request("session/entries", {"sessionId": sid, "limit": 5000})
    return [e["id"] for e in page["entries"]]


async def context_texts(client: Client, sid: str) -> list[str]:
    context = await client.request("context/get", {"sessionId": sid})
    return [str(m["message"]["content"][0]["text"]) for m in context["messages"]]


CASES = [
    # (op, errno name, partial write, durability of the failing append)
    ("write", "ENOSPC", False, "buffered"),
    ("write", "ENOSPC", True, "fsync"),
    ("write", "EIO", False, "fsync"),
    ("write", "EIO", True, "buffered"),
    ("fdatasync", "EIO", False, "fsync"),
    ("fdatasync", "ENOSPC", False, "fsync"),
]


@pytest.mark.parametrize(("op", "code", "partial", "durability"), CASES, ids=str)
async def test_injected_fault_is_an_error_without_acknowledgement(
    tmp_path: Path, op: str, code: str, partial: bool, durability: str
) -> None:
    control = tmp_path / "faults.json"
    daemon = restart(tmp_path, 0, env={"SESSIOND_FAULTS": str(control)})
    try:
        writer = await daemon.client()
        watcher = await daemon.client(notifications={"optOut": ["usage_update"]})
        created = await writer.request("session/new", {"cwd": "/faulty/one"})
        sid, path = created["sessionId"], Path(created["path"])
        acked = [
            (await append(writer, sid, f"before {i}", "fsync", ("user", "assistant")[i % 2]))["leafId"]
            for i in range(4)
        ]
        await watcher.request("session/subscribe", {"sessionId": sid})
        watcher.drain_notifications()
        before_bytes = path.read_bytes()
        before_texts = await context_texts(writer, sid)

        set_faults(
            control, {"op": op, "errno": code, "path": "--faulty-one--", "partial": partial, "times": 1}
        )
        with pytest.raises(RpcError) as raised:
            await append(writer, sid, "x" * 30_000 + " the failing one", durability)
        error = raised.value
        assert error.code == STORAGE_ERROR, error
        assert error.data["errno"] == getattr(errno, code)
        assert "Traceback" not in error.message
        set_faults(control)  # cleared

        served = await served_ids(writer, sid)
        on_disk = read_lines(path)
        assert served == on_disk.ids  # what the daemon serves is what the file holds
        watched = watcher.drain_notifications()
        updates = [p["update"] for m, p in watched if m == "session/update"]
        if op == "write":
            # Nothing half-applied: not in memory, not announced, not a byte on disk.
            assert path.read_bytes() == before_bytes
            assert served == acked
            assert await context_texts(writer, sid) == before_texts
            assert not [u for u in updates if u["sessionUpdate"] == "entries_appended"]
        else:
            # A failed flush: not acknowledged, fate on disk unknown; the daemon reloaded the
            # file so it serves what is there, and told the subscriber to reload too.
            assert served[: len(acked)] == acked
            assert any(u["sessionUpdate"] == "resync_required" for u in updates), updates
            # ...and said why, to the writer as to the subscriber (an editor shows this).
            for got in (watched, writer.drain_notifications()):
                told = [p for m, p in got if m == "window/logMessage"]
                assert any(
                    p["type"] == 2 and sid in p["message"] and "reloaded" in p["message"] for p in told
                ), told

        # The fault is gone: appends work again and hang below the last entry.
        after = await append(writer, sid, "after the fault", durability, "assistant")
        lines = read_lines(path)
        assert lines.ids[-1] == after["leafId"] and lines.entries[-1]["parentId"] == served[-1]
        assert not lines.junk and not lines.tail
        assert set(acked) <= set(lines.ids)
        loaded = load_checked(path)
        assert loaded.diagnostics.unparsable_lines == 0
        assert await served_ids(writer, sid) == lines.ids
        pi = pi_loads(path)
        if pi is not None:
            assert pi["leafId"] == after["leafId"]
        await writer.close()
        await watcher.close()
    finally:
        stop_cleanly(daemon)
    assert "injected" in daemon.log_text() or "injected" in "".join(
        p.read_text(errors="replace") for p in tmp_path.glob("daemon*.log")
    )


async def test_full_disk_on_the_first_flush_leaves_no_file(tmp_path: Path) -> None:
    """The file appears with the first message (Pi's rule); if that write fails, no file at all."""
    control = tmp_path / "faults.json"
    daemon = restart(tmp_path, 0, env={"SESSIOND_FAULTS": str(control)})
    try:
        client = await daemon.client()
        created = await client.request("session/new", {"cwd": "/faulty/first"})
        sid, path = created["sessionId"], Path(created["path"])
        set_faults(control, {"op": "write", "errno": "ENOSPC", "path": "--faulty-first--", "partial": True})
        with pytest.raises(RpcError) as raised:
            await append(client, sid, "y" * 20_000, "fsync")
        assert raised.value.code == STORAGE_ERROR and raised.value.data["errno"] == errno.ENOSPC
        assert not path.exists()
        assert not list(path.parent.glob(".*creating")), "a temporary file was left behind"
        loaded = await client.request("session/load", {"sessionId": sid})
        assert loaded["saved"] is False and loaded["entryCount"] == 0
        set_faults(control)
        first = await append(client, sid, "room again", "fsync")
        assert read_lines(path).ids == [first["leafId"]]
        await client.close()
    finally:
        stop_cleanly(daemon)


async def test_faults_in_one_session_leave_the_others_alone(tmp_path: Path) -> None:
    """A session on a failing disk does not stop the daemon serving the others."""
    control = tmp_path / "faults.json"
    daemon = restart(tmp_path, 0, env={"SESSIOND_FAULTS": str(control)})
    try:
        client = await daemon.client()
        bad = (await client.request("session/new", {"cwd": "/faulty/bad"}))["sessionId"]
        good = (await client.request("session/new", {"cwd": "/faulty/good"}))["sessionId"]
        await append(client, bad, "first", "fsync")
        await append(client, good, "first", "fsync")
        set_faults(control, {"op": "fdatasync", "errno": "EIO", "path": "--faulty-bad--"})
        for i in range(5):
            with pytest.raises(RpcError) as raised:
                await append(client, bad, f"refused {i}", "fsync")
            assert raised.value.code == STORAGE_ERROR
            await append(client, good, f"fine {i}", "fsync")
            await append(client, bad, f"buffered {i}", "buffered")  # no flush asked: written
        set_faults(control)
        await append(client, bad, "healed", "fsync")
        assert len(await served_ids(client, good)) == 6
        await client.close()
    finally:
        stop_cleanly(daemon)
