"""The page's pure logic (``clients/web/test/model.test.mjs``): rows of the tree, the usage series,
and previews of entries that arrive live, which must read like the daemon's ``tree/get`` ones.

The page draws a tree from ``tree/get`` at first, then adds entries it fetches after
``entries_appended`` (``session/entries``) with its own preview function; this test takes every
entry of a varied Pi session and of a Claude Code transcript from a real daemon, both ways,
and has the page's function checked against the daemon's previews. The same run has the
reader's pure pieces checked (``clients/web/test/reader.test.mjs``: ANSI colours, the line diff
of edit cards, the URL fragment, search snippets).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.builders import Ledger, assistant, tool_result, user
from tests.harness.daemon import start_daemon
from tests.web.stores import ClaudeWriter

WEB = Path(__file__).parents[2] / "clients" / "web"
TSC = WEB / "node_modules" / ".bin" / "tsc"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(
        not TSC.exists(), reason="the front-end's tools are not installed (scripts/setup-web-tests)"
    ),
]


def varied_session(path: Path) -> None:
    s = Ledger("varied", "/w")
    s.model_change("anthropic", "claude-sonnet-4-5")
    s.thinking("high")
    s.message(user("  a   question\nover two lines  "))
    s.message(user("x" * 200))
    s.message(user("é" * 79 + "😀" * 3))  # the clip counts UTF-16 units
    s.message(assistant("", calls=[("read", {"path": "a"}), ("bash", {"command": "ls"})]))
    s.message(tool_result("file content"))
    s.message({"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}], "timestamp": 1})
    s.message({"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]})
    s.message(assistant("", stop="error", error="overloaded"))
    s.message(
        {"role": "bashExecution", "command": "make test", "output": "ok", "exitCode": 0, "timestamp": 1}
    )
    s.message({"role": "user", "content": "plain string content"})
    s.custom_message("note", "a custom message")
    s.custom_message("note", [{"type": "text", "text": "in blocks"}])
    s.compaction("## Goal\nsummary text", "e3", 5000)
    s.branch_summary("e4", "what the other branch did")
    s.label("e3", "checkpoint")
    s.label("e3")
    s.session_info("A name")
    s.custom("sessiond.fileSnapshot", {"x": 1})
    s.context_edit("e3", None)
    s.context_edit("e4", {"content": "shorter"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(s.jsonl())


async def test_the_page_model(tmp_path: Path) -> None:
    varied_session(tmp_path / "store" / "sessions" / "--w--" / "2026-01-01T00-00-00-000Z_varied.jsonl")
    claude = ClaudeWriter(tmp_path / "claude" / "projects", "/w")
    claude.turn("Explain it", "It is explained.")
    claude.turn("More", "Done " + "y" * 100, tool=None)
    daemon = start_daemon(tmp_path)
    cases = []
    try:
        client = await daemon.client()
        for sid in ("varied", claude.session_id):
            tree = await client.request("tree/get", {"sessionId": sid})
            page = await client.request("session/entries", {"sessionId": sid, "limit": 5000})
            nodes = {n["id"]: n for n in tree["nodes"]}
            assert len(page["entries"]) == len(nodes)
            for entry in page["entries"]:
                node = nodes[entry["id"]]
                cases.append({"entry": entry, "preview": node["preview"], "role": node.get("role")})
        await client.close()
    finally:
        assert daemon.stop() == 0
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(cases))
    built = subprocess.run(
        [str(TSC), "-p", "tsconfig.test.json"],
        cwd=WEB,
        capture_output=True,
        check=False,
        text=True,
        timeout=180,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    run = subprocess.run(
        ["node", "--test", "test/"],
        cwd=WEB,
        env={
            "PATH": str(Path(shutil.which("node") or "node").parent),
            "SESSIOND_PREVIEW_CASES": str(cases_file),
        },
        capture_output=True,
        check=False,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout and "# skipped 0" in run.stdout, run.stdout[-3000:]
