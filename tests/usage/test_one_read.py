"""One read of a grown file feeds every reader (the follower, the usage records, the search index).

Through a real daemon: what an open session's ingest read of another agent's append, and what
the daemon itself appended, reach the usage records without the file being read again; the
byte counts are ``daemon/status``'s ``reads`` (bytes of session files each reader read since
the start). A change whose lines nobody handed over is read, and read right (a rewrite).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.usage.index import Source, UsageIndex
from sessiond.usage.prices import PriceBook
from sessiond_client import Client
from tests.harness.daemon import start_daemon
from tests.harness.fixtures import stop_cleanly
from tests.usage.test_live import SESSION, SOURCE, built, now_iso, stats_update

pytestmark = pytest.mark.anyio


def fresh_output(scratch: Path, transcript: Path) -> int:
    """The session's output tokens as a first read of the transcript's project counts them."""
    root = scratch / "projects"
    shutil.copytree(transcript.parent, root / transcript.parent.name)  # its sub-agents' too
    index = UsageIndex(scratch / "usage.sqlite3", [Source("claude", "claude-code", root)], PriceBook())
    try:
        index.refresh()
        row = index.db.execute("SELECT sum(output) FROM records WHERE session_id = ?", (SESSION,)).fetchone()
        return int(row[0] or 0)
    finally:
        index.close()


async def reads(client: Any) -> dict[str, int]:
    status = await client.request("daemon/status", {})
    found: dict[str, int] = status["reads"]
    return found


async def searchable(client: Any) -> None:
    """Wait until the search index's first build is done (it reads every file once)."""
    for _ in range(600):
        answer = await client.request("search/query", {"query": "zzzunfound"})
        if answer["indexing"] is None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the search index was not built")


@contextlib.asynccontextmanager
async def _started(tmp_path: Path) -> AsyncIterator[Client]:
    """A client of a daemon started on ``tmp_path`` (its Claude and Pi roots are in there), once the
    usage records' first build is done; the daemon is stopped cleanly after the test."""
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        try:
            await built(client)
            yield client
        finally:
            await client.close()
    finally:
        stop_cleanly(daemon)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """test_live's Claude Code transcript (and its sub-agents'), where the daemon's Claude root is."""
    project = tmp_path / "claude" / "projects" / "-work-proj"
    shutil.copytree(SOURCE, project)
    return project / f"{SESSION}.jsonl"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    """A daemon on an empty store and no other agent's file."""
    async with _started(tmp_path) as client:
        yield client


@pytest.fixture
async def with_transcript(transcript: Path, tmp_path: Path) -> AsyncIterator[Client]:
    """A daemon started with :func:`transcript` in its Claude root."""
    async with _started(tmp_path) as client:
        yield client


def claude_response(output: int) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": SESSION,
        "uuid": str(uuid.uuid4()),
        "parentUuid": None,
        "timestamp": now_iso(),
        "cwd": "/work/proj",
        "requestId": f"req_{uuid.uuid4().hex}",
        "message": {
            "id": f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-5",
            "content": [{"type": "text", "text": "done"}],
            "usage": {
                "input_tokens": 3,
                "output_tokens": output,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        },
    }


def pi_response(output: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": 10, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 10 + output},
        "stopReason": "stop",
        "timestamp": int(time.time() * 1000),
    }


async def test_an_open_transcripts_growth_is_read_once(transcript: Path, with_transcript: Client) -> None:
    """Another agent appends to a transcript a client has open: the session's ingest reads the
    line, and the usage records and the search index take it from there (neither reads it)."""
    client = with_transcript
    await searchable(client)
    await client.request("session/load", {"sessionId": SESSION, "subscribe": True})
    await searchable(client)  # a query waits for the index's look at the opened file
    first = await client.request("stats/subscribe", {"sessionId": SESSION, "timezone": "UTC"})
    before = await reads(client)
    line = orjson.dumps(claude_response(4321)) + b"\n"
    with open(transcript, "ab") as f:
        f.write(line)
    want = first["session"]["outputTokens"] + 4321
    update = await stats_update(client, SESSION, lambda u: u["session"]["outputTokens"] == want)
    assert update["session"]["inputTokens"] == first["session"]["inputTokens"] + 3
    after = await reads(client)
    assert after["follow"] - before["follow"] == len(line), "the session read the line"
    assert after["usage"] == before["usage"], "the usage records took the session's read"
    assert after["search"] == before["search"], "the search index took the session's entries"
    # the index knows it: a restart's look at the file reads nothing either
    found = await client.request("search/query", {"query": "done", "sessionId": SESSION})
    assert found["total"] >= 1


async def test_the_daemons_own_appends_are_not_read_back(client: Client) -> None:
    """``session/append`` of a response: its usage record comes from the lines the daemon wrote."""
    sid = (await client.request("session/new", {"cwd": "/work/proj"}))["sessionId"]
    await client.request("stats/subscribe", {"sessionId": sid})
    append = {"sessionId": sid, "entries": [{"type": "message", "message": pi_response(500)}]}
    await client.request("session/append", append)  # the first flush creates the file: read
    await stats_update(client, sid, lambda u: u["session"]["outputTokens"] == 500)
    before = await reads(client)
    for n in range(3):
        append = {"sessionId": sid, "entries": [{"type": "message", "message": pi_response(10 + n)}]}
        await client.request("session/append", append)
    update = await stats_update(client, sid, lambda u: u["session"]["outputTokens"] == 500 + 33)
    assert update["session"]["inputTokens"] == 40
    after = await reads(client)
    assert after["usage"] == before["usage"], "no byte of the own appends was read back"
    assert after["follow"] == before["follow"]
    query = {"groupBy": "session", "sessionId": sid, "timezone": "UTC"}
    rows = await client.request("stats/query", query)
    assert rows["totals"]["outputTokens"] == 533


async def test_a_rewritten_open_transcript_is_read_again(
    transcript: Path, with_transcript: Client, tmp_path: Path
) -> None:
    """A change whose lines no session hands over (the file rewritten shorter) is read: the
    usage records drop what went."""
    path, client = transcript, with_transcript
    await client.request("session/load", {"sessionId": SESSION, "subscribe": True})
    first = await client.request("stats/subscribe", {"sessionId": SESSION, "timezone": "UTC"})
    grown = first["session"]["outputTokens"] + 777
    with open(path, "ab") as f:
        f.write(orjson.dumps(claude_response(777)) + b"\n")
    await stats_update(client, SESSION, lambda u: u["session"]["outputTokens"] == grown)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))  # in place: the same inode, shorter
    expected = fresh_output(tmp_path / "fresh", path)
    update = await stats_update(client, SESSION, lambda u: u["session"]["outputTokens"] == expected)
    assert update["session"]["outputTokens"] == expected


async def test_a_transcript_nobody_has_open_is_read_once_per_growth(
    transcript: Path, with_transcript: Client
) -> None:
    """Another agent appends to a transcript no client opened: the search index's kept reader
    reads the line and hands it to the usage records. (The first growth after the start is
    read by both: the index reads the file whole then, and keeps its reader from there.)"""
    path, client = transcript, with_transcript
    await searchable(client)
    first = await client.request("stats/subscribe", {"sessionId": SESSION, "timezone": "UTC"})
    total = first["session"]["outputTokens"]
    for n, output in enumerate((1111, 2222, 3333)):
        before = await reads(client)
        line = orjson.dumps(claude_response(output)) + b"\n"
        with open(path, "ab") as f:
            f.write(line)
        total += output
        await stats_update(client, SESSION, lambda u, want=total: u["session"]["outputTokens"] == want)
        await searchable(client)
        after = await reads(client)
        assert after["follow"] == before["follow"], "no session is open"
        if n:
            assert after["search"] - before["search"] == len(line), "the index's reader read the line"
            assert after["usage"] == before["usage"], "the usage records took the index's read"
    found = await client.request("search/query", {"query": "done", "sessionId": SESSION})
    assert found["total"] >= 3


def pi_line(entry_id: str, parent: str | None, output: int) -> bytes:
    message = pi_response(output)
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": now_iso(),
        "message": message,
    }
    return orjson.dumps(entry) + b"\n"


@pytest.fixture
def pi_file(tmp_path: Path) -> Path:
    """A Pi session of one response (100 output tokens) in Pi's own directory; its id is its name's end."""
    sid = str(uuid.uuid4())
    project = tmp_path / "pi" / "sessions" / "--work-proj--"
    project.mkdir(parents=True)
    path = project / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": now_iso(), "cwd": "/work/proj"}
    path.write_bytes(orjson.dumps(header) + b"\n" + pi_line("a0000000", None, 100))
    return path


@pytest.fixture
async def with_pi_file(pi_file: Path, tmp_path: Path) -> AsyncIterator[Client]:
    """A daemon started with :func:`pi_file` in Pi's directory."""
    async with _started(tmp_path) as client:
        yield client


async def test_a_pi_file_nobody_has_open_is_read_once_per_growth(pi_file: Path, with_pi_file: Client) -> None:
    """The same for a session in Pi's own directory (the index's Pi reader hands its lines over)."""
    path, client = pi_file, with_pi_file
    sid = path.stem.split("_", 1)[1]
    await searchable(client)
    first = await client.request("stats/subscribe", {"sessionId": sid, "timezone": "UTC"})
    total = first["session"]["outputTokens"]
    assert total == 100
    parent = "a0000000"
    for n, output in enumerate((1111, 2222, 3333)):
        before = await reads(client)
        line = pi_line(f"b000000{n}", parent, output)
        parent = f"b000000{n}"
        with open(path, "ab") as f:
            f.write(line)
        total += output
        await stats_update(client, sid, lambda u, want=total: u["session"]["outputTokens"] == want)
        await searchable(client)
        after = await reads(client)
        if n:
            assert after["search"] - before["search"] == len(line), "the index's reader read the line"
            assert after["usage"] == before["usage"], "the usage records took the index's read"
