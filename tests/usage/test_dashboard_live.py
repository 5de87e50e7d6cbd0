"""The web viewer's usage dashboard changes live as an agent appends a response (issue 27, "Live").

A real daemon follows a Claude Code transcript; ``tests/web/node/usage_live.mjs`` opens the
dashboard for that session in Debian's headless Chromium, reads the open session's cost and
today's, and signals; this test then appends one priced response to the transcript (as Claude
Code would) and the driver waits for both cards to change on the same page (no reload). The
time from the write to the card changing is printed (``-s``): the 1 s goal is reported, not
asserted (timings belong in benchmarks/).

Needs ``scripts/setup-web-tests`` (Chromium from Debian, playwright-core from npm); skipped
without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.harness.daemon import Daemon, start_daemon
from tests.usage.test_live import SESSION, SOURCE, built, now_iso

NODE_DIR = Path(__file__).parents[1] / "web" / "node"
SCREENSHOTS = Path(__file__).parents[1] / "web" / "screenshots"
CHROMIUM = os.environ.get("SESSIOND_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="chromium is not installed (scripts/setup-web-tests)"
    ),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "playwright-core").is_dir(),
        reason="playwright-core is not installed in tests/web/node (scripts/setup-web-tests)",
    ),
]

OUTPUT = 200_000
"""Output tokens of the appended response: dollars at any Claude price, so the card's cost
(shown to the cent) must change."""


def response_line() -> bytes:
    line: dict[str, Any] = {
        "type": "assistant",
        "sessionId": SESSION,
        "uuid": str(uuid.uuid4()),
        "parentUuid": None,
        "timestamp": now_iso(),
        "cwd": "/work/proj",
        "message": {
            "id": f"msg_dash_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "done"}],
            "usage": {"input_tokens": 5, "output_tokens": OUTPUT, "cache_read_input_tokens": 0},
        },
    }
    return orjson.dumps(line) + b"\n"


async def test_the_dashboard_shows_an_appended_response_without_a_reload(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-work-proj"
    shutil.copytree(SOURCE, project)
    daemon: Daemon = start_daemon(tmp_path)
    node: subprocess.Popen[str] | None = None
    try:
        client = await daemon.client()
        await built(client)
        before = (await client.request("stats/query", {"groupBy": "session", "sessionId": SESSION}))["totals"]
        ready = tmp_path / "ready"
        SCREENSHOTS.mkdir(exist_ok=True)
        config = {
            "url": json.loads((daemon.socket.parent / "ui.json").read_text())["url"],
            "token": (daemon.store / "tcp.token").read_text().strip(),
            "chromium": CHROMIUM,
            "sessionId": SESSION,
            "ready": str(ready),
            "screenshots": str(SCREENSHOTS),
        }
        (tmp_path / "live.json").write_text(json.dumps(config))
        node = subprocess.Popen(
            ["node", str(NODE_DIR / "usage_live.mjs"), str(tmp_path / "live.json")],
            cwd=NODE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert node.poll() is None, node.communicate()
            assert time.monotonic() < deadline, "the dashboard never showed the session's cost"
            time.sleep(0.05)
        written = time.time()
        with open(project / f"{SESSION}.jsonl", "ab") as f:
            f.write(response_line())
        out, err = node.communicate(timeout=180)
        assert node.returncode == 0, err
        seen = json.loads(out)
        assert "error" not in seen, seen["error"] + "\nsteps: " + str(seen["steps"])
        assert seen["console"] == []
        print(f"\nappended response -> dashboard card: {(seen['seenAt'] / 1000 - written) * 1000:.0f} ms")

        after = (await client.request("stats/query", {"groupBy": "session", "sessionId": SESSION}))["totals"]
        assert after["outputTokens"] == before["outputTokens"] + OUTPUT
        assert seen["marker"] == "same page"
        assert seen["before"]["session"]["cost"] == f"${before['cost']:.2f}"
        shown = seen["after"]["session"]["cost"]
        assert shown == f"${after['cost']:.2f}" != seen["before"]["session"]["cost"]
        assert seen["after"]["session"]["text"] != seen["before"]["session"]["text"]  # its tokens too
        assert seen["after"]["today"]["cost"] != seen["before"]["today"]["cost"]
    finally:
        if node is not None and node.poll() is None:
            node.kill()
            node.communicate()
        assert daemon.stop() == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text()
