"""The Pi session loader (docs/pi-format.md §3.1) and v1 -> v3 migration (§1.4)."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
from pathlib import Path

import pytest

from sessiond.errors import NotASessionError
from sessiond.formats.pi import encode_line, load_session, parse_session
from sessiond.model.js_json import parse
from sessiond.model.tree import SessionTree
from tests.conftest import GOLDEN, PI_FIXTURES

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'


def line(eid: str, parent: str | None, **extra: object) -> bytes:
    obj = {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "x", "timestamp": 1},
        **extra,
    }
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def test_blank_and_junk_lines_are_skipped_counted_and_located() -> None:
    data = (
        HEADER + b"\n   \n" + line("a", None) + b"not json\n" + b'{"trunc\n' + line("b", "a") + b"null\n0\n"
    )
    s = parse_session(data)
    assert [e["id"] for e in s.entries] == ["a", "b"]
    d = s.diagnostics
    assert (d.blank_lines, d.unparsable_lines, d.falsy_lines) == (2, 2, 2)
    assert d.unparsable_line_numbers == [5, 6]
    assert d.physical_lines == 9
    assert not d.torn_tail


def test_leading_junk_before_header_is_tolerated() -> None:
    s = parse_session(b"garbage\n\n" + HEADER + line("a", None))
    assert s.header["id"] == "s1"
    assert s.diagnostics.leading_junk_lines == 2


def test_header_found_beyond_one_mebibyte_of_junk() -> None:
    junk = (b"x" * 1023 + b"\n") * 1100  # ~1.1 MiB
    s = parse_session(junk + HEADER + line("a", None))
    assert s.header["id"] == "s1"
    assert s.diagnostics.leading_junk_lines == 1100


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"\n\n  \n", "no JSON lines"),
        (line("a", None), "not a session header"),
        (b'{"type":"session","id":5}\n', "no string id"),
        (b"[1,2]\n" + HEADER, "not a session header"),
    ],
)
def test_not_a_session(data: bytes, reason: str) -> None:
    with pytest.raises(NotASessionError) as exc:
        parse_session(data, source="f.jsonl")
    assert reason in exc.value.message
    assert exc.value.message.startswith("f.jsonl is not a valid Pi session")


def test_torn_tail_reported_and_kept_when_it_parses() -> None:
    s = parse_session(HEADER + line("a", None) + line("b", "a").rstrip(b"\n"))
    assert s.diagnostics.torn_tail and s.diagnostics.torn_tail_parsed
    assert [e["id"] for e in s.entries] == ["a", "b"]
    torn = parse_session(HEADER + line("a", None) + b'{"type":"message","id":"b"')
    assert torn.diagnostics.torn_tail and not torn.diagnostics.torn_tail_parsed
    assert torn.diagnostics.unparsable_lines == 1


def test_crlf_lines_and_invalid_utf8_parse_like_node() -> None:
    s = parse_session(
        HEADER
        + line("a", None).replace(b"\n", b"\r\n")
        + b'{"type":"custom","id":"b","parentId":"a","x":"\xff"}\n'
    )
    assert [e["id"] for e in s.entries] == ["a", "b"]
    assert s.entries[1]["x"] == "\ufffd"


def test_duplicate_ids_last_wins_and_leaf_is_last_line() -> None:
    s = parse_session(HEADER + line("a", None) + line("b", "a") + line("a", None, note=2))
    tree = SessionTree(s.entries)
    assert len(tree) == 2
    a = tree.get("a")
    assert a is not None and a["note"] == 2
    assert tree.leaf_id == "a"


def test_extra_headers_are_not_entries() -> None:
    s = parse_session(HEADER + line("a", None) + HEADER)
    assert [e["id"] for e in s.entries] == ["a"]
    assert s.diagnostics.extra_headers == 1


def test_reading_never_modifies_the_file(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(HEADER.replace(b'"version":3,', b"") + b'{"type":"message","message":{"role":"user"}}')
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    s = load_session(p)
    assert s.migrated and s.diagnostics.torn_tail
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before


def test_v1_migration_semantics() -> None:
    v1 = [
        {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w", "provider": "x"},
        {"type": "message", "timestamp": "t1", "message": {"role": "user", "content": "a"}},
        {
            "type": "message",
            "timestamp": "t2",
            "message": {"role": "hookMessage", "customType": "h", "content": "b"},
        },
        {"type": "message", "timestamp": "t3", "message": {"role": "user", "content": "c"}},
        {
            "type": "compaction",
            "timestamp": "t4",
            "summary": "S",
            "firstKeptEntryIndex": 3,
            "tokensBefore": 9,
        },
        {
            "type": "compaction",
            "timestamp": "t5",
            "summary": "S2",
            "firstKeptEntryIndex": 7,
            "tokensBefore": 9,
        },
        {
            "type": "compaction",
            "timestamp": "t6",
            "summary": "S3",
            "firstKeptEntryIndex": 0,
            "tokensBefore": 9,
        },
    ]
    data = b"".join(encode_line(o) for o in v1)
    ids = (f"id{i:05d}" for i in itertools.count())
    s = parse_session(data, new_id=lambda: next(ids))
    assert s.diagnostics.source_version == 1
    assert s.header["version"] == 3
    assert list(s.header)[-1] == "version"  # migration appends the key
    assert [e["id"] for e in s.entries] == [f"id{i:05d}" for i in range(6)]
    assert [e["parentId"] for e in s.entries] == [None, "id00000", "id00001", "id00002", "id00003", "id00004"]
    assert list(s.entries[0])[-2:] == ["id", "parentId"]
    assert s.entries[1]["message"]["role"] == "custom"
    # index 3 counts the header: the third message, which already has an id
    assert s.entries[3]["firstKeptEntryId"] == "id00002"
    assert "firstKeptEntryIndex" not in s.entries[3]
    assert list(s.entries[3])[-3:] == ["id", "parentId", "firstKeptEntryId"]
    # index 7 is past the end, index 0 is the header: no firstKeptEntryId at all
    assert "firstKeptEntryId" not in s.entries[4] and "firstKeptEntryId" not in s.entries[5]


def test_v2_ids_are_untouched() -> None:
    header = HEADER.replace(b'"version":3', b'"version":2')
    s = parse_session(header + line("keep", None))
    assert s.entries[0]["id"] == "keep"
    assert s.diagnostics.source_version == 2


def test_real_v1_fixtures_migrate_to_one_linear_chain() -> None:
    for path in sorted(PI_FIXTURES.glob("*.jsonl")):
        s = load_session(path)
        assert s.diagnostics.source_version == 1
        tree = SessionTree(s.entries)
        assert len(tree.branch()) == len(s.entries)
        assert all(len(e["id"]) == 8 for e in s.entries)


@pytest.mark.parametrize("name", ["large-session.v1.jsonl", "before-compaction.v1.jsonl"])
def test_reencoding_every_fixture_line_gives_the_same_bytes(name: str) -> None:
    data = (PI_FIXTURES / name).read_bytes()
    lines = data.split(b"\n")[:-1]
    assert len(lines) > 1000
    for raw in lines:
        assert encode_line(parse(raw)) == raw + b"\n"


def test_unknown_types_fields_and_null_vs_absent_survive_a_round_trip() -> None:
    lines = [
        b'{"type":"decision","id":"d1","parentId":null,"timestamp":"t","verdict":{"z":1,"a":[null,true]},"extra":null}',
        b'{"type":"message","id":"m1","parentId":"d1","timestamp":"t","message":{"role":"user","content":"x",'
        b'"timestamp":1,"futureField":{"nested":"\xc3\xa9"}},"annotation":"kept"}',
        b'{"type":"custom","customType":"c","id":"c1","parentId":"m1","timestamp":"t"}',
        b'{"type":"label","id":"l1","parentId":"c1","timestamp":"t","targetId":"m1"}',
    ]
    s = parse_session(HEADER + b"\n".join(lines) + b"\n")
    assert [encode_line(e) for e in s.entries] == [ln + b"\n" for ln in lines]
    assert "data" not in s.entries[2] and "label" not in s.entries[3]  # absent stays absent
    assert s.entries[0]["extra"] is None  # null stays null


def test_every_golden_line_written_by_pi_or_like_pi_reencodes_identically() -> None:
    files = [p.read_bytes() for p in sorted((GOLDEN / "generated").glob("*.jsonl"))]
    files += [gzip.decompress(p.read_bytes()) for p in sorted((GOLDEN / "fixtures").glob("*.gz"))]
    checked = 0
    for data in files:
        for raw in data.split(b"\n"):
            try:
                value = parse(raw)
            except ValueError:
                continue  # junk lines are junk
            if raw.endswith(b"\r"):
                continue  # CRLF lines parse, but no JSON.stringify output ends in \r
            assert encode_line(value) == raw + b"\n"
            checked += 1
    assert checked > 10_000
