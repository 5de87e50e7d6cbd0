"""``sessiond export``, run as a subprocess: another agent's session becomes a Pi session in the store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from sessiond.store.codex import CodexSession
from sessiond.store.session import Session
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
HOME = FIXTURES / "codex" / "synthetic-home"
ROLLBACK_ID = "019c9000-0000-7000-8000-00000000000a"


def comparable(messages: list[Any]) -> list[Any]:
    """Messages as sent: a ``custom`` message's timestamp is its entry's, written at export."""
    return [
        {k: v for k, v in m.items() if m["role"] != "custom" or k in ("role", "customType", "content")}
        for m in messages
    ]


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SESSIOND_HOME": str(tmp / "store"),
        "CODEX_HOME": str(tmp / "codex"),
        "XDG_DATA_HOME": str(tmp / "data"),
    }
    env.pop("SESSIOND_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "sessiond", "export", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_a_codex_thread_found_by_id_is_exported_with_its_context(tmp_path: Path) -> None:
    shutil.copytree(HOME, tmp_path / "codex")
    before = {p: p.read_bytes() for p in (tmp_path / "codex").rglob("*") if p.is_file()}
    r = run(tmp_path, "--json", ROLLBACK_ID)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["source"]["format"] == "codex" and out["source"]["root"] == "codex"
    assert out["source"]["sessionId"] == ROLLBACK_ID and out["source"]["leafId"] == "L46"
    path = Path(out["path"])
    assert path.is_relative_to(tmp_path / "store" / "sessions")
    exported = Session.open(path)
    source = CodexSession.open(next((tmp_path / "codex").rglob(f"*{ROLLBACK_ID}.jsonl")))
    assert comparable(exported.context().messages) == comparable(source.context().messages)
    assert exported.name == "README hunt" and exported.cwd == "/work/demo"
    marker = exported.branch()[0]
    assert marker["customType"] == "sessiond.export" and marker["data"]["source"]["format"] == "codex"
    assert {p: p.read_bytes() for p in (tmp_path / "codex").rglob("*") if p.is_file()} == before
    # At an older entry: the context Codex had then (the rolled-back turn included).
    r = run(tmp_path, "--json", "--leaf", "L25", ROLLBACK_ID)
    assert r.returncode == 0, r.stderr
    older = Session.open(Path(json.loads(r.stdout)["path"]))
    texts = [m["content"][0]["text"] for m in older.context().messages if m["role"] == "user"]
    assert texts[-1] == "delete b.txt"


def test_an_opencode_session_given_as_a_path_is_exported(tmp_path: Path) -> None:
    shutil.copyfile(FIXTURES / "opencode" / "synthetic-v1.16" / "opencode.db", tmp_path / "opencode.db")
    r = run(tmp_path, f"{tmp_path / 'opencode.db'}#ses_0a0000001ffeSyntheticCompact")
    assert r.returncode == 0, r.stderr
    assert "exported ses_0a0000001ffeSyntheticCompact (opencode) as " in r.stdout
    [path] = (tmp_path / "store" / "sessions").rglob("*.jsonl")
    roles = [m["role"] for m in Session.open(path).context().messages]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_export_errors_are_precise(tmp_path: Path) -> None:
    shutil.copytree(HOME, tmp_path / "codex")
    r = run(tmp_path, "--json", "no-such-session")
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["exitCode"] == 2
    r = run(tmp_path, "--leaf", "L9999", ROLLBACK_ID)
    assert r.returncode == 2 and "L9999" in r.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(next(HOME.rglob("*0a.jsonl")).read_bytes().split(b"\n", 1)[0] + b"\n")
    r = run(tmp_path, str(empty))
    assert r.returncode == 2 and "nothing to export" in r.stderr
    assert not (tmp_path / "store" / "sessions").exists() or not list(
        (tmp_path / "store" / "sessions").rglob("*.jsonl")
    )


def test_files_of_every_agent_are_sniffed_by_content_and_left_as_they_were(tmp_path: Path) -> None:
    """A FILE argument is read as the read commands read one (Claude Code, Codex, Pi), whatever
    its name, and the source file is never written."""
    claude = next((FIXTURES / "claude-code" / "ccl-2.1.114").glob("*.jsonl"))
    rollout = next(HOME.rglob("*0a.jsonl"))
    for source, fmt in [
        (claude, "claude-code"),
        (rollout, "codex"),
        (REPO / "examples" / "auth-refactor.jsonl", "pi"),
    ]:
        copy = tmp_path / fmt / "renamed.jsonl"  # no name or place gives the format away
        copy.parent.mkdir()
        shutil.copyfile(source, copy)
        r = run(tmp_path, "--json", str(copy))
        assert r.returncode == 0, r.stderr
        answer = json.loads(r.stdout)
        assert answer["source"]["format"] == fmt and answer["source"]["path"] == str(copy)
        assert copy.read_bytes() == source.read_bytes()
        assert Session.open(Path(answer["path"])).context().messages
    r = run(tmp_path, str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "no such file" in r.stderr
