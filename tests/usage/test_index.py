"""The usage records: each agent's counting rules, incremental reading, restart, prices, reports."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.errors import InvalidArgumentError
from sessiond.service.config import ConfigError, load_config
from sessiond.usage import index as index_module
from sessiond.usage.index import Source, UsageIndex
from sessiond.usage.prices import PriceBook
from sessiond.usage.report import Query, run
from tests.conftest import FIXTURES

CLAUDE_SESSION = "29ccd257-68b1-427f-ae5f-6524b7cb6f20"


def claude_line(
    mid: str,
    output: int,
    *,
    model: str = "claude-sonnet-4-5",
    ts: str = "2026-03-02T10:00:00.000Z",
    sid: str = CLAUDE_SESSION,
    **usage: int,
) -> bytes:
    entry = {
        "type": "assistant",
        "sessionId": sid,
        "timestamp": ts,
        "cwd": "/work/proj",
        "message": {
            "id": mid,
            "model": model,
            "role": "assistant",
            "content": [],
            "usage": {
                "input_tokens": usage.get("input", 1),
                "output_tokens": output,
                "cache_read_input_tokens": usage.get("cache_read", 0),
                "cache_creation_input_tokens": usage.get("cache_creation", 0),
            },
        },
    }
    return orjson.dumps(entry) + b"\n"


def claude_index(tmp_path: Path, prices: PriceBook | None = None) -> tuple[UsageIndex, Path]:
    projects = tmp_path / "claude" / "projects"
    if not projects.exists():
        shutil.copytree(FIXTURES / "claude-code" / "ccl-2.1.17", projects / "p")
    index = UsageIndex(
        tmp_path / "usage.sqlite3", [Source("claude", "claude-code", projects)], prices or PriceBook()
    )
    index.refresh()
    return index, projects / "p" / f"{CLAUDE_SESSION}.jsonl"


def session_totals(index: UsageIndex, sid: str = CLAUDE_SESSION) -> dict[str, Any]:
    totals: dict[str, Any] = run(index, Query("session", session_id=sid, timezone="UTC"))["totals"]
    return totals


def count(index: UsageIndex) -> int:
    return int(index.db.execute("SELECT count(*) FROM records").fetchone()[0])


def test_the_file_is_private(tmp_path: Path) -> None:
    index, _ = claude_index(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "usage.sqlite3").st_mode) == 0o600
    index.close()


def test_an_append_is_read_from_where_the_file_was_left_and_a_streamed_response_counts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, path = claude_index(tmp_path)
    before, records = session_totals(index), count(index)
    offsets: list[int] = []
    original = index_module.read_file

    def spy(source: Source, p: Path, offset: int, *rest: Any) -> Any:
        offsets.append(offset)
        return original(source, p, offset, *rest)

    monkeypatch.setattr(index_module, "read_file", spy)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(claude_line("msg_new", 3))
    assert index.update_path(path) == {("claude", CLAUDE_SESSION)}
    assert offsets == [size], "only the new bytes were read"
    assert count(index) == records + 1
    with open(path, "ab") as f:  # the same response's last piece: replaces, not adds
        f.write(claude_line("msg_new", 400))
    index.update_path(path)
    after = session_totals(index)
    assert count(index) == records + 1
    assert after["outputTokens"] == before["outputTokens"] + 400
    with open(path, "ab") as f:  # half a line: not read until complete
        f.write(claude_line("msg_half", 50)[:40])
    index.update_path(path)
    assert count(index) == records + 1
    with open(path, "ab") as f:
        f.write(claude_line("msg_half", 50)[40:])
    index.update_path(path)
    assert session_totals(index)["outputTokens"] == before["outputTokens"] + 450
    index.close()


def test_a_response_whose_last_piece_gives_no_record_counts_its_earlier_piece(tmp_path: Path) -> None:
    """Earlier pieces of a streamed response are not parsed when a later line names the same
    id (the first build's shortcut); a last piece that turns out damaged or without a time
    must not lose the response."""
    index, path = claude_index(tmp_path)
    before = session_totals(index)["outputTokens"]
    without_time = orjson.loads(claude_line("msg_p", 700))
    del without_time["timestamp"]
    damaged = claude_line("msg_q", 800)[:-30] + b"\n"
    with open(path, "ab") as f:
        f.write(claude_line("msg_p", 5) + claude_line("msg_p", 9) + orjson.dumps(without_time) + b"\n")
        f.write(claude_line("msg_q", 20) + damaged)
        f.write(claude_line("msg_r", 1) + claude_line("msg_r", 2) + claude_line("msg_r", 3))
    index.update_path(path)
    assert session_totals(index)["outputTokens"] == before + 9 + 20 + 3
    index.close()


def test_a_restart_reads_only_the_files_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index, path = claude_index(tmp_path)
    totals = session_totals(index)
    index.close()
    read: list[Path] = []
    original = index_module.read_file

    def spy(source: Source, p: Path, *rest: Any) -> Any:
        read.append(p)
        return original(source, p, *rest)

    monkeypatch.setattr(index_module, "read_file", spy)
    again, _ = claude_index(tmp_path)
    assert read == [] and session_totals(again) == totals
    with open(path, "ab") as f:
        f.write(claude_line("msg_later", 7))
    again.refresh()
    assert read == [path]
    again.close()


def test_a_rewritten_file_is_read_again_whole(tmp_path: Path) -> None:
    index, path = claude_index(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    kept = [*[line for line in lines if b'"assistant"' not in line][:5], claude_line("msg_only", 9)]
    path.write_bytes(b"".join(kept))
    index.update_path(path)
    main = index.db.execute("SELECT count(*) FROM records WHERE file = ?", (str(path),)).fetchone()[0]
    assert main == 1
    path.unlink()
    index.refresh()
    assert index.db.execute("SELECT count(*) FROM records WHERE file = ?", (str(path),)).fetchone()[0] == 0
    index.close()


def test_synthetic_models_are_skipped_and_a_sub_agent_message_counts_once_for_the_parent(
    tmp_path: Path,
) -> None:
    project = tmp_path / "claude" / "projects" / "p"
    sub = project / "parent-1" / "subagents"
    sub.mkdir(parents=True)
    nested = orjson.loads(claude_line("msg_sub", 30, sid="parent-1"))
    progress = {
        "type": "progress",
        "sessionId": "parent-1",
        "timestamp": "2026-03-02T10:00:01.000Z",
        "data": {"type": "agent_progress", "message": nested},
    }
    (project / "parent-1.jsonl").write_bytes(
        claude_line("msg_main", 10, sid="parent-1")
        + orjson.dumps(progress)
        + b"\n"
        + claude_line("msg_fake", 99, model="<synthetic>", sid="parent-1")
    )
    (sub / "agent-a1.jsonl").write_bytes(claude_line("msg_sub", 30, sid="parent-1"))
    (project / "agent-a2.jsonl").write_bytes(claude_line("msg_old_agent", 5, sid="parent-1"))
    index = UsageIndex(
        tmp_path / "u.sqlite3",
        [Source("claude", "claude-code", tmp_path / "claude" / "projects")],
        PriceBook(),
    )
    index.refresh()
    totals = run(index, Query("session", timezone="UTC"))
    assert [r["period"] for r in totals["rows"]] == ["parent-1"]
    assert totals["totals"]["outputTokens"] == 10 + 30 + 5
    index.close()


def codex_index(tmp_path: Path) -> UsageIndex:
    shutil.copytree(FIXTURES / "codex" / "synthetic-home", tmp_path / "codex")
    index = UsageIndex(tmp_path / "u.sqlite3", [Source("codex", "codex", tmp_path / "codex")], PriceBook())
    index.refresh()
    return index


def test_a_codex_fork_does_not_count_its_parents_replayed_usage(tmp_path: Path) -> None:
    index = codex_index(tmp_path)
    fork = session_totals(index, "019c9000-0000-7000-8000-00000000000b")
    # its own turn only: 4310 input of which 3000 cached, 80 output
    assert (fork["inputTokens"], fork["cacheReadTokens"], fork["outputTokens"]) == (1310, 3000, 80)
    index.close()


def test_a_repeated_codex_token_count_is_not_counted_twice(tmp_path: Path) -> None:
    home = tmp_path / "codex" / "sessions" / "2026" / "03" / "02"
    home.mkdir(parents=True)
    meta = {
        "timestamp": "2026-03-02T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "019c9000-0000-7000-8000-0000000000ff", "cwd": "/w"},
    }
    turn = {
        "timestamp": "2026-03-02T10:00:01.000Z",
        "type": "turn_context",
        "payload": {"model": "gpt-5.3-codex"},
    }
    usage = {
        "input_tokens": 100,
        "cached_input_tokens": 40,
        "output_tokens": 7,
        "reasoning_output_tokens": 2,
        "total_tokens": 107,
    }
    event = {
        "timestamp": "2026-03-02T10:00:02.000Z",
        "type": "event_msg",
        "payload": {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage}},
    }
    lines = [meta, turn, event, event, {**event, "payload": {"type": "token_count", "info": None}}]
    (home / "rollout-2026-03-02T10-00-00-019c9000-0000-7000-8000-0000000000ff.jsonl").write_bytes(
        b"".join(orjson.dumps(x) + b"\n" for x in lines)
    )
    index = UsageIndex(tmp_path / "u.sqlite3", [Source("codex", "codex", tmp_path / "codex")], PriceBook())
    index.refresh()
    totals = session_totals(index, "019c9000-0000-7000-8000-0000000000ff")
    assert (totals["inputTokens"], totals["cacheReadTokens"], totals["outputTokens"]) == (60, 40, 7)
    index.close()


def test_pi_records_equal_the_usage_in_the_file(tmp_path: Path) -> None:
    source = FIXTURES / "pi" / "large-session.v1.jsonl"
    root = tmp_path / "pi"
    root.mkdir()
    shutil.copy(source, root / source.name)
    expected = [0, 0, 0, 0]
    for raw in source.read_bytes().splitlines():
        entry = orjson.loads(raw)
        message = entry.get("message") if isinstance(entry, dict) else None
        if (
            entry.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "assistant"
        ):
            u = message.get("usage") or {}
            for n, key in enumerate(("input", "output", "cacheRead", "cacheWrite")):
                expected[n] += u.get(key, 0)
    index = UsageIndex(tmp_path / "u.sqlite3", [Source("pi", "pi", root)], PriceBook())
    index.refresh()
    t = run(index, Query("daily", timezone="UTC"))["totals"]
    assert [t["inputTokens"], t["outputTokens"], t["cacheReadTokens"], t["cacheCreationTokens"]] == expected
    assert expected[1] > 0
    index.close()


def test_opencode_messages_with_their_sessions_titles(tmp_path: Path) -> None:
    root = tmp_path / "opencode"
    root.mkdir()
    shutil.copy(FIXTURES / "opencode" / "synthetic-v1.16" / "opencode.db", root / "opencode.db")
    index = UsageIndex(tmp_path / "u.sqlite3", [Source("opencode", "opencode", root)], PriceBook())
    index.refresh()
    rows = run(index, Query("session", timezone="UTC"))["rows"]
    db = sqlite3.connect(root / "opencode.db")
    assistants = db.execute("SELECT data FROM message").fetchall()
    outputs = sum(
        d["tokens"]["output"] + d["tokens"].get("reasoning", 0)
        for (raw,) in assistants
        if (d := orjson.loads(raw)).get("role") == "assistant" and "tokens" in d
    )
    assert sum(r["outputTokens"] for r in rows) == outputs > 0
    titled = {r["period"]: r["title"] for r in rows}
    assert titled["ses_0a0000001ffeSyntheticCompact"] == "Refactor the parser"
    assert all(r["cwd"] == "/work/demo" for r in rows)
    index.close()


def test_an_unknown_model_is_unpriced_and_prices_come_from_the_config(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects" / "p"
    projects.mkdir(parents=True)
    (projects / "s1.jsonl").write_bytes(
        claude_line("m1", 1_000_000, model="my-local-model", input=0, sid="s1")
        + claude_line("m2", 1_000_000, model="claude-sonnet-4-5", input=0, sid="s1")
    )
    sources = [Source("claude", "claude-code", tmp_path / "claude" / "projects")]
    index = UsageIndex(tmp_path / "u.sqlite3", sources, PriceBook())
    index.refresh()
    rows = run(index, Query("model", timezone="UTC"))["rows"]
    costs = {r["model"]: r["cost"] for r in rows}
    assert costs["my-local-model"] is None, "unpriced, never $0"
    assert costs["claude-sonnet-4-5"] == pytest.approx(15.0)
    assert run(index, Query("model", timezone="UTC", agent="claude"))["totals"]["cost"] == pytest.approx(15.0)
    index.close()
    overridden = UsageIndex(
        tmp_path / "u.sqlite3", sources, PriceBook({"my-*": {"input": 1.0, "output": 2.0}})
    )
    costs = {r["model"]: r["cost"] for r in run(overridden, Query("model", timezone="UTC"))["rows"]}
    assert costs == {"my-local-model": pytest.approx(2.0), "claude-sonnet-4-5": pytest.approx(15.0)}
    overridden.close()


def test_days_weeks_and_months_are_cut_in_the_asked_time_zone(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects" / "p"
    projects.mkdir(parents=True)
    (projects / "s1.jsonl").write_bytes(
        claude_line("late", 5, ts="2026-03-01T23:30:00.000Z", sid="s1")  # a Sunday, Monday in Berlin
        + claude_line("next", 7, ts="2026-03-02T08:00:00.000Z", sid="s1")
    )
    index = UsageIndex(
        tmp_path / "u.sqlite3",
        [Source("claude", "claude-code", tmp_path / "claude" / "projects")],
        PriceBook(),
    )
    index.refresh()

    def periods(**kw: Any) -> dict[str, int]:
        return {r["period"]: r["outputTokens"] for r in run(index, Query(**kw))["rows"]}

    assert periods(group_by="daily", timezone="UTC") == {"2026-03-01": 5, "2026-03-02": 7}
    assert periods(group_by="daily", timezone="Europe/Berlin") == {"2026-03-02": 12}
    assert periods(group_by="weekly", timezone="UTC") == {"2026-02-23": 5, "2026-03-02": 7}
    assert periods(group_by="monthly", timezone="Europe/Berlin") == {"2026-03": 12}
    assert periods(group_by="daily", timezone="UTC", since="2026-03-02") == {"2026-03-02": 7}
    assert periods(group_by="daily", timezone="UTC", until="20260301") == {"2026-03-01": 5}
    assert periods(group_by="daily", timezone="UTC", cwd="/work") == {"2026-03-01": 5, "2026-03-02": 7}
    assert periods(group_by="daily", timezone="UTC", cwd="/wor") == {}
    bad: dict[str, Any]
    for bad, field in [
        ({"timezone": "Nowhere/Zone"}, "timezone"),
        ({"since": "yesterday"}, "since"),
        ({"group_by": "hourly"}, "groupBy"),
    ]:
        with pytest.raises(InvalidArgumentError) as caught:
            kwargs: dict[str, Any] = {"group_by": "daily", **bad}
            run(index, Query(**kwargs))
        assert caught.value.field == field
    index.close()


def test_the_sums_by_quarter_hour_stay_equal_to_the_records(tmp_path: Path) -> None:
    """Daily reports read the ``buckets`` kept by triggers; a bound off a quarter hour reads
    the records themselves. Both agree after inserts, replaced pieces, re-reads and deletes."""
    index, path = claude_index(tmp_path)

    def both() -> tuple[Any, Any]:
        fast = run(index, Query("daily", timezone="Asia/Kolkata", breakdown=True))
        slow = run(
            index, Query("daily", timezone="Asia/Kolkata", breakdown=True, since="2000-01-01T00:00:00.001Z")
        )
        return fast["rows"], slow["rows"]

    fast, slow = both()
    assert fast == slow and fast
    with open(path, "ab") as f:
        f.write(claude_line("msg_x", 3) + claude_line("msg_x", 300) + claude_line("msg_y", 5, model="other"))
    index.update_path(path)
    fast, slow = both()
    assert fast == slow
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2].rsplit(b"\n", 1)[0] + b"\n")
    index.update_path(path)
    fast, slow = both()
    assert fast == slow
    index.close()


def test_a_huge_line_is_skipped_without_being_held_and_reading_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "CHUNK", 1 << 10)
    monkeypatch.setattr(index_module, "MAX_LINE", 4 << 10)
    index, path = claude_index(tmp_path)
    before = session_totals(index)["outputTokens"]
    with open(path, "ab") as f:
        f.write(claude_line("msg_huge", 1000)[:-2] + b" " * (20 << 10) + b"}\n")  # over MAX_LINE
        f.write(claude_line("msg_after", 7))
    index.update_path(path)
    assert session_totals(index)["outputTokens"] == before + 7
    with open(path, "ab") as f:  # a line still growing past the limit, then a normal one
        f.write(b'{"type":"assistant","x":"' + b"y" * (10 << 10))
    index.update_path(path)
    with open(path, "ab") as f:
        f.write(b'"}\n' + claude_line("msg_last", 11))
    index.update_path(path)
    assert session_totals(index)["outputTokens"] == before + 7 + 11
    index.close()


def test_the_first_build_sums_at_the_end_and_a_killed_one_is_finished_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "PARALLEL_FROM", 1)
    index, path = claude_index(tmp_path)  # the first build, in bulk
    assert index.db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0] == 3
    indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'records_%' ORDER BY name"
    assert [r[0] for r in index.db.execute(indexes)] == sorted(index_module.INDEXES)  # made at the end
    fast = run(index, Query("daily", timezone="UTC", breakdown=True))["rows"]
    slow = run(index, Query("daily", timezone="UTC", breakdown=True, since="2000-01-01T00:00:00.001Z"))[
        "rows"
    ]
    assert fast == slow and fast
    # a build killed midway: triggers gone, sums incomplete, the mark left behind
    for trigger in index_module.TRIGGERS:
        index.db.execute(f"DROP TRIGGER {trigger}")
    for name in index_module.INDEXES:
        index.db.execute(f"DROP INDEX {name}")
    index.db.execute("DELETE FROM buckets")
    index.db.execute("INSERT INTO meta VALUES('buckets', 'stale')")
    index.close()
    again, _ = claude_index(tmp_path)
    assert run(again, Query("daily", timezone="UTC", breakdown=True))["rows"] == fast
    assert [r[0] for r in again.db.execute(indexes)] == sorted(index_module.INDEXES)
    with open(path, "ab") as f:
        f.write(claude_line("msg_after_reopen", 5))
    again.update_path(path)
    assert (
        run(again, Query("daily", timezone="UTC"))["totals"]["outputTokens"]
        == sum(r["outputTokens"] for r in fast) + 5
    )
    again.close()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("prices = 3", "prices"),
        ('[prices."m"]\ninput = 1.0', "prices.m"),
        ('[prices."m"]\ninput = 1.0\noutput = -2', "prices.m.output"),
        ('[prices."m"]\ninput = 1.0\noutput = 2\ncache_reads = 1', "prices.m"),
    ],
)
def test_a_bad_prices_table_is_refused_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config({"SESSIOND_CONFIG": str(tmp_path / "c.toml")}, root=tmp_path / "store")
    assert caught.value.data["field"] == field


def test_prices_from_the_config_reach_the_records(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('[prices."my-*"]\ninput = 1\noutput = 2\ncache_read = 0.5\n')
    config = load_config({"SESSIOND_CONFIG": str(tmp_path / "c.toml")}, root=tmp_path / "store")
    assert config.prices == {"my-*": {"input": 1.0, "output": 2.0, "cache_read": 0.5}}
