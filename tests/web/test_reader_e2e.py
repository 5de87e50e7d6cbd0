"""The viewer as a reader, in a real browser against a real daemon.

``node/reader.mjs`` drives Debian's headless Chromium (playwright-core) through the page the
daemon serves, on real transcripts (the Claude Code fixture ``spotter-2.1.39`` and the Codex
fixture ``localpush-0.104``), a hostile transcript whose texts try to run script in every way
a transcript can carry (``<script>``, ``onerror=``, ``javascript:`` links, raw HTML in
Markdown, in tool output, in an edit), and a transcript growing on disk. It checks rendering
(Markdown, highlighted code, tool cards by kind, thinking folded, injected context marked),
that nothing ran, deep links, keyboard navigation, follow mode, a 360 px window, dark mode,
the search page and the usage dashboard — and saves a screenshot of each view in
``tests/web/screenshots/`` (the docs' copies are in ``docs/images/``).

Needs ``scripts/setup-web-tests``; skipped without it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.harness.daemon import start_daemon
from tests.web.reader_store import CLAUDE_FIXTURE, CLAUDE_FIXTURE_ID, CODEX_FIXTURE_ID, build_reader_store
from tests.web.test_viewer_e2e import CHROMIUM, NODE_DIR, SCREENSHOTS, pytestmark  # noqa: F401 (same skips)


def fixture_entry() -> str:
    """An entry far into the Claude Code fixture: an assistant piece calling Edit."""
    lines = (CLAUDE_FIXTURE / f"{CLAUDE_FIXTURE_ID}.jsonl").read_text().splitlines()
    for line in lines[len(lines) // 2 :]:
        record: dict[str, Any] = json.loads(line)
        content = (record.get("message") or {}).get("content")
        if (
            record.get("type") == "assistant"
            and isinstance(content, list)
            and any(b.get("type") == "tool_use" and b.get("name") == "Edit" for b in content)
        ):
            return str(record["uuid"])
    raise AssertionError("no Edit call in the second half of the fixture")


async def has_method(daemon: Any, method: str, params: dict[str, Any]) -> bool:
    client = await daemon.client()
    try:
        await client.request(method, params)
        return True
    except Exception as err:  # the client raises its own error type carrying the code
        return getattr(err, "code", None) != -32601
    finally:
        await client.close()


async def test_the_reader_in_chromium(tmp_path: Path) -> None:
    store = build_reader_store(tmp_path)
    daemon = start_daemon(tmp_path)
    try:
        pending = tmp_path / "live-pending.jsonl"
        pending.write_bytes(store.live.pending(turns=3))
        first_new_leaf = json.loads(pending.read_text().splitlines()[3])["uuid"]
        search = await has_method(daemon, "search/query", {"query": "greeting"})
        usage = await has_method(daemon, "stats/query", {"groupBy": "daily"})
        entry = fixture_entry()
        SCREENSHOTS.mkdir(exist_ok=True)
        info = json.loads((daemon.socket.parent / "ui.json").read_text())
        config = {
            "url": info["url"],
            "token": (daemon.store / "tcp.token").read_text().strip(),
            "chromium": CHROMIUM,
            "screenshots": str(SCREENSHOTS),
            "hostile": {"sessionId": store.hostile.session_id, **store.hostile_ids},
            "claude": {"sessionId": CLAUDE_FIXTURE_ID, "entry": entry},
            "codex": {"sessionId": CODEX_FIXTURE_ID},
            "live": {
                "sessionId": store.live.session_id,
                "path": str(store.live.path),
                "pendingFile": str(pending),
                "firstNewLeaf": first_new_leaf,
            },
            "search": {"query": "greeting"},
        }
        config_path = tmp_path / "reader.json"
        config_path.write_text(json.dumps(config))
        run = subprocess.run(
            ["node", str(NODE_DIR / "reader.mjs"), str(config_path)],
            capture_output=True,
            check=False,
            text=True,
            timeout=300,
            cwd=NODE_DIR,
        )
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout)
        (SCREENSHOTS / "reader-seen.json").write_text(json.dumps(seen, indent=1))  # for a failure's reader
        assert "error" not in seen, f"{seen['error']}\nsteps: {seen['steps']}\nconsole: {seen['console']}"
        assert seen["console"] == []
        assert seen["dialogs"] == []

        # nothing from a transcript ran or stayed able to run: not in the context, the entry
        # panel or a search
        clean = {"flag": None, "scripts": 0, "handlers": 0, "jsLinks": 0, "iframes": 0, "styled": 0}
        assert seen["xssContext"] == clean
        assert seen["xssPanel"] == clean
        assert seen["xssSearch"] == clean

        # ... and it was rendered for reading
        r = seen["reader"]
        assert r["markdownBold"] >= 1
        assert r["codeHighlighted"] >= 1  # the python block: `def`, `return`
        assert r["thinking"] == 1
        assert r["terminalColoured"] >= 2  # PASSED green, FAILED red
        assert r["terminalFolded"] is True  # 62 lines: folded
        assert "<script>" in r["terminalText"]  # shown as text
        assert "\x1b" not in r["terminalText"]
        assert r["diffAdded"] == 2 and r["diffRemoved"] == 2
        assert r["numbered"].split("\n")[:3] == ["1", "2", "3"]
        assert r["errors"] == 1
        # Markdown links: a web link opens elsewhere without a referrer; a javascript: one is inert;
        # an image from elsewhere is not loaded (no src)
        assert ["the docs", "https://example.com/docs", "_blank", "noopener noreferrer"] in r["links"]
        assert ["a javascript: link", None, "_blank", "noopener noreferrer"] in r["links"]
        assert r["remoteImages"] == [None]
        assert r["images"] == [1]
        assert any("system reminder" in t for t in r["injected"])
        assert seen["metaTag"] == "injected by the agent"  # Claude Code's isMeta, in the entry panel
        raw = json.loads(seen["rawJson"])
        assert raw["call"]["name"] == "Edit" and raw["call"]["arguments"]["file_path"] == "/src/app.py"

        # real transcripts: cards of every kind
        assert {"edit", "read", "shell"} <= set(seen["claudeKinds"])
        assert {"edit", "shell"} <= set(seen["codexKinds"])

        # a deep link opens the session at the entry, in the tree and in the context
        assert seen["deepLink"]["visible"] is True
        assert f"entry={entry}" in seen["deepLink"]["hash"]
        assert seen["contextFocus"]["visible"] is True

        # keyboard: down, up (k), Escape closes the entry, / opens the search page focused
        k = seen["keyboard"]
        assert k["before"] == entry and k["down"] != entry and k["up"] == entry
        assert "view=search" in k["hash"] and k["searchFocused"] is True
        assert k["listOpened"]["second"] and f"session={k['listOpened']['second']}" in k["listOpened"]["hash"]

        # follow mode: the new rows came into view and were highlighted; scrolled up, the view
        # stayed and offered the new rows
        assert first_new_leaf in seen["follow"]["fresh"]
        assert seen["follow"]["following"] == "true"
        assert seen["notFollowing"]["scrollTop"] == 0
        assert "new" in seen["notFollowing"]["button"]
        assert seen["contextFollow"]["fresh"] >= 1 and seen["contextFollow"]["following"] == "true"

        # 360 px: rows keep their text, the stats are whole, nothing overflows the window
        n = seen["narrow"]
        assert n["rows"] > 10 and n["emptyPreviews"] == 0
        assert "loaded in" in n["statsText"] and n["statsCut"] is False
        assert n["pageOverflow"] is False
        assert seen["narrowPanel"]["pageOverflow"] is False and seen["narrowPanel"]["panelWidth"] > 300
        assert seen["narrowContextOverflow"] is False
        assert seen["narrowPages"] == {"search": False, "usage": False}
        # wide, nothing selected: the tree has the whole width
        assert seen["noPanel"]["panel"] is False
        assert seen["noPanel"]["tree"] == seen["noPanel"]["split"]

        # dark mode: the system's, then the toggle (remembered across a reload), then back
        d = seen["dark"]
        assert d["system"] == "rgb(23, 24, 26)" and d["light"] == "rgb(247, 247, 245)"
        assert d["toggled"] == "rgb(23, 24, 26)" and d["choice"] == "dark"
        assert d["afterReload"] == d["toggled"]
        assert d["back"] == "auto"

        # search and usage: against the daemon's methods, or said clearly to be missing
        if search:
            assert seen["search"]["marks"] and all(m.lower() == "greeting" for m in seen["search"]["marks"])
            assert store.hostile.session_id in {h["session"] for h in seen["search"]["hits"]}
            assert "entry=" in seen["search"]["opened"]
        else:
            assert seen["search"] == {"unavailable": "search/query"}
        if usage:
            u = seen["usage"]
            assert u["bars"] and u["rows"] >= 1 and u["total"].startswith("$")
            assert u["sessionCost"].startswith("$")  # the open session's cost
            assert len(u["projects"]) >= 2  # the project filter lists the sessions' directories
            assert {"Claude Code", "Codex"} <= set(u["legendByAgent"])
            assert u["codexBars"] and set(u["codexBars"]) < set(u["bars"])  # filtered to Codex's days
        else:
            assert seen["usage"] == {"unavailable": "stats/query"}
    finally:
        assert daemon.stop() == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text()
