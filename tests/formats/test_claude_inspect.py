"""``sessiond inspect`` on Claude Code transcripts, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.formats.make_claude_goldens import FIXTURES

H9 = FIXTURES / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
H10 = FIXTURES / "ccl-2.1.42" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
PI_EXAMPLE = REPO / "examples" / "auth-refactor.jsonl"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiond", *args], capture_output=True, text=True, check=False
    )


def test_inspect_detects_a_claude_code_transcript() -> None:
    r = run("inspect", "--compaction", "--window", "200000", str(H9))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["format"] == "claude-code"
    assert out["sessionId"] == "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    assert out["claudeCodeVersion"] == "2.1.39"
    assert out["entryCount"] == 662
    assert out["leafId"] == out["loadedLeafId"] == "b560b6d4-d3d0-4db0-928f-3c61c592f729"
    assert len(out["branchIds"]) == 249 and out["branchIds"][-1] == out["leafId"]
    assert out["branch"][0]["customType"] == "claude-code.system/compact_boundary"
    assert out["branch"][0]["parentId"] is None
    assert out["contextEntryIds"][0] == "94000b8f-fa9f-4b7b-8d81-cdc73aa8a085"
    messages = out["context"]["messages"]
    assert messages[0]["role"] == "user" and messages[0]["text"].startswith("This session is being continued")
    assert all("estTokens" in m for m in messages)
    assert {m["role"] for m in messages} == {"user", "assistant", "toolResult"}
    assert out["context"]["model"]["provider"] == "anthropic"
    assert out["tree"]["roots"] == ["858a6db7-6721-4caa-b306-39ec1f17cbf1", out["branchIds"][0]]
    assert out["tree"]["nodes"] == 662
    estimate = out["compaction"]["estimateContextTokens"]
    assert estimate["usageTokens"] == 102169 and out["compaction"]["shouldCompact"] is False
    rec = out["claudeCode"]["reconstruction"]
    assert out["claudeCode"]["leafRule"] == "resume-file"
    assert (rec["unpairedBefore"], rec["unpairedAfter"], rec["orphansRecovered"]) == (4, 0, 6)
    assert rec["compactBoundaries"][0]["trigger"] == "manual"
    agents = {s["agentId"]: s for s in out["claudeCode"]["subagents"]}
    assert set(agents) == {"aac57f5", "acompact-946d2b"}
    assert agents["acompact-946d2b"]["kind"] == "compaction"
    assert out["diagnostics"]["progressEntries"] == 1697 and out["diagnostics"]["unparsableLines"] == 0


def test_inspect_moves_the_leaf_in_a_claude_code_transcript() -> None:
    old_leaf = "2f4668dd-c177-455f-81c1-caa947d43e73"
    out = json.loads(run("inspect", "--leaf", old_leaf, str(H10)).stdout)
    assert out["leafId"] == old_leaf and out["branchIds"][-1] == old_leaf  # a system entry: fine as a leaf
    assert out["loadedLeafId"] == "d107d4c0-ae71-4d3d-af3a-cf7a370bd21f"
    assert "5270777a-1975-4e8a-9cad-b36280ae0ec5" in out["branchIds"]
    assert out["claudeCode"]["leafRule"] == "explicit"
    out = json.loads(run("inspect", "--leaf", "null", str(H10)).stdout)
    assert out["leafId"] is None and out["branchIds"] == [] and out["context"]["messages"] == []
    r = run("inspect", "--leaf", "nope", str(H10))
    assert r.returncode == 2 and r.stderr.strip() == "sessiond inspect: Entry nope not found"


def test_inspect_mixes_pi_and_claude_code_files() -> None:
    r = run("inspect", "--jsonl", str(PI_EXAMPLE), str(H10))
    assert r.returncode == 0, r.stderr
    pi, claude = (json.loads(x) for x in r.stdout.splitlines())
    assert pi["format"] == "pi" and claude["format"] == "claude-code"
    assert len(claude["branchIds"]) == 28 and claude["tree"]["nodes"] == 41


def test_inspect_synthetic_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"summary","summary":"Old","leafUuid":"elsewhere"}\n'
        '{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u1",'
        '"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hello"}}\n'
        '{"parentUuid":"u1","sessionId":"s","type":"assistant","uuid":"a1","timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"t1",'
        '"name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,'
        '"output_tokens":5}}}\n'
        "not json\n"
    )
    r = run("inspect", str(path))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["format"] == "claude-code" and out["sessionName"] is None
    assert [m["role"] for m in out["context"]["messages"]] == ["user", "assistant", "toolResult"]
    assert out["context"]["messages"][2]["isError"] is True  # the dangling call got a synthetic result
    assert out["claudeCode"]["reconstruction"]["syntheticToolResults"] == 1
    assert out["claudeCode"]["titles"]["untrustedSummaries"] == 1
    assert out["diagnostics"]["unparsableLineNumbers"] == [4]
    assert out["claudeCode"]["subagents"] == []
