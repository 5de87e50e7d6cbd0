"""search/query and `sessiond search` through a real daemon, over the recorded sessions of Claude
Code, Codex and Pi (tests/fixtures), plus the daemon's own appends and deletions."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import RpcError
from sessiond_client.typed import SessiondClient
from tests.harness.daemon import Daemon, start_daemon

from .conftest import CLAUDE_ID, populate, typed_client

pytestmark = pytest.mark.anyio

START, END = "\x02", "\x03"


async def until_built(client: SessiondClient) -> None:
    for _ in range(400):
        result = await client.search_query("zzzznothing")
        if result.indexing is None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the first build did not finish")


@pytest.fixture
def agents_daemon(tmp_path: Path) -> Iterator[Daemon]:
    populate(tmp_path)
    d = start_daemon(tmp_path)
    yield d
    assert d.stop() == 0, d.log_text()
    assert "Traceback" not in d.log_text(), d.log_text()


async def test_finds_every_agents_sessions(agents_daemon: Daemon, tmp_path: Path) -> None:
    client = await typed_client(agents_daemon)
    try:
        await until_built(client)
        claude = await client.search_query("there's isn't much to see", agent="claude-code")
        assert claude.hits, claude
        hit = claude.hits[0]
        assert hit.sessionId == CLAUDE_ID
        assert hit.agent == "claude-code" and hit.root == "claude"
        assert hit.cwd == "/home/user/project"
        assert hit.role == "user"
        assert START in hit.snippet and END in hit.snippet
        assert hit.resume == f"cd /home/user/project && claude --resume {CLAUDE_ID}"
        codex = await client.search_query('"list the files"')
        assert {h.agent for h in codex.hits} >= {"codex"}
        assert any(h.resume and h.resume.endswith(f"codex resume {h.sessionId}") for h in codex.hits)
        pi = await client.search_query("tui-renderer", root="pi")
        assert pi.hits and all(h.agent == "pi" and h.root == "pi" for h in pi.hits)
        assert pi.hits[0].resume is not None and "pi --session" in pi.hits[0].resume
        # substring mode finds pieces of identifiers that words mode splits
        sub = await client.search_query("tui-rend", mode="substring", root="pi")
        assert sub.hits and "tui-rend" in sub.hits[0].snippet.replace(START, "").replace(END, "").lower()
        # the index file is private
        index = tmp_path / "store" / "search" / "index.sqlite3"
        assert stat.S_IMODE(os.stat(index).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(index.parent).st_mode) == 0o700
    finally:
        await client.close()


async def test_bad_queries_name_the_field(agents_daemon: Daemon) -> None:
    client = await typed_client(agents_daemon)
    try:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ('"unclosed', {}, "query"),
            ("-only -excluded", {}, "query"),
            ("ab", {"mode": "substring"}, "query"),
            ("   ", {}, "query"),
            ("a*b", {}, "query"),
            ("fine", {"since": "yesterday"}, "since"),
            ("fine", {"cursor": "garbage!"}, "cursor"),
            ("fine", {"agent": "emacs"}, "agent"),
            ("fine", {"cwd": "relative/dir"}, "cwd"),
        ]
        for query, kwargs, field in cases:
            with pytest.raises(RpcError) as caught:
                await client.search_query(query, **kwargs)
            assert caught.value.code == -32602, (query, caught.value)
            assert (caught.value.data or {}).get("field") == field, (query, caught.value.data)
        # FTS5 syntax is text, not operators: none of these is an SQLite error
        for query in ["NEAR(a b)", "text: foo", "^start", "a OR b AND", "(((", "col:*", '""""']:
            try:
                await client.search_query(query)
            except RpcError as exc:
                assert exc.code == -32602 and (exc.data or {}).get("field") == "query", (query, exc)
    finally:
        await client.close()


async def test_own_appends_paging_and_delete(tmp_path: Path) -> None:
    d = start_daemon(tmp_path)
    client = await typed_client(d)
    try:
        new = await client.session_new(cwd="/home/dev/webapp")
        sid = new.sessionId
        specs = [
            {"type": "message", "message": {"role": "user", "content": f"quokka number {i}", "timestamp": 1}}
            for i in range(30)
        ]
        await client.session_append(sid, specs)
        first = await client.search_query("quokka", limit=20)
        assert first.total == 30 and len(first.hits) == 20 and first.nextCursor
        rest = await client.search_query("quokka", limit=20, cursor=first.nextCursor)
        assert len(rest.hits) == 10 and rest.nextCursor is None
        assert {h.entryId for h in first.hits}.isdisjoint({h.entryId for h in rest.hits})
        assert all(h.sessionId == sid and h.root == "sessiond" and h.onBranch for h in first.hits)
        only = await client.search_query("quokka", cwd="/home/dev", session_id=sid, role="user")
        assert only.total == 30
        assert (await client.search_query("quokka", role="assistant")).total == 0
        assert (await client.search_query("quokka", since="2999-01-01")).total == 0
        await client.session_delete(sid)
        for _ in range(100):
            if (await client.search_query("quokka")).total == 0:
                break
            await asyncio.sleep(0.05)
        assert (await client.search_query("quokka")).total == 0
    finally:
        await client.close()
        assert d.stop() == 0, d.log_text()


def _cli(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "sessiond", "search", *args, "--socket", str(d.socket), "--no-start"]
    return subprocess.run(argv, env=d.env, capture_output=True, text=True, timeout=120, check=False)


async def test_cli_lines_json_and_errors(agents_daemon: Daemon) -> None:
    client = await typed_client(agents_daemon)
    try:
        await until_built(client)
    finally:
        await client.close()
    done = _cli(agents_daemon, "--json", "--agent", "claude-code", "much to see")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"hits", "total", "nextCursor"}
    hit = result["hits"][0]
    assert set(hit) == {
        "sessionId",
        "entryId",
        "agent",
        "cwd",
        "timestamp",
        "role",
        "title",
        "snippet",
        "resume",
    }
    assert hit["resume"] == f"cd /home/user/project && claude --resume {CLAUDE_ID}"
    text = _cli(agents_daemon, "much to see", "--limit", "3")
    assert text.returncode == 0, text.stderr
    assert "claude-code" in text.stdout and "project" in text.stdout
    assert f"claude --resume {CLAUDE_ID}" in text.stdout
    assert START not in text.stdout and END not in text.stdout
    bad = _cli(agents_daemon, '"unclosed')
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "not closed" in bad.stderr, bad.stderr
    rebuilt = _cli(agents_daemon, "--rebuild", "--json", "much to see")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["hits"], "the rebuild waits for the build (a workDoneToken)"
