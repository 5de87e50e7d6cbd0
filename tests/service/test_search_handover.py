"""The entries announced in one turn of the daemon's event loop reach the search index together
(one batch per file): nothing is lost and nothing comes out of order, through a real daemon.

Many clients appending at once: every entry is found by the next query. An append followed at
once by the session's deletion: the deletion wins (the batch is handed over before it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio

CLIENTS = 6
APPENDS = 12


def said(word: str, n: int) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": f"{word} number {n}", "timestamp": 1}}


async def searchable(client: Any) -> None:
    for _ in range(600):
        if (await client.request("search/query", {"query": "zzzunfound"}))["indexing"] is None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the search index was not built")


async def test_concurrent_appends_are_all_found_by_the_next_query(tmp_path: Path) -> None:
    daemon: Daemon = start_daemon(tmp_path)
    clients = [await daemon.client() for _ in range(CLIENTS)]
    try:
        await searchable(clients[0])
        shared = (await clients[0].request("session/new", {"cwd": "/work/proj"}))["sessionId"]
        own = [(await c.request("session/new", {"cwd": "/work/proj"}))["sessionId"] for c in clients]

        async def write(k: int, client: Any) -> None:
            for n in range(APPENDS):
                # one session all clients share, and one of its own (several files in one batch)
                await asyncio.gather(
                    client.request(
                        "session/append", {"sessionId": shared, "entries": [said("wombat", k * 100 + n)]}
                    ),
                    client.request("session/append", {"sessionId": own[k], "entries": [said("numbat", n)]}),
                )

        await asyncio.gather(*(write(k, c) for k, c in enumerate(clients)))
        found = await clients[0].request("search/query", {"query": "wombat", "limit": 200})
        assert found["total"] == CLIENTS * APPENDS
        assert {h["sessionId"] for h in found["hits"]} == {shared}
        for k, sid in enumerate(own):
            mine = await clients[k].request(
                "search/query", {"query": "numbat", "sessionId": sid, "limit": 200}
            )
            assert mine["total"] == APPENDS
        tree = await clients[0].request("tree/get", {"sessionId": shared})
        assert tree["leafId"] in {h["entryId"] for h in found["hits"]}
    finally:
        for c in clients:
            await c.close()
        assert daemon.stop() == 0, daemon.log_text()


async def test_an_append_then_a_delete_leaves_nothing_in_the_index(tmp_path: Path) -> None:
    daemon: Daemon = start_daemon(tmp_path)
    client = await daemon.client()
    try:
        await searchable(client)
        sid = (await client.request("session/new", {"cwd": "/work/proj"}))["sessionId"]
        await client.request("session/append", {"sessionId": sid, "entries": [said("quokka", 0)]})
        # the next append and the deletion in one turn of the daemon's loop, as far as a client can
        await asyncio.gather(
            client.request("session/append", {"sessionId": sid, "entries": [said("quokka", 1)]}),
            client.request("session/delete", {"sessionId": sid}),
        )
        found = await client.request("search/query", {"query": "quokka"})
        assert found["total"] == 0, found
    finally:
        await client.close()
        assert daemon.stop() == 0, daemon.log_text()
