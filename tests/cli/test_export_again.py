"""``sessiond export`` takes an id prefix, keeps a recorded cwd as written, and tells of an
earlier export (issue 24, item 10). Run as a subprocess on a store of its own, no daemon.

Before: ``export 03eb5929`` was "not found" (every other command takes a prefix); a session
recorded on Windows (cwd ``D:\\oh-my-posh``) was filed under ``<current dir>/D:\\oh-my-posh``,
folder and header depending on where the command ran; a second export made a second identical
copy without a word, and the list did not say that a session is an export.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import CLAUDE_ID, CLAUDE_SAMPLE


def run(tmp: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SESSIOND_HOME": str(tmp / "store"),
        "CLAUDE_CONFIG_DIR": str(tmp / "claude"),
        "PI_CODING_AGENT_DIR": str(tmp / "pi"),
        "CODEX_HOME": str(tmp / "codex"),
        "XDG_DATA_HOME": str(tmp / "data"),
    }
    env.pop("SESSIOND_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "sessiond", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def claude_home(tmp: Path) -> None:
    project = tmp / "claude" / "projects" / "-home-user-project"
    project.mkdir(parents=True)
    shutil.copyfile(CLAUDE_SAMPLE, project / CLAUDE_SAMPLE.name)


def test_a_prefix_is_taken_and_a_second_export_needs_again(tmp_path: Path) -> None:
    claude_home(tmp_path)
    first = run(tmp_path, "export", CLAUDE_ID[:8], "--json")
    assert first.returncode == 0, first.stderr
    first_id = json.loads(first.stdout)["sessionId"]
    assert json.loads(first.stdout)["source"]["sessionId"] == CLAUDE_ID

    again = run(tmp_path, "export", CLAUDE_ID[:8])
    assert again.returncode == 4, again.stderr
    assert first_id in again.stderr and "--again" in again.stderr
    assert len(list((tmp_path / "store" / "sessions").rglob("*.jsonl"))) == 1, "nothing written"

    second = run(tmp_path, "export", CLAUDE_ID, "--again", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["earlierExports"] == [first_id]

    socket = str(tmp_path / "no-daemon.sock")
    listed = run(tmp_path, "ls", "--root", "sessiond", "--no-start", "--socket", socket, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["sessions"]
    assert [r["exportOf"] for r in rows] == [CLAUDE_ID, CLAUDE_ID]
    text = run(tmp_path, "ls", "--root", "sessiond", "--no-start", "--socket", socket)
    assert text.stdout.count(f"export of {CLAUDE_ID[:8]}") == 2, text.stdout


def test_a_windows_cwd_is_kept_as_recorded_wherever_the_command_runs(tmp_path: Path) -> None:
    transcript = tmp_path / "windows.jsonl"
    lines = []
    for line in CLAUDE_SAMPLE.read_text().splitlines():
        record = json.loads(line)
        if "cwd" in record:
            record["cwd"] = "D:\\oh-my-posh"
        lines.append(json.dumps(record))
    transcript.write_text("\n".join(lines) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run(tmp_path, "export", str(transcript), "--json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["cwd"] == "D:\\oh-my-posh"
    assert Path(out["path"]).parent.name == "--D--oh-my-posh--"
    header = json.loads(Path(out["path"]).read_text().splitlines()[0])
    assert header["cwd"] == "D:\\oh-my-posh"
