"""Eight agent processes write one session at once while two subscribers watch.

Every acknowledged entry must be in the file exactly once, lines never interleave, each
subscriber must see every entry in file order, and Pi must read the result the way sessiond
reports it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.pi import load_session
from tests.conftest import oracle_dir
from tests.harness.daemon import Daemon
from tests.oracle.pi import pi_result

pytestmark = pytest.mark.anyio

AGENTS = 8
PER_AGENT = 40


async def collect(client: Any, session_id: str, expected: int) -> list[str]:
    seen: list[str] = []
    async for update in client.updates(session_id, timeout=60):
        if update["sessionUpdate"] == "entries_appended":
            seen.extend(update["entryIds"])
            if len(seen) >= expected:
                return seen
    return seen


async def test_eight_agents_two_subscribers(daemon: Daemon) -> None:
    owner = await daemon.client()
    sid = (await owner.request("session/new", {"cwd": "/multi"}))["sessionId"]
    first = await owner.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [{"type": "message", "message": {"role": "user", "content": "start", "timestamp": 0}}],
        },
    )
    watchers = [await daemon.client(), await daemon.client("ndjson")]
    for w in watchers:
        await w.request("session/subscribe", {"sessionId": sid})
    watching = [asyncio.ensure_future(collect(w, sid, AGENTS * PER_AGENT)) for w in watchers]
    script = Path(__file__).with_name("agent_process.py")
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            str(daemon.socket),
            sid,
            str(PER_AGENT),
            "buffered" if i % 2 else "fsync",
            f"agent{i}",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for i in range(AGENTS)
    ]
    outputs = await asyncio.gather(*(p.communicate() for p in procs))
    acked: list[str] = []
    for (out, err), proc in zip(outputs, procs, strict=True):
        assert proc.returncode == 0, err.decode()
        lines = out.decode().split()
        assert lines[-1] == "done"
        acked += lines[:-1]
    assert len(acked) == AGENTS * PER_AGENT == len(set(acked))

    seen = await asyncio.wait_for(asyncio.gather(*watching), 60)
    path = (await owner.request("session/load", {"sessionId": sid}))["path"]
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n")
    records = [json.loads(x) for x in raw.split(b"\n") if x]  # every line parses: nothing interleaved
    ids = [e["id"] for e in records[1:]]
    assert ids[0] == first["entryIds"][0]
    assert sorted(ids[1:]) == sorted(acked)  # each acknowledged entry exactly once
    for got in seen:
        assert got == ids[1:]  # every subscriber saw every entry, in file order
    for prev, cur in itertools.pairwise(records[1:]):
        assert cur["parentId"] == prev["id"]  # appends were serialised: one chain
    loaded = load_session(path)
    assert loaded.diagnostics.unparsable_lines == 0 and len(loaded.entries) == len(ids)

    context = await owner.request("context/get", {"sessionId": sid})
    branch = await owner.request("tree/branch", {"sessionId": sid})
    oracle = oracle_dir()
    if oracle is not None:
        pi = pi_result(oracle, path, "--full")
        assert pi["leafId"] == ids[-1]
        assert pi["branchIds"] == branch["entryIds"]
        assert pi["contextEntryIds"] == context["entryIds"]
        assert len(pi["context"]["messages"]) == len(context["messages"])
    for c in [owner, *watchers]:
        await c.close()
