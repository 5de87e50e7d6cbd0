"""ACP updates as sessiond entries (:mod:`sessiond.acp.convert`): pure, no I/O."""

from __future__ import annotations

from typing import Any

from sessiond.acp.convert import PROMPT, UPDATES, SessionTranscript


def _update(body: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": "s", "update": body}


def _chunk(kind: str, text: str) -> dict[str, Any]:
    return _update({"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def test_chunks_merge_into_one_assistant_message_with_the_raw_updates_before_it() -> None:
    t = SessionTranscript(agent="a")
    raw = [
        _chunk("agent_thought_chunk", "th"),
        _chunk("agent_thought_chunk", "ink"),
        _chunk("agent_message_chunk", "he"),
    ]
    raw.append(_chunk("agent_message_chunk", "llo"))
    assert all(t.update(r) == [] for r in raw)
    entries = t.end_turn("end_turn")
    assert entries[0] == {"type": "custom", "customType": UPDATES, "data": {"notifications": raw}}
    message = entries[1]["message"]
    assert message["content"] == [
        {"type": "thinking", "thinking": "think"},
        {"type": "text", "text": "hello"},
    ]
    assert message["stopReason"] == "stop" and message["provider"] == "a"
    assert t.end_turn("end_turn") == []


def test_a_tool_call_then_its_failed_update_are_a_call_and_an_error_result() -> None:
    t = SessionTranscript(agent="a")
    t.update(_update({"sessionUpdate": "tool_call", "toolCallId": "c1", "status": "pending"}))
    t.update(
        _update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": "Run ls",
                "rawInput": {"cmd": "ls"},
            }
        )
    )
    entries = t.update(
        _update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "no such dir"}}],
            }
        )
    )
    assert [e["type"] for e in entries] == ["custom", "message", "message"]
    call = entries[1]["message"]
    assert call["content"] == [{"type": "toolCall", "id": "c1", "name": "Run ls", "arguments": {"cmd": "ls"}}]
    assert call["stopReason"] == "toolUse"
    result = entries[2]["message"]
    assert result["role"] == "toolResult" and result["toolCallId"] == "c1" and result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "no such dir"}]
    # A second terminal update of the same call is kept raw, not a second result.
    again = _update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"})
    assert t.update(again) == []


def test_plan_mode_usage_and_title_become_entries_and_unknown_updates_stay_raw() -> None:
    t = SessionTranscript(agent="a")
    assert t.update(_update({"sessionUpdate": "_vendor_thing", "x": 1})) == []
    plan = t.update(_update({"sessionUpdate": "plan", "entries": [{"content": "x"}]}))
    assert [e.get("customType") for e in plan] == [UPDATES, "acp.plan"]
    assert len(plan[0]["data"]["notifications"]) == 2  # the unknown update, then the plan
    assert t.update(_update({"sessionUpdate": "current_mode_update", "currentModeId": "ask"}))[-1][
        "data"
    ] == {"currentModeId": "ask"}
    assert t.update(_update({"sessionUpdate": "usage_update", "used": 5, "size": 10}))[-1]["data"] == {
        "used": 5,
        "size": 10,
    }
    assert t.update(_update({"sessionUpdate": "session_info_update", "title": "T"}))[-1] == {
        "type": "session_info",
        "name": "T",
    }


def test_a_prompt_is_the_raw_params_then_a_user_message() -> None:
    t = SessionTranscript(agent="a")
    params = {
        "sessionId": "s",
        "prompt": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": "AAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///x.py", "name": "x.py"},
            {"type": "resource", "resource": {"uri": "file:///y.py", "text": "print(1)"}},
        ],
    }
    entries = t.prompt(params)
    assert entries[0] == {"type": "custom", "customType": PROMPT, "data": params}
    assert entries[1]["message"]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "data": "AAA", "mimeType": "image/png"},
        {"type": "text", "text": "@file:///x.py"},
        {"type": "text", "text": "print(1)"},
    ]
    assert t.end_turn("cancelled") == []
    t.update(_chunk("agent_message_chunk", "partial"))
    assert t.end_turn("cancelled")[-1]["message"]["stopReason"] == "aborted"
