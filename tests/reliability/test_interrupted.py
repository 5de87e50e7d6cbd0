"""A compaction and a file rewind interrupted by SIGKILL: what is left loads, and the retry works.

* Compaction: a client summarizer that never answers holds the compaction at "summarizing";
  the daemon is killed there. Nothing may have been written (the checkpoint is appended only
  with the summary), the file loads, and after a restart the same compaction succeeds.
* Rewind: a session tracks a few hundred files through two prompts; a rewind of all of them to
  the first prompt is killed at a random moment. Every file is then either its old or its new
  content — never torn, never missing (the workspace writes a temporary file and renames it
  over) — the session file loads, and after a restart the rewind, run again, brings every
  file back to the first prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client
from sessiond_client.client import ConnectionClosedError
from tests.reliability.common import kill, load_checked, message, read_lines, restart, stop_cleanly

pytestmark = pytest.mark.anyio

FILES = 300


async def append(client: Client, sid: str, role: str, text: str) -> str:
    result = await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [{"type": "message", "message": message(role, text)}],
            "durability": "fsync",
        },
    )
    return str(result["leafId"])


async def test_compaction_killed_while_summarizing(tmp_path: Path) -> None:
    daemon = restart(tmp_path, 0)
    asked = asyncio.Event()

    async def never_answers(params: Any) -> Any:
        asked.set()
        await asyncio.Event().wait()

    try:
        summarizer = await daemon.client(summarizer=True)
        summarizer.on_request("compaction/summarize", never_answers)
        created = await summarizer.request("session/new", {"cwd": "/compact"})
        sid, path = created["sessionId"], Path(created["path"])
        for i in range(12):
            await append(summarizer, sid, ("user", "assistant")[i % 2], f"turn {i} " + "words " * 400)
        before = path.read_bytes()
        run = asyncio.ensure_future(
            summarizer.request(
                "compaction/run",
                {"sessionId": sid, "summarizer": "client", "keepRecentTokens": 500},
                timeout=120,
            )
        )
        await asyncio.wait_for(asked.wait(), 30)
        kill(daemon)
        with pytest.raises(ConnectionClosedError):
            await run
        with contextlib.suppress(Exception):
            await summarizer.close()
        assert path.read_bytes() == before, "a compaction interrupted before its summary wrote something"
        load_checked(path)

        daemon = restart(tmp_path, 1)
        client = await daemon.client()
        done = await client.request(
            "compaction/run", {"sessionId": sid, "summarizer": "extractive", "keepRecentTokens": 500}
        )
        lines = read_lines(path)
        compactions = [e for e in lines.entries if e["type"] == "compaction"]
        assert [c["id"] for c in compactions] == [done["entryId"]]
        assert lines.ids[-1] == done["entryId"] and not lines.junk and not lines.tail
        context = await client.request("context/get", {"sessionId": sid})
        assert context["entryIds"][0] == done["entryId"]
        load_checked(path)
        await client.close()
    finally:
        stop_cleanly(daemon)


async def track_all(client: Client, sid: str, ws: Path, names: list[str], content: str) -> None:
    for name in names:
        await client.request("fileHistory/track", {"sessionId": sid, "path": name})
        (ws / name).write_text(content.format(name=name))
        await client.request("fileHistory/track", {"sessionId": sid, "path": name, "phase": "after"})


@pytest.mark.slow
async def test_rewind_killed_midway(tmp_path: Path) -> None:
    rng = random.Random(77)
    ws = tmp_path / "ws"
    ws.mkdir()
    names = [f"d{i % 10}/f{i:04d}.txt" for i in range(FILES)]
    for name in names:
        (ws / name).parent.mkdir(exist_ok=True)
        (ws / name).write_text(f"{name} v1\n" * 50)
    config = f'[file_history]\nroots = ["{ws}"]\n'
    daemon = restart(tmp_path, 0, config=config)
    try:
        client = await daemon.client()
        created = await client.request("session/new", {"cwd": str(ws)})
        sid, path = created["sessionId"], Path(created["path"])
        first = await append(client, sid, "user", "first prompt")
        await client.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": first})
        await track_all(client, sid, ws, names, "{name} v2\n" * 50)
        await append(client, sid, "assistant", "edited everything")
        second = await append(client, sid, "user", "second prompt")
        await client.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": second})
        v1 = {n: f"{n} v1\n" * 50 for n in names}
        v2 = {n: f"{n} v2\n" * 50 for n in names}
        assert all((ws / n).read_text() == v2[n] for n in names)

        rewind = asyncio.ensure_future(
            client.request("fileHistory/rewind", {"sessionId": sid, "messageId": first}, timeout=120)
        )
        await asyncio.sleep(rng.uniform(0.01, 0.15))
        kill(daemon)
        with contextlib.suppress(ConnectionClosedError):
            await rewind
        with contextlib.suppress(Exception):
            await client.close()

        rewound = 0
        for n in names:
            text = (ws / n).read_text()  # present: never deleted half-way
            assert text in (v1[n], v2[n]), f"{n} is torn"
            rewound += text == v1[n]
        stray = [p for p in ws.rglob("*") if p.is_file() and str(p.relative_to(ws)) not in v1]
        assert all(p.name.startswith(".sessiond-") and p.name.endswith(".tmp") for p in stray), stray
        load_checked(path)
        print(f"\nrewind killed after {rewound}/{FILES} files; {len(stray)} temporary files left behind")

        daemon = restart(tmp_path, 1, config=config)
        client = await daemon.client()
        result = await client.request(
            "fileHistory/rewind", {"sessionId": sid, "messageId": first}, timeout=120
        )
        assert result["conflicts"] == 0 and result["refused"] == 0, result
        assert all((ws / n).read_text() == v1[n] for n in names)
        # A kill between creating a file's temporary copy and renaming it over leaves that
        # ``.sessiond-<pid>-*.tmp`` behind; the retry removes it (its process is gone).
        after = [p for p in ws.rglob("*") if p.is_file() and str(p.relative_to(ws)) not in v1]
        assert after == [], after
        lines = read_lines(path)
        assert not lines.junk and not lines.tail
        load_checked(path)
        await client.close()
    finally:
        stop_cleanly(daemon)
