"""Codex rollouts and OpenCode sessions served by the real daemon, and followed live.

A separate process writes like the agent does (a Codex rollout line by line, some lines in
two pieces; OpenCode rows committed one transaction at a time into a WAL database it keeps
open, streaming parts updated in place) while a subscribed client records what the daemon
sends. Every entry must arrive once, in order, as ``entries_appended`` with ``external:
true``; the final tree, context and usage must equal a cold load of the finished data.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sessiond.store.codex import CodexSession
from sessiond.store.opencode import OpenCodeSession, db_session_path
from sessiond_client import RpcError
from sessiond_protocol import ErrorCode
from tests.harness.replay import start_replay, updates_until
from tests.rpc.conftest import start_daemon

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COMPACTED = next((FIXTURES / "codex" / "localpush-0.104").glob("rollout-2026-02-23T12-54-34-*.jsonl"))
ROLLBACK = next((FIXTURES / "codex" / "synthetic-home" / "sessions").rglob("*00000000000a.jsonl"))
REAL_DB = FIXTURES / "opencode" / "real-v1.16" / "opencode.db"

OPENCODE_WRITER = textwrap.dedent(
    """
    import json, sqlite3, sys, time
    source, target, session, skip = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    src = sqlite3.connect(f"file:{source}?mode=ro&immutable=1", uri=True)
    out = sqlite3.connect(target, isolation_level=None)
    out.execute("PRAGMA journal_mode=WAL")
    messages = src.execute(
        "SELECT id, session_id, time_created, time_updated, data FROM message"
        " WHERE session_id = ? ORDER BY time_created, id", (session,)).fetchall()[skip:]
    for m in messages:
        info = json.loads(m[4])
        started = dict(info, time={"created": info["time"]["created"]})   # not completed yet
        started.pop("finish", None)
        out.execute("INSERT INTO message VALUES (?,?,?,?,?)", (*m[:4], json.dumps(started)))
        parts = src.execute("SELECT * FROM part WHERE message_id = ? ORDER BY id", (m[0],)).fetchall()
        for p in parts:
            data = json.loads(p[5])
            if data.get("type") == "text" and len(data.get("text", "")) > 20:
                # streamed: the part appears with half its text, then is completed in place
                half = dict(data, text=data["text"][: len(data["text"]) // 2])
                out.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (*p[:5], json.dumps(half)))
                time.sleep(0.01)
                out.execute("UPDATE part SET data = ?, time_updated = time_updated + 1 WHERE id = ?",
                            (p[5], p[0]))
            else:
                out.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", p)
            time.sleep(0.003)
        out.execute("UPDATE message SET data = ? WHERE id = ?", (m[4], m[0]))   # completed
        out.execute("UPDATE session SET time_updated = ? WHERE id = ?", (m[3], session))
        time.sleep(0.02)
    print("done", flush=True)
    time.sleep(1.0)   # stay connected a moment: the WAL is not checkpointed away before the reader looks
    """
)


def _has(entry_id: str, seen: list[dict[str, Any]]) -> bool:
    return entry_id in appended_ids(seen)


def appended_ids(seen: list[dict[str, Any]]) -> list[str]:
    return [i for u in seen if u["sessionUpdate"] == "entries_appended" for i in u["entryIds"]]


def rollout_dir(tmp: Path) -> Path:
    directory = tmp / "codex" / "sessions" / "2026" / "02" / "23"
    directory.mkdir(parents=True)
    return directory


async def follow_codex(tmp: Path, source: Path, head: int) -> None:
    target = rollout_dir(tmp) / source.name
    lines = source.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join(lines[:head]))
    cold = CodexSession.open(source)
    sid = cold.id
    daemon = start_daemon(tmp)
    try:
        client = await daemon.client()
        listed = await client.request("session/list", {"root": "codex"})
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        loaded = await client.request("session/load", {"sessionId": sid, "subscribe": True})
        assert loaded["format"] == "codex" and loaded["readOnly"] and loaded["root"] == "codex"
        initial = [n["id"] for n in (await client.request("tree/get", {"sessionId": sid}))["nodes"]]
        replay = start_replay(
            source, target, head, split_pause=0.02, pause=0.0005, burst_every=40, burst_pause=0.03
        )
        expected = [e["id"] for e in cold.entries()]
        seen = await updates_until(
            client, sid, lambda s: len(initial) + len(appended_ids(s)) >= len(expected)
        )
        assert await asyncio.to_thread(replay.wait, 60) == 0
        appended = [u for u in seen if u["sessionUpdate"] == "entries_appended"]
        assert appended and all(u.get("external") for u in appended)
        assert initial + appended_ids(seen) == expected, "every entry once, in file order"
        assert not [u for u in seen if u["sessionUpdate"] == "external_change"]
        final = await client.request("session/load", {"sessionId": sid})
        assert final["leafId"] == cold.leaf_id
        # The last lines (a token count, the turn's end) add no entry: wait until they are read.
        expected_messages = cold.context().messages
        for _ in range(100):
            context = await client.request("context/get", {"sessionId": sid})
            if [m["message"] for m in context["messages"]] == expected_messages:
                break
            await asyncio.sleep(0.1)
        assert [m["message"] for m in context["messages"]] == expected_messages
        assert [m["entryId"] for m in context["messages"]] == [
            p.source["id"] for p in cold.context().entries for _ in p.messages
        ]
        tree = await client.request("tree/get", {"sessionId": sid})
        assert [(n["id"], n["parentId"]) for n in tree["nodes"]] == [
            (e["id"], e["parentId"]) for e in cold.entries()
        ]
        usage = await client.request("context/usage", {"sessionId": sid})
        assert usage["used"] == int(cold.context_usage().tokens)
        assert usage["size"] == cold.native_context_window()
        with pytest.raises(RpcError) as exc:
            await client.request(
                "session/append",
                {
                    "sessionId": sid,
                    "entries": [{"type": "message", "message": {"role": "user", "content": "x"}}],
                },
            )
        assert exc.value.code == ErrorCode.READ_ONLY
        with pytest.raises(RpcError) as exc:  # sessiond never moves another agent's file either
            await client.request("session/delete", {"sessionId": sid})
        assert exc.value.code == ErrorCode.READ_ONLY
        assert target.read_bytes() == source.read_bytes()
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_a_compacted_rollout_written_live_is_followed(tmp_path: Path) -> None:
    await follow_codex(tmp_path, COMPACTED, head=20)


async def test_a_rollback_written_live_moves_the_leaf_back(tmp_path: Path) -> None:
    await follow_codex(tmp_path, ROLLBACK, head=5)
    cold = CodexSession.open(ROLLBACK)
    texts = [m["content"][0]["text"] for m in cold.context().messages if m["role"] == "user"]
    assert "delete b.txt" not in texts and texts[-1] == "instead, show the README"


async def test_codex_sessions_appear_in_a_subscribed_listing(tmp_path: Path) -> None:
    directory = rollout_dir(tmp_path)
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        listed = await client.request("session/list", {"subscribe": True, "format": "codex"})
        assert listed["sessions"] == []
        (directory / ROLLBACK.name).write_bytes(ROLLBACK.read_bytes())
        (directory / "history.jsonl").write_text("{}\n")  # not a rollout: no update
        update = None
        async for u in client.updates(timeout=20):
            if u.get("sessionUpdate") == "session_list_update":
                update = u
                break
        assert update is not None and update["change"] == "added"
        assert update["session"]["format"] == "codex" and update["session"]["root"] == "codex"
        assert update["session"]["firstMessage"] == "list the files"
        await client.close()
    finally:
        assert daemon.stop() == 0


# --------------------------------------------------------------------------- OpenCode


def opencode_db(tmp: Path, session: str, messages: int) -> Path:
    """A WAL database with OpenCode's schema, the session row and its first messages."""
    data = tmp / "data" / "opencode"
    data.mkdir(parents=True)
    target = data / "opencode.db"
    src = sqlite3.connect(f"file:{REAL_DB}?mode=ro&immutable=1", uri=True)
    out = sqlite3.connect(target, isolation_level=None)
    out.execute("PRAGMA journal_mode=WAL")
    for (sql,) in src.execute(
        "SELECT sql FROM sqlite_master WHERE type='table' AND name IN ('project','session','message','part')"
    ):
        out.execute(sql)
    out.execute("BEGIN")
    for table in ("project", "session"):
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        marks = ",".join("?" * len(rows[0]))
        out.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    first = src.execute(
        "SELECT * FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT ?", (session, messages)
    ).fetchall()
    out.executemany("INSERT INTO message VALUES (?,?,?,?,?)", first)
    for m in first:
        out.executemany(
            "INSERT INTO part VALUES (?,?,?,?,?,?)",
            src.execute("SELECT * FROM part WHERE message_id = ?", (m[0],)),
        )
    out.execute("COMMIT")
    out.close()
    src.close()
    return target


async def test_an_opencode_session_written_live_is_followed(tmp_path: Path) -> None:
    sid = "ses_04ca851f7ffevKrKMHW3RsPK1U"
    target = opencode_db(tmp_path, sid, messages=3)
    cold_copy = tmp_path / "cold" / "opencode.db"
    cold_copy.parent.mkdir()
    shutil.copyfile(REAL_DB, cold_copy)
    cold = OpenCodeSession.open(db_session_path(cold_copy.parent, sid))
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        listed = await client.request("session/list", {"root": "opencode", "subscribe": True})
        [info] = listed["sessions"]
        assert info["sessionId"] == sid and info["format"] == "opencode" and info["readOnly"]
        assert info["firstMessage"].startswith("Read SPEC.md")
        loaded = await client.request("session/load", {"sessionId": sid, "subscribe": True})
        assert loaded["format"] == "opencode" and loaded["diagnostics"]["store"] == "sqlite"
        initial = [n["id"] for n in (await client.request("tree/get", {"sessionId": sid}))["nodes"]]
        writer = subprocess.Popen(
            [sys.executable, "-c", OPENCODE_WRITER, str(REAL_DB), str(target), sid, "3"],
            stdout=subprocess.PIPE,
        )
        expected = [e["id"] for e in cold.entries()]
        seen = await updates_until(
            client, sid, lambda s: len(initial) + len(appended_ids(s)) >= len(expected), timeout=60
        )
        assert await asyncio.to_thread(writer.wait, 60) == 0
        appended = [u for u in seen if u["sessionUpdate"] == "entries_appended"]
        assert appended and all(u.get("external") for u in appended)
        assert initial + appended_ids(seen) == expected, "every entry once, in order"
        # Entries are announced settled: the streamed texts arrive whole.
        tree = await client.request("tree/branch", {"sessionId": sid, "full": True})
        assert tree["entries"] == cold.branch()
        expected_messages = cold.context().messages
        for _ in range(100):  # the last commits (the unfinished reply's parts) add no entry
            context = await client.request("context/get", {"sessionId": sid})
            if [m["message"] for m in context["messages"]] == expected_messages:
                break
            await asyncio.sleep(0.1)
        assert [m["message"] for m in context["messages"]] == expected_messages
        usage = await client.request("context/usage", {"sessionId": sid})
        assert usage["used"] == int(cold.context_usage().tokens) and usage["source"] in ("api", "estimate")
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_every_opencode_commit_is_seen_without_waiting_for_the_resync(tmp_path: Path) -> None:
    """Each commit, made at any phase of the daemon's look, is announced on its own: a WAL
    commit becomes visible after the write inotify reports (the frames are synced, then
    published through a memory map), so a look right after the event can miss it. Before the
    fix a commit now and then waited for the 30 s resync (the agents benchmark timed out)."""
    sid = "ses_04ca851f7ffevKrKMHW3RsPK1U"
    target = opencode_db(tmp_path, sid, messages=1)
    daemon = start_daemon(tmp_path)
    rng = random.Random(7)
    try:
        client = await daemon.client()
        await client.request("session/load", {"sessionId": sid, "subscribe": True})
        writer = sqlite3.connect(target, isolation_level=None)
        base = 1_900_000_000_000
        usage = {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        for i in range(25):
            t, asked, answered = base + i * 1000, f"msg_live{i:04d}u", f"msg_live{i:04d}v"
            user: dict[str, Any] = {"role": "user", "time": {"created": t}, "agent": "build"}
            reply: dict[str, Any] = {
                "role": "assistant",
                "parentID": asked,
                "time": {"created": t + 1, "completed": t + 2},
                "modelID": "m",
                "providerID": "p",
                "finish": "stop",
                "tokens": usage,
            }
            writer.execute("BEGIN")
            for mid, info, text in ((asked, user, f"question {i}"), (answered, reply, f"answer {i}")):
                created = info["time"]["created"]
                writer.execute(
                    "INSERT INTO message VALUES (?,?,?,?,?)", (mid, sid, created, created, json.dumps(info))
                )
                part = json.dumps({"type": "text", "text": text})
                writer.execute(
                    "INSERT INTO part VALUES (?,?,?,?,?,?)", (f"prt_{mid}", mid, sid, created, created, part)
                )
            writer.execute("COMMIT")
            # 5 s: far above a followed commit's ~10 ms, far below the 30 s resync.
            await updates_until(client, sid, partial(_has, answered), timeout=5)
            await asyncio.sleep(rng.uniform(0, 0.1))
        writer.close()
        await client.close()
    finally:
        assert daemon.stop() == 0


async def test_codex_and_opencode_roots_are_listed_filtered_and_linked(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "codex" / "synthetic-home", tmp_path / "codex")
    data = tmp_path / "data" / "opencode"
    shutil.copytree(FIXTURES / "opencode" / "json-store", data)
    shutil.copyfile(FIXTURES / "opencode" / "synthetic-v1.16" / "opencode.db", data / "opencode.db")
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        everything = (await client.request("session/list", {"limit": 1000}))["sessions"]
        by_id = {s["sessionId"]: s for s in everything}
        codex = [s for s in everything if s["root"] == "codex"]
        opencode = [s for s in everything if s["root"] == "opencode"]
        assert len(codex) == 5 and {s["format"] for s in codex} == {"codex"}
        assert len(opencode) == 5 and {s["format"] for s in opencode} == {"opencode"}
        assert all(s["readOnly"] for s in codex + opencode)
        for filters, expected in (
            ({"root": "codex"}, codex),
            ({"format": "opencode"}, opencode),
            ({"root": "opencode", "format": "codex"}, []),
        ):
            listed = (await client.request("session/list", {"limit": 1000, **filters}))["sessions"]
            assert {s["sessionId"] for s in listed} == {s["sessionId"] for s in expected}, filters
        demo = (await client.request("session/list", {"limit": 1000, "cwd": "/work/demo"}))["sessions"]
        assert {s["root"] for s in demo} == {"codex", "opencode"} and len(demo) == 8
        # Titles, forks, sub-agents and child sessions.
        rollback = by_id["019c9000-0000-7000-8000-00000000000a"]
        assert rollback["title"] == "README hunt" and rollback["firstMessage"] == "list the files"
        for child in ("019c9000-0000-7000-8000-00000000000b", "019c9000-0000-7000-8000-00000000000c"):
            assert by_id[child]["parentSession"] == rollback["path"]
        parent = by_id["ses_0a0000001ffeSyntheticCompact"]
        assert parent["path"].endswith("opencode.db#ses_0a0000001ffeSyntheticCompact")
        assert by_id["ses_0a0000002ffeSyntheticChild0"]["parentSession"] == parent["path"]
        # The JSON store's copy of the real session is listed once, from its file.
        real = by_id["ses_04ca851f7ffevKrKMHW3RsPK1U"]
        assert real["path"].endswith(".json") and real["messageCount"] == 54  # 35 messages, 19 tool parts
        # Every one loads, with a tree, a context and usage.
        for s in codex + opencode:
            loaded = await client.request("session/load", {"sessionId": s["sessionId"]})
            assert loaded["format"] == s["format"] and loaded["readOnly"]
            tree = await client.request("tree/get", {"sessionId": s["sessionId"]})
            assert len(tree["nodes"]) == loaded["entryCount"]
            context = await client.request("context/get", {"sessionId": s["sessionId"]})
            nodes = {n["id"] for n in tree["nodes"]}
            sources = [m["entryId"] for m in context["messages"]]
            # Every message comes from an entry of the tree, except those of a reply still being
            # written (OpenCode: not settled yet), which can only be the last ones.
            missing = [i for i, eid in enumerate(sources) if eid not in nodes]
            assert missing == list(range(len(sources) - len(missing), len(sources))), s["sessionId"]
            usage = await client.request("context/usage", {"sessionId": s["sessionId"]})
            assert usage["used"] is not None
        # Forking another agent's session writes the context at that point into the store.
        rid = rollback["sessionId"]
        forked = await client.request("session/fork", {"sessionId": rid, "entryId": "L25", "position": "at"})
        assert forked["saved"] and Path(forked["path"]).is_relative_to(tmp_path / "store")
        theirs = await client.request("context/get", {"sessionId": rid, "leafId": "L25"})
        ours = await client.request("context/get", {"sessionId": forked["sessionId"]})
        assert [m["message"]["role"] for m in ours["messages"]] == [
            m["message"]["role"] for m in theirs["messages"]
        ]
        assert ours["messages"][-1]["message"]["content"] == [{"type": "text", "text": "Deleted b.txt."}]
        before = await client.request(
            "session/fork", {"sessionId": rid, "entryId": "L38", "position": "before"}
        )
        assert before["selectedText"] == "instead, show the README"
        last = (await client.request("context/get", {"sessionId": before["sessionId"]}))["messages"][-1]
        assert last["message"]["content"][0]["text"] == "There are two files: a.txt and b.txt."
        appended = await client.request(
            "session/append",
            {
                "sessionId": before["sessionId"],
                "entries": [{"type": "message", "message": {"role": "user", "content": "go on"}}],
            },
        )
        assert appended["entryIds"]
        await client.close()
    finally:
        assert daemon.stop() == 0
