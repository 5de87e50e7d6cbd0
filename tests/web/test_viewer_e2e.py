"""The session viewer in a real browser against a real daemon, checked against the files on disk.

``node/e2e.mjs`` drives Debian's headless Chromium (playwright-core with the system
executable) through the page the daemon serves: the list across roots with its filters, a
Claude Code transcript growing on disk while its tree is open, the context and usage views,
label / navigate / fork from the tree, and a rewind previewed, done and undone. This test
builds the store, runs it, and checks what the page showed against the session files and the
workspace. Screenshots of each view land in ``tests/web/screenshots/`` (git-ignored; the docs'
copies are in ``docs/images/``).

Needs ``scripts/setup-web-tests`` (Chromium from Debian, playwright-core from npm); skipped
without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiond.inspection import InspectOptions, inspect_file
from tests.harness.daemon import start_daemon
from tests.web.scenario import PI_SESSION, build, workspace_state
from tests.web.stores import pi_session

HERE = Path(__file__).parent
NODE_DIR = HERE / "node"
SCREENSHOTS = HERE / "screenshots"
CHROMIUM = os.environ.get("SESSIOND_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="chromium is not installed (scripts/setup-web-tests)"
    ),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "playwright-core").is_dir(),
        reason="playwright-core is not installed in tests/web/node (scripts/setup-web-tests)",
    ),
]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def find_session_file(store: Path, session_id: str) -> Path:
    [path] = (store / "sessions").rglob(f"*_{session_id}.jsonl")
    return path


async def test_the_viewer_in_chromium(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    try:
        scenario = await build(daemon, tmp_path)
        pending = tmp_path / "claude-pending.jsonl"
        pending.write_bytes(scenario.claude.pending(turns=2))
        new_claude_leaf = json.loads(pending.read_text().splitlines()[-1])["uuid"]
        agent_file = find_session_file(daemon.store, scenario.agent_session)
        files = sorted({*scenario.states[0], *workspace_state(scenario.workspace)})
        before_rewind = workspace_state(scenario.workspace)
        # a Pi session another agent will start while the list is open (written by the driver)
        later = pi_session(
            tmp_path / "later", "pi-started-later", str(scenario.workspace), "A later question"
        )
        new_session_path = tmp_path / "pi" / "sessions" / later.parent.name / later.name
        SCREENSHOTS.mkdir(exist_ok=True)
        config = {
            "url": scenario.info()["url"],
            "token": scenario.token(),
            "chromium": CHROMIUM,
            "screenshots": str(SCREENSHOTS),
            "expectSessions": 3,
            "searchFor": "README of",
            "newSession": {
                "sessionId": "pi-started-later",
                "source": str(later),
                "path": str(new_session_path),
            },
            "claude": {
                "sessionId": scenario.claude.session_id,
                "path": str(scenario.claude.path),
                "pendingFile": str(pending),
                "newLeaf": new_claude_leaf,
            },
            "agent": {
                "sessionId": scenario.agent_session,
                "labelTarget": scenario.entries["tool_call"],
                "navigateTarget": scenario.entries["first_answer"],
                "forkTarget": scenario.entries["third_prompt"],
                "rewindTo": scenario.prompts[0],
                "workspace": str(scenario.workspace),
                "files": files,
            },
        }
        config_path = tmp_path / "e2e.json"
        config_path.write_text(json.dumps(config))
        run = subprocess.run(
            ["node", str(NODE_DIR / "e2e.mjs"), str(config_path)],
            capture_output=True,
            check=False,
            text=True,
            timeout=240,
            cwd=NODE_DIR,
        )
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout)
        assert "error" not in seen, seen["error"] + "\nsteps: " + str(seen["steps"])
        assert seen["console"] == []

        # the token: none -> instructions; a wrong one -> refused
        assert "sessiond ui" in seen["noToken"]
        assert "refused" in seen["wrongToken"]
        assert "token=" not in seen["hashAfterLoad"]  # taken out of the address bar

        # the list: every root, the filters
        roots = {s["id"]: s["root"] for s in seen["list"]}
        assert roots == {
            scenario.agent_session: "sessiond",
            PI_SESSION: "pi",
            scenario.claude.session_id: "claude",
        }
        assert seen["onlyClaude"] == [scenario.claude.session_id]
        assert seen["searched"] == [PI_SESSION]
        assert "pi-started-later" in seen["listAfterNewSession"]

        # the Claude Code transcript grew on disk: the same page showed it
        live = seen["live"]
        assert live["marker"] == "same page"
        assert live["after"]["rows"] == live["before"]["rows"] + 8  # two turns of four records
        assert live["after"]["leaf"] == new_claude_leaf != live["before"]["leaf"]
        assert live["after"]["used"] > live["before"]["used"]
        assert seen["claudeReadOnly"] == {"navigate": True, "label": True, "clone": True}

        # context: the compaction summary first, marked; usage: the compaction on the chart
        assert seen["agentContext"][0]["entry"] == scenario.entries["compaction"]
        assert seen["agentContext"][0]["summary"] is True
        assert seen["usage"]["compactions"] == [scenario.entries["compaction"]]
        assert seen["usage"]["points"] >= 4

        # label / navigate / fork changed the files
        entries = read_jsonl(agent_file)
        labels = [
            e for e in entries if e["type"] == "label" and e["targetId"] == scenario.entries["tool_call"]
        ]
        assert labels and labels[-1]["label"] == "e2e label" == seen["label"]
        # the move is persisted as a marker below the entry (a reopen, in sessiond or Pi, restores it)
        assert seen["continuesAfterNavigate"] == scenario.entries["first_answer"]
        marker = next(e for e in entries if e["id"] == seen["leafAfterNavigate"])
        assert marker["type"] == "custom" and marker["parentId"] == scenario.entries["first_answer"]
        # read back cold: the branch ends at that answer (then only bookkeeping: the marker, the
        # file-history records of the rewind below)
        branch = inspect_file(str(agent_file), InspectOptions())["branchIds"]
        after = branch[branch.index(scenario.entries["first_answer"]) + 1 :]
        assert after[0] == marker["id"]
        assert all(next(e for e in entries if e["id"] == i)["type"] == "custom" for i in after)
        forked_file = find_session_file(daemon.store, seen["forked"])
        forked = read_jsonl(forked_file)
        assert forked[0]["parentSession"] == str(agent_file)
        forked_ids = {e.get("id") for e in forked[1:]}
        assert scenario.entries["second_prompt"] in forked_ids
        assert scenario.entries["third_prompt"] not in forked_ids  # forked before it

        # the rewind did what its dry run said; README.md (edited by hand) was a conflict, left alone
        assert seen["dryRun"] == seen["rewind"]
        statuses = {f["path"]: f["status"] for f in seen["rewind"]}
        assert statuses["README.md"] == "conflict"
        assert statuses["src/app.py"] == "ok"
        after = seen["afterRewind"]
        first = scenario.states[0]
        assert after["src/app.py"] == first["src/app.py"].decode()
        assert after["tests/test_app.py"] is None  # created after the first prompt: deleted
        assert after["README.md"] == before_rewind["README.md"].decode()
        # undo put everything back
        assert workspace_state(scenario.workspace) == before_rewind
        assert all(f["status"] in ("ok", "forced") for f in seen["undo"])
    finally:
        assert daemon.stop() == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text()
