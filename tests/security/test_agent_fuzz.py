"""Hostile Codex rollouts and OpenCode rows: the readers never crash, hang or lie.

The contract (docs/security.md): the Codex reader (``parse_rollout``, the thread replay, the
context) and the OpenCode reader (``build_session``, ``convert``) never raise on content;
what they skip is counted. Inputs: random bytes, real rollouts with lines dropped, duplicated,
cut or replaced by junk, records of the right types with payloads of the wrong shapes, and
OpenCode rows with arbitrary JSON in every field. Every run is bounded in time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sessiond.formats.codex import Thread, parse_rollout
from sessiond.formats.opencode import build_session, convert
from tests.security.fuzz import fuzz

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROLLOUT_LINES = (
    next((FIXTURES / "codex" / "localpush-0.104").glob("*20-34-25*.jsonl")).read_bytes().splitlines()
)
ROLLBACK_LINES = (
    next((FIXTURES / "codex" / "synthetic-home" / "sessions").rglob("*0a.jsonl")).read_bytes().splitlines()
)
SAMPLE = ROLLOUT_LINES + ROLLBACK_LINES
BUDGET_SECONDS = 10.0

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
KINDS = ["session_meta", "response_item", "compacted", "turn_context", "event_msg", "other"]
ITEM_TYPES = [
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "compaction",
    "ghost_snapshot",
    "token_count",
    "thread_rolled_back",
    "unknown",
]


def read_codex(data: bytes) -> None:
    start = time.monotonic()
    rollout = parse_rollout(data)
    thread = Thread()
    entries = thread.feed(rollout.records)
    thread.context()
    d = rollout.diagnostics
    complete = data[: data.rfind(b"\n") + 1]
    lines = complete.split(b"\n")[:-1] if complete else []
    assert d.lines == len(lines)
    assert d.blank_lines == sum(1 for line in lines if not line.strip())
    assert d.torn_tail == (not data.endswith(b"\n") and bool(data))
    assert (
        len(rollout.records)
        + d.blank_lines
        + d.unparsable_lines
        + d.not_objects
        + sum(d.unknown_record_types.values())
        + sum(d.bookkeeping.values())
        <= d.lines
    )
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "entry ids are unique"
    assert all(e["parentId"] is None or e["parentId"] in ids for e in entries)
    assert time.monotonic() - start < BUDGET_SECONDS


@fuzz(150)
@given(st.binary(max_size=4096))
def test_random_bytes(data: bytes) -> None:
    read_codex(data)


@fuzz(150)
@given(
    st.lists(
        st.sampled_from(SAMPLE) | st.binary(max_size=120) | st.sampled_from([b"", b"{}", b"[]", b"null"]),
        max_size=60,
    )
)
def test_real_lines_shuffled_duplicated_and_junk(lines: list[bytes]) -> None:
    read_codex(b"\n".join(lines) + b"\n")


@fuzz(150)
@given(
    st.lists(
        st.tuples(st.sampled_from(KINDS), st.sampled_from(ITEM_TYPES), json_values, json_values), max_size=40
    )
)
def test_records_of_the_right_types_with_the_wrong_shapes(records: list[tuple[str, str, Any, Any]]) -> None:
    out = []
    for kind, item, a, b in records:
        payload: dict[str, Any] = {
            "type": item,
            "role": a if isinstance(a, str) else "user",
            "content": a,
            "output": b,
        }
        payload.update(
            {"call_id": a, "arguments": b, "num_turns": a, "info": b, "replacement_history": b, "model": a}
        )
        out.append(
            json.dumps(
                {"timestamp": a if isinstance(a, str) else "", "type": kind, "payload": payload}
            ).encode()
        )
    read_codex(b"\n".join(out) + b"\n")


@fuzz(100)
@given(
    st.lists(st.tuples(st.sampled_from(["m1", "m2", "m3", None]), json_values, json_values), max_size=8),
    st.lists(
        st.tuples(
            st.sampled_from(["p1", "p2", "p3", None]), st.sampled_from(["m1", "m2", "m3", None]), json_values
        ),
        max_size=12,
    ),
    json_values,
)
def test_opencode_rows_with_arbitrary_json(messages: list[Any], parts: list[Any], revert: Any) -> None:
    start = time.monotonic()
    rows = []
    for mid, created, data in messages:
        if isinstance(data, dict):
            data = {"role": "assistant" if created else "user", **data}
        rows.append((mid, created, json.dumps(data)))
    part_rows = [(pid, mid, json.dumps(data)) for pid, mid, data in parts]
    session = build_session({"id": "s", "revert": revert}, rows, part_rows)
    conversion = convert(session)
    # Every row is either read or counted as skipped (a second row for an id replaces the first).
    valid: list[str] = []
    bad = 0
    for mid, _, data in rows:
        obj = json.loads(data)
        ident = mid if mid is not None else (obj.get("id") if isinstance(obj, dict) else None)
        if not isinstance(obj, dict) or not isinstance(ident, str) or not ident:
            bad += 1
        elif ident not in valid:
            valid.append(ident)
    attached = 0
    for pid, mid, data in part_rows:
        obj = json.loads(data)
        if not isinstance(obj, dict):
            bad += 1
            continue
        ident = pid if pid is not None else obj.get("id")
        owner = mid if mid is not None else obj.get("messageID")
        if not isinstance(ident, str) or not isinstance(owner, str) or owner not in valid:
            bad += 1
        else:
            attached += 1
    assert sorted(m.id for m in session.messages) == sorted(valid)
    assert sum(len(m.parts) for m in session.messages) == attached and session.skipped == bad
    ids = [e["id"] for e in conversion.entries]
    assert all(e["parentId"] is None or e["parentId"] in ids for e in conversion.entries)
    for _, message in conversion.context:
        assert message["role"] in ("user", "assistant", "toolResult")
    assert time.monotonic() - start < BUDGET_SECONDS
