"""One definition of a session's message count, whatever agent wrote it (issue 24, item 14).

A session's ``messageCount`` (``session/list``'s row, ``session/load``, ``sessiond ls``/``show``/
``tree``, the viewer's header, the VS Code extension) is the number of ``message`` entries its
tree holds as sessiond presents it (``tree/get``), on every branch: prompts, assistant replies,
tool results. Injected context, summaries, model changes and other bookkeeping are entries but
not messages. That is Pi's own listing rule (``SessionManager.list`` counts ``message`` entries;
the Pi differential tests compare it), and every other agent's session is read as Pi entries,
so one rule serves all. Before, a Codex rollout counted prompts and assistant texts only (a
session of 131 message entries listed "2 messages") and OpenCode counted its own records (an
assistant record with tool parts is an assistant message and tool results in the tree).

Checked through the real daemon for every fixture of every agent: the row's count equals the
``message`` nodes of the session's tree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.harness.daemon import start_daemon

pytestmark = pytest.mark.anyio

FIXTURES = REPO / "tests" / "fixtures"


def stage(tmp: Path) -> None:
    """Every agent fixture in the roots a daemon on ``tmp`` lists."""
    codex = tmp / "codex"
    shutil.copytree(FIXTURES / "codex" / "synthetic-home", codex)
    shutil.copytree(FIXTURES / "codex" / "real-0.169" / "sessions", codex / "sessions", dirs_exist_ok=True)
    day = codex / "sessions" / "2025" / "01" / "01"
    day.mkdir(parents=True)
    for rollout in (FIXTURES / "codex").glob("*/rollout-*.jsonl"):
        shutil.copyfile(rollout, day / rollout.name)
    for version in sorted((FIXTURES / "claude-code").iterdir()):
        if version.is_dir():
            shutil.copytree(version, tmp / "claude" / "projects" / f"-work-{version.name}")
    pi = tmp / "pi" / "sessions" / "--work-pi--"
    pi.mkdir(parents=True)
    for session in (FIXTURES / "pi").glob("*.jsonl"):
        shutil.copyfile(session, pi / session.name)
    data = tmp / "data" / "opencode"
    shutil.copytree(FIXTURES / "opencode" / "json-store", data)
    shutil.copyfile(FIXTURES / "opencode" / "real-v1.16" / "opencode.db", data / "opencode.db")


async def test_every_agents_count_is_its_trees_message_entries(tmp_path: Path) -> None:
    stage(tmp_path)
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        rows = (await client.request("session/list", {"limit": 1000}))["sessions"]
        assert {r["format"] for r in rows} == {"pi", "claude-code", "codex", "opencode"}
        wrong = {}
        for row in rows:
            sid = row["sessionId"]
            nodes = (await client.request("tree/get", {"sessionId": sid}))["nodes"]
            messages = sum(1 for n in nodes if n["type"] == "message")
            loaded = await client.request("session/load", {"sessionId": sid})
            if (row["messageCount"], loaded["messageCount"]) != (messages, messages):
                wrong[f"{row['format']} {sid}"] = (row["messageCount"], loaded["messageCount"], messages)
        assert not wrong, "\n".join(f"{k}: {v}" for k, v in sorted(wrong.items()))
        await client.close()
    finally:
        assert daemon.stop() == 0, daemon.log_text()
