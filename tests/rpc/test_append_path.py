"""The hot path of ``session/append`` (docs/append-path.md), against the real daemon: validated
with ``AppendEnvelope``, answered at receipt when nothing else of the connection is in flight,
its answers written without waking the write loop — with every guarantee of the slow path."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import RpcError
from sessiond_protocol import ErrorCode
from tests.builders import user
from tests.harness.daemon import Daemon
from tests.harness.fixtures import SharedDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """One daemon for the file's tests (each test appends to sessions of its own; ``shared_daemon``
    checks that none leaves a connection behind); a test that configures its daemon starts its own."""
    return shared_daemon


def msg(text: str) -> dict[str, Any]:
    return {"type": "message", "message": user(text)}


def lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_bytes().split(b"\n") if x]


async def exchange(daemon: Daemon, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send every message in ONE write (a pipelined burst) and read the answers to those with an id."""
    reader, writer = await asyncio.open_unix_connection(str(daemon.socket))
    writer.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    await writer.drain()
    want = sum(1 for m in messages if "id" in m)
    answers: list[dict[str, Any]] = []
    while len(answers) < want:
        line = await asyncio.wait_for(reader.readline(), 15)
        assert line, f"closed after {len(answers)} answers"
        message = json.loads(line)
        if "id" in message:
            answers.append(message)
    writer.close()
    return answers


def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


async def session(daemon: Daemon) -> tuple[str, str]:
    client = await daemon.client()
    sid = (await client.request("session/new", {"cwd": "/append/path"}))["sessionId"]
    await client.request("session/append", {"sessionId": sid, "entries": [msg("first")]})
    path = (await client.request("session/load", {"sessionId": sid}))["path"]
    await client.close()
    return sid, path


async def test_a_bad_entry_in_a_batch_is_named_and_nothing_is_written(daemon: Daemon) -> None:
    sid, path = await session(daemon)
    client = await daemon.client()
    before = Path(path).read_bytes()
    cases = [
        ({"type": "message", "message": {"role": "robot"}}, "entries.2.message.role"),
        ({"type": "message", "message": "text"}, "entries.2.message"),
        ({"type": "message"}, "entries.2.message"),
        ({"type": "nope"}, "entries.2"),
        ("text", "entries.2"),
        (
            {"type": "compaction", "summary": "s", "firstKeptEntryId": None, "tokensBefore": -1},
            "entries.2.tokensBefore",
        ),
        ({"type": "label", "targetId": 5}, "entries.2.targetId"),
    ]
    for bad, field in cases:
        with pytest.raises(RpcError) as exc:
            await client.request("session/append", {"sessionId": sid, "entries": [msg("a"), msg("b"), bad]})
        assert exc.value.code == ErrorCode.INVALID_PARAMS, (bad, exc.value)
        assert exc.value.data["field"] == field, (bad, exc.value.data)
        assert exc.value.message.startswith(f"Invalid params: {field}: ")
        assert Path(path).read_bytes() == before
    # refused by the store after the envelope (Pi's checks): still the whole batch
    with pytest.raises(RpcError) as exc:
        await client.request(
            "session/append", {"sessionId": sid, "entries": [msg("a"), {"type": "label", "targetId": "zz"}]}
        )
    assert exc.value.code == ErrorCode.ENTRY_NOT_FOUND and exc.value.data["index"] == 1
    assert Path(path).read_bytes() == before
    await client.close()


async def test_an_append_behind_a_request_in_flight_waits_its_turn(daemon: Daemon) -> None:
    """Pipelined behind a request that runs as a task, an append is not answered at receipt: it
    must not be written before what was asked first."""
    sid, path = await session(daemon)
    owner = await daemon.client()
    await owner.request("session/load", {"sessionId": sid})  # open: the append could be answered at once
    answers = await exchange(
        daemon,
        [
            request(1, "initialize", {"protocolVersion": 1}),
            request(2, "session/setName", {"sessionId": sid, "name": "named first"}),
            request(3, "session/append", {"sessionId": sid, "entries": [msg("second")]}),
        ],
    )
    assert [a.get("error") for a in answers] == [None, None, None]
    written = lines(path)
    assert written[-2]["type"] == "session_info" and written[-2]["name"] == "named first"
    assert written[-1]["type"] == "message" and written[-1]["parentId"] == written[-2]["id"]
    assert answers[2]["result"]["entryIds"] == [written[-1]["id"]]
    await owner.close()


@pytest.mark.parametrize("open_session", [True, False], ids=["open", "closed"])
async def test_a_burst_of_appends_is_written_in_order(daemon: Daemon, open_session: bool) -> None:
    """60 appends in one write: to an open session each is answered at receipt, in order (one
    write of answers for the burst); to a closed one the first opens it and the rest wait their
    turn as tasks. Either way the file holds them in the order sent."""
    sid, path = await session(daemon)
    owner = await daemon.client()
    if open_session:
        await owner.request("session/load", {"sessionId": sid})
    burst = [request(1, "initialize", {"protocolVersion": 1})]
    burst += [
        request(10 + i, "session/append", {"sessionId": sid, "entries": [msg(f"m{i}")]}) for i in range(60)
    ]
    burst.append(request(99, "session/append", {"sessionId": sid, "entries": [{"type": "nope"}]}))
    answers = await exchange(daemon, burst)
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id) == [1, *range(10, 70), 99]
    if open_session:
        assert [a["id"] for a in answers] == [1, *range(10, 70), 99]
    assert by_id[99]["error"]["code"] == ErrorCode.INVALID_PARAMS
    ids = [by_id[10 + i]["result"]["entryIds"][0] for i in range(60)]
    written = lines(path)[-60:]
    assert [e["id"] for e in written] == ids
    assert [e["message"]["content"] for e in written] == [user(f"m{i}")["content"] for i in range(60)]
    await owner.close()


async def test_subscribers_see_at_receipt_and_waiting_appends_in_file_order(daemon: Daemon) -> None:
    """An fsync append publishes before it waits for the disk: a buffered one answered at
    receipt meanwhile is announced after it, as in the file."""
    sid, path = await session(daemon)
    watcher = await daemon.client()
    await watcher.request("session/subscribe", {"sessionId": sid})
    writers = [await daemon.client() for _ in range(4)]

    async def write(i: int, client: Any) -> None:
        for j in range(15):
            durability = "fsync" if (i + j) % 2 else "buffered"
            await client.request(
                "session/append", {"sessionId": sid, "entries": [msg(f"{i}-{j}")], "durability": durability}
            )

    await asyncio.gather(*(write(i, c) for i, c in enumerate(writers)))
    seen: list[str] = []
    while len(seen) < 60:
        method, params = await watcher.notification(timeout=10)
        update = params["update"] if method == "session/update" else {}
        if update.get("sessionUpdate") == "entries_appended":
            seen += update["entryIds"]
    assert seen == [e["id"] for e in lines(path)[-60:]]
    for c in [watcher, *writers]:
        await c.close()
