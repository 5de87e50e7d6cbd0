"""``rewind``: the plan and diff first, confirmation, conflicts left alone (exit 4), undo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import assistant, user
from tests.cli.conftest import Cli
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


async def _tracked_session(daemon: Daemon, ws: Path) -> tuple[str, str]:
    """A session whose first prompt changed app.py (v0 -> v1) and created new.txt, as tracked edits."""
    client = await daemon.client()
    try:
        sid = (await client.request("session/new", {"cwd": str(ws)}))["sessionId"]

        async def append(message: dict[str, Any]) -> str:
            entries = [{"type": "message", "message": message}]
            done = await client.request("session/append", {"sessionId": sid, "entries": entries})
            leaf: str = done["leafId"]
            return leaf

        async def write(rel: str, content: str) -> None:
            await client.request("fileHistory/track", {"sessionId": sid, "path": rel})
            (ws / rel).write_text(content)
            await client.request("fileHistory/track", {"sessionId": sid, "path": rel, "phase": "after"})

        prompt = await append(user("make it v1 and add notes"))
        await client.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": prompt})
        await write("app.py", "print('v1')\n")
        await write("new.txt", "notes\n")
        await append(assistant("done"))
        return sid, prompt
    finally:
        await client.close()


async def test_rewind_preview_confirmation_and_undo(cli: Cli, cli_daemon: Daemon, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('v0')\n")
    sid, prompt = await _tracked_session(cli_daemon, ws)

    dry = cli.run("rewind", "--dry-run", sid, prompt)
    assert dry.returncode == 0, dry.stderr
    rows: dict[str, list[str]] = {}
    for line in dry.stdout.splitlines():  # the plan's rows come first, the diff's headers after
        if line.startswith(("app.py", "new.txt")):
            rows.setdefault(line.split()[0], line.split())
    assert rows["app.py"][1:3] == ["write", "ok"] and rows["new.txt"][1:3] == ["delete", "ok"]
    assert "2 file(s) to change" in dry.stdout
    assert "-print('v0')" in dry.stdout and "+print('v1')" in dry.stdout  # the diff since the checkpoint
    assert (ws / "app.py").read_text() == "print('v1')\n" and (ws / "new.txt").exists()

    plan = json.loads(cli.run("rewind", "--json", "--dry-run", sid, prompt).stdout)
    assert set(plan) == {"sessionId", "messageId", "plan", "diff", "result"}
    assert plan["plan"]["dryRun"] is True and plan["result"] is None
    assert {f["path"]: f["action"] for f in plan["plan"]["files"]} == {"app.py": "write", "new.txt": "delete"}
    assert {f["path"] for f in plan["diff"]["files"]} == {"app.py", "new.txt"}

    # No terminal to ask on and no --yes: the plan is shown, nothing is touched.
    refused = cli.run("rewind", sid, prompt)
    assert refused.returncode == 2 and "--yes" in refused.stderr and "Rewind plan" in refused.stdout
    assert cli.run("rewind", "--json", sid, prompt).returncode == 2
    assert (ws / "app.py").read_text() == "print('v1')\n" and (ws / "new.txt").exists()

    done = cli.run("rewind", "--yes", sid, prompt)
    assert done.returncode == 0, done.stderr
    assert (ws / "app.py").read_text() == "print('v0')\n" and not (ws / "new.txt").exists()
    assert "Rewound: 1 written, 1 deleted" in done.stdout
    undo_id = next(line.split()[-1] for line in done.stdout.splitlines() if line.startswith("Undo with:"))

    undone = json.loads(cli.run("rewind", "--json", "--yes", sid, undo_id).stdout)
    assert undone["result"]["written"] == 2 and undone["result"]["dryRun"] is False
    assert (ws / "app.py").read_text() == "print('v1')\n" and (ws / "new.txt").read_text() == "notes\n"

    # Someone else edits app.py: the rewind leaves it alone and says so with exit code 4.
    (ws / "app.py").write_text("print('edited by hand')\n")
    conflict = cli.run("rewind", "--yes", sid, prompt)
    assert conflict.returncode == 4, conflict.stderr
    assert "conflict" in conflict.stdout
    assert (ws / "app.py").read_text() == "print('edited by hand')\n" and not (ws / "new.txt").exists()
    dry_conflict = cli.run("rewind", "--json", "--dry-run", sid, prompt)
    assert dry_conflict.returncode == 4 and json.loads(dry_conflict.stdout)["plan"]["conflicts"] == 1

    forced = cli.run("rewind", "--yes", "--force", sid, prompt)
    assert forced.returncode == 0, forced.stdout
    assert (ws / "app.py").read_text() == "print('v0')\n"

    missing = cli.run("rewind", "--dry-run", sid, "no-such-checkpoint")
    assert missing.returncode == 2


async def test_rewind_into_a_replaced_workspace_is_refused(
    cli: Cli, cli_daemon: Daemon, tmp_path: Path
) -> None:
    """The session's directory now a symlink to another one: refused as a whole (exit 4), with
    the reason; nothing written there."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('v0')\n")
    sid, prompt = await _tracked_session(cli_daemon, ws)
    other = tmp_path / "other"
    other.mkdir()
    (other / "app.py").write_text("someone else's\n")
    ws.rename(tmp_path / "ws.real")
    ws.symlink_to(other)
    for extra in (("--dry-run",), ("--yes",), ("--yes", "--force")):
        done = cli.run("rewind", *extra, sid, prompt)
        assert done.returncode == 4, (extra, done.stderr)
        assert "is not the directory the file history was recorded in" in done.stderr
    as_json = cli.run("rewind", "--json", "--yes", sid, prompt)
    error = json.loads(as_json.stdout)["error"]
    assert error["exitCode"] == 4 and error["path"] == str(ws) and error["recorded"] and error["current"]
    assert sorted(p.name for p in other.iterdir()) == ["app.py"]
    assert (other / "app.py").read_text() == "someone else's\n"
