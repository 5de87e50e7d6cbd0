"""The installed command on the real fixtures (Pi and Claude Code), with no daemon at all.

Every read command must work on a session FILE without a daemon, and on a session id with
``--no-start`` when none runs (the file is found in the roots and read in-process). The tree
of each fixture is checked against ``sessiond inspect`` (an independent path through
the readers): same leaf, same branch, every entry drawn once, the current branch as the first
column.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiond.store.session import Session
from tests.builders import Ledger
from tests.cli.conftest import (
    CLAUDE_DIR,
    CLAUDE_SAMPLE,
    EXAMPLE,
    EXAMPLE_ID,
    SESSIOND,
    isolated_env,
    run_plain,
)
from tests.conftest import PI_FIXTURES

FIXTURES = sorted(
    [p for p in CLAUDE_DIR.rglob("*.jsonl") if "subagents" not in p.parts]
    + sorted(PI_FIXTURES.glob("*.jsonl"))
)
CLAUDE_COMPACTED = CLAUDE_DIR / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def test_the_fixtures_are_there() -> None:
    formats = {"claude-code" if CLAUDE_DIR in p.parents else "pi" for p in FIXTURES}
    assert formats == {"pi", "claude-code"} and len(FIXTURES) >= 8


def _first_column(text: str) -> list[str]:
    return [line[4:].split()[0] for line in text.splitlines()[1:] if line[:4] in ("├── ", "└── ")]


def _parent_path(nodes: list[dict[str, Any]], leaf: str) -> list[str]:
    parent = {n["id"]: n["parentId"] for n in nodes}
    path = [leaf]
    while parent.get(path[-1]) is not None:
        path.append(parent[path[-1]])
    return path[::-1]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name[:12]}")
def test_tree_of_each_fixture(path: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)  # no daemon runs for this store, and none may be started
    if path.name.endswith(".v1.jsonl"):
        # Reading a v1 file migrates it in memory with fresh random ids every time; migrate a copy
        # on disk once (as Pi does on open) so that every command below sees the same ids.
        copy = tmp_path / path.name
        shutil.copyfile(path, copy)
        Session.open(copy).close()
        path = copy
    inspected = json.loads(run_plain("inspect", str(path), env=env).stdout)

    r = run_plain("tree", "--json", str(path), env=env)
    assert r.returncode == 0, r.stderr
    tree = json.loads(r.stdout)
    assert tree["file"] == str(path) and tree["sessionId"] == inspected["sessionId"]
    assert tree["branchIds"][-1] == tree["leafId"] == inspected["leafId"]
    # The same branch by both paths; for Claude Code it is the chain --resume rebuilds, with the
    # parallel tool calls and results recovered from sibling records (a parent walk misses them).
    node_ids = {n["id"] for n in tree["nodes"]}
    assert tree["branchIds"] == [u for u in inspected["branchIds"] if u in node_ids]
    assert len(tree["nodes"]) == inspected["tree"]["nodes"] == len({n["id"] for n in tree["nodes"]})

    plain = run_plain("tree", str(path), env=env)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].endswith(f" {len(tree['nodes'])} entries)")
    assert len(lines) == 1 + len(tree["nodes"])  # every entry drawn exactly once
    leaf_lines = [line for line in lines if line.endswith("◀ leaf")]
    assert len(leaf_lines) == 1 and tree["leafId"] in leaf_lines[0]
    # The path to the leaf reads straight down the first column; side branches are nested.
    branch = _parent_path(tree["nodes"], tree["leafId"])
    column = _first_column(plain.stdout)
    start = column.index(branch[0])  # before it: other roots (each nested); after: below the leaf
    assert column[start : start + len(branch)] == branch
    drawn = {line.lstrip("│ ├└─").split()[0] for line in lines[1:]}
    assert set(tree["branchIds"]) <= drawn
    branch_points = sum(1 for n in tree["nodes"] if n["childCount"] > 1)
    assert sum(1 for line in lines if "⑂" in line) == branch_points
    assert "\x1b[" not in plain.stdout and plain.stderr == ""
    assert not (tmp_path / "store").exists()


def test_a_claude_code_compact_boundary_is_marked_as_a_compaction(tmp_path: Path) -> None:
    r = run_plain("tree", str(CLAUDE_COMPACTED), env=isolated_env(tmp_path))
    assert r.returncode == 0, r.stderr
    marked = [line for line in r.stdout.splitlines() if "⟳ compaction" in line]
    assert len(marked) == 1 and "434dc859-6299-4713-8613-d28662692f06" in marked[0]
    assert "Claude Code /compact boundary" in marked[0]
    # The conversation before /compact is a second root: it hangs below its first entry, and the
    # current branch (from the boundary to the leaf) stays in the first column.
    column = _first_column(r.stdout)
    assert column[0] == "858a6db7-6721-4caa-b306-39ec1f17cbf1" and column[1].startswith("434dc859")


def _roots(tmp: Path) -> dict[str, str]:
    """An isolated environment whose store holds the example and whose Claude root one transcript."""
    env = isolated_env(tmp)
    store = tmp / "store" / "sessions" / "--home-dev-webapp--"
    store.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, store / f"2026-07-29T09-00-00-000Z_{EXAMPLE_ID}.jsonl")
    claude = tmp / "claude" / "projects" / "-home-user-project"
    claude.mkdir(parents=True)
    shutil.copyfile(CLAUDE_SAMPLE, claude / CLAUDE_SAMPLE.name)
    return env


def test_read_commands_without_a_daemon(tmp_path: Path) -> None:
    env = _roots(tmp_path)
    listed = run_plain("ls", "--no-start", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    sessions = {s["sessionId"]: s for s in json.loads(listed.stdout)["sessions"]}
    assert set(sessions) == {EXAMPLE_ID, CLAUDE_SAMPLE.stem}
    assert (
        sessions[EXAMPLE_ID]["title"] == "Auth: sessions → cookies"
        and sessions[EXAMPLE_ID]["root"] == "sessiond"
    )
    assert sessions[CLAUDE_SAMPLE.stem]["readOnly"] is True
    table = run_plain("ls", "--no-start", env=env)
    assert table.returncode == 0 and table.stdout.splitlines()[0].split()[0] == "ID"
    assert table.stderr == "no daemon is running: reading the session files directly\n"
    one = json.loads(run_plain("ls", "--no-start", "--json", "--limit", "1", env=env).stdout)
    assert len(one["sessions"]) == 1 and one["nextCursor"] is not None

    # A session id with --no-start: its file is found in the roots and read here.
    for command in ("show", "tree", "context", "usage"):
        by_id = run_plain(command, "--no-start", "--json", EXAMPLE_ID, env=env)
        assert by_id.returncode == 0, (command, by_id.stderr)
        by_file = run_plain(command, "--json", str(EXAMPLE), env=env)
        assert by_file.returncode == 0, (command, by_file.stderr)
        a, b = json.loads(by_id.stdout), json.loads(by_file.stdout)
        assert a["sessionId"] == b["sessionId"] == EXAMPLE_ID
        assert "file" not in a and b["file"] == str(EXAMPLE)
        a.pop("sessionId"), b.pop("sessionId"), b.pop("file")
        assert a == b, command
    tree = run_plain("tree", "--no-start", CLAUDE_SAMPLE.stem, env=env)
    assert tree.returncode == 0 and tree.stdout.count("◀ leaf") == 1

    missing = run_plain("show", "--no-start", "no-such-session", env=env)
    assert missing.returncode == 2 and "Session no-such-session not found" in missing.stderr
    assert not (tmp_path / "store" / "run").exists() and not (tmp_path / "store" / "daemon.lock").exists()


def test_a_big_file_shows_a_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    ledger = Ledger()
    for i in range(10):
        ledger.user(f"part {i} " + "x" * 1_000_000)
    path = tmp_path / "big.jsonl"
    path.write_bytes(ledger.jsonl())
    assert path.stat().st_size > 8 * 1024 * 1024
    env = isolated_env(tmp_path)
    piped = run_plain("usage", "--json", str(path), env=env)
    assert piped.returncode == 0 and piped.stderr == ""
    assert json.loads(piped.stdout)["used"] > 2_000_000
    # FORCE_COLOR makes the command treat stderr as a terminal: the transient bar is drawn there.
    tty = subprocess.run(
        [str(SESSIOND), "usage", "--json", str(path)],
        capture_output=True,
        text=True,
        env={**env, "FORCE_COLOR": "1"},
        check=False,
        timeout=120,
    )
    assert tty.returncode == 0, tty.stderr
    assert "Reading big.jsonl (10.0 MB)" in tty.stderr
    assert json.loads(tty.stdout) == json.loads(piped.stdout)  # stdout untouched by the bar


def test_terminal_escapes_in_a_session_never_reach_the_terminal(tmp_path: Path) -> None:
    ledger = Ledger()
    hostile = "\x1b]0;owned\x07look \x1b[31mred\x1b[0m\x1b[2J done\x00"
    first = ledger.user(hostile)
    ledger.label(first, "\x1b[5mblink")
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(ledger.jsonl())
    env = isolated_env(tmp_path)
    for command in ("show", "tree", "context"):
        r = run_plain(command, str(path), env=env)
        assert r.returncode == 0, (command, r.stderr)
        assert "\x1b" not in r.stdout and "\x00" not in r.stdout, command
        assert "look red" in r.stdout, command
    assert "[blink]" in run_plain("tree", str(path), env=env).stdout
    shown = json.loads(run_plain("show", "--json", str(path), env=env).stdout)
    assert shown["entries"][0]["message"]["content"][0]["text"] == hostile  # --json: as stored
