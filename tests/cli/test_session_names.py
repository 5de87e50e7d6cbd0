"""Naming sessions on the command line and telling them apart (issue 14 item 12): id prefixes in
every root, Claude Code sessions' titles in ``tree``/``show``, no empty assistant sections, forks
marked in ``ls``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.builders import assistant, user
from tests.cli.conftest import CLAUDE_ID, CLAUDE_SAMPLE, EXAMPLE, EXAMPLE_ID, Cli, isolated_env, run_plain
from tests.rpc.conftest import Daemon

pytestmark = pytest.mark.anyio

CLAUDE_FIRST_PROMPT = "Ok, so there's isn't much to see here"
EMPTY_PIECE = "b5c90882-1e0a-493a-859c-2af606f624a1"
"""An assistant piece of the Claude Code sample whose only content is the text "\\n\\n"."""


def test_a_unique_prefix_names_a_session_in_any_root(cli: Cli) -> None:
    for prefix, full, first_line in (
        (CLAUDE_ID[:8], CLAUDE_ID, CLAUDE_FIRST_PROMPT),
        (CLAUDE_ID[:4], CLAUDE_ID, CLAUDE_FIRST_PROMPT),
        (EXAMPLE_ID[:13], EXAMPLE_ID, "Auth: sessions → cookies  (14 messages, 20 entries)"),
    ):
        tree = cli.run("tree", prefix)
        assert tree.returncode == 0, tree.stderr
        assert tree.stdout.startswith(first_line), tree.stdout[:200]
        shown = json.loads(cli.run("show", "--json", prefix).stdout)
        assert shown["sessionId"] == full
        usage = json.loads(cli.run("usage", "--json", prefix).stdout)
        assert usage["sessionId"] == full
        tail = cli.run("tail", "-n", "1", "--json", prefix)
        assert tail.returncode == 0 and json.loads(tail.stdout.splitlines()[0])["sessionId"] == full
    missing = cli.run("show", "zzzzzzzz")
    assert missing.returncode == 2 and "Session zzzzzzzz not found" in missing.stderr


async def test_an_ambiguous_prefix_lists_the_candidates(cli: Cli, cli_daemon: Daemon, tmp_path: Path) -> None:
    client = await cli_daemon.client()
    try:
        for sid in ("twin-alpha", "twin-beta"):
            await client.request("session/new", {"cwd": str(tmp_path), "sessionId": sid})
            entries = [{"type": "message", "message": m} for m in (user("hi"), assistant("hello"))]
            await client.request("session/append", {"sessionId": sid, "entries": entries})
    finally:
        await client.close()
    r = cli.run("show", "twin")
    assert r.returncode == 2
    assert "'twin' is ambiguous: 2 sessions start with it (twin-alpha, twin-beta)" in r.stderr
    error = json.loads(cli.run("label", "--json", "twin", "x", "y").stdout)["error"]
    assert error["candidates"] == ["twin-alpha", "twin-beta"] and error["exitCode"] == 2
    labelled = cli.run("label", "twin-a", "nope", "y")  # resolved, then the entry is unknown
    assert labelled.returncode == 2 and "Entry nope not found" in labelled.stderr


def test_without_a_daemon_prefixes_resolve_in_the_files(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    project = tmp_path / "claude" / "projects" / "-home-user-project"
    project.mkdir(parents=True)
    shutil.copyfile(CLAUDE_SAMPLE, project / CLAUDE_SAMPLE.name)
    store = tmp_path / "store" / "sessions" / "--home-dev-webapp--"
    store.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, store / f"2026-07-29T09-00-00-000Z_{EXAMPLE_ID}.jsonl")
    r = run_plain("tree", "--no-start", CLAUDE_ID[:6], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(CLAUDE_FIRST_PROMPT)
    assert json.loads(run_plain("show", "--no-start", "--json", EXAMPLE_ID[:8], env=env).stdout)[
        "sessionId"
    ] == (EXAMPLE_ID)
    assert not (tmp_path / "store" / "daemon.log").exists()


def test_claude_code_show_has_a_title_and_no_empty_assistant_sections(cli: Cli) -> None:
    shown = cli.run("show", CLAUDE_ID)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"# {CLAUDE_FIRST_PROMPT}")
    sections = shown.stdout.split("\n## ")
    for section in sections[1:]:
        heading, _, body = section.partition("\n")
        assert body.strip(), f"empty section: ## {heading}"
    assert EMPTY_PIECE not in shown.stdout
    everything = cli.run("show", "--all", CLAUDE_ID)
    assert EMPTY_PIECE in everything.stdout and "_(no text)_" in everything.stdout
    # --json keeps every entry of the branch, the empty piece included.
    assert EMPTY_PIECE in json.loads(cli.run("show", "--json", CLAUDE_ID).stdout)["entryIds"]


async def test_ls_marks_forks(cli: Cli, cli_daemon: Daemon, tmp_path: Path) -> None:
    client = await cli_daemon.client()
    try:
        await client.request("session/new", {"cwd": str(tmp_path), "sessionId": "fork-source"})
        entries = [
            {"type": "message", "message": m} for m in (user("first"), assistant("one"), user("again"))
        ]
        appended = await client.request("session/append", {"sessionId": "fork-source", "entries": entries})
    finally:
        await client.close()
    forked = json.loads(cli.run("fork", "--json", "fork-source", appended["entryIds"][2]).stdout)
    listed = cli.run("ls", "--cwd", str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert "⑂ first" in rows[forked["sessionId"]]
    assert "⑂" not in rows["fork-source"]
    as_json = {
        s["sessionId"]: s
        for s in json.loads(cli.run("ls", "--json", "--cwd", str(tmp_path)).stdout)["sessions"]
    }
    assert as_json[forked["sessionId"]]["parentSession"].endswith("_fork-source.jsonl")
    assert as_json["fork-source"]["parentSession"] is None
