"""Roots: sessions in Pi's own directory are served read-only (unless configured writable)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import RpcError
from sessiond_protocol import ErrorCode
from tests.builders import assistant, user
from tests.conftest import PI_FIXTURES
from tests.harness.calls import call
from tests.harness.daemon import start_daemon

pytestmark = pytest.mark.anyio

HEADER = {
    "type": "session",
    "version": 3,
    "id": "pi-own-1",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "/w",
}


def pi_session(agent_dir: Path, session_id: str = "pi-own-1") -> Path:
    directory = agent_dir / "sessions" / "--w--"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl"
    lines = [
        {**HEADER, "id": session_id},
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": user("written by Pi"),
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": assistant("Pi answered", total=50),
        },
    ]
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return path


async def test_pi_sessions_are_listed_and_read_only(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    try:
        path = pi_session(tmp_path / "pi")
        client = await daemon.client()
        mine = await call(client, "session/new", {"cwd": "/w"})
        await call(
            client,
            "session/append",
            {
                "sessionId": mine["sessionId"],
                "entries": [{"type": "message", "message": user("in the store")}],
            },
        )
        listed = await call(client, "session/list", {})
        by_id = {s["sessionId"]: s for s in listed["sessions"]}
        assert by_id["pi-own-1"]["root"] == "pi" and by_id["pi-own-1"]["readOnly"] is True
        assert (
            by_id[mine["sessionId"]]["root"] == "sessiond" and by_id[mine["sessionId"]]["readOnly"] is False
        )
        only_pi = await call(client, "session/list", {"root": "pi"})
        assert [s["sessionId"] for s in only_pi["sessions"]] == ["pi-own-1"]
        loaded = await call(client, "session/load", {"sessionId": "pi-own-1"})
        assert loaded["readOnly"] and loaded["root"] == "pi" and loaded["leafId"] == "a2"
        context = await call(client, "context/get", {"sessionId": "pi-own-1"})
        assert [m["entryId"] for m in context["messages"]] == ["a1", "a2"]
        before = path.read_bytes()
        writes: list[tuple[str, dict[str, Any]]] = [
            ("session/append", {"entries": [{"type": "message", "message": user("no")}]}),
            ("session/setName", {"name": "x"}),
            ("tree/label", {"entryId": "a1", "label": "x"}),
            ("tree/navigate", {"targetId": "a1"}),
            ("context/edit", {"targetId": "a1", "replacement": None}),
        ]
        for method, params in writes:
            with pytest.raises(RpcError) as exc:
                await client.request(method, {"sessionId": "pi-own-1", **params})
            assert exc.value.code == ErrorCode.READ_ONLY, method
            assert "read-only unless [roots.pi] writable = true" in exc.value.message
        assert path.read_bytes() == before
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_a_writable_pi_root(tmp_path: Path) -> None:
    path = pi_session(tmp_path / "pi")
    daemon = start_daemon(tmp_path, config="[roots.pi]\nwritable = true\n")
    try:
        client = await daemon.client()
        appended = await call(
            client,
            "session/append",
            {
                "sessionId": "pi-own-1",
                "entries": [{"type": "message", "message": user("sessiond wrote this")}],
            },
        )
        last = json.loads(path.read_text().splitlines()[-1])
        assert last["id"] == appended["leafId"] and last["parentId"] == "a2"
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_a_v1_pi_file_is_migrated_in_memory_only(tmp_path: Path) -> None:
    fixture = next((p for p in sorted(PI_FIXTURES.glob("*.v1.jsonl"))), None)
    if fixture is None:
        pytest.skip("no v1 fixture")
    directory = tmp_path / "pi" / "sessions" / "--old--"
    directory.mkdir(parents=True)
    target = directory / fixture.name
    shutil.copyfile(fixture, target)
    header = json.loads(target.read_text().split("\n", 1)[0])
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        loaded = await call(client, "session/load", {"sessionId": header["id"]})
        assert loaded["readOnly"] and loaded["entryCount"] > 0
        assert target.read_bytes() == fixture.read_bytes()  # Pi's file untouched
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_bad_roots_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as exc:
        start_daemon(tmp_path, config="[roots.claude]\nwritable = true\n")
    assert "roots.claude" in str(exc.value)


async def test_forking_a_read_only_session_writes_into_the_store(tmp_path: Path) -> None:
    path = pi_session(tmp_path / "pi")
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        before = path.read_bytes()
        forked = await call(
            client, "session/fork", {"sessionId": "pi-own-1", "entryId": "a2", "position": "at"}
        )
        assert Path(forked["path"]).is_relative_to(daemon.store)
        assert path.read_bytes() == before and len(list(path.parent.iterdir())) == 1
        appended = await call(
            client,
            "session/append",
            {
                "sessionId": forked["sessionId"],
                "entries": [{"type": "message", "message": user("continued in sessiond")}],
            },
        )
        assert appended["entryIds"]
        await client.close()
    finally:
        assert daemon.stop() == 0
