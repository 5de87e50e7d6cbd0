"""The OpenCode reader's rules and its database access (the fixtures' results are in the goldens)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sessiond.errors import NotASessionError, SessionNotFoundError
from sessiond.formats.opencode import build_session, convert
from sessiond.store.opencode import (
    OpenCodeDatabase,
    OpenCodeSession,
    UnreadableDatabaseError,
    db_session_path,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opencode"
SYNTHETIC = FIXTURES / "synthetic-v1.16" / "opencode.db"
REVERT = "ses_0a0000003ffeSyntheticRevert"
COMPACT = "ses_0a0000001ffeSyntheticCompact"


def msg(mid: str, role: str, t: int, **extra: Any) -> tuple[str, int, dict[str, Any]]:
    info: dict[str, Any] = {"role": role, "time": {"created": t}}
    if role == "assistant":
        info["time"]["completed"] = t + 1
        info.update(
            {
                "parentID": "",
                "modelID": "m",
                "providerID": "p",
                "finish": "stop",
                "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            }
        )
    info.update(extra)
    return (mid, t, info)


def text(pid: str, mid: str, value: str, **extra: Any) -> tuple[str, str, dict[str, Any]]:
    return (pid, mid, {"type": "text", "text": value, **extra})


def roles_texts(conversion: Any) -> list[tuple[str, str]]:
    return [(m["role"], " ".join(b.get("text", "") for b in m["content"])) for _, m in conversion.context]


def test_a_compaction_keeps_the_tail_it_retained() -> None:
    """``tail_start_id``: the messages from the retained one on stay, before the summary."""
    messages = [
        msg("m1", "user", 1),
        msg("m2", "assistant", 2),
        msg("m3", "user", 3),
        msg("m4", "assistant", 4),
        msg("m5", "user", 5),
        msg("m6", "assistant", 6, parentID="m5", summary=True),
        msg("m7", "user", 7),
    ]
    parts = [
        text("p1", "m1", "old question"),
        text("p2", "m2", "old answer"),
        text("p3", "m3", "kept question"),
        text("p4", "m4", "kept answer"),
        ("p5", "m5", {"type": "compaction", "auto": True, "tail_start_id": "m3"}),
        text("p6", "m6", "SUMMARY"),
        text("p7", "m7", "next"),
    ]
    session = build_session({"id": "s"}, messages, parts)
    conversion = convert(session)
    assert roles_texts(conversion) == [
        ("user", "kept question"),
        ("assistant", "kept answer"),
        ("user", "What did we do so far?"),
        ("assistant", "SUMMARY"),
        ("user", "next"),
    ]
    assert conversion.diagnostics.compacted_messages == 2
    # A compaction whose summary failed does not cut anything.
    failed = [
        m
        if m[0] != "m6"
        else msg("m6", "assistant", 6, parentID="m5", summary=True, error={"name": "APIError"})
        for m in messages
    ]
    assert len(convert(build_session({"id": "s"}, failed, parts)).context) == 6


def test_unsettled_messages_are_in_the_context_not_in_the_tree() -> None:
    streaming = msg("m2", "assistant", 2)
    del streaming[2]["time"]["completed"]
    session = build_session(
        {"id": "s"}, [msg("m1", "user", 1), streaming], [text("p1", "m1", "hi"), text("p2", "m2", "hal")]
    )
    conversion = convert(session)
    assert [e["id"] for e in conversion.entries] == ["m1"]  # the reply has started: m1 settled
    assert roles_texts(conversion) == [("user", "hi"), ("assistant", "hal")]
    alone = convert(build_session({"id": "s"}, [msg("m1", "user", 1)], [text("p1", "m1", "hi")]))
    assert alone.entries == [] and roles_texts(alone) == [("user", "hi")]


def test_rows_that_do_not_parse_are_skipped_and_counted() -> None:
    session = build_session(
        {"id": "s"},
        [("m1", 1, '{"role":"user"}'), ("m2", 2, "not json"), (None, 3, "[1]")],
        [("p1", "m1", '{"type":"text","text":"ok"}'), ("p2", "gone", "{}"), ("p3", "m1", "{")],
    )
    assert session.skipped == 4 and [m.id for m in session.messages] == ["m1"]
    assert roles_texts(convert(session)) == [("user", "ok")]


def test_the_reader_sees_commits_still_in_the_write_ahead_log(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copyfile(SYNTHETIC, db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    database = OpenCodeDatabase(db)
    before = database.data_version()
    session = OpenCodeSession.open(db_session_path(tmp_path, REVERT))
    count = session.entry_count
    info = json.dumps({"role": "user", "time": {"created": 1_785_500_009_000}, "agent": "build"})
    writer.execute(
        "INSERT INTO message VALUES ('msg_zz1', ?, 1785500009000, 1785500009000, ?)", (REVERT, info)
    )
    writer.execute(
        "INSERT INTO part VALUES ('prt_zz1', 'msg_zz1', ?, 1785500009000, 1785500009000, ?)",
        (REVERT, json.dumps({"type": "text", "text": "one more"})),
    )
    assert (tmp_path / "opencode.db-wal").stat().st_size > 0  # committed, not checkpointed
    assert database.data_version() != before
    result = session.ingest()
    # The revert is still armed (OpenCode clears it, deleting the reverted messages, when the
    # next prompt is sent): nothing vanished, the new message is not settled (no reply yet) and
    # the context still ends before the revert point.
    assert result.reload_required is None and result.entries == [] and session.entry_count == count
    assert session.context().messages[-1]["content"][0]["text"] == "Edit applied"
    # The prompt loop deletes the reverted messages and clears the revert: the follower reopens.
    reverted = (
        "SELECT id FROM message WHERE session_id = ? AND time_created >= 1785500002000 AND id != 'msg_zz1'"
    )
    writer.execute(f"DELETE FROM part WHERE message_id IN ({reverted})", (REVERT,))
    writer.execute(f"DELETE FROM message WHERE id IN ({reverted})", (REVERT,))
    writer.execute(
        "UPDATE session SET revert = NULL, time_updated = time_updated + 1 WHERE id = ?", (REVERT,)
    )
    assert session.ingest().reload_required == "messages were removed"
    fresh = OpenCodeSession.open(db_session_path(tmp_path, REVERT))
    assert (
        fresh.leaf_id == fresh.branch_ids()[-1]
        and fresh.context().messages[-1]["content"][0]["text"] == "one more"
    )
    writer.close()
    database.close()


def test_moving_the_revert_point_asks_for_a_reload(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copyfile(SYNTHETIC, db)
    session = OpenCodeSession.open(db_session_path(tmp_path, REVERT))
    leaf = session.leaf_id
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE session SET revert = NULL, time_updated = time_updated + 1 WHERE id = ?", (REVERT,)
        )
    assert session.ingest().reload_required == "the revert point moved"
    assert OpenCodeSession.open(db_session_path(tmp_path, REVERT)).leaf_id != leaf
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM session WHERE id = ?", (REVERT,))
    assert session.ingest().reload_required == "the session was deleted"


def test_a_session_lists_its_children(tmp_path: Path) -> None:
    shutil.copyfile(SYNTHETIC, tmp_path / "opencode.db")
    parent = OpenCodeSession.open(db_session_path(tmp_path, COMPACT))
    assert parent.diagnostics.as_json()["children"] == ["ses_0a0000002ffeSyntheticChild0"]
    child = OpenCodeSession.open(db_session_path(tmp_path, "ses_0a0000002ffeSyntheticChild0"))
    assert child.diagnostics.as_json()["opencode"]["parentID"] == COMPACT


def test_an_unreadable_database_is_a_precise_error(tmp_path: Path) -> None:
    with pytest.raises(UnreadableDatabaseError, match="no such file"):
        OpenCodeSession.open(db_session_path(tmp_path / "nowhere", REVERT))
    (tmp_path / "opencode.db").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(NotASessionError, match="file is not a database"):
        OpenCodeSession.open(db_session_path(tmp_path, REVERT))
    shutil.copyfile(SYNTHETIC, tmp_path / "opencode.db")
    with pytest.raises(SessionNotFoundError):
        OpenCodeSession.open(db_session_path(tmp_path, "ses_nope"))


def test_the_listings_count_is_the_trees_messages_and_follows_the_database(tmp_path: Path) -> None:
    """A session's ``_messages`` (its list row's ``messageCount``) is the ``message`` entries of
    its tree: its settled messages and their tool parts (docs/concepts.md, "Messages"). The real
    session's last assistant message never completed: neither it nor its tool part is in the
    tree, nor in the count — until it completes (a cached count is not reused once the messages
    changed)."""
    db = tmp_path / "opencode.db"
    shutil.copyfile(FIXTURES / "real-v1.16" / "opencode.db", db)
    sid = "ses_04ca851f7ffevKrKMHW3RsPK1U"
    database = OpenCodeDatabase(db)

    def listed() -> int:
        return int(next(r for r in database.session_rows() if r["id"] == sid)["_messages"])

    def tree_messages() -> int:
        entries = convert(database.load(sid)).entries
        return sum(1 for e in entries if e["type"] == "message")

    assert listed() == tree_messages() == 54
    with sqlite3.connect(db) as conn:
        mid, data = conn.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created DESC, id DESC LIMIT 1",
            (sid,),
        ).fetchone()
        info = json.loads(data)
        info["time"]["completed"] = info["time"]["created"] + 1
        update = "UPDATE message SET data = ?, time_updated = time_updated + 1 WHERE id = ?"
        conn.execute(update, (json.dumps(info), mid))
    assert listed() == tree_messages() == 56
