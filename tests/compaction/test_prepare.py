"""Cut points, split turns, the recovery suffix, file operations and serialisation."""

from __future__ import annotations

from typing import Any

from sessiond.compaction import (
    CompactionSettings,
    FileOps,
    compute_file_lists,
    find_cut_point,
    format_file_operations,
    prepare_compaction,
    serialize_conversation,
)
from sessiond.compaction.prepare import CompactionPreparation, NoCompaction
from sessiond.model.messages import convert_to_llm
from tests.builders import Ledger


def _prep(s: Ledger, keep: int) -> CompactionPreparation | NoCompaction:
    return prepare_compaction(s.tree().branch(), CompactionSettings(True, 16384, keep))


def _conversation(turns: int, size: int = 400) -> Ledger:
    s = Ledger()
    for i in range(turns):
        s.user(f"question {i} " + "q" * size)
        s.assistant(f"answer {i} " + "a" * size)
    return s


def test_nothing_to_compact_when_everything_fits() -> None:
    s = _conversation(3)
    result = _prep(s, 100_000)
    assert isinstance(result, NoCompaction)
    assert result.reason == "nothing_to_compact"


def test_already_compacted_when_the_leaf_is_a_compaction() -> None:
    s = _conversation(3)
    s.compaction("sum", "e3")
    assert _prep(s, 10) == NoCompaction("already_compacted")


def test_a_persisted_leaf_move_below_a_compaction_is_still_already_compacted() -> None:
    # tree/navigate to a compaction persists the move as a sessiond.leaf marker below it; Pi's
    # leaf is the compaction itself, and Pi answers "Already compacted" (issue 14 item 9).
    s = _conversation(3)
    s.compaction("sum", "e3")
    s.custom("sessiond.leaf", {"from": "e6"})
    s.custom("sessiond.leaf", {"from": "e8"})
    assert _prep(s, 10) == NoCompaction("already_compacted")
    # Any other custom entry ends the branch for Pi too (Pi prepares again), and a marker below
    # a message decides nothing.
    other = _conversation(3)
    other.compaction("sum", "e3")
    other.custom("extension.state")
    assert isinstance(_prep(other, 10), CompactionPreparation)
    moved = _conversation(6)
    moved.custom("sessiond.leaf")
    with_marker, without = _prep(moved, 350), _prep(_conversation(6), 350)
    assert isinstance(with_marker, CompactionPreparation) and isinstance(without, CompactionPreparation)
    assert (with_marker.first_kept_entry_id, with_marker.tokens_before, with_marker.is_split_turn) == (
        without.first_kept_entry_id,
        without.tokens_before,
        without.is_split_turn,
    )
    assert with_marker.messages_to_summarize == without.messages_to_summarize


def test_cut_lands_on_a_user_turn_and_summarises_before_it() -> None:
    s = _conversation(6, size=400)  # each message ~100 tokens
    prep = _prep(s, 350)
    assert isinstance(prep, CompactionPreparation)
    assert prep.first_kept_entry_id == "e9"  # the budget is reached at e9 (4 x ~103 tokens), a user turn
    assert not prep.is_split_turn
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant"] * 4
    assert prep.tokens_before == 12 * 103
    # reached on an assistant message instead, the cut splits the turn
    split = _prep(s, 250)
    assert isinstance(split, CompactionPreparation)
    assert (split.first_kept_entry_id, split.is_split_turn) == ("e10", True)
    assert [m["role"] for m in split.turn_prefix_messages] == ["user"]


def test_split_turn_reports_the_turn_prefix() -> None:
    s = Ledger()
    s.user("start " + "x" * 400)
    s.assistant("reply " + "y" * 400)
    s.user("long task")
    for i in range(5):
        s.assistant("", calls=[("read", {"path": f"f{i}.ts"})])
        s.tool_result("r" * 800)
    prep = _prep(s, 300)
    assert isinstance(prep, CompactionPreparation)
    assert prep.is_split_turn
    assert prep.turn_prefix_messages[0]["role"] == "user"
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant"]
    assert set(prep.file_ops.read) <= {f"f{i}.ts" for i in range(5)}


def test_tool_results_are_never_cut_points() -> None:
    s = Ledger()
    s.user("go")
    s.assistant("", calls=[("read", {"path": "a"})])
    s.tool_result("z" * 40_000)  # alone exceeds the budget
    branch = s.tree().branch()
    cut = find_cut_point(branch, 0, len(branch), 100)
    assert branch[cut.first_kept_index]["message"]["role"] == "assistant"
    assert cut.is_split_turn and cut.turn_start_index == 0


def test_no_cut_points_keeps_from_start() -> None:
    s = Ledger()
    s.thinking("high")
    s.custom("x")
    branch = s.tree().branch()
    cut = find_cut_point(branch, 0, len(branch), 10)
    assert (cut.first_kept_index, cut.turn_start_index, cut.is_split_turn) == (0, -1, False)


def test_metadata_before_the_cut_is_kept_with_it() -> None:
    s = _conversation(3, size=400)
    s.model_change("openai", "gpt")
    s.thinking("low")
    s.user("latest " + "u" * 400)
    s.assistant("done " + "d" * 400)
    prep = _prep(s, 150)
    assert isinstance(prep, CompactionPreparation)
    assert prep.first_kept_entry_id == "e7"  # the model change, pulled in front of the cut


def test_repeated_compaction_resummarises_kept_messages_with_previous_summary() -> None:
    s = _conversation(4, size=400)
    s.compaction("first summary", "e5", details={"readFiles": ["old.ts"], "modifiedFiles": ["mod.ts"]})
    for i in range(3):
        s.user(f"more {i} " + "m" * 400)
        s.assistant(f"ok {i} " + "o" * 400)
    prep = _prep(s, 250)
    assert isinstance(prep, CompactionPreparation)
    assert prep.previous_summary == "first summary"
    assert prep.messages_to_summarize[0]["content"][0]["text"].startswith("question 2")
    assert "old.ts" in prep.file_ops.read and "mod.ts" in prep.file_ops.edited


def test_hook_compaction_details_are_not_carried() -> None:
    s = _conversation(4, size=400)
    s.compaction("from an extension", "e5", details={"readFiles": ["x"]}, from_hook=True)
    for i in range(3):
        s.user(f"more {i} " + "m" * 400)
        s.assistant("o" * 400)
    prep = _prep(s, 250)
    assert isinstance(prep, CompactionPreparation)
    assert "x" not in prep.file_ops.read


def test_recovery_suffix_advances_past_an_omitted_failed_attempt() -> None:
    s = Ledger()
    s.user("old " + "o" * 4000)
    s.assistant("old answer " + "p" * 4000)
    s.user("new question " + "n" * 400)
    failed = s.assistant("", stop="error", error="prompt is too long: 213000 tokens > 200000 maximum")
    s.context_edit(failed, None)
    prep = _prep(s, 50)
    assert isinstance(prep, CompactionPreparation)
    # The cut moves onto the omitted attempt: what follows the question is invisible, so the
    # question itself becomes the prefix of a split turn rather than the whole kept part.
    assert prep.first_kept_entry_id == "e4"
    assert prep.is_split_turn
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user"]


def test_file_lists_sorted_in_utf16_order_and_formatted() -> None:
    ops = FileOps()
    ops.add("read", {"path": "b.ts"})
    ops.add("read", {"path": "a.ts"})
    ops.add("edit", {"path": "b.ts"})
    ops.add("write", {"path": "c.ts"})
    ops.add("bash", {"path": "ignored"})
    ops.add("read", {"path": ""})
    read, modified = compute_file_lists(ops)
    assert (read, modified) == (["a.ts"], ["b.ts", "c.ts"])
    assert format_file_operations(read, modified) == (
        "\n\n<read-files>\na.ts\n</read-files>\n\n<modified-files>\nb.ts\nc.ts\n</modified-files>"
    )
    assert format_file_operations([], []) == ""


def test_serialization_truncates_tool_results_and_skips_thinking() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "", "mimeType": "x"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "secret"},
                {"type": "text", "text": "let me look"},
                {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "a.ts", "limit": 5}},
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": "1",
            "toolName": "read",
            "content": [{"type": "text", "text": "x" * 2500}],
        },
        {
            "role": "toolResult",
            "toolCallId": "2",
            "toolName": "read",
            "content": [{"type": "text", "text": "short"}],
        },
        {"role": "system", "content": "ignored"},
    ]
    text = serialize_conversation(convert_to_llm(messages))
    parts = text.split("\n\n")
    assert parts[0] == "[User]: hi"
    assert parts[1] == "[Assistant]: let me look"
    assert parts[2] == '[Assistant tool calls]: read(path="a.ts", limit=5)'
    assert parts[3] == "[Tool result]: " + "x" * 2000
    assert parts[4] == "[... 500 more characters truncated]"
    assert parts[5] == "[Tool result]: short"
    assert "secret" not in text and "ignored" not in text


def test_truncation_never_splits_a_surrogate_pair() -> None:
    text = "x" * 1999 + "😀" + "y" * 10
    out = serialize_conversation([{"role": "toolResult", "content": [{"type": "text", "text": text}]}])
    assert out.startswith("[Tool result]: " + "x" * 1999 + "\n\n[... 11 more")  # Pi counts from 2000
