"""Every Codex and OpenCode fixture against its committed expectation (``make_agent_goldens``),
and ``sessiond inspect`` on them as a real subprocess."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GOLDEN
from tests.formats.make_agent_goldens import CODEX, codex_cases, opencode_cases, summary


def _cases() -> Iterator[tuple[str, str, Path]]:
    yield from (("codex", name, path) for name, path in codex_cases())
    work = Path(tempfile.mkdtemp(prefix="opencode-goldens-"))
    # made at collection (each xdist worker and the controller collect): gone when that process ends
    atexit.register(shutil.rmtree, work, True)
    yield from (("opencode", name, path) for name, path in opencode_cases(work))


CASES = list(_cases())


@pytest.mark.parametrize(("kind", "name", "path"), CASES, ids=[f"{k}/{n}" for k, n, _ in CASES])
def test_fixture_matches_its_golden(kind: str, name: str, path: Path) -> None:
    golden = json.loads((GOLDEN / kind / f"{name}.json").read_text())
    actual = json.loads(json.dumps(summary(path), ensure_ascii=False))
    assert actual == golden


def test_every_golden_has_a_fixture() -> None:
    names = {f"{kind}/{name}" for kind, name, _ in CASES}
    stored = {
        f"{p.parent.name}/{p.stem}" for kind in ("codex", "opencode") for p in (GOLDEN / kind).glob("*.json")
    }
    assert stored == names


def golden(kind: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / kind / f"{name}.json").read_text())
    return data


def test_the_facts_reviewed_by_hand() -> None:
    """What the goldens say about the cases that matter, checked against the files by hand."""
    compacted = golden("codex", "localpush-0.104--4079fe9726a9")
    # Remote compaction: the history restarts from replacement_history (40 items, the last an
    # encrypted compaction item); the 24 turns before it are in the tree, not in the context.
    assert compacted["agent"]["replay"]["compactions"] == 1
    assert compacted["agent"]["codex"]["cliVersion"] == "0.104.0-alpha.1"
    # The base instructions (session_meta, line 1) come first: the system prompt, then the
    # compacted line's replacement history.
    assert compacted["contextEntryIds"][:2] == ["L1", "L1788"]
    kinds = [m.get("customType") for m in compacted["context"]["messages"] if m["role"] == "custom"]
    assert "codex.compaction" in kinds
    assert compacted["usage"]["contextWindow"] == 258400
    # The last token_count anchors the usage: the resumed context is what the API measured.
    assert compacted["usage"]["usageTokens"] == 162366 and compacted["usage"]["trailingTokens"] == 0

    fork = golden("codex", "real-0.169--571248d3902f")
    # Codex 0.169's paginated fork: the parent's history (BL… entries) before its own.
    assert fork["agent"]["historyBase"]["found"] and fork["agent"]["codex"]["cliVersion"] == "0.169.0"
    assert [i[:2] for i in fork["contextEntryIds"][:2]] == ["L1", "BL"]
    assert fork["agent"]["load"]["unknownRecordTypes"] == {}

    rolled = golden("codex", "synthetic-home--00000000000a")
    texts = [m["text"] for m in rolled["context"]["messages"] if m["role"] == "user"]
    assert texts[-2:] == ["list the files", "instead, show the README"]
    assert rolled["agent"]["replay"]["rolledBackTurns"] == 2
    assert rolled["entryCount"] > len(rolled["branchIds"])  # the dropped turns are a branch
    assert rolled["sessionName"] == "README hunt"  # session_index.jsonl, last line wins

    summary_only = golden("codex", "synthetic-home--00000000000e")
    user_texts = [m["text"] for m in summary_only["context"]["messages"] if m["role"] == "user"]
    assert user_texts[-3:-1] == [
        "and utils.py?",
        "The user asked about main.py (prints a greeting) and utils.py (empty).",
    ]
    assert summary_only["agent"]["replay"]["summaryOnlyCompactions"] == 1

    unfinished = golden("codex", "localpush-0.104--f30553347322")
    assert unfinished["agent"]["replay"]["syntheticToolResults"] == 1
    last = unfinished["context"]["messages"][-1]
    assert last["role"] == "toolResult" and last["text"] == "aborted" and last["isError"] is True

    fork = golden("codex", "synthetic-home--00000000000b")
    assert fork["agent"]["codex"]["forkedFromId"] == "019c9000-0000-7000-8000-00000000000a"
    sub = golden("codex", "synthetic-home--00000000000c")
    assert sub["agent"]["codex"]["parentThreadId"] == "019c9000-0000-7000-8000-00000000000a"
    legacy = golden("codex", "synthetic-home--0000000000d4")
    assert legacy["agent"]["load"]["legacy"] is True
    assert [m["role"] for m in legacy["context"]["messages"]] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]

    real = golden("opencode", "real-v1.16--ses_04ca851f7ffevKrKMHW3RsPK1U")
    assert real["agent"]["conversion"]["messages"] == 35 and real["agent"]["conversion"]["unsettled"] == 1
    assert real["agent"]["opencode"]["tokens"]["cacheRead"] == 622720
    assert real["context"]["messages"][0]["text"].startswith("Read SPEC.md and improve it")
    as_json = golden("opencode", "json-store--ses_04ca851f7ffevKrKMHW3RsPK1U")
    # The same session in the older JSON layout reads into the same tree and context.
    for k in ("branchIds", "contextEntryIds", "context", "tree", "usage"):
        assert as_json[k] == real[k], k

    compact = golden("opencode", "synthetic-v1.16--ses_0a0000001ffeSyntheticCompact")
    assert [m["role"] for m in compact["context"]["messages"]] == ["user", "assistant", "user", "assistant"]
    assert compact["context"]["messages"][0]["text"] == "What did we do so far?"
    assert compact["agent"]["children"] == ["ses_0a0000002ffeSyntheticChild0"]
    revert = golden("opencode", "synthetic-v1.16--ses_0a0000003ffeSyntheticRevert")
    assert revert["agent"]["conversion"]["revertedMessages"] == 2
    assert revert["leafId"] == revert["branchIds"][-1] != revert["tree"]["roots"][0]
    tools = golden("opencode", "synthetic-v1.16--ses_0a0000004ffeSyntheticTools0")
    results = [m for m in tools["context"]["messages"] if m["role"] == "toolResult"]
    assert [r["text"] for r in results] == [
        "[Old tool result content cleared]",
        "exit code 1",
        "[Tool execution was interrupted]",
    ]
    assert [r["isError"] for r in results] == [False, True, True]
    assert tools["agent"]["conversion"]["failedAssistants"] == 1
    assert tools["context"]["messages"][-1]["text"] == "I was about to"  # aborted, but it said something


def run_inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiond", "inspect", *args], check=False, capture_output=True, text=True
    )


def test_inspect_reads_a_rollout_and_an_opencode_session(tmp_path: Path) -> None:
    rollout = next((CODEX / "synthetic-home" / "sessions").rglob("*00000000000a.jsonl"))
    r = run_inspect(str(rollout))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["format"] == "codex" and out["leafId"] == out["branchIds"][-1]
    db = tmp_path / "opencode.db"
    shutil.copyfile(GOLDEN.parent / "fixtures" / "opencode" / "synthetic-v1.16" / "opencode.db", db)
    r = run_inspect(f"{db}#ses_0a0000003ffeSyntheticRevert", "--leaf", "null")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["format"] == "opencode" and out["leafId"] is None and out["context"]["messages"] == []
    r = run_inspect(f"{db}#ses_nope")
    assert r.returncode == 2 and "ses_nope" in r.stderr
