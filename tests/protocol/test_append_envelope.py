"""The daemon validates ``session/append`` with ``AppendEnvelope`` (a message is checked as a
TypedDict, not built into models): it must accept and refuse exactly what ``AppendParams`` — the
published model, which clients check with — does, naming the same field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sessiond.rpc.errors import from_validation
from sessiond_protocol import METHODS
from sessiond_protocol.methods import MAX_ENTRIES_PER_APPEND, AppendEnvelope, AppendParams

SID = "0123abcd-ef01"
OK_MESSAGE = {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}

GOOD: list[Any] = [
    OK_MESSAGE,
    {"type": "message", "message": {"role": "assistant", "content": [], "usage": {"input": 1}, "x": [1]}},
    {"type": "thinking_level_change", "thinkingLevel": "high"},
    {"type": "model_change", "provider": "anthropic", "modelId": "claude"},
    {"type": "usage", "kind": "k", "provider": "p", "model": "m", "usage": {"input": 1}},
    {"type": "custom", "customType": "mine", "data": {"a": 1}},
    {"type": "custom_message", "customType": "c", "content": "text", "display": True},
    {"type": "label", "targetId": "a1b2c3d4", "label": "here"},
    {"type": "session_info", "name": "a name"},
    {"type": "context_edit", "targetId": "a1b2c3d4", "replacement": None},
    {"type": "compaction", "summary": "s", "firstKeptEntryId": None, "tokensBefore": 3},
    {"type": "branch_summary", "summary": "", "fromId": "root"},
    {"type": "message", "message": {"role": "user"}, "extra": "ignored"},
]

BAD: list[Any] = [
    {"type": "nope"},
    {"message": {"role": "user"}},
    "a string",
    None,
    [OK_MESSAGE],
    {"type": "message"},
    {"type": "message", "message": "text"},
    {"type": "message", "message": None},
    {"type": "message", "message": {}},
    {"type": "message", "message": {"role": "robot"}},
    {"type": "message", "message": {"role": "branchSummary"}},
    {"type": "message", "message": {"role": 3}},
    {"type": "thinking_level_change", "thinkingLevel": ""},
    {"type": "model_change", "provider": "p"},
    {"type": "usage", "kind": "k", "provider": "p", "model": "m", "usage": "lots"},
    {"type": "custom", "customType": ""},
    {"type": "custom_message", "customType": "c", "content": "t", "display": "maybe"},
    {"type": "label", "targetId": 5},
    {"type": "session_info"},
    {"type": "context_edit", "targetId": "a1b2c3d4"},
    {"type": "compaction", "summary": "s", "firstKeptEntryId": None, "tokensBefore": 1.5},
    {"type": "compaction", "summary": "", "firstKeptEntryId": None, "tokensBefore": 1},
    {"type": "branch_summary", "summary": 1},
]


def refusal(model: type[Any], params: dict[str, Any]) -> tuple[str, ...] | None:
    """The fields the model refuses (as the daemon names them), ``None`` if it accepts."""
    try:
        model.model_validate(params, context={MAX_ENTRIES_PER_APPEND: 3})
    except ValidationError as exc:
        answer = from_validation(exc, params)
        assert answer.data is not None
        return tuple(e["field"] for e in answer.data["errors"])
    return None


def test_the_daemon_validates_append_with_the_envelope() -> None:
    assert METHODS["session/append"].validated_by is AppendEnvelope
    assert METHODS["session/append"].params is AppendParams  # what clients and the schema use


@pytest.mark.parametrize("entry", GOOD, ids=lambda e: str(e.get("type")))
def test_what_the_published_model_accepts_is_accepted(entry: Any) -> None:
    params = {"sessionId": SID, "entries": [OK_MESSAGE, entry]}
    assert refusal(AppendParams, params) is None
    assert refusal(AppendEnvelope, params) is None


@pytest.mark.parametrize("entry", BAD, ids=repr)
def test_what_it_refuses_is_refused_at_the_same_field(entry: Any) -> None:
    params = {"sessionId": SID, "entries": [OK_MESSAGE, OK_MESSAGE, entry]}
    published = refusal(AppendParams, params)
    assert published is not None and published[0].startswith("entries.2")
    assert refusal(AppendEnvelope, params) == published


@pytest.mark.parametrize(
    "params",
    [
        {"sessionId": SID, "entries": []},
        {"sessionId": SID, "entries": "x"},
        {"sessionId": SID},
        {"sessionId": "bad id!", "entries": [OK_MESSAGE]},
        {"sessionId": SID, "entries": [OK_MESSAGE] * 4},  # over the limit in the context
        {"sessionId": SID, "entries": [OK_MESSAGE], "parentId": ""},
        {"sessionId": SID, "entries": [OK_MESSAGE], "expectLeafId": 7},
        {"sessionId": SID, "entries": [OK_MESSAGE], "durability": "later"},
    ],
    ids=repr,
)
def test_the_other_fields_are_checked_the_same(params: dict[str, Any]) -> None:
    published = refusal(AppendParams, params)
    assert published is not None
    assert refusal(AppendEnvelope, params) == published


def test_omitted_and_null_stay_apart() -> None:
    sent = {"sessionId": SID, "entries": [OK_MESSAGE], "parentId": None, "durability": "fsync"}
    envelope = AppendEnvelope.model_validate(sent)
    published = AppendParams.model_validate(sent)
    assert (
        envelope.model_fields_set
        == published.model_fields_set
        == {
            "sessionId",
            "entries",
            "parentId",
            "durability",
        }
    )
    assert (envelope.parentId, envelope.expectLeafId, envelope.durability) == (None, None, "fsync")
