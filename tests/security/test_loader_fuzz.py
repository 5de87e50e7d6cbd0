"""Hostile session files: the JSONL loaders of both formats never crash, hang or lie.

The contract (docs/security.md): a Pi loader (``parse_session``, and the store's incremental
``Session.open``) raises :class:`NotASessionError` for a file that is not a session and
nothing else; a Claude Code loader (``parse_transcript`` and the reconstruction behind it)
never raises on content. Whatever they skip is counted in the diagnostics. Inputs: random
bytes, every truncation of the head of real fixtures, huge lines, 100k-deep nesting, invalid
UTF-8 and lone surrogates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiond.errors import NotASessionError
from sessiond.formats.claude_code import parse_transcript, reconstruct, to_pi_entries
from sessiond.formats.pi import LoadedSession, encode_line, parse_session
from sessiond.store.claude import ClaudeSession
from sessiond.store.session import Session
from tests.conftest import CLAUDE_FIXTURES, PI_FIXTURES
from tests.security.fuzz import fuzz

PI_FIXTURE = PI_FIXTURES / "large-session.v1.jsonl"
CLAUDE_FIXTURE = CLAUDE_FIXTURES / "ccl-2.1.17" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl"

HEADER = (
    b'{"type":"session","version":3,"id":"fuzz-0001","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp/x"}\n'
)


def entry(i: int, parent: str | None, **extra: Any) -> bytes:
    e: dict[str, Any] = {
        "type": "message",
        "id": f"e{i}",
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": f"hello {i}"}], "timestamp": 1},
    }
    e.update(extra)
    return json.dumps(e).encode() + b"\n"


VALID = HEADER + b"".join(entry(i, f"e{i - 1}" if i else None) for i in range(4))


def load_pi(data: bytes, *, migrate: bool = True) -> LoadedSession | None:
    """``parse_session`` under the contract: a session, or ``NotASessionError``, nothing else."""
    try:
        loaded = parse_session(data, source="<fuzz>", migrate=migrate)
    except NotASessionError:
        return None
    d = loaded.diagnostics
    assert d.physical_lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert d.torn_tail == (bool(data) and not data.endswith(b"\n"))
    return loaded


def open_store(tmp: Path, data: bytes, name: str = "s.jsonl") -> Session | None:
    """The store's incremental loader on a file: opened read-only (so nothing is ever rewritten),
    then every view a client can ask for is built."""
    path = tmp / name
    path.write_bytes(data)
    try:
        session = Session.open(path, read_only="fuzz")
    except NotASessionError:
        return None
    try:
        session.entries()
        session.tree_nodes()
        session.current_branch()
        session.context()
        session.context_usage()
        assert session.diagnostics.as_json()["physicalLines"] >= 1
    finally:
        session.close()
    assert path.read_bytes() == data, "a read-only open changed the file"
    return session


def load_claude(data: bytes) -> None:
    t = parse_transcript(data, "<fuzz>")
    d = t.diagnostics
    assert d.physical_lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert d.blank_lines + d.unparsable_lines + d.non_object_lines + len(t.records) == d.physical_lines
    reconstruct(t)
    to_pi_entries(t)


# ------------------------------------------------------------------ random bytes


@given(st.binary(max_size=4096))
@fuzz(150)
def test_random_bytes_pi(data: bytes) -> None:
    load_pi(data)
    load_pi(HEADER + data)


@given(st.binary(max_size=4096))
@fuzz(150)
def test_random_bytes_claude(data: bytes) -> None:
    load_claude(data)


@given(st.lists(st.binary(max_size=200) | st.sampled_from([entry(7, "e3"), b"{}", b"[]", b"0", b"null"])))
@fuzz(60)
def test_random_lines_after_a_header_keep_the_session(lines: list[bytes]) -> None:
    """Junk between valid lines is skipped and counted; the valid lines all survive."""
    data = VALID + b"\n".join(lines)
    loaded = load_pi(data)
    assert loaded is not None
    assert [e["id"] for e in loaded.entries[:4]] == ["e0", "e1", "e2", "e3"]


@given(st.binary(min_size=1, max_size=2048))
@fuzz(40)
def test_random_bytes_store_loader(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tmp = tmp_path_factory.mktemp("fz")
    open_store(tmp, data)
    assert open_store(tmp, VALID + data, "v.jsonl") is not None


# ------------------------------------------------------------------ truncation of real files


def _lines_before(data: bytes, cut: int) -> int:
    return data[:cut].count(b"\n")


def test_every_truncation_of_the_head_of_a_pi_fixture() -> None:
    """Cut at every byte offset of the first lines of a real (v1) Pi file: the complete lines
    load as before and a torn last line is either a whole entry or reported."""
    full = PI_FIXTURE.read_bytes()
    head = full[: full.index(b"\n", 6000) + 1]
    reference = parse_session(head, source="ref", migrate=False)  # v1 migration invents ids
    for cut in range(len(head) + 1):
        loaded = load_pi(head[:cut], migrate=cut % 7 == 0)
        if loaded is not None and cut % 7 == 0:
            continue  # the migration path must not crash on a cut either; ids are random there
        complete = _lines_before(head, cut)
        if loaded is None:
            assert complete == 0, cut  # only while the header itself is cut
            continue
        whole = list(loaded.entries)[: max(0, complete - 1)]
        assert [e.get("id") for e in whole] == [e.get("id") for e in reference.entries[: len(whole)]]
        assert len(loaded.entries) in (complete - 1, complete), cut
        if loaded.diagnostics.torn_tail and not loaded.diagnostics.torn_tail_parsed:
            assert loaded.diagnostics.unparsable_lines == 1, cut


def test_every_truncation_of_the_head_of_a_claude_fixture() -> None:
    full = CLAUDE_FIXTURE.read_bytes()
    head = full[: full.index(b"\n", 3000) + 1]
    for cut in range(len(head) + 1):
        load_claude(head[:cut])


@given(st.data())
@fuzz(12)
def test_truncation_anywhere_in_whole_fixtures(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Sampled cuts over the whole files, through the store's own loaders (Pi and Claude Code)."""
    tmp = tmp_path_factory.mktemp("cut")
    pi = PI_FIXTURE.read_bytes()
    # v1 files are migrated in memory by a read-only open; the cut lands anywhere.
    cut = data.draw(st.integers(0, len(pi)), label="pi cut")
    open_store(tmp, pi[:cut])
    claude = CLAUDE_FIXTURE.read_bytes()
    cut = data.draw(st.integers(0, len(claude)), label="claude cut")
    path = tmp / "c.jsonl"
    path.write_bytes(claude[:cut])
    session = ClaudeSession.open(path)
    try:
        session.entries()
        session.context()
        session.diagnostics.as_json()
    finally:
        session.close()


# ------------------------------------------------------------------ huge, deep, odd encodings


def test_huge_lines(tmp_path: Path) -> None:
    big_text = "x" * (8 * 1024 * 1024)
    huge_entry = entry(9, "e3", message={"role": "user", "content": big_text, "timestamp": 1})
    junk = b"{" + b"a" * (8 * 1024 * 1024) + b"\n"
    data = VALID + huge_entry + junk + entry(10, "e9")
    loaded = load_pi(data)
    assert loaded is not None and [e["id"] for e in loaded.entries] == ["e0", "e1", "e2", "e3", "e9", "e10"]
    assert loaded.diagnostics.unparsable_lines == 1 and loaded.diagnostics.unparsable_line_numbers == [7]
    session = open_store(tmp_path, data)
    assert session is not None and session.entry_count == 6
    load_claude(junk + huge_entry)


@pytest.mark.parametrize("depth", [100, 255, 256, 1000, 1023, 1024, 1025, 5000, 100_000])
def test_deep_nesting_never_recursion_errors(tmp_path: Path, depth: int) -> None:
    """Nesting at and around orjson's (1024) and Python's (1000) limits, and far beyond: a line
    is either kept (and every view of the session still builds) or counted as unparsable."""
    arrays = b"[" * depth + b"]" * depth
    objects = b'{"a":' * depth + b"1" + b"}" * depth
    nested_in_entry = entry(8, "e3", details=json.loads(b"[" * min(depth, 900) + b"]" * min(depth, 900)))
    deep_entry = b'{"type":"custom","customType":"x","id":"d1","parentId":"e3","data":' + arrays + b"}\n"
    data = VALID + arrays + b"\n" + objects + b"\n" + nested_in_entry + deep_entry
    loaded = load_pi(data)
    assert loaded is not None
    d = loaded.diagnostics
    assert d.physical_lines == 9
    assert len(loaded.entries) + d.unparsable_lines + d.falsy_lines == 8
    for e in loaded.entries:
        encode_line(e)  # what a client would be sent (or a rewrite would write) serializes
    open_store(tmp_path, data)
    load_claude(arrays + b"\n" + objects + b"\n" + deep_entry)


@given(st.binary(min_size=1, max_size=64).filter(lambda b: not _is_utf8(b)))
@fuzz(60)
def test_invalid_utf8_inside_strings_is_replaced_not_fatal(junk: bytes) -> None:
    """Node decodes bad UTF-8 to U+FFFD and so does the loader: the entry stays."""
    line = (
        b'{"type":"custom","customType":"bin","id":"b1","parentId":"e3","data":"'
        + junk.replace(b'"', b"'").replace(b"\\", b"/").replace(b"\n", b" ")
        + b'"}\n'
    )
    loaded = load_pi(VALID + line)
    assert loaded is not None
    ids = [e.get("id") for e in loaded.entries]
    if loaded.diagnostics.unparsable_lines == 0:
        assert ids[-1] == "b1" and "\ufffd" in loaded.entries[-1]["data"]
    load_claude(line)


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@given(
    st.lists(st.sampled_from(["\\ud800", "\\udfff", "\\ud83d", "\\ude00", "a", "\\u0000", "é"]), max_size=12)
)
@fuzz(60)
def test_lone_surrogates_survive_a_round_trip(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    """``"\\ud800"`` is legal JSON and a legal JS string: kept, and written back escaped."""
    text = "".join(parts)
    line = ('{"type":"custom","customType":"s","id":"s1","parentId":"e3","data":"' + text + '"}\n').encode()
    loaded = load_pi(VALID + line)
    assert loaded is not None and loaded.entries[-1]["id"] == "s1"
    again = load_pi(VALID + encode_line(loaded.entries[-1]))
    assert again is not None and again.entries[-1] == loaded.entries[-1]
    tmp = tmp_path_factory.mktemp("sur")
    assert open_store(tmp, VALID + line) is not None
    load_claude(line)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=40,
    )
)
@fuzz(80)
def test_json_values_of_any_shape_as_lines(value: Any) -> None:
    """Valid JSON of any shape where an entry or a record belongs (Pi keeps truthy values)."""
    raw = json.dumps(value).encode()
    loaded = load_pi(VALID + raw + b"\n" + entry(9, "e3"))
    assert loaded is not None and loaded.entries[-1]["id"] == "e9"
    load_claude(raw + b"\n")
    with_type = json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "message": value}).encode()
    load_claude(with_type + b"\n")
