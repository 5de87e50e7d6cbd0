"""The Codex reader's rules, one at a time (the fixtures' full results are in the goldens)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.codex import Thread, extend_rollout, parse_rollout
from sessiond.formats.codex.records import looks_like_rollout
from sessiond.formats.codex.thread import COMPACT_USER_MESSAGE_MAX_TOKENS, _ms
from sessiond.model.js import date_ms
from sessiond.store.codex import CodexSession

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
ROLLBACK = next((FIXTURES / "synthetic-home" / "sessions").rglob("*00000000000a.jsonl"))
COMPACTED = next((FIXTURES / "localpush-0.104").glob("*12-54-34*.jsonl"))
REAL = sorted(p for p in FIXTURES.rglob("rollout-*.jsonl"))


def line(kind: str, payload: Any, ts: str = "2026-03-01T10:00:00.000Z") -> bytes:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}).encode() + b"\n"


def user(text: str) -> bytes:
    return line(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
    )


def assistant(text: str) -> bytes:
    return line(
        "response_item",
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
    )


META = line("session_meta", {"id": "t-1", "cwd": "/w", "cli_version": "0.99.0", "model_provider": "openai"})


def context_texts(thread: Thread) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for _, m in thread.context():
        blocks = m["content"]
        text = " ".join(str(b.get("text", b.get("name", ""))) for b in blocks if isinstance(b, dict))
        out.append((m["role"], text))
    return out


def replay(data: bytes) -> Thread:
    thread = Thread()
    thread.feed(parse_rollout(data).records)
    return thread


@pytest.mark.parametrize("path", [ROLLBACK, COMPACTED], ids=lambda p: p.parent.name)
def test_feeding_in_pieces_equals_feeding_once(path: Path) -> None:
    """Following a growing file (any split, torn lines included) ends where a cold read does."""
    data = path.read_bytes()
    whole = Thread()
    whole_entries = whole.feed(parse_rollout(data).records)
    for step in (1, 7, 4096, 65537):
        rollout = parse_rollout(b"")
        thread = Thread()
        entries: list[Any] = []
        pos = 0
        while pos < len(data):
            chunk = data[rollout.bytes_read : pos + step]
            before = len(rollout.records)
            extend_rollout(rollout, chunk)
            entries += thread.feed(rollout.records[before:])
            pos += step
        extend_rollout(rollout, data[rollout.bytes_read :])
        assert rollout.bytes_read == len(data) and not rollout.diagnostics.torn_tail
        assert entries == whole_entries
        assert thread.context() == whole.context()
        assert thread.leaf_id == whole.leaf_id


def test_rollback_drops_the_last_turns_and_the_context_injected_before_them() -> None:
    env = "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"
    data = META + user(env) + user("one") + assistant("1") + user("two") + assistant("2")
    data += user(env) + user("three") + assistant("3")
    data += line("event_msg", {"type": "thread_rolled_back", "num_turns": 2}) + user("four") + assistant("4")
    thread = replay(data)
    assert context_texts(thread) == [
        ("user", env),
        ("user", "one"),
        ("assistant", "1"),
        ("user", "four"),
        ("assistant", "4"),
    ]
    assert thread.diagnostics.rolled_back_turns == 2
    # More turns than there are: everything before the first turn survives.
    thread = replay(
        META + user(env) + user("one") + line("event_msg", {"type": "thread_rolled_back", "num_turns": 9})
    )
    assert context_texts(thread) == [("user", env)]


def test_the_tree_keeps_rolled_back_turns_as_a_branch_and_context_for_reads_them() -> None:
    session = CodexSession.open(ROLLBACK)
    ids = set(session.branch_ids())
    dropped = [e for e in session.entries() if e["id"] not in ids]
    assert dropped, "the rolled-back turns are still in the tree"
    texts = {b.get("text") for e in dropped if e["type"] == "message" for b in e["message"]["content"]}
    assert {"delete b.txt", "and a.txt too"} <= texts
    # The context as of an entry of the dropped branch is what Codex had then.
    deleted = next(
        e
        for e in dropped
        if e["type"] == "message" and {"type": "text", "text": "Deleted b.txt."} in e["message"]["content"]
    )
    projection = session.context_for(session.tree.branch(deleted["id"]))
    users = [m["content"][0]["text"] for m in projection.messages if m["role"] == "user"]
    assert users[-1] == "delete b.txt"
    assert session.context().messages[-1]["content"][0]["text"] == "There is no README in /work/demo."


def test_summary_only_compaction_keeps_recent_prompts_within_the_budget() -> None:
    big = "x" * (COMPACT_USER_MESSAGE_MAX_TOKENS * 4 // 3)  # each prompt is a third of the budget
    data = META + user("<environment_context>\n</environment_context>")
    for i in range(6):
        data += user(f"{i} {big}") + assistant(f"a{i}")
    data += line("compacted", {"message": "SUMMARY"})
    thread = replay(data)
    texts = [t for role, t in context_texts(thread) if role == "user"]
    assert texts[0].startswith("<environment_context>")
    assert texts[-1] == "SUMMARY"
    kept = texts[1:-1]
    assert [t.split()[0] for t in kept] == ["3", "4", "5"]  # the newest, oldest cut to fit
    assert sum(-(-len(t.encode()) // 4) for t in kept) <= COMPACT_USER_MESSAGE_MAX_TOKENS


def test_calls_are_paired_outputs_dropped_and_missing_outputs_made_up() -> None:
    call = line(
        "response_item",
        {"type": "function_call", "name": "shell", "arguments": '{"cmd":"ls"}', "call_id": "c1"},
    )
    other = line(
        "response_item",
        {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin", "call_id": "c2"},
    )
    out1 = line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a\n"})
    orphan = line("response_item", {"type": "function_call_output", "call_id": "nope", "output": "?"})
    thread = replay(META + user("go") + call + other + orphan + out1)
    roles = [(m["role"], m.get("toolCallId")) for _, m in thread.context()]
    assert roles == [("user", None), ("assistant", None), ("toolResult", "c1"), ("toolResult", "c2")]
    messages = [m for _, m in thread.context()]
    assert messages[1]["content"][0]["arguments"] == {"cmd": "ls"} and messages[1]["stopReason"] == "toolUse"
    assert messages[2]["toolName"] == "shell" and messages[3]["content"][0]["text"] == "aborted"
    assert thread.diagnostics.synthetic_results == 1 and thread.diagnostics.dropped_results == 1


def test_usage_comes_from_the_last_token_count_and_the_window_from_the_model() -> None:
    usage = {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50, "total_tokens": 1050}
    tc = line(
        "event_msg",
        {
            "type": "token_count",
            "info": {"last_token_usage": usage, "total_token_usage": usage, "model_context_window": 272000},
        },
    )
    thread = replay(META + user("hi") + assistant("hello") + tc)
    last = thread.context()[-1][1]
    assert (
        last["usage"]["input"] == 200
        and last["usage"]["cacheRead"] == 800
        and last["usage"]["totalTokens"] == 1050
    )
    assert thread.window == 272000


def test_unknown_records_and_items_are_counted_never_fatal() -> None:
    data = META + b'{"timestamp":"x","type":"future_record","payload":{}}\n' + b"not json\n" + b"[1]\n\n"
    data += line("response_item", {"type": "hologram", "x": 1}) + user("still here")
    rollout = parse_rollout(data + b'{"timestamp":"x","type":"resp')  # and a torn last line
    thread = Thread()
    thread.feed(rollout.records)
    d = rollout.diagnostics
    assert (d.unparsable_lines, d.not_objects, d.blank_lines) == (1, 1, 1)
    assert d.unknown_record_types == {"future_record": 1} and d.torn_tail
    assert thread.diagnostics.unknown_items == {"hologram": 1}
    assert context_texts(thread) == [("user", "still here")]


def test_rollout_detection() -> None:
    for path in REAL:
        assert looks_like_rollout(path.read_bytes()[:4096]), path
    assert not looks_like_rollout(b'{"type":"session","version":3,"id":"x"}\n')
    assert not looks_like_rollout(b'{"parentUuid":null,"type":"user","uuid":"u"}\n')
    assert not looks_like_rollout(b"")


def test_a_rollout_that_grows_is_ingested_and_a_replaced_one_reloaded(tmp_path: Path) -> None:
    data = ROLLBACK.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    path = tmp_path / ROLLBACK.name
    path.write_bytes(data[:cut] + data[cut : cut + 10])  # and half a line
    session = CodexSession.open(path)
    count = session.entry_count
    with open(path, "ab") as f:
        f.write(data[cut + 10 :])
    result = session.ingest()
    assert result.reload_required is None and result.entries
    cold = CodexSession.open(ROLLBACK)
    assert [e["id"] for e in session.entries()] == [e["id"] for e in cold.entries()]
    assert session.entry_count == count + len(result.entries)
    assert session.context().messages == cold.context().messages
    assert session.leaf_id == cold.leaf_id
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(data)
    replacement.replace(path)
    assert session.ingest().reload_required == "the file was replaced"


def test_the_fast_timestamp_path_agrees_with_javascript_dates() -> None:
    stamps = {r.timestamp for path in REAL for r in parse_rollout(path.read_bytes()).records}
    stamps |= {"2026-02-23T11:48:09.999Z", "1970-01-01T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "", "x"}
    for stamp in stamps:
        expected = date_ms(stamp)
        assert _ms(stamp) == (int(expected) if expected == expected else 0), stamp


REAL_0169 = FIXTURES / "real-0.169" / "sessions"
PARENT_0169 = next(REAL_0169.rglob("*-2e4bc40ca09f.jsonl"))
FORK_0169 = next(REAL_0169.rglob("*-571248d3902f.jsonl"))


def without_timestamps(messages: list[Any]) -> list[Any]:
    return [{k: v for k, v in m.items() if k != "timestamp"} for m in messages]


def test_the_base_instructions_are_the_first_message_marked_as_the_system_prompt() -> None:
    session = CodexSession.open(PARENT_0169)
    meta = json.loads(PARENT_0169.read_bytes().split(b"\n", 1)[0])["payload"]
    first = session.context().messages[0]
    assert first["role"] == "custom" and first["customType"] == "codex.instructions"
    assert first["content"] == [{"type": "text", "text": meta["base_instructions"]["text"]}]
    assert first["details"] == {"systemPrompt": True, "source": "session_meta.base_instructions"}
    root = session.entries()[0]
    assert root["id"] == "L1" and root["type"] == "custom_message" and root["parentId"] is None
    assert root["details"]["systemPrompt"] is True
    # A rollout that recorded none (the earliest builds) has no such message.
    thread = Thread()
    thread.feed(parse_rollout(line("session_meta", {"id": "x"}) + user("hi")).records)
    assert [m["role"] for _, m in thread.context()] == ["user"]


def test_codex_0_169_bookkeeping_records_are_named_not_unknown() -> None:
    rollout = parse_rollout(PARENT_0169.read_bytes())
    d = rollout.diagnostics
    assert d.unknown_record_types == {}
    assert set(d.bookkeeping) == {
        "world_state",
        "token_usage_record",
        "event_msg/item_completed",
        "event_msg/thread_settings_applied",
    }
    assert not any(r.type == "world_state" for r in rollout.records)


def test_a_paginated_fork_resumes_with_its_parents_history_up_to_the_offset() -> None:
    parent = CodexSession.open(PARENT_0169)
    fork = CodexSession.open(FORK_0169)
    meta = json.loads(FORK_0169.read_bytes().split(b"\n", 1)[0])["payload"]
    assert meta["history_mode"] == "paginated"
    assert meta["history_base"]["end_byte_offset"] == PARENT_0169.stat().st_size
    inherited = parent.context().messages
    mine = fork.context().messages
    assert without_timestamps(mine[: len(inherited)]) == without_timestamps(inherited)
    assert [m["content"][0]["text"] for m in mine[len(inherited) :] if m["role"] == "user"] == [
        "in the fork",
        "continue the fork",
    ]
    ids = [e["id"] for e in fork.entries()]
    assert ids[0] == "L1" and ids[1].startswith("BL") and ids[-1].startswith("L")
    assert fork.diagnostics.as_json()["historyBase"]["found"] is True
    # Inside the inherited history, the context is the parent's at that line.
    tree_ids = [e["id"] for e in parent.entries()]
    at = tree_ids[len(tree_ids) // 2]
    branch = fork.branch(f"B{at}")
    assert without_timestamps(fork.context_for(branch).messages) == without_timestamps(
        parent.context_for(parent.branch(at)).messages
    )


def test_a_fork_whose_parent_is_gone_shows_its_own_history_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "codex" / "sessions" / "2026" / "12" / "05"
    home.mkdir(parents=True)
    (home / FORK_0169.name).write_bytes(FORK_0169.read_bytes())
    fork = CodexSession.open(home / FORK_0169.name)
    base = fork.diagnostics.as_json()["historyBase"]
    assert base["found"] is False and base["missing"] == "01a245a8-cc31-76d1-ad85-2e4bc40ca09f"
    users = [m["content"][0]["text"] for m in fork.context().messages if m["role"] == "user"]
    assert users == ["in the fork", "continue the fork"]
    assert not any(e["id"].startswith("B") for e in fork.entries())


def test_a_listing_counts_the_messages_of_a_0_169_rollout() -> None:
    """0.169 writes an assistant item's status and id before its role: the listing's fast count
    sees them, and counts what the tree holds as ``message`` entries (docs/concepts.md,
    "Messages"), a paginated fork's inherited ones too; the parsed count agrees on the file's own."""
    from sessiond.formats.codex import listing_fields  # noqa: PLC0415
    from sessiond.service.agent_roots import _codex_summary  # noqa: PLC0415

    counts = {}
    for path in (PARENT_0169, FORK_0169):
        info, _ = _codex_summary(path, 0)
        entries = CodexSession.open(path).entries()
        counts[path] = info.message_count
        assert info.message_count == sum(1 for e in entries if e["type"] == "message")
        own = sum(1 for e in entries if e["type"] == "message" and not e["id"].startswith("B"))
        assert listing_fields(parse_rollout(path.read_bytes()))["message_count"] == own
    assert counts == {PARENT_0169: 13, FORK_0169: 17}


@pytest.mark.parametrize("thread_id", ["*", "../sessions", "01a245a8-cc31-76d1-ad85-2e4bc40ca09[f]", ""])
def test_a_history_base_that_names_no_thread_is_not_followed(tmp_path: Path, thread_id: str) -> None:
    """The parent is looked up by the id the file names: never as a path or a glob pattern."""
    home = tmp_path / "codex" / "sessions" / "2026" / "12" / "05"
    home.mkdir(parents=True)
    (home / PARENT_0169.name).write_bytes(PARENT_0169.read_bytes())
    lines = FORK_0169.read_bytes().split(b"\n", 1)
    meta = json.loads(lines[0])
    meta["payload"]["history_base"]["thread_id"] = thread_id
    (home / FORK_0169.name).write_bytes(json.dumps(meta).encode() + b"\n" + lines[1])
    fork = CodexSession.open(home / FORK_0169.name)
    assert not any(e["id"].startswith("B") for e in fork.entries())
    base = fork.diagnostics.as_json()["historyBase"]
    assert base is None or base["found"] is False
