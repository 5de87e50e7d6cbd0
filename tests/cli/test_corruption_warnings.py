"""Corruption is never silent (issue 24, item 11): ``tree`` and ``show`` warn in one line with
the counts of skipped lines, ``doctor`` names the sessions with bad lines and the files that
are not sessions at all (empty, garbage), which the list leaves out.

Before: a bad JSON line was skipped with no word from ``tree``, ``show`` or ``doctor`` (only
``inspect`` reported it), and an empty or garbage file was simply missing. Run as subprocesses
on a store of their own, with and without a daemon.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import EXAMPLE, EXAMPLE_ID, run_plain, stop_daemon_of
from tests.cli.conftest import isolated_env as cli_env

BAD_ID = "0badbad0-0000-7000-8000-000000000001"


def isolated_env(tmp: Path) -> dict[str, str]:
    return cli_env(tmp) | {"CODEX_HOME": str(tmp / "codex"), "XDG_DATA_HOME": str(tmp / "data")}


def damaged_store(tmp: Path) -> Path:
    directory = tmp / "store" / "sessions" / "--home-dev-webapp--"
    directory.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, directory / f"2026-07-29T09-00-00-000Z_{EXAMPLE_ID}.jsonl")
    lines = EXAMPLE.read_text().splitlines()
    header = json.loads(lines[0]) | {"id": BAD_ID}
    lines[0] = json.dumps(header)
    lines.insert(3, "{not json")
    lines.insert(5, "garbage")
    bad = directory / f"2026-07-30T09-00-00-000Z_{BAD_ID}.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    (directory / "2026-07-30T10-00-00-000Z_e0000000-0000-7000-8000-000000000002.jsonl").write_bytes(b"")
    (directory / "2026-07-30T11-00-00-000Z_f0000000-0000-7000-8000-000000000003.jsonl").write_bytes(
        b"\x00\xff garbage \x13\n" * 20
    )
    for p in [tmp / "store", *(tmp / "store").rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o600)
    return bad


@pytest.mark.parametrize("command", ["tree", "show"])
@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_tree_and_show_warn_of_skipped_lines(tmp_path: Path, command: str, daemon: bool) -> None:
    bad = damaged_store(tmp_path)
    env = isolated_env(tmp_path)
    try:
        args = [command, BAD_ID[:8]] + ([] if daemon else ["--no-start"])
        done = run_plain(*args, env=env)
        assert done.returncode == 0, done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
        assert len(warnings) == 1, done.stderr
        assert "2 bad lines skipped" in warnings[0] and "lines 4, 6" in warnings[0]
        assert str(bad) in warnings[0]
        clean = run_plain(command, EXAMPLE_ID[:8], *([] if daemon else ["--no-start"]), env=env)
        assert "warning" not in clean.stderr, clean.stderr
    finally:
        stop_daemon_of(tmp_path / "store")


def test_doctor_names_unreadable_files_and_bad_lines(tmp_path: Path) -> None:
    bad = damaged_store(tmp_path)
    env = isolated_env(tmp_path)
    done = run_plain("doctor", "--json", env=env)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    files = checks["files sessiond"]
    assert files["status"] == "warn"
    reasons = {Path(u["path"]).name[25:33]: u["reason"] for u in files["unreadable"]}
    assert reasons == {"e0000000": "empty", "f0000000": "not a session (no header line)"}
    assert files["damaged"] == [{"path": str(bad), "sessionId": BAD_ID, "badLines": 2}]
    assert "2 unreadable files" in files["detail"] and "1 session with 2 bad lines" in files["detail"]
    plain = run_plain("doctor", env=env)
    line = next(x for x in plain.stdout.splitlines() if "files sessiond" in x)
    assert line.split()[0] == "warn" and "2 unreadable files" in line
