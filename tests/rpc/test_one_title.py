"""One count and one title per session, whatever shows it (issue 24, item 14).

A Codex session showed "2 msg" and the title "## User Input…" in the list, but "133 entries"
and "# AGENTS.md…" in its header (``session/load`` had no count or title of its own, so the
CLI and the viewer took the first user entry — context Codex injected). Now ``session/load``
carries the list row's ``messageCount`` and ``firstMessage``, and a title never starts from
injected context. Through the real daemon, and the CLI against it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.model.titles import INJECTED_PREFIXES, prompt_title
from sessiond_client import Client
from tests.cli.conftest import CLAUDE_SAMPLE
from tests.conftest import REPO
from tests.harness.daemon import Daemon, start_daemon

pytestmark = pytest.mark.anyio

CODEX = REPO / "tests" / "fixtures" / "codex" / "moonmind-0.58"
CODEX_ID = "019a802a-aab1-7c31-9831-d2510c7a74a2"
WRAPPERS = (*INJECTED_PREFIXES, "## User Input", "\n## User Input")


@pytest.fixture
def daemon(tmp_path: Path) -> Any:
    rollouts = tmp_path / "codex" / "sessions" / "2025" / "11" / "13"
    rollouts.mkdir(parents=True)
    for f in CODEX.glob("*.jsonl"):
        shutil.copyfile(f, rollouts / f.name)
    project = tmp_path / "claude" / "projects" / "-home-user-project"
    project.mkdir(parents=True)
    shutil.copyfile(CLAUDE_SAMPLE, project / CLAUDE_SAMPLE.name)
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        assert d.stop() == 0, d.log_text()


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[Client]:
    c = await daemon.client()
    try:
        yield c
    finally:
        await c.close()


async def test_the_list_and_the_header_agree(client: Client) -> None:
    rows = (await client.request("session/list", {"limit": 1000}))["sessions"]
    assert {r["root"] for r in rows} >= {"codex", "claude"}
    for row in rows:
        loaded = await client.request("session/load", {"sessionId": row["sessionId"]})
        assert loaded["messageCount"] == row["messageCount"], row["sessionId"]
        assert loaded["firstMessage"] == row["firstMessage"], row["sessionId"]
        assert not row["firstMessage"].startswith(WRAPPERS), row


async def test_a_codex_title_skips_agents_md_and_the_user_input_wrapper(client: Client) -> None:
    loaded = await client.request("session/load", {"sessionId": CODEX_ID})
    assert loaded["firstMessage"].startswith("## Outline"), loaded["firstMessage"][:80]


def test_the_cli_header_shows_the_lists_title_and_count(daemon: Daemon) -> None:
    def cli(*args: str) -> str:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "sessiond"), *args, "--socket", str(daemon.socket)],
            capture_output=True,
            text=True,
            env=daemon.env,
            check=True,
        )
        return done.stdout

    tree = cli("tree", CODEX_ID[:8]).splitlines()[0]
    assert tree.startswith("## Outline") and "(131 messages, 133 entries)" in tree, tree
    show = cli("show", CODEX_ID[:8]).splitlines()
    assert show[0].startswith("# ## Outline") and "· 131 messages ·" in show[2], show[:3]


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\n...\n</INSTRUCTIONS>", None),
        ("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>", None),
        ("<local-command-caveat>Caveat: …</local-command-caveat>", None),
        ("<command-name>/exit</command-name>", None),
        (
            "\n## User Input\n\n```text\nadd a login page\n```\n\nYou **MUST** consider the user input.",
            "add a login page",
        ),
        ("  fix the tests  ", "fix the tests"),
    ],
)
def test_prompt_title(text: str, title: str | None) -> None:
    assert prompt_title(text) == title
