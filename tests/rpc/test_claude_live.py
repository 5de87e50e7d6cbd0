"""Claude Code transcripts served by the real daemon: listed, loaded read-only, followed live.

A separate process replays a real transcript line by line (with pauses, and lines written in
two pieces) into a watched Claude Code root while a subscribed client records what the
daemon sends; every chain entry must arrive, in order, and the final state must equal a cold
load of the finished file.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiond.store.claude import ClaudeSession
from sessiond_client import RpcError
from sessiond_protocol import ErrorCode
from tests.conftest import CLAUDE_FIXTURES
from tests.harness.daemon import start_daemon
from tests.harness.replay import start_replay, updates_until

pytestmark = pytest.mark.anyio

FIXTURES = CLAUDE_FIXTURES
SAMPLE = FIXTURES / "ccl-2.1.114" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
COMPACTED = FIXTURES / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def project_dir(tmp: Path) -> Path:
    directory = tmp / "claude" / "projects" / "-work-proj"
    directory.mkdir(parents=True)
    return directory


async def test_a_claude_session_is_listed_loaded_and_read_only(tmp_path: Path) -> None:
    directory = project_dir(tmp_path)
    path = directory / COMPACTED.name
    shutil.copyfile(COMPACTED, path)
    shutil.copytree(COMPACTED.with_suffix(""), directory / COMPACTED.stem)  # its sub-agents
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        listed = await client.request("session/list", {"format": "claude-code"})
        [info] = listed["sessions"]
        assert info["sessionId"] == COMPACTED.stem and info["root"] == "claude" and info["readOnly"]
        assert info["firstMessage"].startswith("Work on bead spotter-4te")
        loaded = await client.request("session/load", {"sessionId": info["sessionId"]})
        assert loaded["format"] == "claude-code" and loaded["readOnly"]
        agents = loaded["diagnostics"]["subagents"]
        assert {a["layout"] for a in agents} == {"nested"} and len(agents) == 2
        assert all(a["toolUseId"] or a["parentEntryUuid"] for a in agents)
        cold = ClaudeSession.open(path)
        assert loaded["leafId"] == cold.leaf_id == cold.reconstruction.leaf_uuid
        context = await client.request("context/get", {"sessionId": info["sessionId"]})
        assert [m["message"] for m in context["messages"]] == [m for _, m in cold.reconstruction.messages]
        assert context["messages"][0]["message"]["role"] == "user"  # the compact summary starts it
        usage = await client.request("context/usage", {"sessionId": info["sessionId"]})
        assert usage["source"] == "api" and usage["used"] == 102169  # the last API message's usage
        tree = await client.request("tree/get", {"sessionId": info["sessionId"]})
        assert len(tree["nodes"]) == cold.entry_count
        # The branch is the chain --resume rebuilds (recovered parallel results included), so
        # every entry the context came from is on it, in order.
        branch = await client.request("tree/branch", {"sessionId": info["sessionId"], "full": True})
        chain = [u for u in cold.reconstruction.chain if u in {n["id"] for n in tree["nodes"]}]
        assert branch["entryIds"] == chain == [e["id"] for e in branch["entries"]]
        assert len(chain) > len(cold.reconstruction.naive_chain)  # this file has orphans to recover
        sources = [m["entryId"] for m in context["messages"]]
        assert [u for u in chain if u in set(sources)] == list(dict.fromkeys(sources))
        before = path.read_bytes()
        for method, params in [
            (
                "session/append",
                {"entries": [{"type": "message", "message": {"role": "user", "content": "x"}}]},
            ),
            ("tree/label", {"entryId": loaded["leafId"], "label": "x"}),
            ("compaction/run", {}),
            ("session/fork", {"entryId": loaded["leafId"], "position": "at"}),
        ]:
            with pytest.raises(RpcError) as exc:
                await client.request(method, {"sessionId": info["sessionId"], **params})
            assert exc.value.code == ErrorCode.READ_ONLY, method
        assert path.read_bytes() == before
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_a_transcript_written_live_is_followed_line_by_line(tmp_path: Path) -> None:
    directory = project_dir(tmp_path)
    target = directory / SAMPLE.name
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    head = 12
    target.write_bytes(b"".join(lines[:head]))
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        loaded = await client.request("session/load", {"sessionId": SAMPLE.stem, "subscribe": True})
        initial = await client.request("tree/get", {"sessionId": SAMPLE.stem})
        known = [n["id"] for n in initial["nodes"]]
        replay = start_replay(
            SAMPLE, target, head, split_pause=0.03, pause=0.002, burst_every=5, burst_pause=0.02
        )
        cold = ClaudeSession.open(SAMPLE)
        expected = [e["id"] for e in cold.entries() if isinstance(e, dict)]

        def complete(seen: list[dict[str, Any]]) -> bool:
            ids = [i for u in seen if u["sessionUpdate"] == "entries_appended" for i in u["entryIds"]]
            return len(known) + len(ids) >= len(set(expected))

        seen = await updates_until(client, SAMPLE.stem, complete, timeout=30)
        assert await asyncio.to_thread(replay.wait, 30) == 0
        appended = [u for u in seen if u["sessionUpdate"] == "entries_appended"]
        assert all(u.get("external") for u in appended)
        ids = known + [i for u in appended for i in u["entryIds"]]
        assert ids == list(dict.fromkeys(expected)), "every entry once, in file order"
        assert not [u for u in seen if u["sessionUpdate"] == "external_change"]
        final = await client.request("session/load", {"sessionId": SAMPLE.stem})
        assert final["leafId"] == cold.leaf_id and final["leafId"] != loaded["leafId"]
        context = await client.request("context/get", {"sessionId": SAMPLE.stem})
        assert [m["message"] for m in context["messages"]] == [m for _, m in cold.reconstruction.messages]
        cold_usage = int(cold.context_usage().tokens)
        if not any(u["sessionUpdate"] == "usage_update" and u["used"] == cold_usage for u in seen):
            await updates_until(client, SAMPLE.stem, lambda s: s[-1].get("used") == cold_usage, timeout=20)

        # Rewritten in place (shorter), then replaced atomically: both are external changes.
        target.write_bytes(b"".join(lines[:40]))
        change = (
            await updates_until(
                client, SAMPLE.stem, lambda s: s[-1]["sessionUpdate"] == "external_change", timeout=20
            )
        )[-1]
        assert change["reason"] == "rewritten" and change["entryCount"] < change["previousEntryCount"]
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(SAMPLE.read_bytes())
        tmp.replace(target)
        change = (
            await updates_until(
                client, SAMPLE.stem, lambda s: s[-1]["sessionUpdate"] == "external_change", timeout=20
            )
        )[-1]
        assert change["reason"] == "replaced" and change["leafId"] == cold.leaf_id
        await client.close()
    finally:
        assert daemon.stop() == 0
