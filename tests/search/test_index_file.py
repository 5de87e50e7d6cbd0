"""The index file through a real daemon: a restart reads nothing that did not change, a corrupt
or foreign-version file is rebuilt with a log line, ``[search] exclude`` keeps sessions out,
and ``[watch] enabled = false`` still finds what was appended (the index is brought up to date
before each query)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import orjson
import pytest

from sessiond_client import RpcError
from sessiond_client.typed import SessiondClient
from tests.harness.daemon import Daemon, start_daemon

from .conftest import CLAUDE_ID, populate, typed_client

pytestmark = pytest.mark.anyio


async def _built(client: SessiondClient) -> None:
    for _ in range(400):
        if (await client.search_query("warmup")).indexing is None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the build did not finish")


def _stop(d: Daemon) -> str:
    assert d.stop() == 0, d.log_text()
    text = d.log_text()
    assert "Traceback" not in text, text
    return text


async def test_restart_reads_only_what_changed(tmp_path: Path) -> None:
    populate(tmp_path)
    d = start_daemon(tmp_path)
    client = await typed_client(d)
    try:
        await _built(client)
        new = await client.session_new(cwd="/home/dev/app")
        entry = {
            "type": "message",
            "message": {"role": "user", "content": "capybara habitat", "timestamp": 1},
        }
        await client.session_append(new.sessionId, [entry])
        assert (await client.search_query("capybara")).total == 1
    finally:
        await client.close()
    first = _stop(d)
    assert "search: indexing" in first
    d = start_daemon(tmp_path)
    client = await typed_client(d)
    try:
        await _built(client)
        assert (await client.search_query("capybara")).total == 1
        assert (await client.search_query("much to see", session_id=CLAUDE_ID)).total >= 1
    finally:
        await client.close()
    second = _stop(d)[len(first) :]
    assert "search: indexing" not in second, second  # not one file read again


async def test_a_corrupt_or_foreign_index_is_rebuilt(tmp_path: Path) -> None:
    populate(tmp_path)
    index = tmp_path / "store" / "search" / "index.sqlite3"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"this is not a database" * 100)
    d = start_daemon(tmp_path)
    client = await typed_client(d)
    try:
        await _built(client)
        assert (await client.search_query("much to see")).total >= 1
    finally:
        await client.close()
    text = _stop(d)
    assert "is unusable" in text and "rebuilding it" in text
    db = sqlite3.connect(index)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    d = start_daemon(tmp_path)
    client = await typed_client(d)
    try:
        await _built(client)
        assert (await client.search_query("much to see")).total >= 1
    finally:
        await client.close()
    text = _stop(d)
    assert "schema version 99" in text


async def test_excluded_roots_and_projects_are_never_indexed(tmp_path: Path) -> None:
    populate(tmp_path)
    config = '[search]\nexclude = ["claude", "/work/demo*"]\n'
    d = start_daemon(tmp_path, config=config)
    client = await typed_client(d)
    try:
        await _built(client)
        assert (await client.search_query("much to see")).total == 0  # the claude root
        assert (await client.search_query('"list the files"', agent="codex")).total == 0  # cwd /work/demo
        assert (await client.search_query("tui-renderer", root="pi")).total >= 1  # not excluded
    finally:
        await client.close()
    _stop(d)


async def test_without_watching_a_query_finds_what_was_appended(tmp_path: Path) -> None:
    files = populate(tmp_path)
    d = start_daemon(tmp_path, config="[watch]\nenabled = false\n")
    client = await typed_client(d)
    try:
        await _built(client)
        transcript = files["claude"]
        last = orjson.loads(transcript.read_bytes().splitlines()[-1])
        record = {
            **last,
            "type": "user",
            "uuid": "11111111-2222-4333-8444-555555555555",
            "parentUuid": last.get("uuid"),
            "message": {"role": "user", "content": "where is the platypus config"},
        }
        with open(transcript, "ab") as f:
            f.write(orjson.dumps(record) + b"\n")
        result = await client.search_query("platypus")  # no watcher: the query looks first
        assert [h.sessionId for h in result.hits] == [CLAUDE_ID]
        transcript.unlink()
        assert (await client.search_query("platypus")).total == 0
    finally:
        await client.close()
    _stop(d)


async def test_search_disabled(tmp_path: Path) -> None:
    populate(tmp_path)
    d = start_daemon(tmp_path, config="[search]\nenabled = false\n")
    client = await typed_client(d)
    try:
        with pytest.raises(RpcError) as caught:
            await client.search_query("much to see")
        assert caught.value.code == -32602 and "disabled" in str(caught.value)
    finally:
        await client.close()
    _stop(d)
    assert not (tmp_path / "store" / "search").exists(), "nothing indexed, no copy of any session"
