"""The design's worked example (U1 … C1, ``tests/fixtures/design``), step by step, in four views.

    file entries (the ledger) + leaf -> branch (root..leaf) -> context (what the model sees)

After each step the ledger is also written out and loaded back, so the views are checked on
what a file holds, not only on the in-memory state.
"""

from __future__ import annotations

from typing import Any

from sessiond.compaction import CompactionSettings, prepare_compaction
from sessiond.compaction.prepare import CompactionPreparation, NoCompaction
from sessiond.formats.pi import parse_session
from sessiond.model.messages import convert_to_llm
from sessiond.model.projection import project
from sessiond.model.tree import SessionTree
from tests.builders import Ledger, assistant, user


def views(s: Ledger) -> tuple[list[str], Any, list[str], list[tuple[str, str]]]:
    tree = s.tree()
    branch = tree.branch()
    ctx = project(tree.context_path()) if s.leaf is not None else project([])
    context = []
    for m in ctx.messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            context.append((m["role"], m["summary"]))
        else:
            content = m["content"]
            text = (
                content
                if isinstance(content, str)
                else " ".join(b.get("text") or f"[{b['type']}]" for b in content)
            )
            context.append((m["role"], text))
    return [e["id"] for e in s.entries], tree.leaf_id, [e["id"] for e in branch], context


def reloaded_leaf(s: Ledger) -> Any:
    loaded = parse_session(s.jsonl())
    return SessionTree(loaded.entries).leaf_id


def test_worked_example() -> None:
    s = Ledger("S1", "/repo")
    assert views(s) == ([], None, [], [])

    # 1. the first prompt
    s.message(user("检查认证实现"), "U1")
    assert views(s) == (["U1"], "U1", ["U1"], [("user", "检查认证实现")])

    # 2. a tool call, its result, a conclusion
    s.message(assistant(calls=[("read", {"path": "auth.ts"})]), "A1")
    s.message(
        {
            "role": "toolResult",
            "toolCallId": "call_0",
            "toolName": "read",
            "content": [{"type": "text", "text": "..."}],
            "isError": False,
            "timestamp": 3,
        },
        "T1",
    )
    s.message(assistant("认证逻辑已定位"), "A2")
    files, leaf, branch, context = views(s)
    assert (leaf, branch) == ("A2", ["U1", "A1", "T1", "A2"])
    assert [r for r, _ in context] == ["user", "assistant", "toolResult", "assistant"]

    # 3. the JWT attempt
    s.message(user("改成 JWT"), "U2")
    s.message(assistant("JWT 方案已完成"), "A3")
    assert views(s)[2] == ["U1", "A1", "T1", "A2", "U2", "A3"]
    assert reloaded_leaf(s) == "A3"

    # 4. navigate back to U2 with a summary: the new leaf is U2's parent, the summary hangs there
    old_leaf = s.leaf
    s.branch_summary("A2", "离开的 JWT 路径已完成认证改造。", "BS1")
    assert s.entries[-1]["fromId"] == old_leaf == "A3"
    files, leaf, branch, context = views(s)
    assert files == ["U1", "A1", "T1", "A2", "U2", "A3", "BS1"]
    assert (leaf, branch) == ("BS1", ["U1", "A1", "T1", "A2", "BS1"])
    assert context[-1] == ("branchSummary", "离开的 JWT 路径已完成认证改造。")
    assert "改成 JWT" not in [t for _, t in context]

    # 5. the edited prompt continues from the summary
    s.message(user("改成 session cookie"), "U2B")
    s.message(assistant("cookie 方案已完成"), "A4")
    files, leaf, branch, context = views(s)
    assert branch == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4"]
    assert context[-3:] == [
        ("branchSummary", "离开的 JWT 路径已完成认证改造。"),
        ("user", "改成 session cookie"),
        ("assistant", "cookie 方案已完成"),
    ]
    llm = convert_to_llm(project(s.tree().context_path()).messages)
    assert llm[4]["role"] == "user" and llm[4]["content"][0]["text"].startswith(
        "The following is a summary of a branch that this conversation came back from:"
    )

    # 6. the conversation grows
    for eid, msg in [
        ("U3", user("补充测试")),
        ("A5", assistant("测试已补充")),
        ("U4", user("检查边界条件")),
        ("A6", assistant("边界条件已处理")),
        ("U5", user("整理文档")),
        ("A7", assistant("文档已整理", total=115000)),
    ]:
        s.message(msg, eid)

    # 7. threshold compaction: what would be summarised, then the checkpoint C1
    path = s.tree().branch()
    prep = prepare_compaction(path, CompactionSettings(True, 16384, 6))
    assert isinstance(prep, CompactionPreparation)
    assert prep.first_kept_entry_id == "U4"  # the seed keeps from U4 too
    s.compaction("目标是完成认证改造；当前采用 session cookie；测试已补充。", "U4", 115000, "C1")
    files, leaf, branch, context = views(s)
    assert files == [
        "U1",
        "A1",
        "T1",
        "A2",
        "U2",
        "A3",
        "BS1",
        "U2B",
        "A4",
        "U3",
        "A5",
        "U4",
        "A6",
        "U5",
        "A7",
        "C1",
    ]
    assert leaf == "C1"
    assert branch == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5", "U4", "A6", "U5", "A7", "C1"]
    assert context == [
        ("compactionSummary", "目标是完成认证改造；当前采用 session cookie；测试已补充。"),
        ("user", "检查边界条件"),
        ("assistant", "边界条件已处理"),
        ("user", "整理文档"),
        ("assistant", "文档已整理"),
    ]
    again = prepare_compaction(s.tree().branch(), CompactionSettings())
    assert isinstance(again, NoCompaction) and again.reason == "already_compacted"
    assert reloaded_leaf(s) == "C1"

    # 8. overflow: the failed attempt is kept in the ledger but omitted from the context
    s.message(user("继续"), "U6")
    s.message(assistant("", stop="error", error="prompt is too long: 213000 tokens > 200000 maximum"), "E1")
    s.context_edit("E1", None, "X1")
    files, leaf, branch, context = views(s)
    assert files[-3:] == ["U6", "E1", "X1"]
    assert branch[-3:] == ["U6", "E1", "X1"]
    assert [r for r, _ in context] == ["compactionSummary", "user", "assistant", "user", "assistant", "user"]
    prep2 = prepare_compaction(s.tree().branch(), CompactionSettings(True, 16384, 1))
    assert isinstance(prep2, CompactionPreparation)
    assert prep2.previous_summary.startswith("目标是完成认证改造")
    assert all(
        m.get("stopReason") != "error" for m in prep2.messages_to_summarize + prep2.turn_prefix_messages
    )
