"""The page and a one-time code (issue 24 item 1), in Debian's headless Chromium against a real
daemon: the tab exchanges the code ``sessiond ui`` put in the URL for a viewer token at its first
``initialize``, reconnects with that token, and a second tab given the spent code is refused.

Needs ``scripts/setup-web-tests``; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.harness.daemon import start_daemon
from tests.security.conftest import RawClient

HERE = Path(__file__).parent
NODE_DIR = HERE / "node"
NODE = shutil.which("node")
CHROMIUM = os.environ.get("SESSIOND_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="chromium is not installed (scripts/setup-web-tests)"
    ),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "playwright-core").is_dir(),
        reason="playwright-core is not installed (scripts/setup-web-tests)",
    ),
]


def web_clients(c: RawClient) -> list[dict[str, object]]:
    clients: list[dict[str, object]] = c.call("daemon/status", {})["clients"]
    return [x for x in clients if x.get("name") == "sessiond-web"]


def test_the_page_exchanges_a_one_time_code_for_a_viewer_token(tmp_path: Path) -> None:
    d = start_daemon(tmp_path)
    try:
        owner = RawClient.unix(d.socket)
        owner.initialize()
        minted = owner.call("daemon/viewerCode", {})
        config = tmp_path / "code.json"
        config.write_text(json.dumps({"url": minted["url"], "code": minted["code"], "chromium": CHROMIUM}))
        run = subprocess.run(
            ["node", str(NODE_DIR / "one_time_code.mjs"), str(config)],
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
            cwd=NODE_DIR,
        )
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout)
        assert "error" not in seen, seen
        assert seen["kept"] not in (minted["code"], d.tcp_token) and seen["keptAfterReload"] == seen["kept"]
        assert "code=" not in seen["hashAfterLoad"]  # taken out of the address bar
        assert seen["otherKept"] == minted["code"] and "Authentication failed" in seen["otherText"], seen
        log = d.log_text()
        assert log.count("refused: a wrong authToken") == 1, log[-3000:]  # the second tab only
        deadline = time.monotonic() + 10
        while web_clients(owner) and time.monotonic() < deadline:  # the browser is gone
            time.sleep(0.1)
        owner.close()
    finally:
        assert d.stop() == 0
