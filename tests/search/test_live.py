"""Live: a line Claude Code appends to a transcript the daemon follows (nobody has it open) is
found by ``search/query`` — the watcher's event, the writer thread's read of the file, the
query. The latency of each of 20 appends is printed (p50/p99; docs/search.md quotes a run);
the test asserts only that every line is found."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.harness.daemon import start_daemon

from .conftest import CLAUDE_ID, populate, typed_client

pytestmark = pytest.mark.anyio

APPENDS = 20


def _template(path: Path) -> dict[str, Any]:
    for raw in reversed(path.read_bytes().splitlines()):
        record = orjson.loads(raw)
        if record.get("type") == "user" and isinstance(record.get("message", {}).get("content"), str):
            return dict(record)
    raise AssertionError("no user record in the fixture")


def _last_uuid(path: Path) -> str | None:
    for raw in reversed(path.read_bytes().splitlines()):
        record = orjson.loads(raw)
        if record.get("uuid"):
            return str(record["uuid"])
    return None


async def test_appended_line_is_found(tmp_path: Path) -> None:
    files = populate(tmp_path)
    transcript = files["claude"]
    d = start_daemon(tmp_path)
    client = await typed_client(d)
    latencies: list[float] = []
    try:
        for _ in range(400):
            if (await client.search_query("warmup")).indexing is None:
                break
            await asyncio.sleep(0.05)
        template = _template(transcript)
        for i in range(APPENDS):
            word = f"zebrafish{i}x{uuid.uuid4().hex[:6]}"
            record = {
                **template,
                "uuid": str(uuid.uuid4()),
                "parentUuid": _last_uuid(transcript),
                "timestamp": f"2026-03-01T10:{i:02d}:00.000Z",
                "message": {"role": "user", "content": f"please look at the {word} module"},
            }
            with open(transcript, "ab") as f:
                f.write(orjson.dumps(record) + b"\n")
            started = time.monotonic()
            while True:
                result = await client.search_query(word, session_id=CLAUDE_ID)
                if result.hits:
                    break
                assert time.monotonic() - started < 30, f"{word} never found"
                await asyncio.sleep(0.005)
            latencies.append(time.monotonic() - started)
            assert result.hits[0].role == "user" and result.hits[0].onBranch
    finally:
        await client.close()
        assert d.stop() == 0, d.log_text()
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"\nlive search latency over {APPENDS} appends: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
