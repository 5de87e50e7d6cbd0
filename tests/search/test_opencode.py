"""OpenCode's sessions are indexed: the rows of ``opencode.db`` and the older JSON storage,
kept current on every commit (a new message is found, a deleted session leaves nothing), with
``[watch] enabled = false`` too (each query compares the sessions' signatures). A real daemon on
copies of tests/fixtures/opencode, written to with ``sqlite3`` as OpenCode writes."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from sessiond_client.typed import SessiondClient
from tests.harness.daemon import start_daemon

from .conftest import FIXTURES, typed_client

pytestmark = pytest.mark.anyio

DB_FIXTURE = FIXTURES / "opencode" / "synthetic-v1.16" / "opencode.db"
JSON_FIXTURE = FIXTURES / "opencode" / "json-store" / "storage"
TOOLS = "ses_0a0000004ffeSyntheticTools0"
JSON_ID = "ses_04ca851f7ffevKrKMHW3RsPK1U"
DEADLINE_S = 60.0
"""A generous bound for "it happened at all" (a loaded 2-core machine), never a latency."""


def _populate(tmp: Path) -> Path:
    data = tmp / "data" / "opencode"
    data.mkdir(parents=True)
    db = data / "opencode.db"
    shutil.copyfile(DB_FIXTURE, db)
    shutil.copytree(JSON_FIXTURE, data / "storage")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    return db


def _add_turn(db: Path, session: str, n: int, prompt: str, reply: str) -> None:
    """A user message and the assistant's finished reply, each with one text part, committed
    as OpenCode commits (WAL). A user message shows once its reply has started."""
    at = 1785600000000 + n * 10_000
    user = {"role": "user", "agent": "build", "time": {"created": at}}
    answer = {
        "parentID": f"msg_0b{n:08d}Searchtest0000",
        "role": "assistant",
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
        "time": {"created": at + 1, "completed": at + 2},
        "finish": "stop",
    }
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("BEGIN")
        for k, (info, text) in enumerate(((user, prompt), (answer, reply))):
            mid, pid = f"msg_0b{n:08d}Searchtest000{k}", f"prt_0b{n:08d}Searchtest000{k}"
            conn.execute(
                "INSERT INTO message VALUES (?,?,?,?,?)", (mid, session, at + k, at + k, json.dumps(info))
            )
            conn.execute(
                "INSERT INTO part VALUES (?,?,?,?,?,?)",
                (pid, mid, session, at + k, at + k, json.dumps({"type": "text", "text": text})),
            )
        conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (at + 2, session))
        conn.execute("COMMIT")


async def _total(client: SessiondClient, query: str, want: int, **filters: Any) -> Any:
    started = time.monotonic()
    while True:
        result = await client.search_query(query, **filters)
        if result.total == want and result.indexing is None:
            return result
        assert time.monotonic() - started < DEADLINE_S, f"{query}: {result.total} hits, not {want}"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("watch", [True, False])
async def test_opencode_sessions_are_found_and_kept_current(tmp_path: Path, watch: bool) -> None:
    db = _populate(tmp_path)
    config = None if watch else "[watch]\nenabled = false\n"
    d = start_daemon(tmp_path, config=config)
    client = await typed_client(d)
    try:
        hits = (await _total(client, "screenshot", 1, agent="opencode")).hits
        assert hits[0].sessionId == TOOLS and hits[0].agent == "opencode" and hits[0].cwd == "/work/demo"
        assert hits[0].role == "user" and hits[0].title == "Tool states"
        assert (await _total(client, "tokenizer", 1, agent="opencode")).total >= 1
        json_hits = (await client.search_query("workspace", session_id=JSON_ID)).hits  # the JSON storage
        assert json_hits and all(h.sessionId == JSON_ID for h in json_hits)

        _add_turn(db, TOOLS, 1, "is the flamingo parser ready?", "the flamingo parser is ready")
        hits = (await _total(client, "flamingo", 2)).hits
        assert {h.sessionId for h in hits} == {TOOLS} and {h.role for h in hits} == {"user", "assistant"}

        with sqlite3.connect(db, isolation_level=None) as conn:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("DELETE FROM session WHERE id = ?", (TOOLS,))
        await _total(client, "flamingo", 0)
        await _total(client, "screenshot", 0)
    finally:
        await client.close()
        assert d.stop() == 0, d.log_text()


def test_a_sessions_signature_is_the_same_listed_or_asked_alone(tmp_path: Path) -> None:
    """The root's listing (one query per table) and one session's look must agree, or every
    look would read every OpenCode session again; and a commit to a session changes its own."""
    from types import SimpleNamespace  # noqa: PLC0415

    from sessiond.service.searching import CatalogSource, _opencode_files  # noqa: PLC0415

    db = _populate(tmp_path)
    root: Any = SimpleNamespace(path=db.parent, name="opencode", format="opencode")
    source = CatalogSource(None)  # type: ignore[arg-type]  # signature() needs no catalog
    before = {f.path: f.signature for f in _opencode_files(root)}
    assert len(before) == 5  # four database sessions, one of the JSON storage
    assert all(source.signature(path) == sig for path, sig in before.items())
    _add_turn(db, TOOLS, 1, "a question", "an answer")
    after = {f.path: f.signature for f in _opencode_files(root)}
    assert {p for p in before if before[p] != after[p]} == {p for p in before if p.endswith(TOOLS)}
    assert all(source.signature(path) == sig for path, sig in after.items())


def test_an_unreadable_database_is_not_an_empty_one(tmp_path: Path) -> None:
    """A rescan (a commit seen) of a database that cannot be read raises, so the engine keeps
    what it indexed of it (``SearchEngine._rescan``) rather than forgetting every session; the
    full look at start-up leaves it out with a log line and lists the JSON storage."""
    from types import SimpleNamespace  # noqa: PLC0415

    from sessiond.service.searching import CatalogSource  # noqa: PLC0415
    from sessiond.store.opencode import UnreadableDatabaseError  # noqa: PLC0415

    db = _populate(tmp_path)
    root: Any = SimpleNamespace(path=db.parent, name="opencode", format="opencode")
    source = CatalogSource(None)  # type: ignore[arg-type]  # root_files() needs no catalog
    db.write_bytes(b"not a database" * 1000)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with pytest.raises(UnreadableDatabaseError):
        list(source.root_files(root))
    assert [Path(f.path).stem for f in source.root_files(root, strict=False)] == [JSON_ID]
