"""What Claude Code 2.1.328 writes that older readers did not honour (found by tests/agents).

The lines are shaped like the ones the real agent wrote in ``tests/agents/claude`` runs
(fields trimmed); each test fails without the fix it names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from sessiond.filehistory.claude import snapshot_records
from sessiond.formats import claude_code as cc
from sessiond.store.claude import ClaudeSession
from tests.store.test_claude_follow import replay

SID = "5e0d0000-0000-4000-8000-000000000001"
TS = "2026-12-05T10:00:00.000Z"


def entry(uuid: str, parent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "timestamp": TS,
        "sessionId": SID,
        "version": "2.1.328",
        "cwd": "/work/proj",
        **fields,
    }


def user(uuid: str, parent: str | None, content: Any, **fields: Any) -> dict[str, Any]:
    return entry(uuid, parent, "user", message={"role": "user", "content": content}, **fields)


def assistant(uuid: str, parent: str, mid: str, blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    message = {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks,
               "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 2}}  # fmt: skip
    return entry(uuid, parent, "assistant", message=message)


def attachment(uuid: str, parent: str, kind: str, text: str | None, role: str = "system") -> dict[str, Any]:
    fields: dict[str, Any] = {"attachment": {"type": kind}}
    if text is not None:
        fields["rendered"] = [{"content": f"<system-reminder>\n{text}\n</system-reminder>"}]
        fields["renderedRole"] = role
    return entry(uuid, parent, "attachment", **fields)


def transcript(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


RECORDS: list[dict[str, Any]] = [
    {"type": "queue-operation", "operation": "enqueue", "timestamp": TS, "sessionId": SID, "content": "hi"},
    user("u1", None, "fix the notes"),
    attachment("a1", "u1", "environment", "# Environment"),
    attachment("a2", "a1", "date", "Today's date is 2026-12-05."),
    attachment("a3", "a2", "prompt_snapshot", None),
    attachment("a4", "a3", "remote_session_change", "Attribution ...", role="user"),
    {"type": "api-request-shape", "shapeHash": "x", "version": "2.1.328", "shape": {}},
    {"type": "api-request-blob", "hash": "y", "content": []},
    {"type": "api-request", "id": "r1", "version": "2.1.328", "shapeHash": "x"},
    {"type": "tools-used", "tools": ["Read"]},
    assistant(
        "m1",
        "a4",
        "msg_1",
        [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "n"}}],
        "tool_use",
    ),
    user("r1", "m1", [{"type": "tool_result", "tool_use_id": "t1", "content": "1\talpha"}]),
    attachment("a5", "r1", "total_tokens_reminder", "<total_tokens>9 tokens left</total_tokens>"),
    assistant("m2", "a5", "msg_2", [{"type": "text", "text": "done"}], "end_turn"),
    user("c1", "m2", "<local-command-caveat>Caveat.</local-command-caveat>", isMeta=True),
    user("c2", "c1", "<command-name>/compact</command-name>"),
    user("c3", "c2", "<local-command-stdout>Compacted</local-command-stdout>"),
    user("u2", "c3", "are you there"),
    attachment("a6", "u2", "total_tokens_reminder", "<total_tokens>8 tokens left</total_tokens>"),
    assistant("m3", "a6", "msg_3", [{"type": "text", "text": "yes"}], "end_turn"),
]


def _messages(data: bytes) -> list[dict[str, Any]]:
    return [m for _, m in cc.reconstruct(cc.parse_transcript(data)).messages]


def test_rendered_attachments_are_in_the_context_marked_and_bubbled_up() -> None:
    messages = _messages(transcript(RECORDS))
    roles = [(m["role"], m.get("customType")) for m in messages]
    assert roles == [
        ("custom", "claude-code.attachment/environment"),
        ("custom", "claude-code.attachment/date"),
        ("custom", "claude-code.attachment/remote_session_change"),
        ("user", None),  # the prompt after the attachments it was sent with
        ("assistant", None),
        ("toolResult", None),
        ("custom", "claude-code.attachment/total_tokens_reminder"),
        ("assistant", None),
        ("custom", "claude-code.attachment/total_tokens_reminder"),  # bubbled above the commands
        ("user", None),
        ("user", None),
        ("user", None),
        ("user", None),
        ("assistant", None),
    ]
    first = messages[0]
    assert first["display"] is False and first["details"] == {
        "attachment": "environment",
        "renderedRole": "system",
    }
    assert first["content"] == [
        {"type": "text", "text": "<system-reminder>\n# Environment\n</system-reminder>"}
    ]
    diag = cc.reconstruct(cc.parse_transcript(transcript(RECORDS))).diagnostics
    assert diag["excludedFromMessages"] == {"attachment/prompt_snapshot": 1}


def test_each_text_before_a_user_entry_ends_with_a_newline() -> None:
    messages = _messages(transcript(RECORDS))
    texts = [
        m["content"] if isinstance(m["content"], str) else m["content"][-1].get("text") for m in messages
    ]
    # The attribution attachment precedes the prompt; the date attachment precedes an attachment.
    assert texts[2].endswith("</system-reminder>\n") and texts[1].endswith("</system-reminder>")
    assert texts[3] == "fix the notes"
    assert texts[8].endswith("</system-reminder>\n")
    assert texts[9:13] == [
        "<local-command-caveat>Caveat.</local-command-caveat>\n",
        "<command-name>/compact</command-name>\n",
        "<local-command-stdout>Compacted</local-command-stdout>\n",
        "are you there",
    ]


def test_a_followed_transcript_equals_a_cold_read_with_rendered_attachments(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    lines = transcript(RECORDS).splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))
    session = ClaudeSession.open(path)
    try:
        for line in lines[2:]:
            with path.open("ab") as f:
                f.write(line)
            session.ingest()
            want = cc.reconstruct(cc.parse_transcript(path.read_bytes())).messages
            assert session.live.messages(session._fetch) == want
            assert [m for p in session.context().entries for m in p.messages] == [m for _, m in want]
    finally:
        session.close()


def test_new_bookkeeping_records_are_known() -> None:
    t = cc.parse_transcript(transcript(RECORDS))
    assert t.diagnostics.unknown_types == {}


def test_file_history_delta_adds_the_backup_to_its_prompt() -> None:
    snapshot = {"messageId": "u1", "trackedFileBackups": {}, "timestamp": TS}
    backup = {"backupFileName": "75e8e67f6614d287@v1", "version": 1, "backupTime": TS}
    records = [
        *RECORDS[:2],
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": snapshot, "isSnapshotUpdate": False},
        {"type": "file-history-delta", "messageId": "d1", "snapshotMessageId": "u1",
         "trackingPath": "notes.txt", "backup": backup, "timestamp": TS},
    ]  # fmt: skip
    backups = snapshot_records(cc.parse_transcript(transcript(records)))
    assert backups == {
        "u1": {"notes.txt": {"backupFileName": "75e8e67f6614d287@v1", "version": 1, "backupTime": TS}}
    }


def test_preserved_messages_are_reported_with_the_boundary() -> None:
    boundary = entry(
        "b1",
        None,
        "system",
        subtype="compact_boundary",
        logicalParentUuid="m3",
        compactMetadata={
            "trigger": "manual",
            "preservedSegment": {"headUuid": "m3", "anchorUuid": "s1", "tailUuid": "m3"},
            "preservedMessages": {"anchorUuid": "s1", "uuids": ["m3"], "allUuids": ["m3"]},
        },
    )
    summary = user("s1", "b1", "This session is being continued...", isCompactSummary=True)
    after = user("u3", "s1", "and now?")
    done = assistant("m4", "u3", "msg_4", [{"type": "text", "text": "ok"}], "end_turn")
    r = cc.reconstruct(cc.parse_transcript(transcript([*RECORDS, boundary, summary, after, done])))
    [report] = r.diagnostics["compactBoundaries"]
    assert report["preservedMessages"] == 1 and report["preservedMessagesInFile"] == 1
    roles = [m["role"] for _, m in r.messages]
    assert roles == ["user", "assistant", "user", "assistant"]  # summary, kept reply, prompt, answer


def _tool_use(tid: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"echo {tid}"}}]


def _result(uuid: str, parent: str, tid: str) -> dict[str, Any]:
    return user(uuid, parent, [{"type": "tool_result", "tool_use_id": tid, "content": tid}])


def _boundary(uuid: str, head: str, anchor: str, tail: str) -> dict[str, Any]:
    segment = {"headUuid": head, "anchorUuid": anchor, "tailUuid": tail}
    meta = {"trigger": "auto", "preservedSegment": segment, "preservedMessages": {"uuids": [head, tail]}}
    return entry(
        uuid, None, "system", subtype="compact_boundary", logicalParentUuid=tail, compactMetadata=meta
    )


CHAINED: list[dict[str, Any]] = [
    user("u1", None, "turn one"),
    assistant("m1", "u1", "msg_1", _tool_use("t1"), "tool_use"),
    _result("r1", "m1", "t1"),
    assistant("m2", "r1", "msg_2", [{"type": "text", "text": "first done"}], "end_turn"),
    user("u2", "m2", "turn two"),
    assistant("m3", "u2", "msg_3", _tool_use("t2"), "tool_use"),
    _result("r2", "m3", "t2"),
    # "prompt is too long": compacted, keeping the call and its result (m3, r2) after s1.
    _boundary("b1", "m3", "s1", "r2"),
    user("s1", "b1", "This session is being continued... (1)", isCompactSummary=True),
    assistant("m4", "s1", "msg_4", _tool_use("t3"), "tool_use"),
    _result("r3", "m4", "t3"),
    # Too long again: the kept segment runs from m3 through the first relink to r3.
    _boundary("b2", "m3", "s2", "r3"),
    user("s2", "b2", "This session is being continued... (2)", isCompactSummary=True),
    assistant("m5", "s2", "msg_5", [{"type": "text", "text": "done"}], "end_turn"),
    user("u3", "m5", "again"),
    assistant("m6", "u3", "msg_6", [{"type": "text", "text": "resumed"}], "end_turn"),
]


def test_chained_preserved_segments_keep_the_calls_both_compactions_kept() -> None:
    """Claude Code 2.1.328 resumes with the first kept call and its result; the second
    segment's tail leads to its head only through the first relink."""
    r = cc.reconstruct(cc.parse_transcript(transcript(CHAINED)))
    assert [u for u, _ in r.messages] == ["s2", "m3", "r2", "m4", "r3", "m5", "u3", "m6"]
    relink = r.diagnostics["preservedSegment"]
    assert relink["applied"] and relink["preserved"] == 4  # r3, m4, r2, m3
    assert relink["chained"] == [{"boundary": "b1", "applied": True, "preserved": 2}]


def test_following_chained_segments_and_a_fork_equals_a_cold_read(tmp_path: Path) -> None:
    """Line by line, in pieces: the same as a cold read after every line. A fork's file writes
    the boundary before the segment it keeps (the check passes only once the segment is in)."""
    fork = [
        _boundary("b1", "m3", "s1", "m3"),
        user("s1", "b1", "This session is being continued...", isCompactSummary=True),
        assistant("m3", "s1", "msg_3", [{"type": "text", "text": "kept"}], "end_turn"),
        user("u4", "m3", "in the fork"),
        assistant("m7", "u4", "msg_7", [{"type": "text", "text": "forked"}], "end_turn"),
    ]
    for seed in range(3):
        for name, records in (("chained", CHAINED), ("fork", fork)):
            path = f"{name}{seed}-0000-4000-8000-000000000000.jsonl"
            stats = replay(tmp_path, path, transcript(records), seed)
            assert stats["final"], (name, seed)
