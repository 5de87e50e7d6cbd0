"""The built-in extractive summarizer: each heading's extraction, merging, the size bound."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sessiond.compaction import CompactionSettings, FileOps, prepare_compaction
from sessiond.compaction.extractive import extract_summary
from sessiond.compaction.prepare import CompactionPreparation
from sessiond.compaction.summary import SummaryRequest, failure, requests_for
from sessiond.formats.pi import load_session
from sessiond.model.js import utf16_len
from sessiond.model.tree import SessionTree
from sessiond.service.summarizers.extractive import ExtractiveSummarizer
from tests.builders import assistant, tool_result, user
from tests.conftest import PI_FIXTURES

HISTORY_HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]
TURN_PREFIX_HEADINGS = ["## Original Request", "## Progress So Far", "## Context Needed to Continue"]


def summarize(
    messages: list[Any],
    *,
    previous: str | None = None,
    ops: FileOps | None = None,
    kind: Any = "history",
    max_chars: int = 12_000,
) -> str:
    return extract_summary(messages, previous_summary=previous, file_ops=ops, kind=kind, max_chars=max_chars)


def sections(text: str) -> dict[str, list[str]]:
    """Lines under each heading (``###`` headings are their own sections)."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.split("\n"):
        if line.startswith("#"):
            current = out.setdefault(line, [])
        elif line:
            current.append(line)
    return out


def headings(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("#")]


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def assistant_blocks(*blocks: dict[str, Any], stop: str = "toolUse") -> dict[str, Any]:
    message = assistant(stop=stop)
    message["content"] = list(blocks)
    return message


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def failed(text_: str, call_id: str, name: str) -> dict[str, Any]:
    result = tool_result(text_, call_id=call_id, name=name)
    result["isError"] = True
    return result


def bash_execution(command: str, output: str, exit_code: Any, **extra: Any) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": False,
        "truncated": False,
        "timestamp": 5,
        **extra,
    }


# --------------------------------------------------------------------------- headings


def test_history_has_exactly_pis_headings_in_order_even_when_empty() -> None:
    out = summarize([])
    assert headings(out) == HISTORY_HEADINGS
    s = sections(out)
    assert s["## Goal"] == ["- (none)"]
    assert s["## Constraints & Preferences"] == ["- (none)"]
    assert s["## Key Decisions"] == ["- (none)"]
    assert s["## Next Steps"] == ["1. Continue from the latest request."]
    assert s["## Critical Context"] == ["- (none)"]


def test_goal_is_the_first_and_latest_substantive_requests_custom_messages_included() -> None:
    messages = [
        user("ok"),
        user("Please build a command line parser for the config files"),
        assistant("Parser written and tested."),
        user("Please build a command line parser for the config files"),
        user("thanks"),
        {
            "role": "custom",
            "customType": "note",
            "content": "Now add YAML support to the parser too",
            "display": True,
        },
        assistant("Done with YAML."),
        user("wow"),
    ]
    goal = sections(summarize(messages))["## Goal"]
    assert goal == [
        "- Please build a command line parser for the config files",
        "- Now add YAML support to the parser too",
    ]


def test_a_multi_line_request_is_collapsed_and_clipped_on_a_word_boundary() -> None:
    long_request = "Rewrite the module\n\n" + "carefully " * 200
    goal = sections(summarize([user(long_request)]))["## Goal"]
    assert len(goal) == 1 and "\n" not in goal[0]
    assert goal[0].startswith("- Rewrite the module carefully carefully")
    assert goal[0].endswith("carefully…")
    assert utf16_len(goal[0]) <= 2 + 400


def test_images_are_mentioned_and_thinking_is_ignored() -> None:
    messages = [
        {
            "role": "user",
            "content": [
                text("What is wrong with the login page here?"),
                {"type": "image", "data": "", "mimeType": "x"},
            ],
        },
        assistant_blocks(
            {"type": "thinking", "thinking": "We decided to use Redis because it is fast."},
            text("The button overlaps the form."),
            stop="stop",
        ),
    ]
    s = sections(summarize(messages))
    assert s["## Goal"] == ["- What is wrong with the login page here? [image]"]
    assert s["## Key Decisions"] == ["- (none)"]
    assert s["### Done"] == ["- [x] The button overlaps the form."]


# --------------------------------------------------------------------------- constraints


def test_constraints_are_user_sentences_that_state_requirements() -> None:
    messages = [
        user(
            "Build the exporter. It must stream rows. Never load the whole file into memory!\n"
            "I prefer snake_case names. Don't touch the public API. Do we have tests?\n"
            "Make sure the CLI keeps working. Add mustard to the always-on list of condiments."
        ),
        {
            "role": "custom",
            "customType": "x",
            "content": [text("You should avoid global state.")],
            "display": False,
        },
    ]
    assert sections(summarize(messages))["## Constraints & Preferences"] == [
        "- It must stream rows.",
        "- Never load the whole file into memory!",
        "- I prefer snake_case names.",
        "- Don't touch the public API.",
        "- Make sure the CLI keeps working.",
        "- Add mustard to the always-on list of condiments.",  # "always" is a whole word there
        "- You should avoid global state.",
    ]


def test_words_inside_other_words_are_not_constraints() -> None:
    messages = [user("Add mustard to the shopping list and the alwaysOn flag to commonly used settings")]
    assert sections(summarize(messages))["## Constraints & Preferences"] == ["- (none)"]


# --------------------------------------------------------------------------- progress


def test_done_lists_final_answers_and_modified_files() -> None:
    ops = FileOps(
        read={"src/a.py": None, "src/b.py": None}, edited={"src/b.py": None}, written={"src/c.py": None}
    )
    messages = [
        user("Refactor the parser module please"),
        assistant_blocks(text("Let me look:"), call("t1", "read", path="src/e.py")),
        tool_result("contents", call_id="t1", name="read"),
        assistant_blocks(call("t2", "write", path="src/d.py", content="x")),
        tool_result("ok", call_id="t2", name="write"),
        assistant("I refactored the parser.\n\nAll 12 tests pass now.\n\nWant me to add more?"),
    ]
    s = sections(summarize(messages, ops=ops))
    assert s["### Done"] == [
        "- [x] Modified `src/b.py`",  # known from file_ops only: before the messages
        "- [x] Modified `src/c.py`",
        "- [x] Modified `src/d.py`",
        "- [x] All 12 tests pass now.",
    ]
    assert s["### In Progress"] == ["- (none)"]
    context = s["## Critical Context"]
    assert "- Read `src/a.py`" in context and "- Read `src/e.py`" in context
    assert "- Read `src/b.py`" not in context  # modified, so not read-only


def test_an_unanswered_request_is_in_progress_and_the_first_next_step() -> None:
    messages = [
        user("Add a --verbose flag to the CLI"),
        assistant("Added it.", stop="stop"),
        user("Now document the flag in the README"),
        assistant_blocks(
            text("Next I will update the README. TODO: add a changelog entry."),
            call("t1", "read", path="README.md"),
        ),
    ]
    s = sections(summarize(messages))
    assert s["### In Progress"] == ["- [ ] Now document the flag in the README"]
    assert s["## Next Steps"] == [
        "1. Finish the open request: Now document the flag in the README",
        "2. Next I will update the README.",
        "3. TODO: add a changelog entry.",
    ]


# --------------------------------------------------------------------------- blocked


def test_failures_are_blocked_with_their_exact_first_line() -> None:
    error = "FileNotFoundError: [Errno 2] No such file or directory: 'config.yaml'"
    messages = [
        user("Run the tests and fix what fails"),
        assistant_blocks(call("t1", "bash", command="pytest -x tests/")),
        failed(f"\n{error}\nTraceback (most recent call last):\n  ...\n", "t1", "bash"),
        assistant_blocks(call("t2", "edit", path="src/app.py", oldText="a", newText="b")),
        failed("Could not find the exact text in src/app.py.\nmore", "t2", "edit"),
        bash_execution("make build", "make: *** No rule to make target 'build'. Stop.\n", 2),
        bash_execution("make ok", "fine", 0),
        bash_execution("sleep 100", "", None, cancelled=True),
        bash_execution("cat secret", "boom", 1, excludeFromContext=True),
        assistant(stop="error", error="429 Too Many Requests\nretry later"),
        assistant("Let me look.", stop="aborted"),
    ]
    s = sections(summarize(messages))
    assert s["### Blocked"] == [
        f"- `bash` failed: {error} (`pytest -x tests/`)",
        "- `edit` failed: Could not find the exact text in src/app.py. (`src/app.py`)",
        "- `make build` exited with code 2: make: *** No rule to make target 'build'. Stop.",
        "- Assistant error: 429 Too Many Requests",
    ]
    context = s["## Critical Context"]
    assert "- Ran `pytest -x tests/`" in context
    assert "- User ran `make build`" in context and "- User ran `make ok`" in context
    assert not any("cat secret" in line for line in context)  # kept out of context by the user


def test_the_exact_error_line_goes_to_critical_context_when_it_is_not_the_first_line() -> None:
    output = "/repo/node_modules/tsx/dist/register.cjs:3\n  at foo\nError: Cannot find module './config.js'\n"
    messages = [assistant_blocks(call("t1", "bash", command="npx tsx cli.ts")), failed(output, "t1", "bash")]
    s = sections(summarize(messages))
    assert s["### Blocked"] == [
        "- `bash` failed: /repo/node_modules/tsx/dist/register.cjs:3 (`npx tsx cli.ts`)"
    ]
    assert "- `bash` error: Error: Cannot find module './config.js'" in s["## Critical Context"]


# --------------------------------------------------------------------------- decisions


def test_key_decisions_are_assistant_sentences_that_record_a_choice() -> None:
    messages = [
        user("Pick a database for the cache"),
        assistant(
            "I decided to use SQLite instead of Postgres. We'll use WAL mode because readers must not "
            "block writers. The tests pass."
        ),
    ]
    assert sections(summarize(messages))["## Key Decisions"] == [
        "- I decided to use SQLite instead of Postgres.",
        "- **We'll use WAL mode**: because readers must not block writers.",
    ]


# --------------------------------------------------------------------------- turn prefix


def test_turn_prefix_has_its_own_headings() -> None:
    ops = FileOps(read={"elsewhere.py": None}, edited={"elsewhere.py": None})
    messages = [
        user("Migrate the settings loader to TOML. It must stay backwards compatible."),
        assistant_blocks(
            text("Switching to tomllib instead of a custom parser."), call("t1", "edit", path="cfg.py")
        ),
        tool_result("ok", call_id="t1", name="edit"),
        assistant_blocks(call("t2", "bash", command="pytest -q")),
        failed("E assert 1 == 2", "t2", "bash"),
    ]
    out = summarize(messages, ops=ops, kind="turn_prefix")
    assert headings(out) == TURN_PREFIX_HEADINGS
    s = sections(out)
    assert s["## Original Request"] == [
        "- Migrate the settings loader to TOML. It must stay backwards compatible."
    ]
    assert s["## Progress So Far"] == [
        "- Modified `cfg.py`",
        "- Switching to tomllib instead of a custom parser.",
    ]
    assert s["## Context Needed to Continue"] == [
        "- It must stay backwards compatible.",
        "- `bash` failed: E assert 1 == 2 (`pytest -q`)",
        "- Ran `pytest -q`",
    ]
    assert "elsewhere.py" not in out  # the preparation's file_ops describe the whole compaction


# --------------------------------------------------------------------------- merging


PREVIOUS = """# Context Checkpoint

## Goal
Ship the exporter.

## Constraints & Preferences
- Keep it streaming

## Progress
### Done
- [x] Modified `src/b.py`
- [x] Wrote the CSV writer

### In Progress
- [ ] JSON writer

### Blocked
- (none)

## Key Decisions
- **CSV first**: users asked for it

## Next Steps
1. Write the JSON writer
2. Continue from the latest request.

## Critical Context
- Staging is at https://staging.example
  (behind the VPN)

## Notes
- remember the release date

<read-files>
src/old.py
</read-files>"""


def test_merging_keeps_previous_bullets_first_and_adds_new_ones_without_duplicates() -> None:
    ops = FileOps(edited={"src/b.py": None})
    messages = [
        user("Add the JSON writer next to the CSV one"),
        assistant("We'll use orjson because it is fast.\n\nThe JSON writer is in place.", stop="stop"),
        user("Keep it streaming"),  # not a new constraint line (no keyword) and not a duplicate goal
    ]
    out = summarize(messages, previous=PREVIOUS, ops=ops)
    assert headings(out) == HISTORY_HEADINGS
    s = sections(out)
    assert s["## Goal"][0] == "- Ship the exporter."
    assert "- Add the JSON writer next to the CSV one" in s["## Goal"]
    assert s["## Constraints & Preferences"] == ["- Keep it streaming"]
    assert s["### Done"] == [
        "- [x] Wrote the CSV writer",
        "- [x] Modified `src/b.py`",  # the newest occurrence wins the position
        "- [x] The JSON writer is in place.",
    ]
    assert s["### In Progress"][0] == "- [ ] JSON writer"
    assert s["### Blocked"] == ["- (none)"]
    assert s["## Key Decisions"] == [
        "- **CSV first**: users asked for it",
        "- **We'll use orjson**: because it is fast.",
    ]
    assert s["## Next Steps"][-1] == "2. Write the JSON writer"  # placeholders are not carried over
    context = s["## Critical Context"]
    assert context[:3] == [
        "- Context Checkpoint",
        "- Staging is at https://staging.example (behind the VPN)",
        "- Notes: remember the release date",
    ]
    assert "- Read `src/old.py`" in context


def test_merging_a_summary_into_itself_adds_nothing_twice() -> None:
    messages = [
        user("Add the JSON writer next to the CSV one"),
        assistant_blocks(call("t1", "bash", command="pytest"), call("t2", "edit", path="w.py")),
        failed("boom", "t1", "bash"),
        assistant("I chose orjson over json. All tests pass."),
    ]
    first = summarize(messages)
    second = summarize(messages, previous=first)
    bullets = [
        line for line in second.split("\n") if line and not line.startswith("#") and line != "- (none)"
    ]
    assert len(bullets) == len(set(bullets))
    assert set(sections(first)["### Done"]) <= set(sections(second)["### Done"])
    assert sections(first)["### Blocked"] == sections(second)["### Blocked"]


def test_a_free_text_previous_summary_lands_in_critical_context() -> None:
    out = summarize([], previous="We were porting the app to Rust.\nThe build is green.")
    assert sections(out)["## Critical Context"] == [
        "- We were porting the app to Rust.",
        "- The build is green.",
    ]


# --------------------------------------------------------------------------- size bound


def huge_conversation(turns: int) -> list[Any]:
    messages: list[Any] = []
    for i in range(turns):
        messages.append(
            user(f"Request {i}: you must handle case {i} and never break the API. " + "detail " * 40)
        )
        messages.append(
            assistant_blocks(
                text(f"We decided to use strategy {i} because it is simpler. Next I will run the suite {i}."),
                call(f"w{i}", "write", path=f"src/module_{i}.py"),
                call(f"b{i}", "bash", command=f"pytest tests/test_{i}.py"),
            )
        )
        messages.append(failed(f"AssertionError: case {i} failed\nmore", f"b{i}", "bash"))
        messages.append(assistant(f"Handled case {i}. " + "Everything is fine. " * 20, stop="stop"))
    return messages


@pytest.mark.parametrize("max_chars", [150, 400, 1_000, 5_000, 12_000])
def test_a_huge_conversation_fits_the_bound_with_every_heading(max_chars: int) -> None:
    messages = huge_conversation(1_500)
    out = summarize(messages, previous=PREVIOUS, max_chars=max_chars)
    assert utf16_len(out) <= max_chars
    assert headings(out) == HISTORY_HEADINGS
    turn = summarize(messages, max_chars=max_chars, kind="turn_prefix")
    assert utf16_len(turn) <= max_chars and headings(turn) == TURN_PREFIX_HEADINGS


def test_the_bound_drops_the_oldest_items_and_shares_fairly() -> None:
    out = summarize(huge_conversation(300), max_chars=6_000)
    s = sections(out)
    blocked = s["### Blocked"]
    assert any("case 299 failed" in line for line in blocked)
    assert not any("case 0 failed" in line for line in blocked)
    assert s["## Goal"][0].startswith("- Request 0:")  # the first request is kept longest
    assert s["## Goal"][-1].startswith("- Request 299:")
    for heading in ("### Done", "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"):
        assert s[heading] and s[heading] != ["- (none)"], heading
    for line in out.split("\n"):
        if line.endswith("…"):  # clipped at a word boundary
            assert line[-2] != " "


def test_the_bound_counts_utf16_units() -> None:
    emoji = "😀 " * 3_000
    out = summarize([user("Please draw " + emoji), assistant("😀 done " * 500, stop="stop")], max_chars=500)
    assert utf16_len(out) <= 500
    assert headings(out) == HISTORY_HEADINGS


def test_a_bound_below_the_headings_keeps_whole_heading_lines() -> None:
    out = summarize(huge_conversation(3), max_chars=40)
    assert utf16_len(out) <= 40
    assert out.split("\n") == ["## Goal", "## Constraints & Preferences"]
    assert summarize([], max_chars=0) == ""


# --------------------------------------------------------------------------- robustness


def test_the_same_input_gives_the_same_bytes() -> None:
    messages = huge_conversation(50)
    ops = FileOps(read={"a": None}, edited={"b": None})
    first = summarize(messages, previous=PREVIOUS, ops=ops, max_chars=3_000)
    second = summarize(copy.deepcopy(messages), previous=PREVIOUS, ops=copy.deepcopy(ops), max_chars=3_000)
    assert first.encode() == second.encode()


def test_odd_messages_do_not_raise() -> None:
    odd: list[Any] = [
        None,
        5,
        "text",
        [],
        {},
        {"role": None},
        {"role": ["user"]},
        {"role": "user", "content": None},
        {"role": "user", "content": 42},
        {
            "role": "user",
            "content": [None, 3, {"type": "text", "text": 7}, {"type": "image"}, "loose string"],
        },
        {"role": "custom", "content": {"not": "a list"}},
        {"role": "assistant", "content": "a plain string answer"},
        {"role": "assistant", "content": None, "stopReason": "error", "errorMessage": 12},
        {
            "role": "assistant",
            "content": [
                None,
                {"type": "toolCall"},
                {"type": "toolCall", "name": "write", "arguments": "not a dict"},
                {"type": "toolCall", "name": "bash", "arguments": {"command": ["x"]}},
                {"type": "toolCall", "name": 3, "id": 4, "arguments": {"path": 5}},
                {"type": "text", "text": None},
                {"type": "thinking"},
            ],
        },
        {"role": "toolResult", "isError": True, "content": None},
        {"role": "toolResult", "isError": True, "toolName": None, "toolCallId": ["x"], "content": 5},
        {"role": "bashExecution", "exitCode": "1", "command": None, "output": None},
        {"role": "bashExecution", "exitCode": float("nan"), "command": 5},
        {"role": "bashExecution", "exitCode": True, "command": "true"},
        {"role": "bashExecution", "exitCode": 1.0, "command": "false", "output": 3},
        {"role": "branchSummary", "summary": 5},
        {"role": "branchSummary", "summary": "## Goal\n- from a branch\n```\nunterminated"},
        {"role": "compactionSummary", "summary": None},
        {"role": "hookMessage", "content": "ignored"},
        {"role": "system", "content": "You must be terse."},
    ]
    for kind in ("history", "turn_prefix", "something else"):
        out = summarize(odd, previous="<read-files>\nunterminated", ops=FileOps(), kind=kind, max_chars=2_000)
        assert utf16_len(out) <= 2_000
        assert headings(out) == (TURN_PREFIX_HEADINGS if kind == "turn_prefix" else HISTORY_HEADINGS)
    out = summarize(odd)
    assert "- a plain string answer" not in sections(out)["## Constraints & Preferences"]
    assert "[x] a plain string answer" in out
    assert "from a branch" in out
    assert "You must be terse" not in out  # system messages are not the user's words
    assert "`false` exited with code 1" in out


# --------------------------------------------------------------------------- the summarizer


def request(messages: list[Any], max_tokens: int, kind: Any = "history") -> SummaryRequest:
    return SummaryRequest(
        kind=kind,
        system_prompt="",
        prompt="",
        conversation="",
        previous_summary=None,
        custom_instructions=None,
        max_tokens=max_tokens,
        messages=messages,
        file_ops=FileOps(written={"src/new.py": None}),
    )


def test_the_bound_is_four_characters_per_token_up_to_twelve_thousand() -> None:
    summarizer = ExtractiveSummarizer()
    assert summarizer.name == "extractive"
    assert summarizer.max_chars_for(request([], 100)) == 400
    assert summarizer.max_chars_for(request([], 100_000)) == 12_000


@pytest.mark.anyio
async def test_the_summarizer_answers_with_a_checkpoint() -> None:
    messages = huge_conversation(20)
    response = await ExtractiveSummarizer().summarize(request(messages, 500))
    assert response.stop_reason == "stop"
    assert failure(response, "Summarization") is None
    assert headings(response.text) == HISTORY_HEADINGS
    assert utf16_len(response.text) <= 2_000
    # in a worker thread (large inputs) the answer is the same
    threaded = await ExtractiveSummarizer(thread_threshold=0).summarize(request(messages, 500))
    assert threaded.text == response.text


@pytest.mark.anyio
async def test_the_summarizer_on_a_real_pi_session() -> None:
    loaded = load_session(PI_FIXTURES / "before-compaction.v1.jsonl")
    prep = prepare_compaction(SessionTree(loaded.entries).branch(), CompactionSettings(True, 16384, 20000))
    assert isinstance(prep, CompactionPreparation)
    requests = requests_for(prep, None, 4000)
    assert [r.kind for r in requests] == ["history", "turn_prefix"]
    paths = {
        block["arguments"]["path"]
        for r in requests
        for m in r.messages
        if m.get("role") == "assistant"
        for block in m["content"]
        if block.get("type") == "toolCall" and isinstance(block.get("arguments", {}).get("path"), str)
    }
    assert paths
    summarizer = ExtractiveSummarizer()
    for req in requests:
        response = await summarizer.summarize(req)
        assert failure(response, "Summarization") is None
        expected = HISTORY_HEADINGS if req.kind == "history" else TURN_PREFIX_HEADINGS
        assert headings(response.text) == expected
        assert utf16_len(response.text) <= summarizer.max_chars_for(req)
        assert any(path in response.text for path in paths)
