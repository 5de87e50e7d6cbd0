"""The fast Codex reader gives what the plain one gave: the same records, entries, ids, parent
links, context and diagnostics, byte for byte (``orjson.dumps`` of each, key order included).

The plain reader is kept frozen in ``tests/formats/codex_reference`` (main before the reader was
made fast). Both read every Codex fixture of the repository, whole and in pieces cut anywhere
(a followed file), forks with their inherited history, and generated rollouts of the odd
shapes: compactions (remote and summary-only), model switches, rollbacks, aborted turns,
reasoning, every kind of call and output, unknown and bookkeeping records, the earliest
layout, damaged lines, odd timestamps and an unterminated last line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiond.formats.codex import records as new_records
from sessiond.formats.codex import thread as new_thread
from sessiond.store.codex import load_history_base, replay
from tests.formats.codex_reference import records as old_records
from tests.formats.codex_reference import thread as old_thread

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
ROLLOUTS = sorted(FIXTURES.rglob("*.jsonl"))


def _read(records: Any, thread: Any, data: bytes, cuts: tuple[int, ...] = ()) -> bytes:
    """Everything a reader makes of ``data`` fed up to each cut in turn, as JSON bytes."""
    rollout = records.Rollout("rollout.jsonl")
    t = thread.Thread()
    steps: list[Any] = []
    for cut in (*cuts, len(data)):
        before = len(rollout.records)
        records.extend_rollout(rollout, data[rollout.bytes_read : cut])
        entries = t.feed(rollout.records[before:])
        steps.append([entries, t.leaf_id, t.context(), t.diagnostics.as_json(), _token(t)])
    return orjson.dumps(
        {
            "records": [[r.line, r.timestamp, r.type, r.payload] for r in rollout.records],
            "diagnostics": rollout.diagnostics.as_json(),
            "meta": rollout.meta,
            "bytesRead": rollout.bytes_read,
            "steps": steps,
            "thread": [t.model, t.provider, t.window, t.last_line, t.last_timestamp],
            "path": [list(n) if type(n) is tuple else [n.id, n.turn, n.contextual] for n in t.path],
        }
    )


def _token(t: Any) -> Any:
    info = t.token_info
    return None if info is None else [info.total, info.last, info.window, info.line]


def assert_same(data: bytes, cuts: tuple[int, ...] = ()) -> None:
    old = _read(old_records, old_thread, data, cuts)
    new = _read(new_records, new_thread, data, cuts)
    assert new == old


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: f"{p.parent.name}/{p.name[-20:]}")
def test_every_fixture_reads_the_same_whole_and_in_pieces(path: Path) -> None:
    data = path.read_bytes()
    assert_same(data)
    n = len(data)
    assert_same(data, (n // 7, n // 3 + 1, n // 2, n - 5))


def test_a_fork_reads_its_inherited_history_the_same() -> None:
    """A paginated fork's parent history (``B…`` ids) fed before its own records (the parent's
    bytes are read alike: it is one of the fixtures above)."""
    fork = next(p for p in ROLLOUTS if p.name.endswith("571248d3902f.jsonl"))
    base, info = load_history_base(fork, new_records.parse_rollout(fork.read_bytes()).meta)
    assert info is not None and info["found"] and base
    results = []
    for records, thread in ((old_records, old_thread), (new_records, new_thread)):
        t = thread.Thread()
        entries = replay(t, records.parse_rollout(fork.read_bytes()).records, base)
        results.append(orjson.dumps([entries, t.leaf_id, t.context(), t.diagnostics.as_json(), _token(t)]))
    assert results[0] == results[1]


# --------------------------------------------------------------------------- generated rollouts

TIMESTAMPS = st.sampled_from(
    [
        "2026-03-01T10:00:00.000Z",
        "2026-03-01T10:00:01.250Z",
        "2026-03-01T23:59:59.999Z",
        "2026-03-01T10:00:00Z",
        "2026-03-01T10:00:00.123456Z",
        "2026-03-01T10:00:00.000+02:00",
        "2026-02-30T10:00:00.000Z",
        "1969-12-31T23:59:59.999Z",
        "not a date",
        "",
    ]
)
TEXTS = st.sampled_from(
    [
        "hello",
        "",
        "  <environment_context>cwd</environment_context>  ",
        "<user_instructions>be brief</user_instructions>",
        "<turn_aborted>interrupted</turn_aborted>",
        "# AGENTS.md instructions for /w\n<INSTRUCTIONS>x</INSTRUCTIONS>",
        "<permissions instructions>sandbox",
        "<SKILL>x</skill>",
        "#not agents",
        "<b>bold</b>",
        "x" * 90_000,
    ]
)
ROLES = st.sampled_from(["user", "assistant", "developer", "system", "tool", None, 5])
CALL_IDS = st.sampled_from(["call_1", "call_2", "call_3", "", None])


def _part(kind: str, text: str) -> dict[str, Any]:
    if kind == "input_image":
        return {"type": kind, "image_url": "data:image/png;base64,AAAA" if text else "https://x/y.png"}
    if kind == "refusal":
        return {"type": kind, "refusal": text}
    return {"type": kind, "text": text}


PARTS = st.builds(
    _part, st.sampled_from(["input_text", "output_text", "text", "refusal", "input_image", "audio"]), TEXTS
)
CONTENT = st.one_of(st.lists(PARTS, max_size=3), TEXTS, st.none(), st.just([1, "x"]))
ARGUMENTS = st.sampled_from(
    ['{"cmd": ["ls"]}', "[REDACTED_ARGUMENTS len=77]", "[1, 2]", "[ ]", "", "5", "{bad", None, {"a": 1}, [1]]
)
OUTPUTS = st.sampled_from(
    [
        "ok",
        "",
        None,
        3,
        {"content": "done", "success": False},
        {"body": "b"},
        [{"type": "input_text", "text": "t"}],
    ]
)


def _item(kind: str, role: Any, content: Any, cid: Any, args: Any, output: Any, text: str) -> dict[str, Any]:
    item: dict[str, Any] = {"type": kind}
    if kind == "message":
        item.update(role=role, content=content)
    elif kind == "reasoning":
        item.update(summary=[{"type": "summary_text", "text": text}] if text else [], content=content)
        if not text:
            item["encrypted_content"] = "gAAAA"
    elif kind in ("function_call", "tool_search_call"):
        item.update(name="shell", arguments=args, call_id=cid)
    elif kind == "custom_tool_call":
        item.update(name="apply_patch", input=text, call_id=cid)
    elif kind in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
        item.update(call_id=cid, output=output)
    elif kind == "local_shell_call":
        item.update(call_id=cid, action={"type": "exec", "command": ["ls"]}, status="completed")
    elif kind in ("web_search_call", "image_generation_call"):
        item.update(id=cid, status="completed", action={"query": text[:10]}, revised_prompt="p")
    elif kind in ("compaction", "context_compaction"):
        item.update(encrypted_content="e" * len(text[:50]))
    elif kind == "ghost_snapshot":
        item.update(ghost_commit={"id": "g"}, note="n", count=1, ok=True)
    return item


ITEMS = st.builds(
    _item,
    st.sampled_from(
        [
            "message",
            "message",
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "custom_tool_call",
            "custom_tool_call_output",
            "local_shell_call",
            "web_search_call",
            "image_generation_call",
            "tool_search_call",
            "tool_search_output",
            "compaction",
            "context_compaction",
            "ghost_snapshot",
            "compaction_trigger",
            "other",
            "mystery_item",
        ]
    ),
    ROLES,
    CONTENT,
    CALL_IDS,
    ARGUMENTS,
    OUTPUTS,
    TEXTS,
)
TOKEN_INFO = st.one_of(
    st.none(),
    st.builds(
        lambda n, window, last_dict: {
            "total_token_usage": {"input_tokens": n * 2, "output_tokens": n},
            "last_token_usage": {
                "input_tokens": n,
                "cached_input_tokens": n // 2,
                "output_tokens": 7,
                "total_tokens": 0,
            }
            if last_dict
            else "n/a",
            "model_context_window": window,
        },
        st.integers(0, 10_000),
        st.sampled_from([258400, 0, None, "big"]),
        st.booleans(),
    ),
)


def _token_count(info: Any) -> dict[str, Any]:
    return {"type": "token_count", "info": info, "rate_limits": {"primary": None}}


EVENTS = st.one_of(
    st.builds(_token_count, TOKEN_INFO),
    st.builds(
        lambda w: {"type": "task_started", "model_context_window": w}, st.sampled_from([128000, -1, None])
    ),
    st.builds(
        lambda n: {"type": "thread_rolled_back", "num_turns": n}, st.sampled_from([0, 1, 2, 9, -1, "2"])
    ),
    st.just({"type": "turn_aborted", "reason": "interrupted"}),
    st.builds(lambda t: {"type": "user_message", "message": t}, TEXTS),
    st.just({"type": "agent_message", "message": "hi"}),
    st.just({"type": "item_completed"}),
    st.just({"type": "thread_settings_applied"}),
    st.just({"type": 7}),
    st.just({"type": ["token_count"]}),
    st.just({"type": {"nested": 1}}),
)
REPLACEMENT = st.lists(ITEMS, max_size=4)


def _compacted(summary: Any, replacement: Any) -> Any:
    payload: dict[str, Any] = {"message": summary}
    if replacement is not None:
        payload["replacement_history"] = replacement
    return payload


def _record(kind: str, payload: Any, ts: str) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _meta(instructions: Any, provider: Any) -> dict[str, Any]:
    return {"id": "t-1", "cwd": "/w", "model_provider": provider, "base_instructions": {"text": instructions}}


LINES = st.one_of(
    st.builds(lambda item, ts: orjson.dumps(_record("response_item", item, ts)), ITEMS, TIMESTAMPS),
    st.builds(lambda item, ts: orjson.dumps(_record("response_item", item, ts)), ITEMS, TIMESTAMPS),
    st.builds(lambda event, ts: orjson.dumps(_record("event_msg", event, ts)), EVENTS, TIMESTAMPS),
    st.builds(
        lambda model, ts: orjson.dumps(_record("turn_context", {"model": model, "cwd": "/w"}, ts)),
        st.sampled_from(["gpt-5", "gpt-5", "gpt-5.2-codex", "", None, 4]),
        TIMESTAMPS,
    ),
    st.builds(
        lambda s, r, ts: orjson.dumps(_record("compacted", _compacted(s, r), ts)),
        st.sampled_from(["summary of the work", "", None]),
        st.one_of(st.none(), REPLACEMENT),
        TIMESTAMPS,
    ),
    st.builds(
        lambda i, p, ts: orjson.dumps(_record("session_meta", _meta(i, p), ts)),
        st.sampled_from(["You are Codex.", "  ", None]),
        st.sampled_from(["openai", "", None]),
        TIMESTAMPS,
    ),
    st.sampled_from(
        [
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"compacted","payload":"old summary"}',
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"compacted","payload":null}',
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"response_item","payload":[1]}',
            b'{"timestamp":5,"type":"response_item","payload":{"type":"message","role":"user","content":"hi"}}',
            b'{"type":"event_msg","payload":{"type":"turn_aborted"}}',
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"world_state","payload":{}}',
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"token_usage_record","payload":{}}',
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"something_new","payload":{}}',
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":["x"],"payload":{}}',
            b'{"record_type":"state"}',
            b'{"id":"legacy-1","timestamp":"2025-04-01T00:00:00Z","instructions":"be good"}',
            b'{"type":"message","role":"user","content":[{"type":"input_text","text":"legacy"}]}',
            b'{"type":"function_call","name":"shell","arguments":"{}","call_id":"call_1"}',
            b"[1, 2, 3]",
            b'"just a string"',
            b"",
            b"   ",
            b"\r",
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"response_item","payload":{"type":"mess',
            b"\xff\xfe not json",
            b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":'
            b'{"last_token_usage":{"input_tokens":99999999999999999999}}}}',
        ]
    ),
)


def _turn(prompt: str, call: str, usage: int, ts: str) -> list[bytes]:
    """One whole turn as Codex writes it: a prompt, a response with a call, its output, the
    answer and the response's token count."""
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"cmd": "ls"}', "call_id": call},
        {"type": "function_call_output", "call_id": call, "output": "a b"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    out = [orjson.dumps(_record("response_item", item, ts)) for item in items]
    info = {"last_token_usage": {"input_tokens": usage, "output_tokens": 3}, "model_context_window": 9000}
    out.append(orjson.dumps(_record("event_msg", _token_count(info), ts)))
    return out


TURNS = st.builds(_turn, TEXTS, CALL_IDS.map(str), st.integers(0, 99), TIMESTAMPS)
GROUPS = st.one_of(LINES.map(lambda line: [line]), TURNS)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    groups=st.lists(GROUPS, min_size=0, max_size=30),
    torn=st.booleans(),
    cuts=st.lists(st.integers(0, 1 << 16), max_size=3),
)
def test_generated_rollouts_read_the_same(groups: list[list[bytes]], torn: bool, cuts: list[int]) -> None:
    lines = [line for group in groups for line in group]
    data = b"\n".join(lines) + (b"" if torn or not lines else b"\n")
    assert_same(data)
    assert_same(data, tuple(sorted(c % (len(data) + 1) for c in cuts)))


def test_usage_after_a_compaction_or_a_rollback_goes_where_it_went() -> None:
    """A token count right after the history was replaced gives its usage to the replacement's
    last model item (a compaction) or to the last one the rollback kept."""
    ts = "2026-03-01T10:00:00.000Z"
    replacement = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "kept"}]},
    ]
    info = {"last_token_usage": {"input_tokens": 42, "output_tokens": 1}}
    count = orjson.dumps(_record("event_msg", _token_count(info), ts))
    for middle in (
        [orjson.dumps(_record("compacted", _compacted("s", replacement), ts))],
        [orjson.dumps(_record("compacted", _compacted("s", None), ts))],
        [orjson.dumps(_record("event_msg", {"type": "thread_rolled_back", "num_turns": 1}, ts))],
    ):
        lines = [*_turn("one", "c1", 5, ts), *_turn("two", "c2", 6, ts), *middle, count]
        assert_same(b"\n".join(lines) + b"\n")
