"""Session listing (Pi's ``list`` / ``listAll`` summaries) and its incremental cache."""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.pi import load_session
from sessiond.store import listing as L
from sessiond.store.layout import StoreLayout, encode_cwd
from sessiond.store.listing import (
    MAX_HEADER_SCAN_BYTES,
    NO_MESSAGES,
    ListingCache,
    SessionInfo,
    iso_string,
    list_dir,
    list_sessions,
    read_header,
    scan_session,
)
from tests.conftest import oracle_dir
from tests.oracle.generate_sessions import generate

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z
HEADER_ISO = "2026-01-01T00:00:00.000Z"


# --------------------------------------------------------------------------- helpers


def line(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def header(sid: Any = "s1", ts: Any = HEADER_ISO, cwd: Any = "/w", **extra: Any) -> dict[str, Any]:
    h: dict[str, Any] = {"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": cwd}
    h.update(extra)
    return h


_n = iter(range(1, 1_000_000))


def msg(role: str, content: Any, ts: Any = None, entry_ts: Any = HEADER_ISO, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "content": content, **extra}
    if ts is not None:
        m["timestamp"] = ts
    return {"type": "message", "id": f"m{next(_n)}", "parentId": None, "timestamp": entry_ts, "message": m}


def info_entry(name: Any = "__absent__") -> dict[str, Any]:
    e: dict[str, Any] = {
        "type": "session_info",
        "id": f"i{next(_n)}",
        "parentId": None,
        "timestamp": HEADER_ISO,
    }
    if name != "__absent__":
        e["name"] = name
    return e


def text(s: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": s}]


def write(path: Path, lines: list[Any], sep: str = "\n", end: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = sep.join(x if isinstance(x, str) else line(x) for x in lines)
    path.write_bytes((body + (sep if end is None else end)).encode())
    return path


def scan(tmp_path: Path, lines: list[Any], **kw: Any) -> SessionInfo | None:
    return scan_session(write(tmp_path / "s.jsonl", lines, **kw))


def rows(infos: list[SessionInfo]) -> list[dict[str, Any]]:
    return [i.to_json() for i in infos]


# --------------------------------------------------------------------------- basic fields


def test_basic_summary(tmp_path: Path) -> None:
    p = write(
        tmp_path / "s.jsonl",
        [
            header(parentSession="/x/p.jsonl"),
            {"type": "model_change", "id": "a", "parentId": None, "timestamp": HEADER_ISO},
            msg(
                "user",
                [{"type": "text", "text": "hello"}, {"type": "image"}, {"type": "text", "text": "world"}],
                T0 + 5,
            ),
            msg("assistant", text("hi"), T0 + 9),
            msg("toolResult", text("out"), T0 + 999),  # counted, but not activity
            msg("user", "second", T0 + 7),
        ],
    )
    info = scan_session(p)
    assert info == SessionInfo(
        path=str(p),
        id="s1",
        cwd="/w",
        name=None,
        parent_session_path="/x/p.jsonl",
        created_ms=T0,
        modified_ms=T0 + 9,
        message_count=4,
        first_message="hello world",
    )
    assert info.to_json() == {
        "path": str(p),
        "id": "s1",
        "cwd": "/w",
        "name": None,
        "parentSessionPath": "/x/p.jsonl",
        "created": "2026-01-01T00:00:00.000Z",
        "modified": "2026-01-01T00:00:00.009Z",
        "messageCount": 4,
        "firstMessage": "hello world",
    }


def test_missing_cwd_and_no_messages(tmp_path: Path) -> None:
    info = scan(tmp_path, [{"type": "session", "id": "x", "timestamp": HEADER_ISO}])
    assert info is not None
    assert (info.cwd, info.first_message, info.message_count, info.parent_session_path) == (
        "",
        NO_MESSAGES,
        0,
        None,
    )
    info = scan(tmp_path, [header(cwd=42)])
    assert info is not None and info.cwd == ""


# --------------------------------------------------------------------------- name


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["first", "  second \u3000"], "second"),
        (["first", ""], None),  # explicit clear
        (["first", "   "], None),
        (["first", None], None),
        (["first", "__absent__"], None),
        (["first", "", "third"], "third"),
        ([], None),
    ],
)
def test_name_is_latest_session_info(tmp_path: Path, names: list[Any], expected: str | None) -> None:
    info = scan(tmp_path, [header(), *[info_entry(n) for n in names]])
    assert info is not None and info.name == expected


# --------------------------------------------------------------------------- modified / created


def test_activity_time_rules(tmp_path: Path) -> None:
    later = "2026-01-02T00:00:00.000Z"
    # message.timestamp (number) wins over the entry timestamp
    info = scan(tmp_path, [header(), msg("user", "a", T0 + 50, entry_ts=later)])
    assert info is not None and info.modified_ms == T0 + 50
    # no numeric message.timestamp: the entry timestamp
    info = scan(tmp_path, [header(), msg("assistant", "a", "123", entry_ts=later)])
    assert info is not None and info.modified_ms == T0 + 86_400_000
    # maximum over user/assistant, other roles ignored; float timestamps truncated
    info = scan(
        tmp_path,
        [header(), msg("user", "a", T0 + 3.9), msg("custom", "c", T0 + 100), msg("assistant", "b", T0 + 1)],
    )
    assert info is not None and info.modified_ms == T0 + 3
    # messages without a "content" key are no activity
    info = scan(tmp_path, [header(), {"type": "message", "message": {"role": "user", "timestamp": T0 + 9}}])
    assert info is not None and info.modified_ms == T0 and info.message_count == 1


def test_modified_falls_back_to_header_then_mtime(tmp_path: Path) -> None:
    # activity <= 0 (or unparsable entry timestamps) -> header timestamp
    info = scan(
        tmp_path, [header(), msg("user", "a", -5), msg("user", "b", 0), msg("user", "c", entry_ts="nope")]
    )
    assert info is not None and info.modified_ms == T0 and info.message_count == 3
    # header timestamp not a string -> file mtime (created is still Date(number))
    p = write(tmp_path / "n.jsonl", [header(ts=T0 - 1000)])
    os.utime(p, ns=(0, 1_700_000_000_123_999_999))
    info = scan_session(p)
    assert info is not None
    assert info.created_ms == T0 - 1000
    assert info.modified_ms == 1_700_000_000_124  # Node: sec*1e3 + nsec/1e6 rounds up here
    # invalid header timestamp -> created NaN (null in JSON), modified = mtime
    p = write(tmp_path / "bad.jsonl", [header(ts="yesterday")])
    os.utime(p, ns=(0, 1_700_000_000_500_000_000))
    info = scan_session(p)
    assert info is not None and math.isnan(info.created_ms) and info.modified_ms == 1_700_000_000_500
    assert info.to_json()["created"] is None
    # absent header timestamp: Date(undefined) is invalid
    info = scan(tmp_path, [{"type": "session", "id": "x"}])
    assert info is not None and math.isnan(info.created_ms)
    # an absurd message timestamp makes modified an invalid date (no fallback)
    info = scan(tmp_path, [header(), msg("user", "a", 9e15)])
    assert info is not None and math.isnan(info.modified_ms) and info.to_json()["modified"] is None


# --------------------------------------------------------------------------- first message


def test_first_message(tmp_path: Path) -> None:
    info = scan(
        tmp_path,
        [
            header(),
            msg("assistant", "assistant first"),
            msg("user", [{"type": "image", "data": "x"}]),  # no text: skipped
            msg("user", ""),
            msg("user", [{"type": "text", "text": 5}, {"type": "text"}, {"type": "text", "text": [1, None]}]),
            msg("user", "later"),
        ],
    )
    assert info is not None and info.first_message == "5  1," and info.message_count == 5
    info = scan(tmp_path, [header(), msg("assistant", "only assistant")])
    assert info is not None and info.first_message == NO_MESSAGES


# --------------------------------------------------------------------------- line splitting and junk


def test_crlf_and_lone_cr_split_like_readline(tmp_path: Path) -> None:
    lines = [header(), info_entry("n"), msg("user", "q", T0 + 1), msg("assistant", "a", T0 + 2)]
    lf = scan_session(write(tmp_path / "lf.jsonl", lines))
    crlf = scan_session(write(tmp_path / "crlf.jsonl", lines, sep="\r\n"))
    cr = scan_session(write(tmp_path / "cr.jsonl", lines, sep="\r"))
    mixed = scan_session(
        write(tmp_path / "mix.jsonl", ["", line(lines[0]), "\r", *map(line, lines[1:])], sep="\r")
    )
    assert lf is not None
    for other in (crlf, cr, mixed):
        assert other is not None
        assert (other.name, other.message_count, other.modified_ms) == ("n", 2, T0 + 2)


def test_junk_blank_and_falsy_lines_are_skipped(tmp_path: Path) -> None:
    info = scan(
        tmp_path,
        [
            "",
            "   ",
            "not json",
            "\ufeff" + line(header(sid="bom")),  # JSON.parse rejects a BOM
            "null",
            "0",
            '""',
            "false",
            header(),
            "{broken",
            "[1,2]",
            '"a string"',
            msg("user", "x", T0 + 1),
            '{"type":"message"',
        ],
    )
    assert info is not None and info.id == "s1" and info.message_count == 1


@pytest.mark.parametrize(
    "first",
    ['{"type":"message","message":{"role":"user","content":"x"}}', "1", "[1]", '"session"', '{"id":"x"}'],
)
def test_first_value_must_be_a_header(tmp_path: Path, first: str) -> None:
    assert scan(tmp_path, [first, header()]) is None


def test_empty_and_junk_only_files(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_bytes(b"")
    assert scan_session(p) is None
    assert scan(tmp_path, ["junk", "", "null"]) is None


def test_header_id_type_is_not_checked_when_listing(tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl", [{"type": "session", "timestamp": HEADER_ISO}, msg("user", "x")])
    info = scan_session(p)
    assert info is not None and info.id is None and info.first_message == "x"
    assert read_header(p) is None  # discovery (and the loader) do check it
    info = scan(tmp_path, [header(sid=7)])
    assert info is not None and info.id == 7


def test_unterminated_last_line_counts(tmp_path: Path) -> None:
    info = scan(tmp_path, [header(), msg("user", "x", T0 + 4)], end="")
    assert info is not None and info.message_count == 1 and info.modified_ms == T0 + 4
    info = scan(tmp_path, [header()], end="")
    assert info is not None and info.id == "s1"


@pytest.mark.parametrize(
    "bad",
    [
        info_entry(5),
        info_entry(True),
        info_entry({"a": 1}),
        {"type": "message", "id": "m"},
        {"type": "message", "id": "m", "message": None},
        msg("user", None),
        msg("assistant", {"text": "x"}),
        msg("user", 3),
        msg("user", [{"type": "text", "text": "a"}, None]),
    ],
)
def test_entries_that_make_pi_throw_do_not_hide_the_session(tmp_path: Path, bad: dict[str, Any]) -> None:
    # Pi's listing throws on these lines and drops the whole session; sessiond lists it.
    info = scan(tmp_path, [header(), msg("user", "ok"), info_entry("Name"), bad, msg("user", "after")])
    assert info is not None
    assert info.message_count == 2 + (bad["type"] == "message")
    assert info.first_message == "ok" and info.name == "Name"


@pytest.mark.parametrize(
    "fine",
    [
        msg("toolResult", None),  # content only matters for user/assistant
        msg("user", [1, "x", [], {"type": "image"}]),
        {"type": "message", "message": "text"},
        {"type": "message", "message": []},
        {"type": "message", "message": {"content": None}},
        info_entry(None),
    ],
)
def test_odd_but_harmless_entries(tmp_path: Path, fine: dict[str, Any]) -> None:
    info = scan(tmp_path, [header(), fine])
    assert info is not None and info.message_count == (fine["type"] == "message")


# --------------------------------------------------------------------------- read_header


def test_read_header(tmp_path: Path) -> None:
    h = header()
    assert read_header(write(tmp_path / "a.jsonl", ["", "junk", "null", h, msg("user", "x")])) == h
    assert read_header(write(tmp_path / "b.jsonl", [msg("user", "x"), h])) is None
    assert read_header(write(tmp_path / "c.jsonl", [h], end="")) == h
    assert read_header(write(tmp_path / "d.jsonl", [h], sep="\r\n")) == h
    assert read_header(tmp_path / "missing.jsonl") is None
    (tmp_path / "e.jsonl").write_bytes(b"")
    assert read_header(tmp_path / "e.jsonl") is None


def test_read_header_scan_limit(tmp_path: Path) -> None:
    h = line(header())
    junk = "x" * 99 + "\n"
    # header line ending exactly at the limit
    pad = MAX_HEADER_SCAN_BYTES - len(h) - 1
    p = tmp_path / "at.jsonl"
    p.write_text(" " * (pad - 1) + "\n" + h + "\n" + line(msg("user", "x")) + "\n")
    assert p.read_bytes().index(b"\n", pad) == MAX_HEADER_SCAN_BYTES - 1
    assert read_header(p) == header()
    # an unterminated header ending exactly at the limit, at end of file
    p = tmp_path / "eof.jsonl"
    p.write_text(" " * (pad) + "\n" + h)
    assert p.stat().st_size == MAX_HEADER_SCAN_BYTES
    assert read_header(p) == header()
    # one byte more and the header is beyond the scan: not discovered...
    p = tmp_path / "beyond.jsonl"
    p.write_text(" " * (pad + 1) + "\n" + h + "\n")
    assert read_header(p) is None
    p = tmp_path / "far.jsonl"
    p.write_text(junk * (MAX_HEADER_SCAN_BYTES // len(junk) + 10) + h + "\n" + line(msg("user", "x")) + "\n")
    assert read_header(p) is None
    # ... but still listed (the listing has no limit) and still loadable
    info = scan_session(p)
    assert info is not None and info.first_message == "x"
    assert load_session(p).header == header()


# --------------------------------------------------------------------------- iso strings


@pytest.mark.parametrize(
    ("ms", "iso"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (T0 + 123, "2026-01-01T00:00:00.123Z"),
        (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
        (-62_198_755_200_001, "-000002-12-31T23:59:59.999Z"),
        (-62_167_219_200_000, "0000-01-01T00:00:00.000Z"),
        (8.64e15, "+275760-09-13T00:00:00.000Z"),
        (8.64e15 + 1, None),
        (math.nan, None),
    ],
)
def test_iso_string(ms: float, iso: str | None) -> None:
    assert iso_string(ms) == iso


# --------------------------------------------------------------------------- listings


def make_store(tmp_path: Path) -> tuple[StoreLayout, dict[str, Path]]:
    layout = StoreLayout(tmp_path / "root")
    paths = {
        "a1": write(layout.cwd_dir("/proj/a") / "a1.jsonl", [header("a1"), msg("user", "x", T0 + 30)]),
        "a2": write(layout.cwd_dir("/proj/a") / "a2.jsonl", [header("a2"), msg("user", "y", T0 + 10)]),
        "b1": write(layout.cwd_dir("/proj/b") / "b1.jsonl", [header("b1"), msg("user", "z", T0 + 20)]),
        # ties on modified: ordered by file name, descending
        "t1": write(layout.cwd_dir("/proj/b") / "t1.jsonl", [header("t1")]),
        "t2": write(layout.cwd_dir("/proj/b") / "t2.jsonl", [header("t2")]),
    }
    write(layout.cwd_dir("/proj/b") / "notes.txt", [header("txt")])
    write(layout.cwd_dir("/proj/b") / "junk.jsonl", ["nothing"])
    write(layout.sessions_dir / "other" / "o.jsonl", [header("other")])  # not a --cwd-- dir
    write(layout.sessions_dir / "loose.jsonl", [header("loose")])  # not in a dir
    (layout.cwd_dir("/proj/b") / "dir.jsonl").mkdir()
    os.symlink(tmp_path / "nowhere", layout.cwd_dir("/proj/b") / "dangling.jsonl")
    os.mkfifo(layout.cwd_dir("/proj/b") / "fifo.jsonl")
    return layout, paths


def test_list_sessions(tmp_path: Path) -> None:
    layout, _ = make_store(tmp_path)
    ids = [i.id for i in list_sessions(layout)]
    assert ids == ["a1", "b1", "a2", "t2", "t1"]
    assert [i.id for i in list_sessions(layout, "/proj/b")] == ["b1", "t2", "t1"]
    assert [i.id for i in list_sessions(layout, "/proj/a/")] == ["a1", "a2"]
    assert list_sessions(layout, "/proj/none") == []
    assert not layout.cwd_dir("/proj/none").exists()  # listing never creates directories
    assert [i.id for i in list_dir(layout.cwd_dir("/proj/a"))] == ["a1", "a2"]
    assert list_dir(tmp_path / "missing") == []
    assert list_sessions(StoreLayout(tmp_path / "nothing")) == []


def test_list_sessions_skips_unreadable_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout, _ = make_store(tmp_path)
    real = os.scandir
    bad = str(layout.cwd_dir("/proj/a"))

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) == bad:
            raise PermissionError(path)
        return real(path)

    monkeypatch.setattr("sessiond.store.listing.os.scandir", scandir)
    assert [i.id for i in list_sessions(layout)] == ["b1", "t2", "t1"]


# --------------------------------------------------------------------------- the cache


class ReadCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[int, int]] = []
        real = L._read_at

        def read_at(fd: int, offset: int, length: int) -> bytes:
            self.calls.append((offset, length))
            return real(fd, offset, length)

        monkeypatch.setattr(L, "_read_at", read_at)

    def reset(self) -> None:
        self.calls.clear()


def session_lines(n: int, start: int = 0) -> list[str]:
    return [
        line(msg("user" if i % 2 == 0 else "assistant", f"t{i}", T0 + i)) for i in range(start, start + n)
    ]


def test_cache_hit_reads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout, _ = make_store(tmp_path)
    cache = ListingCache()
    first = rows(list_sessions(layout, cache=cache))
    assert cache.stats.full == 6 and cache.stats.hits == 0  # the dir, fifo and dangling link: not files
    counter = ReadCounter(monkeypatch)
    cache.reset_stats()
    assert rows(list_sessions(layout, cache=cache)) == first
    assert counter.calls == [] and cache.stats.bytes_read == 0
    assert cache.stats.hits == 6 and cache.stats.full == 0


def test_cache_append_reads_only_new_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path / "d" / "s.jsonl", [line(header()), *session_lines(50)])
    cache = ListingCache()
    assert cache.info(p) == scan_session(p)
    size = p.stat().st_size
    counter = ReadCounter(monkeypatch)
    cache.reset_stats()
    extra = "".join(x + "\n" for x in [line(info_entry("named")), *session_lines(3, 50)]).encode()
    with open(p, "ab") as f:
        f.write(extra)
    info = cache.info(p)
    assert cache.stats.incremental == 1 and cache.stats.full == 0
    # the continuity checks, then the new bytes only
    assert counter.calls == [(size - L._CHECK_BYTES, L._CHECK_BYTES), (0, L._HEAD_BYTES), (size, len(extra))]
    assert cache.stats.bytes_read == len(extra) + L._CHECK_BYTES + L._HEAD_BYTES
    assert info == scan_session(p)
    assert info is not None and info.name == "named" and info.message_count == 53


def test_cache_append_completes_a_torn_line(tmp_path: Path) -> None:
    whole = "".join(x + "\n" for x in [line(header()), *session_lines(4)])
    cut = len(whole) - 10
    p = tmp_path / "s.jsonl"
    p.write_text(whole[:cut])
    cache = ListingCache()
    info = cache.info(p)
    assert info is not None and info.message_count == 3
    with open(p, "a") as f:
        f.write(whole[cut:])
    info = cache.info(p)
    assert info is not None and info.message_count == 4 and cache.stats.incremental == 1


def test_cache_random_appends_match_full_scans(tmp_path: Path) -> None:
    rng = random.Random(5)
    for k in range(12):
        data = generate(random.Random(100 + k), k).encode()
        if k % 3 == 1:
            data = data.replace(b"\n", b"\r\n")
        elif k % 3 == 2:
            data = data.replace(b"\n", b"\r")
        p = tmp_path / f"s{k}.jsonl"
        p.write_bytes(b"")
        cache = ListingCache()
        pos = 0
        while pos < len(data):
            step = rng.choice([1, 2, 7, 100, 3000, len(data)])
            with open(p, "ab") as f:
                f.write(data[pos : pos + step])
            pos += step
            assert cache.info(p) == scan_session(p), (k, pos)
        assert cache.stats.full <= 2  # at most: empty file, then the first bytes


def test_cache_shrink_replace_and_rewrite_rescan(tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl", [line(header()), *session_lines(10)])
    cache = ListingCache()
    cache.info(p)
    # shrink
    write(p, [line(header()), *session_lines(3)])
    info = cache.info(p)
    assert info is not None and info.message_count == 3 and cache.stats.full == 2
    # replaced by another file (new inode), even if larger
    tmp = write(tmp_path / "new.tmp", [line(header("s2")), *session_lines(12)])
    os.replace(tmp, p)
    info = cache.info(p)
    assert info is not None and info.id == "s2" and cache.stats.full == 3
    # same size, new mtime
    data = p.read_bytes()
    p.write_bytes(data.replace(b'"s2"', b'"s3"'))
    os.utime(p, ns=(1, 1))
    info = cache.info(p)
    assert info is not None and info.id == "s3" and cache.stats.full == 4
    # rewritten in place and grown: the header (first bytes) changed
    data = p.read_bytes()
    more = (line(msg("user", "more")) + "\n").encode()
    p.write_bytes(data.replace(b'"s3"', b'"s4"') + more)
    info = cache.info(p)
    assert info is not None and info.id == "s4" and cache.stats.full == 5
    # ... the last line before the stored offset changed
    data = p.read_bytes()
    p.write_bytes(data.replace(b'"more"', b'"MORE"') + more)
    info = cache.info(p)
    assert info is not None and info.message_count == 14 and cache.stats.full == 6
    assert cache.stats.incremental == 0
    # (documented limit: a change in the middle of a file that also grew goes unnoticed)
    data = p.read_bytes()
    p.write_bytes(data.replace(b'"t5"', b'"T5"') + more)
    assert cache.info(p) is not None and cache.stats.incremental == 1
    # deleted
    p.unlink()
    assert cache.info(p) is None and len(cache) == 0


def test_cache_non_session_that_grows_is_not_reread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path / "x.jsonl", ['{"type":"other"}', *session_lines(100)])
    cache = ListingCache()
    assert cache.info(p) is None
    counter = ReadCounter(monkeypatch)
    with open(p, "a") as f:
        f.write(line(header()) + "\n")
    assert cache.info(p) is None
    old_size = p.stat().st_size - len(line(header())) - 1
    assert counter.calls == [(old_size - L._CHECK_BYTES, L._CHECK_BYTES), (0, L._HEAD_BYTES)]


def test_cache_forgets_deleted_files(tmp_path: Path) -> None:
    layout, paths = make_store(tmp_path)
    cache = ListingCache()
    list_sessions(layout, cache=cache)
    assert str(paths["a1"]) in cache
    paths["a1"].unlink()
    shutil.rmtree(layout.cwd_dir("/proj/b"))
    assert [i.id for i in list_sessions(layout, cache=cache)] == ["a2"]
    assert len(cache) == 1


def test_cache_persistence_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout, _ = make_store(tmp_path)
    odd = write(
        layout.cwd_dir("/proj/a") / "odd.jsonl", ['{"type":"session","id":1e400,"timestamp":5}', "1e400"]
    )
    torn = layout.cwd_dir("/proj/a") / "torn.jsonl"
    torn.write_text(line(header("torn")) + "\n" + line(msg("user", "half", T0 + 40)))
    cache_path = layout.root / "cache" / "listing.json"
    cache = ListingCache(cache_path)
    first = rows(list_sessions(layout, cache=cache))
    assert cache_path.is_file() and stat.S_IMODE(cache_path.stat().st_mode) == 0o600
    assert not list(cache_path.parent.glob("*.tmp"))
    assert cache.save() is False  # nothing changed since
    assert scan_session(odd) is not None

    counter = ReadCounter(monkeypatch)
    again = ListingCache(cache_path)
    assert len(again) == len(cache)
    assert rows(list_sessions(layout, cache=again)) == first
    assert counter.calls == [] and again.stats.hits == 8

    with open(torn, "a") as f:  # the persisted state continues incrementally
        f.write("\n" + line(msg("user", "more", T0 + 50)) + "\n")
    third = ListingCache(cache_path)
    info = third.info(torn)
    assert info == scan_session(torn) and info is not None and info.message_count == 2
    assert third.stats.incremental == 1


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff garbage",
        b"[]",
        b'{"format":"sessiond-listing-cache","version":999,"files":{}}',
        b'{"format":"sessiond-listing-cache","version":1,"files":[]}',
        b'{"format":"other","version":1,"files":{}}',
    ],
)
def test_corrupt_cache_file_is_ignored(tmp_path: Path, content: bytes) -> None:
    layout, _ = make_store(tmp_path)
    cache_path = tmp_path / "listing.json"
    cache_path.write_bytes(content)
    cache = ListingCache(cache_path)
    assert len(cache) == 0
    assert rows(list_sessions(layout, cache=cache)) == rows(list_sessions(layout))
    assert json.loads(cache_path.read_bytes())["format"] == "sessiond-listing-cache"


def test_bad_records_are_dropped_individually(tmp_path: Path) -> None:
    layout, paths = make_store(tmp_path)
    cache_path = tmp_path / "listing.json"
    cache = ListingCache(cache_path)
    expected = rows(list_sessions(layout, cache=cache))
    doc = json.loads(cache_path.read_bytes())
    files = doc["files"]
    a1, a2, b1 = str(paths["a1"]), str(paths["a2"]), str(paths["b1"])
    files[a1]["fold"]["s"] = 7
    files[a2]["offset"] = "x"
    del files[b1]["check"]
    cache_path.write_text(json.dumps(doc))
    again = ListingCache(cache_path)
    assert len(again) == len(files) - 3
    assert rows(list_sessions(layout, cache=again)) == expected
    assert again.stats.full == 3 and again.stats.hits == len(files) - 3


def test_save_failure_is_swallowed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = ListingCache(blocker / "sub" / "listing.json")
    p = write(tmp_path / "s.jsonl", [header()])
    cache.info(p)
    assert cache.save() is False


# --------------------------------------------------------------------------- differential vs Pi

ORACLE = oracle_dir()
# 34 ordinary generated files, and 6 with a user/assistant ``content: null`` that Pi drops
DIFF_GENERATED = [*range(34), 48, 51, 60, 65, 76, 97]
PI_DROPS = {f"gen{i:03d}" for i in (48, 51, 60, 65, 76, 97)} | {"name-number", "null-message", "null-content"}
"""Sessions Pi's listing drops because its code throws on one line; sessiond lists them."""
DIFF_CWDS = ["/home/dev/proj", "/srv/app", "/tmp/中文项目", "/home/u/my proj", "C:\\Users\\x\\code"]


def build_diff_store(root: Path) -> StoreLayout:
    layout = StoreLayout(root)
    dirs = [layout.cwd_dir(c) for c in DIFF_CWDS]
    for i in DIFF_GENERATED:
        text_ = generate(random.Random(1000 + i), i)
        d = dirs[i % len(dirs)]
        d.mkdir(parents=True, exist_ok=True)
        (d / f"2026-01-{i % 28 + 1:02d}T00-00-00-000Z_gen{i:03d}.jsonl").write_bytes(text_.encode())
    d0, d1, d2 = dirs[0], dirs[1], dirs[2]
    base = generate(random.Random(7), 7)
    (d0 / "crlf.jsonl").write_bytes(base.replace("\n", "\r\n").encode())
    (d0 / "lone-cr.jsonl").write_bytes(base.replace("\n", "\r").encode())
    (d0 / "empty.jsonl").write_bytes(b"")
    (d0 / "not-session.jsonl").write_text(line(msg("user", "x")) + "\n" + line(header()) + "\n")
    (d0 / "torn.jsonl").write_text(base.rstrip("\n")[:-5])
    (d0 / "notes.txt").write_text(base)
    (d1 / "no-id.jsonl").write_text(line({"type": "session", "timestamp": HEADER_ISO}) + "\n")
    (d1 / "name-number.jsonl").write_text(line(header("nn")) + "\n" + line(info_entry(5)) + "\n")
    (d1 / "null-message.jsonl").write_text(line(header("nm")) + "\n" + line({"type": "message"}) + "\n")
    (d1 / "null-content.jsonl").write_text(line(header("nc")) + "\n" + line(msg("user", None)) + "\n")
    p = d1 / "numeric-ts.jsonl"
    p.write_text(line(header("nt", ts=T0)) + "\n" + line(msg("toolResult", "x", T0 + 5)) + "\n")
    os.utime(p, ns=(0, 1_700_000_000_123_999_999))
    p = d1 / "bad-ts.jsonl"
    p.write_text(line(header("bt", ts="garbage")) + "\n")
    os.utime(p, ns=(0, 1_700_000_001_000_000_000))
    (d2 / "bom-then-header.jsonl").write_text(
        "\ufeff" + line(header("bom0")) + "\n" + line(header("bom1")) + "\n"
    )
    (d2 / "names.jsonl").write_text(
        "\n\njunk\n"
        + "\n".join(
            line(x)
            for x in [
                header("names"),
                info_entry("  Name  "),
                msg("user", [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], T0 + 1),
                info_entry(""),
                msg("assistant", "z", entry_ts="2026-03-01T00:00:00Z"),
            ]
        )
        + "\n"
    )
    far = "x" * 1000 + "\n"
    (d2 / "far-header.jsonl").write_text(
        far * 1100 + line(header("far")) + "\n" + line(msg("user", "hi")) + "\n"
    )
    (d2 / "dir.jsonl").mkdir()
    return layout


def normalise(rows_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in sorted(r)} for r in rows_]


def ours(info: SessionInfo) -> dict[str, Any]:
    def t(ms: float) -> float | None:
        return None if ms != ms else ms

    return {
        "path": info.path,
        "id": info.id,
        "cwd": info.cwd,
        "name": info.name,
        "parentSessionPath": info.parent_session_path,
        "created": t(info.created_ms),
        "modified": t(info.modified_ms),
        "messageCount": info.message_count,
        "firstMessage": info.first_message,
    }


def assert_same_listing(pi: list[dict[str, Any]], mine: list[SessionInfo]) -> None:
    extra = [i for i in mine if any(Path(i.path).stem.endswith(d) for d in PI_DROPS)]
    assert {i.path for i in extra}.isdisjoint(r["path"] for r in pi)
    got = [ours(i) for i in mine if i not in extra]
    assert [r["modified"] for r in got] == [r["modified"] for r in pi]  # same order up to ties
    by_path = {r["path"]: r for r in pi}
    assert sorted(by_path) == sorted(r["path"] for r in got)
    for r in got:
        assert normalise([r]) == normalise([by_path[r["path"]]]), r["path"]


@pytest.mark.oracle
@pytest.mark.skipif(ORACLE is None, reason="pi-oracle is not installed (set PI_ORACLE_DIR)")
def test_differential_against_pi(tmp_path: Path) -> None:
    assert ORACLE is not None
    layout = build_diff_store(tmp_path / "store")
    cwds = [*DIFF_CWDS, "/nowhere/else"]
    env = {**os.environ, "PI_ORACLE_DIR": str(ORACLE), "PI_CODING_AGENT_DIR": str(layout.root)}
    mine_all = list_sessions(layout)
    mine_by_cwd = {c: list_sessions(layout, c) for c in cwds}
    cached = ListingCache(tmp_path / "cache.json")
    assert rows(list_sessions(layout, cache=cached)) == rows(mine_all)

    proc = subprocess.run(
        ["node", str(Path(__file__).with_name("pi_list.mjs")), *cwds],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    pi = json.loads(proc.stdout)
    assert len(pi["all"]) == 34 + 9  # + crlf, lone-cr, torn, no-id, numeric-ts, bad-ts, bom, names, far
    assert_same_listing(pi["all"], mine_all)
    for c in cwds:
        if re.match(r"^[A-Za-z]:[\\/]", c):
            # Pi on a POSIX system resolves a Windows cwd against its own working directory, so
            # it lists nothing for it; sessiond keeps a recorded cwd as it was written (issue 24
            # item 10, docs/pi-compatibility.md): the sessions of that cwd's folder.
            assert pi["byCwd"][c] == []
            listed = mine_by_cwd[c]
            assert listed and {Path(i.path).parent.name for i in listed} == {encode_cwd(c)}
            continue
        assert_same_listing(pi["byCwd"][c], mine_by_cwd[c])
    assert {encode_cwd(c) for c in DIFF_CWDS} <= {p.name for p in layout.sessions_dir.iterdir()}
    # Listing after Pi ran (it created the missing cwd dir) is unchanged, cached or not.
    cached.reset_stats()
    assert rows(list_sessions(layout, cache=cached)) == rows(list_sessions(layout)) == rows(mine_all)
    assert cached.stats.full == cached.stats.incremental == cached.stats.bytes_read == 0


def test_pi_drops_are_exactly_the_malformed_sessions(tmp_path: Path) -> None:
    layout = build_diff_store(tmp_path / "store")
    names = {Path(i.path).stem for i in list_sessions(layout)}
    for d in PI_DROPS:
        assert any(n.endswith(d) for n in names), d
