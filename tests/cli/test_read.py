"""``ls``, ``show``, ``tree``, ``context`` and ``usage``: through the daemon and on files directly."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.cli.conftest import (
    CLAUDE_CWD,
    CLAUDE_DIR,
    CLAUDE_ID,
    CLAUDE_SAMPLE,
    EXAMPLE,
    EXAMPLE_ID,
    PI_V1,
    PI_V1_ID,
    Cli,
)


def js(r: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert r.returncode == 0, r.stderr
    answer: dict[str, Any] = json.loads(r.stdout)
    return answer


def test_ls_lists_every_root_as_a_table_and_as_json(cli: Cli) -> None:
    r = cli.run("ls", "--all")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["ID", "TITLE", "CWD", "UPDATED", "MSGS", "FORMAT", "ROOT"]
    by_id = {line.split()[0]: line for line in lines[1:]}
    assert "Auth: sessions → cookies" in by_id[EXAMPLE_ID] and "/home/dev/webapp" in by_id[EXAMPLE_ID]
    assert by_id[EXAMPLE_ID].split()[-2:] == ["pi", "sessiond"]
    assert by_id[CLAUDE_ID].split()[-3:] == ["claude-code", "claude", "(ro)"]
    assert by_id[PI_V1_ID].split()[-3:] == ["pi", "pi", "(ro)"]
    assert "\x1b[" not in r.stdout and all(line == line.rstrip() for line in lines)

    listed = js(cli.run("ls", "--json", "--all"))
    assert set(listed) == {"sessions", "nextCursor"}
    sessions = {s["sessionId"]: s for s in listed["sessions"]}
    assert sessions[EXAMPLE_ID]["title"] == "Auth: sessions → cookies"
    assert sessions[EXAMPLE_ID]["messageCount"] == 14
    assert sessions[CLAUDE_ID]["format"] == "claude-code" and sessions[CLAUDE_ID]["readOnly"] is True
    assert sessions[PI_V1_ID]["root"] == "pi"

    only = js(cli.run("ls", "--json", "--root", "claude"))["sessions"]
    assert [s["sessionId"] for s in only] == [CLAUDE_ID]
    assert {s["format"] for s in js(cli.run("ls", "--json", "--format", "pi", "--all"))["sessions"]} == {"pi"}
    cwd = js(cli.run("ls", "--json", "--cwd", CLAUDE_CWD))["sessions"]
    assert [s["sessionId"] for s in cwd] == [CLAUDE_ID]
    one = js(cli.run("ls", "--json", "--limit", "1"))
    assert len(one["sessions"]) == 1 and one["nextCursor"] is not None


def test_show_prints_the_branch_as_markdown(cli: Cli) -> None:
    r = cli.run("show", EXAMPLE_ID)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert text.startswith("# Auth: sessions → cookies\n")
    assert "## user · u1000001 · " in text and "Check how authentication is implemented" in text
    assert "→ `read src/auth.ts`" in text  # the tool call, summarised
    assert "### ← read result · t1000001" in text and "```\nexport function login" in text
    assert "_(thinking, 36 characters)_" in text
    assert "**↳ branch summary · b1000001" in text
    assert "**⟳ compaction · c1000001 · 6,640 tokens before" in text
    assert "> ## Goal" in text  # the compaction summary, quoted
    assert "Switch it to JWT" not in text  # another branch
    assert text.rstrip().endswith("Now document the cookie flow in docs/auth.md")

    shown = js(cli.run("show", "--json", EXAMPLE_ID))
    assert shown["sessionId"] == EXAMPLE_ID and shown["leafId"] == "u1000006"
    assert shown["entryIds"][-2:] == ["c1000001", "u1000006"] and len(shown["entries"]) == 17

    # The same file read directly, without the daemon, gives the same text and entries.
    direct = cli.run("show", str(EXAMPLE), "--no-start")
    assert direct.returncode == 0 and direct.stdout == text
    from_file = js(cli.run("show", "--json", str(EXAMPLE)))
    assert from_file["file"] == str(EXAMPLE) and from_file["entries"] == shown["entries"]

    other = cli.run("show", "--leaf", "a1000003", EXAMPLE_ID)
    assert "Switch it to JWT" in other.stdout and "cookies instead" not in other.stdout


def test_show_claude_code_and_pi_v1_sessions(cli: Cli) -> None:
    r = cli.run("show", CLAUDE_ID)
    assert r.returncode == 0, r.stderr
    # No name: the heading is the first prompt (what ls shows as the title), the id is below it.
    assert r.stdout.startswith("# Ok, so there's isn't much to see here") and "claude-code" in r.stdout
    assert "\n03eb5929-52b3-4b13-ada3-b93ae35806b8 · " in r.stdout
    assert "→ `Bash ls -la /home/user/project/`" in r.stdout and "### ← Bash result" in r.stdout
    assert cli.run("show", str(CLAUDE_SAMPLE)).stdout == r.stdout

    other = CLAUDE_DIR / "ccl-2.1.17" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl"
    assert cli.run("show", str(other)).returncode == 0

    pi = cli.run("show", str(PI_V1))
    assert pi.returncode == 0, pi.stderr
    assert pi.stdout.startswith("# alright, read @packages/coding-agent/src/main.ts")
    assert f"\n{PI_V1_ID} · " in pi.stdout and "more lines (--full shows them)" in pi.stdout
    assert PI_V1.read_bytes().startswith(b'{"type":"session","id"')  # read, never migrated in place


def test_tree_draws_branches_labels_leaf_and_summaries(cli: Cli) -> None:
    r = cli.run("tree", EXAMPLE_ID)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Auth: sessions → cookies  (14 messages, 20 entries)"
    line = {next(w for w in ln.split() if w[0].isalnum()): ln for ln in lines[1:]}
    assert line["u1000006"].endswith("◀ leaf")
    assert "[jwt-attempt]" in line["a1000003"]
    assert "⟳ compaction" in line["c1000001"] and "↳ branch summary" in line["b1000001"]
    # a1000002 is a branch point (⑂2): the abandoned JWT branch hangs below it, nested under its
    # first entry; the current branch carries on in the same column down to the leaf.
    assert "⑂2" in line["a1000002"]
    indent = {k: len(v) - len(v.lstrip("│ ├└─")) for k, v in line.items()}
    assert indent["u1000002"] > indent["a1000002"] == indent["b1000001"] == indent["u1000006"]
    assert indent["a1000003"] == indent["l1000001"] > indent["u1000002"]

    tree = js(cli.run("tree", "--json", EXAMPLE_ID))
    assert tree["leafId"] == "u1000006" and len(tree["nodes"]) == 20
    assert tree["branchIds"][0] == "m0a1b2c3" and tree["branchIds"][-1] == "u1000006"
    assert tree_branch_order(r.stdout) == tree["branchIds"]  # the current branch is the first column
    labelled = {n["id"]: n.get("label") for n in tree["nodes"]}
    assert labelled["a1000003"] == "jwt-attempt"
    assert js(cli.run("tree", "--json", str(EXAMPLE)))["nodes"] == tree["nodes"]

    claude = js(cli.run("tree", "--json", CLAUDE_ID))
    assert len(claude["nodes"]) == 41 and claude["branchIds"][-1] == claude["leafId"]
    assert js(cli.run("tree", "--json", str(CLAUDE_SAMPLE)))["nodes"] == claude["nodes"]
    plain = cli.run("tree", str(CLAUDE_SAMPLE)).stdout
    assert plain.count("◀ leaf") == 1


def tree_branch_order(text: str) -> list[str]:
    """The ids in the tree's first column (what the current branch reads as, top to bottom)."""
    return [ln[4:].split()[0] for ln in text.splitlines()[1:] if ln[:4] in ("├── ", "└── ")]


def test_context_lists_messages_with_token_estimates(cli: Cli) -> None:
    ctx = js(cli.run("context", "--json", EXAMPLE_ID))
    assert ctx["entryIds"] == ["c1000001", "u1000005", "a1000006", "u1000006"]
    assert [m["role"] for m in ctx["messages"]] == ["compactionSummary", "user", "assistant", "user"]
    assert ctx["totalTokens"] == sum(m["tokens"] for m in ctx["messages"]) > 0
    assert ctx["estimator"] == "pi"
    assert ctx["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert ctx["usage"]["used"] is not None
    argv = [sys.executable, "-m", "sessiond", "inspect", str(EXAMPLE)]
    inspected = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert [m["estTokens"] for m in json.loads(inspected.stdout)["context"]["messages"]] == [
        m["tokens"] for m in ctx["messages"]
    ]
    r = cli.run("context", EXAMPLE_ID)
    assert r.returncode == 0, r.stderr
    assert "⟳ compaction summary" in r.stdout
    assert f"total ≈ {ctx['totalTokens']:,} tokens in 4 messages" in r.stdout

    direct = js(cli.run("context", "--json", str(EXAMPLE)))
    assert direct["messages"] == ctx["messages"] and direct["totalTokens"] == ctx["totalTokens"]
    tik = js(cli.run("context", "--json", "--estimator", "tiktoken", "--leaf", "a1000003", EXAMPLE_ID))
    assert tik["estimator"] == "tiktoken" and tik["entryIds"][-1] == "a1000003" and tik["usage"] is None


def test_usage_is_a_gauge(cli: Cli) -> None:
    usage = js(cli.run("usage", "--json", str(PI_V1)))
    assert usage["size"] == 200000 and usage["source"] == "estimate" and usage["percent"] == 90.4
    assert usage["used"] == usage["usageTokens"] + usage["trailingTokens"]
    via_daemon = js(cli.run("usage", "--json", PI_V1_ID))
    assert {k: via_daemon[k] for k in ("used", "size", "percent", "source")} == {
        k: usage[k] for k in ("used", "size", "percent", "source")
    }
    r = cli.run("usage", PI_V1_ID)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("█" * 27 + "░" * 3)
    assert "180,820 / 200,000 tokens (90.4%), source estimate" in first
    claude = js(cli.run("usage", "--json", CLAUDE_ID))
    assert claude["sessionId"] == CLAUDE_ID and claude["used"] > 0


def test_colours_only_on_a_terminal(cli: Cli) -> None:
    piped = cli.run("tree", EXAMPLE_ID)
    assert "\x1b[" not in piped.stdout
    forced = cli.run("tree", EXAMPLE_ID, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout
