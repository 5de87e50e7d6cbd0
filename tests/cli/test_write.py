"""``label``, ``fork`` and ``compact`` through the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import CLAUDE_ID, Cli, new_session
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


async def test_label_set_and_clear(cli: Cli, cli_daemon: Daemon, tmp_path: Path) -> None:
    client = await cli_daemon.client()
    sid, ids = await new_session(client, tmp_path, ["hello", "hi there", "more", "sure"])
    await client.close()
    r = cli.run("label", sid, ids[1], "good answer")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"Labelled {ids[1]} 'good answer'"
    tree = json.loads(cli.run("tree", "--json", sid).stdout)
    assert {n["id"]: n.get("label") for n in tree["nodes"]}[ids[1]] == "good answer"
    assert "[good answer]" in cli.run("tree", sid).stdout

    done = json.loads(cli.run("label", "--json", sid, ids[1], "--clear").stdout)
    assert done["label"] is None and done["entryId"] == ids[1] and done["labelEntryId"]
    tree = json.loads(cli.run("tree", "--json", sid).stdout)
    assert {n["id"]: n.get("label") for n in tree["nodes"]}[ids[1]] is None

    bad = cli.run("label", sid, "no-such-entry", "x")
    assert bad.returncode == 2 and bad.stderr.strip() == "sessiond label: Entry no-such-entry not found"
    assert cli.run("label", sid, ids[1]).returncode == 2  # neither a LABEL nor --clear
    read_only = cli.run("label", CLAUDE_ID, "13f97369-4175-446a-bac8-0b7e2981d649", "x")
    assert read_only.returncode == 4 and "read-only" in read_only.stderr


async def test_fork_before_and_at(cli: Cli, cli_daemon: Daemon, tmp_path: Path) -> None:
    client = await cli_daemon.client()
    texts = ["first question", "first answer", "second question", "answer"]
    sid, ids = await new_session(client, tmp_path, texts)
    await client.close()
    r = cli.run("fork", sid, ids[2])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Forked into ") and "the prompt to re-send: second question" in r.stdout
    new_id = r.stdout.split()[2]
    branch = json.loads(cli.run("show", "--json", new_id).stdout)
    assert branch["entryIds"][-1] == ids[1]

    cloned = json.loads(cli.run("fork", "--json", "--at", sid, ids[2]).stdout)
    assert cloned["position"] == "at" and cloned["sourceSessionId"] == sid and cloned["saved"] is True
    shown = json.loads(cli.run("show", "--json", cloned["sessionId"]).stdout)
    assert [e["message"]["content"][0]["text"] for e in shown["entries"]] == [
        "first question",
        "first answer",
        "second question",
    ]
    assert cli.run("fork", sid, "missing").returncode == 2


async def test_compact_with_the_extractive_summarizer(cli: Cli, cli_daemon: Daemon, tmp_path: Path) -> None:
    client = await cli_daemon.client()
    texts = [f"turn {i}: " + "lorem ipsum dolor sit amet " * 40 for i in range(12)]
    sid, ids = await new_session(client, tmp_path, texts)
    await client.close()
    options = ("--summarizer", "extractive", "--keep", "400", "--instructions", "tests")
    r = cli.run("compact", "--json", sid, *options)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["compacted"] is True and result["summarizer"] == "extractive"
    assert result["firstKeptEntryId"] in ids and result["tokensAfter"] < result["tokensBefore"]
    shown = cli.run("show", sid).stdout
    assert f"⟳ compaction · {result['entryId']}" in shown
    ctx = json.loads(cli.run("context", "--json", sid).stdout)
    assert ctx["messages"][0]["role"] == "compactionSummary"

    again = cli.run("compact", sid, "--summarizer", "extractive", "--keep", "400")
    assert again.returncode == 0 and again.stdout.startswith("Nothing to compact")

    # Plain output on a second session (one line of result, no progress bar on a pipe).
    sid2, _ = await _session(cli_daemon, tmp_path, texts)
    unconfigured = cli.run("compact", sid2, "--summarizer", "command", "--keep", "400")
    assert unconfigured.returncode == 2 and "[summarizer.command]" in unconfigured.stderr
    plain = cli.run("compact", sid2, "--summarizer", "extractive", "--keep", "400")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("Compacted ") and "(summarizer extractive)" in plain.stdout
    assert "\r" not in plain.stderr  # no live progress bar when stderr is not a terminal


async def _session(daemon: Daemon, cwd: Path, texts: list[str]) -> tuple[str, list[str]]:
    client = await daemon.client()
    try:
        return await new_session(client, cwd, texts)
    finally:
        await client.close()
