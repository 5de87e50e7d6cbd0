"""The VS Code extension (clients/vscode): its logic against a real daemon, and its package.

* ``clients/vscode/test/extension.test.ts`` runs the extension's ``activateWith`` with the
  ``vscode`` API replaced by a recording stand-in, against the daemon started here on the
  viewer's scenario store (every root, a growing Claude Code transcript, file history).
* The ``.vsix`` is built with ``vsce`` (the ordinary packaging tool) and its manifest checked.

VS Code itself cannot run here: it is not in Debian or PyPI, code-server from npm needs Node
24 and a native build, and @vscode/test-electron downloads VS Code from Microsoft's servers.
Needs ``scripts/setup-typescript`` and ``scripts/setup-web-tests``; skipped without them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sessiond_protocol.methods import METHODS
from tests.harness.daemon import start_daemon
from tests.web.scenario import PI_SESSION, build
from tests.web.test_viewer_e2e import find_session_file

ROOT = Path(__file__).parents[2]
EXT = ROOT / "clients" / "vscode"
BIN = EXT / "node_modules" / ".bin"
CLIENT_DIST = ROOT / "clients" / "typescript" / "dist" / "index.js"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (BIN / "tsc").exists(), reason="clients/vscode is not set up (scripts/setup-web-tests)"
    ),
    pytest.mark.skipif(
        not CLIENT_DIST.exists(), reason="@sessiond/client is not built (scripts/setup-typescript)"
    ),
]


TAP_COUNTS = (
    "# Subtest",
    "# tests ",
    "# suites ",
    "# pass ",
    "# fail ",
    "# cancelled ",
    "# skipped ",
    "# todo ",
    "# duration_ms ",
)


def failures(tap: str) -> str:
    """The failed subtests of node's TAP output, each with its YAML block, and the runner's own
    comments (``# Error: … generated asynchronous activity after the test ended``: a file can
    fail with every subtest passed); the rest is noise."""
    out: list[str] = []
    lines = tap.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# ") and not line.startswith(TAP_COUNTS):
            out.append(line)
        elif line.lstrip().startswith("not ok") and "subtestsFailed" not in "".join(lines[i : i + 8]):
            out.extend(lines[i : i + 30])
    return "\n".join(out)[-8000:] or tap[-6000:]


def npm_run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], cwd=EXT, capture_output=True, check=False, text=True, timeout=timeout
    )


async def test_the_extension_against_a_real_daemon(tmp_path: Path) -> None:
    built = npm_run("tsc", "-p", "tsconfig.test.json")
    assert built.returncode == 0, built.stdout + built.stderr
    # Codex's sessions too (CODEX_HOME is <tmp>/codex): the agent the view used to call "sessiond"
    shutil.copytree(ROOT / "tests" / "fixtures" / "codex" / "synthetic-home", tmp_path / "codex")
    daemon = start_daemon(tmp_path)
    try:
        scenario = await build(daemon, tmp_path)
        pending = tmp_path / "claude-pending.jsonl"
        pending.write_bytes(scenario.claude.pending(turns=1))
        first = scenario.states[0]
        config: dict[str, Any] = {
            "python": sys.executable,
            "socket": str(daemon.socket),
            "store": str(daemon.store),
            "env": {k: daemon.env[k] for k in ("SESSIOND_HOME", "CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR")},
            "pi": PI_SESSION,
            # what this daemon answers: the extension's search and cost must work where it can
            "methods": sorted(METHODS),
            "agent": {
                "sessionId": scenario.agent_session,
                "path": str(find_session_file(daemon.store, scenario.agent_session)),
                "labelTarget": scenario.entries["tool_call"],
                "forkTarget": scenario.entries["third_prompt"],
                "firstPrompt": scenario.prompts[0],
                "workspace": str(scenario.workspace),
                "atFirstPrompt": {
                    rel: (first[rel].decode() if rel in first else None)
                    for rel in ("src/app.py", "README.md", "tests/test_app.py")
                },
                "conflict": "README.md",
            },
            "claude": {
                "sessionId": scenario.claude.session_id,
                "path": str(scenario.claude.path),
                "pendingFile": str(pending),
            },
        }
        config_path = tmp_path / "vscode-test.json"
        config_path.write_text(json.dumps(config))
        run = subprocess.run(
            ["node", "--test", "dist-test/test/extension.test.js"],
            cwd=EXT,
            env={**daemon.env, "SESSIOND_VSCODE_TEST": str(config_path)},
            capture_output=True,
            check=False,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, failures(run.stdout) + run.stderr[-3000:]
        assert "# fail 0" in run.stdout and "# skipped 0" in run.stdout, run.stdout[-3000:]
    finally:
        assert daemon.stop() == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text()


def test_the_vsix_is_built_and_its_manifest_is_right(tmp_path: Path) -> None:
    bundle = npm_run(
        "esbuild",
        "src/extension.ts",
        "--bundle",
        "--platform=node",
        "--format=cjs",
        "--target=node20",
        "--external:vscode",
        "--outfile=dist/extension.cjs",
        "--log-level=warning",
    )
    assert bundle.returncode == 0, bundle.stderr
    out = tmp_path / "sessiond.vsix"
    packaged = npm_run(
        "vsce", "package", "--no-dependencies", "--allow-missing-repository", "--out", str(out)
    )
    assert packaged.returncode == 0, packaged.stdout + packaged.stderr
    with zipfile.ZipFile(out) as vsix:
        names = set(vsix.namelist())
        manifest = json.loads(vsix.read("extension/package.json"))
        vsixmanifest = vsix.read("extension.vsixmanifest").decode()
        bundled = vsix.read("extension/dist/extension.cjs").decode()
    assert {"extension/dist/extension.cjs", "extension/package.json", "extension/readme.md"} <= names
    assert not any(n.startswith(("extension/node_modules/", "extension/src/")) for n in names)
    assert manifest["main"] == "./dist/extension.cjs"
    # what an index shows: the icon, the licence, a version
    assert manifest["icon"] == "media/icon.png" and "extension/media/icon.png" in names
    assert manifest["license"] == "MIT" and manifest["version"]
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {
        "sessiond.fork",
        "sessiond.label",
        "sessiond.compact",
        "sessiond.rewind",
        "sessiond.openViewer",
        "sessiond.openEntry",
        "sessiond.resume",
        "sessiond.exportToPi",
        "sessiond.search",
        "sessiond.openUsage",
    } <= commands
    # Restricted Mode: declared; what runs programs or writes is off; the program is user-only
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited" and untrusted["description"]
    assert set(untrusted["restrictedConfigurations"]) == {
        "sessiond.command",
        "sessiond.store",
        "sessiond.socket",
    }
    enablement = {c["command"]: c.get("enablement") for c in manifest["contributes"]["commands"]}
    for guarded in ("resume", "exportToPi", "rewind", "fork", "label", "compact"):
        assert enablement[f"sessiond.{guarded}"] == "isWorkspaceTrusted", guarded
    assert enablement["sessiond.search"] is None and enablement["sessiond.openViewer"] is None
    # the install instructions that work today, not the index that does not have sessiond
    [welcome] = manifest["contributes"]["viewsWelcome"]
    assert "pipx install ./sessiond" in welcome["contents"] and "scripts/build-wheel" in welcome["contents"]
    assert "pipx install sessiond`" not in welcome["contents"]
    assert manifest["contributes"]["views"]["sessiond"][0]["id"] == "sessiond.sessions"
    assert manifest["contributes"]["configuration"]["properties"]["sessiond.command"]["default"] == [
        "sessiond",
        "connect",
    ]
    assert 'Id="sessiond-vscode"' in vsixmanifest and 'Publisher="sessiond"' in vsixmanifest
    # one file: @sessiond/client and vscode-jsonrpc are inside, vscode is the editor's
    assert 'require("vscode")' in bundled and not any("vscode-jsonrpc" in n for n in names)
    assert "sessiond-vscode" in bundled and "createMessageConnection" in bundled
