"""Projection of a branch into context, rule by rule (docs/pi-format.md §5)."""

from __future__ import annotations

from typing import Any

from sessiond.model.messages import (
    BRANCH_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_PREFIX,
    bash_execution_text,
    convert_to_llm,
    current_system_message,
)
from sessiond.model.projection import project
from tests.builders import Ledger


def _ctx(s: Ledger) -> Any:
    tree = s.tree()
    return project(tree.context_path())


def _roles(s: Ledger) -> list[str]:
    return [m["role"] for m in _ctx(s).messages]


def test_empty_session() -> None:
    p = project([])
    assert p.messages == []
    assert p.settings.thinking_level == "off"
    assert p.settings.model is None


def test_custom_entries_are_not_context_but_custom_messages_are() -> None:
    s = Ledger()
    s.user("hi")
    s.custom("ext.state", {"x": 1})
    s.custom_message("ext.note", "remember this", display=False)
    p = _ctx(s)
    assert [m["role"] for m in p.messages] == ["user", "custom"]
    assert [pe.source["type"] for pe in p.entries] == ["message", "custom", "custom_message"]


def test_settings_last_wins_along_the_full_path() -> None:
    s = Ledger()
    s.thinking("high")
    s.model_change("openai", "gpt-5")
    s.user("x")
    s.assistant("y", provider="anthropic", model="claude")
    assert _ctx(s).settings.model == {"provider": "anthropic", "modelId": "claude"}
    s.model_change("google", "gemini")
    p = _ctx(s)
    assert p.settings.model == {"provider": "google", "modelId": "gemini"}
    assert p.settings.thinking_level == "high"


def test_compaction_summary_first_then_kept_then_after() -> None:
    s = Ledger()
    s.user("u1")
    s.assistant("a1")
    u2 = s.user("u2")
    s.assistant("a2")
    c = s.compaction("summary one", u2)
    s.user("u3")
    p = _ctx(s)
    assert [pe.source["id"] for pe in p.entries] == [c, u2, "e4", "e6"]
    assert [m["role"] for m in p.messages] == ["compactionSummary", "user", "assistant", "user"]


def test_latest_of_several_compactions_wins_and_older_ones_project_nothing() -> None:
    s = Ledger()
    s.user("u1")
    s.assistant("a1")
    u2 = s.user("u2")
    s.assistant("a2")
    c1 = s.compaction("first", u2)
    s.user("u3")
    s.assistant("a3")
    c2 = s.compaction("second", u2)
    p = _ctx(s)
    assert [pe.source["id"] for pe in p.entries] == [c2, u2, "e4", c1, "e6", "e7"]
    summaries = [m["summary"] for m in p.messages if m["role"] == "compactionSummary"]
    assert summaries == ["second"]


def test_retain_none_compaction_keeps_nothing_before_it() -> None:
    s = Ledger()
    s.user("u1")
    s.assistant("a1")
    c = s.compaction("all of it", None)
    assert s.entries[-1]["firstKeptEntryId"] == c
    assert _roles(s) == ["compactionSummary"]


def test_system_messages_in_kept_range_dropped_but_after_compaction_kept() -> None:
    s = Ledger()
    sys1 = {"role": "system", "content": "base prompt", "timestamp": 1}
    s.message(sys1)
    u1 = s.user("u1")
    s.message({"role": "system", "content": "delta", "timestamp": 2})
    s.assistant("a1")
    s.compaction(
        "sum", u1, system_message={"role": "system", "content": "base prompt\n\ndelta", "timestamp": 9}
    )
    s.message({"role": "system", "content": "later", "timestamp": 3})
    assert _roles(s) == ["system", "compactionSummary", "user", "assistant", "system"]


def test_context_edit_replaces_and_last_edit_wins() -> None:
    s = Ledger()
    u1 = s.user("original question")
    a1 = s.assistant("original answer")
    s.context_edit(a1, {"content": "first edit"})
    s.context_edit(a1, {"content": [{"type": "text", "text": "second edit"}]})
    s.context_edit(u1, {"content": "plain string stays a string for user"})
    p = _ctx(s)
    assert p.messages[1]["content"] == [{"type": "text", "text": "second edit"}]
    assert p.messages[0]["content"] == "plain string stays a string for user"


def test_context_edit_string_for_assistant_becomes_text_block() -> None:
    s = Ledger()
    s.user("q")
    a1 = s.assistant("a")
    s.context_edit(a1, {"content": "short"})
    assert _ctx(s).messages[1]["content"] == [{"type": "text", "text": "short"}]


def test_null_edit_hides_the_target() -> None:
    s = Ledger()
    s.user("q")
    e1 = s.assistant("", stop="error", error="prompt is too long")
    s.context_edit(e1, None)
    assert _roles(s) == ["user"]


def test_edits_are_branch_relative() -> None:
    s = Ledger()
    u1 = s.user("q")
    a1 = s.assistant("a")
    s.context_edit(a1, None)
    s.branch(a1)
    s.user("other branch")
    assert _roles(s) == ["user", "assistant", "user"]
    assert u1


def test_edit_before_the_compaction_boundary_is_ignored() -> None:
    s = Ledger()
    s.user("q1")
    a1 = s.assistant("a1")
    s.context_edit(a1, None)
    u2 = s.user("q2")
    s.compaction("sum", u2)
    s.context_edit(u2, {"content": "edited after"})
    p = _ctx(s)
    assert p.messages[1]["content"] == "edited after"
    assert [pe.source["type"] for pe in p.entries][:2] == ["compaction", "message"]


def test_null_edit_on_a_compaction_hides_checkpoint_and_summary() -> None:
    s = Ledger()
    s.user("q")
    c = s.compaction("sum", None)
    s.context_edit(c, None)
    assert _roles(s) == []


def test_branch_summary_in_path_and_empty_one_contributes_nothing() -> None:
    s = Ledger()
    u1 = s.user("q")
    s.assistant("a")
    s.branch_summary(u1, "went elsewhere")
    s.branch_summary(u1, "")
    p = _ctx(s)
    assert [m["role"] for m in p.messages] == ["user"]
    s.branch(u1)
    s.branch_summary(u1, "went elsewhere")
    assert _roles(s) == ["user", "branchSummary"]


def test_null_content_is_normalised() -> None:
    s = Ledger()
    s.message({"role": "user", "content": None, "timestamp": 1})
    s.message({"role": "system", "timestamp": 1})
    p = _ctx(s)
    assert p.messages[0]["content"] == []
    assert p.messages[1]["content"] == ""


def test_convert_to_llm_texts_are_pis() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "branchSummary", "summary": "S", "fromId": "x", "timestamp": 0},
        {"role": "compactionSummary", "summary": "C", "tokensBefore": 1, "timestamp": 0},
        {"role": "custom", "customType": "t", "content": "hello", "display": True, "timestamp": 0},
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 0,
            "excludeFromContext": True,
        },
        {"role": "hookMessage", "content": "dropped"},
    ]
    out = convert_to_llm(msgs)
    assert [m["role"] for m in out] == ["user", "user", "user"]
    assert out[0]["content"][0]["text"] == BRANCH_SUMMARY_PREFIX + "S</summary>"
    assert out[1]["content"][0]["text"] == COMPACTION_SUMMARY_PREFIX + "C\n</summary>"
    assert out[2]["content"] == [{"type": "text", "text": "hello"}]


def test_bash_execution_text() -> None:
    base = {"role": "bashExecution", "command": "make", "cancelled": False, "truncated": False}
    assert bash_execution_text({**base, "output": "ok", "exitCode": 0}) == "Ran `make`\n```\nok\n```"
    assert bash_execution_text({**base, "output": "", "exitCode": 2}) == (
        "Ran `make`\n(no output)\n\nCommand exited with code 2"
    )
    assert bash_execution_text({**base, "output": "x", "exitCode": None, "cancelled": True}).endswith(
        "\n\n(command cancelled)"
    )
    assert bash_execution_text(
        {**base, "output": "x", "exitCode": 0, "truncated": True, "fullOutputPath": "/tmp/o"}
    ).endswith("\n\n[Output truncated. Full output: /tmp/o]")


def test_current_system_message_replays_sections_and_tools() -> None:
    msgs: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "base",
            "sections": {"a": "A", "b": "B"},
            "toolsAdded": [{"name": "read"}, {"name": "bash"}],
            "timestamp": 5,
        },
        {"role": "user", "content": "x"},
        {
            "role": "system",
            "content": "",
            "sections": {"a": None, "c": "C"},
            "toolsRemoved": [{"name": "read"}],
            "toolsAdded": [{"name": "edit"}],
            "timestamp": 6,
        },
    ]
    sm = current_system_message(msgs)
    assert sm == {
        "role": "system",
        "content": "base",
        "sections": {"b": "B", "c": "C"},
        "toolsAdded": [{"name": "bash"}, {"name": "edit"}],
        "timestamp": 5,
    }
    assert current_system_message([{"role": "user", "content": "x"}]) is None


def test_non_object_messages_pass_through_as_role_less_messages() -> None:
    # Pi passes such a value on as a message (then ignores it); a null message throws in Pi.
    entries = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": 0},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "t", "message": None},
        {"type": "message", "id": "c", "parentId": "b", "timestamp": "t"},
    ]
    p = project(entries)
    assert [len(pe.messages) for pe in p.entries] == [1, 0, 0]
    assert convert_to_llm(p.messages) == []
