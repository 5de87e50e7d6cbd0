"""The ``sessiond`` command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.builders import Ledger
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "auth-refactor.jsonl"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiond", *args], capture_output=True, text=True, check=False
    )


def test_inspect_example_prints_the_derived_views() -> None:
    r = run("inspect", "--compaction", "--keep", "200", "--window", "8000", str(EXAMPLE))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["leafId"] == "u1000006"
    assert out["contextEntryIds"][0] == "c1000001"
    assert out["context"]["messages"][0]["role"] == "compactionSummary"
    assert out["sessionName"] == "Auth: sessions → cookies"
    assert out["tree"]["labels"] == {"a1000003": "jwt-attempt"}
    assert out["compaction"]["estimateProjectedContextTokens"]["lastUsageIndex"] is None
    assert out["diagnostics"]["unparsableLines"] == 0


def test_inspect_moves_the_leaf() -> None:
    r = run("inspect", "--leaf", "a1000003", str(EXAMPLE))
    out = json.loads(r.stdout)
    assert out["loadedLeafId"] == "u1000006" and out["leafId"] == "a1000003"
    assert out["branchIds"][-2:] == ["u1000002", "a1000003"]
    r = run("inspect", "--leaf", "null", str(EXAMPLE))
    out = json.loads(r.stdout)
    assert out["leafId"] is None and out["branchIds"] == [] and out["context"]["messages"] == []


def test_unknown_leaf_is_a_one_line_error() -> None:
    r = run("inspect", "--leaf", "nope", str(EXAMPLE))
    assert r.returncode == 2
    assert r.stderr.strip() == "sessiond inspect: Entry nope not found"


def test_not_a_session_is_a_one_line_error_with_exit_code_2(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n')
    r = run("inspect", str(bad))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1
    # What was tried and what each format looks like, not just "not a valid Pi session".
    assert "is neither a Pi session nor a Claude Code transcript" in r.stderr
    assert '{"type":"session"' in r.stderr and "uuid, parentUuid and sessionId" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_missing_file_and_good_file_together(tmp_path: Path) -> None:
    r = run("inspect", "--jsonl", str(tmp_path / "missing.jsonl"), str(EXAMPLE))
    assert r.returncode == 2
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert "error" in lines[0] and "no such file" in lines[0]["error"].lower()
    assert lines[1]["leafId"] == "u1000006"


def test_bad_option_values_are_usage_errors() -> None:
    r = run("inspect", "--keep", "-5", str(EXAMPLE))
    assert r.returncode == 2
    assert "must not be negative" in r.stderr


def test_tiktoken_estimator_and_full_text(tmp_path: Path) -> None:
    s = Ledger()
    s.user(" ".join(["hello world"] * 100))  # 200 cl100k tokens
    path = tmp_path / "s.jsonl"
    path.write_bytes(s.jsonl())
    r = run("inspect", "--estimator", "tiktoken", "--full", str(path))
    out = json.loads(r.stdout)
    assert out["estimator"] == "tiktoken"
    assert out["context"]["messages"][0]["estTokens"] == 200
    assert len(out["context"]["messages"][0]["text"]) == 1199


def test_previews_are_clipped_to_120_utf16_units(tmp_path: Path) -> None:
    s = Ledger()
    s.user("😀" * 100)
    path = tmp_path / "s.jsonl"
    path.write_bytes(s.jsonl())
    out = json.loads(run("inspect", str(path)).stdout)
    text = out["context"]["messages"][0]["text"]
    assert text.endswith("...") and text.startswith("😀")
    assert len(text.encode("utf-16-le", "surrogatepass")) // 2 == 120


def test_version() -> None:
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("sessiond ")
