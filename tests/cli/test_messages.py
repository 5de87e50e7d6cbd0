"""What the command line says when the argument is not what it expects (issue 14 item 10):
a directory, a FIFO, a device, a broken link, a file of neither format, a fork at an entry a
fork cannot start from."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import EXAMPLE_ID, SESSIOND, Cli

READERS = ("show", "tree", "context", "usage")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A FIFO must be refused without being opened: a read would wait for a writer forever.
    return subprocess.run(
        [str(SESSIOND), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


@pytest.fixture
def odd_paths(tmp_path: Path) -> Path:
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "apipe")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere.jsonl")
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n{"more": 1}\n')
    (tmp_path / "prose.txt").write_text("just some text\n")
    (tmp_path / "empty.jsonl").write_text("")
    return tmp_path


EXPECTED = {
    "adir": "adir is a directory, not a session file",
    "apipe": "apipe is a named pipe (FIFO), not a session file",
    "/dev/null": "/dev/null is a character device, not a session file",
    "dangling": "is a symlink to",
    "missing.jsonl": "no such file: missing.jsonl",
}


@pytest.mark.parametrize("command", [*READERS, "inspect"])
def test_what_the_path_is_instead_of_no_such_file(cli: Cli, odd_paths: Path, command: str) -> None:
    for arg, expected in EXPECTED.items():
        extra = ["--no-start"] if command != "inspect" else []
        r = _run([command, *extra, arg], odd_paths, cli.env)
        assert r.returncode == 2, (arg, r)
        assert expected in r.stderr, (arg, r.stderr)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        if arg not in ("missing.jsonl", "dangling"):
            assert "no such file" not in r.stderr.lower(), (arg, r.stderr)
    # A bare name that is a directory is that directory, not a session id.
    assert "Session adir not found" not in _run(["show", "--no-start", "adir"], odd_paths, cli.env).stderr


@pytest.mark.parametrize("command", [*READERS, "inspect"])
def test_a_file_of_neither_format_says_what_was_tried(cli: Cli, odd_paths: Path, command: str) -> None:
    for name, reason in (
        ("notes.jsonl", "its first JSON line is not a session header"),
        ("prose.txt", "it contains no JSON lines"),
        ("empty.jsonl", "the file is empty"),
    ):
        r = _run([command, "--json", str(odd_paths / name)], odd_paths, cli.env)
        assert r.returncode == 2, r
        line = r.stderr.strip()
        assert "is neither a Pi session nor a Claude Code transcript" in line and reason in line, line
        assert '{"type":"session"' in line and "uuid, parentUuid and sessionId" in line
        assert "not a valid Pi session" not in line
        document = json.loads(r.stdout)
        # inspect: {"file", "error": message}; the other commands: {"error": {"message", ...}}
        message = document["error"] if command == "inspect" else document["error"]["message"]
        assert "neither a Pi session nor a Claude Code transcript" in message


def test_fork_at_an_entry_that_is_no_user_message_names_it_and_suggests_at(cli: Cli) -> None:
    for entry, what in (
        ("a1000006", "is an assistant message"),
        ("t1000001", "is a tool result message"),
        ("c1000001", "is a compaction entry"),
        ("l1000001", "is a label entry"),
    ):
        r = cli.run("fork", EXAMPLE_ID, entry)
        assert r.returncode == 2, r
        assert f"{entry} {what}" in r.stderr, r.stderr
        assert f"sessiond fork --at {EXAMPLE_ID} {entry}" in r.stderr
        assert "Invalid entry ID for forking" not in r.stderr
    as_json = json.loads(cli.run("fork", "--json", EXAMPLE_ID, "a1000006").stdout)["error"]
    assert as_json["field"] == "entryId" and as_json["exitCode"] == 2 and "--at" in as_json["message"]
    unknown = cli.run("fork", EXAMPLE_ID, "nosuchid")
    assert unknown.returncode == 2 and "Invalid entry ID for forking" in unknown.stderr
