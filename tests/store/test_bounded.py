"""Reading other agents' files with a bound on a line's length (issue 24 item 5): the pieces a
:class:`~sessiond.store.bounded.BoundedLines` hands on are the file's complete lines, with a
placeholder standing for each line over the limit, whatever the read size; the placeholder's
offset and size are the real line's; a tail growing past the limit is resumed, not re-read."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiond.formats.lines import OversizedLine, span_of
from sessiond.store import bounded
from sessiond.store.bounded import BoundedLines, describe_plain, set_line_limit
from sessiond.store.codex import CodexSession

LIMIT = 1024
CODEX_FIXTURES = Path(__file__).parent.parent / "fixtures" / "codex"


def lines_of(data: bytes, limit: int) -> list[tuple[int, int, bool]]:
    """(offset, size, oversized) of every complete line, the plain way."""
    out: list[tuple[int, int, bool]] = []
    at = 0
    while True:
        nl = data.find(b"\n", at)
        if nl < 0:
            return out
        out.append((at, nl - at, nl - at > limit))
        at = nl + 1


def pieces_as_lines(pieces: list[bytes], start: int) -> list[tuple[int, int, bool]]:
    out: list[tuple[int, int, bool]] = []
    at = start
    for piece in pieces:
        if type(piece) is OversizedLine:
            assert piece.offset == at
            out.append((at, piece.size, True))
        else:
            assert piece.endswith(b"\n")
            for line in piece[:-1].split(b"\n"):
                out.append((at, len(line), False))
                at += len(line) + 1
            continue
        at += span_of(piece)
    return out


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    rng = random.Random(24)
    sizes = [0, 5, LIMIT - 1, LIMIT, LIMIT + 1, 3 * LIMIT, 40, 10 * LIMIT, 1, LIMIT + 2]
    rng.shuffle(sizes)
    data = b"".join(bytes([97 + i % 26]) * n + b"\n" for i, n in enumerate(sizes * 3)) + b"torn"
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    handle = os.open(path, os.O_RDONLY)
    yield handle, data
    os.close(handle)


@pytest.mark.parametrize("piece", [7, 100, LIMIT, LIMIT + 1, 4096, 1 << 20])
def test_pieces_are_the_lines_with_placeholders(
    fd: tuple[int, bytes], piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle, data = fd
    monkeypatch.setattr(bounded, "PIECE", piece)
    reader = BoundedLines(handle, 0, len(data), describe_plain, limit=LIMIT)
    pieces = list(reader)
    assert pieces_as_lines(pieces, 0) == lines_of(data, LIMIT)
    assert reader.pos == len(data) - len(b"torn") and reader.skip_scanned is None
    assert max(len(p) for p in pieces if type(p) is not OversizedLine) <= max(piece, LIMIT) + LIMIT + 1


def test_a_tail_growing_past_the_limit_is_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "PIECE", 256)
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"short\n" + b"x" * (3 * LIMIT))
    handle = os.open(path, os.O_RDONLY)
    try:
        first = BoundedLines(handle, 0, os.fstat(handle).st_size, describe_plain, limit=LIMIT)
        assert list(first) == [b"short\n"] and first.pos == 6 and first.skip_scanned == 6 + 3 * LIMIT
        with open(path, "ab") as f:
            f.write(b"y" * LIMIT + b"\nnext\n")
        size = os.fstat(handle).st_size
        reads: list[int] = []
        real_pread = os.pread

        def pread(f: int, n: int, at: int) -> bytes:
            reads.append(at)
            return real_pread(f, n, at)

        monkeypatch.setattr(os, "pread", pread)
        second = BoundedLines(
            handle, first.pos, size, describe_plain, limit=LIMIT, skip_scanned=first.skip_scanned
        )
        pieces = list(second)
        assert min(reads) >= first.skip_scanned  # what was scanned is not read again
        assert type(pieces[0]) is OversizedLine and (pieces[0].offset, pieces[0].size) == (6, 4 * LIMIT)
        assert pieces[1:] == [b"next\n"] and second.pos == size and second.skip_scanned is None
    finally:
        os.close(handle)


def test_a_codex_rollout_with_a_huge_line(tmp_path: Path) -> None:
    source = sorted(CODEX_FIXTURES.rglob("rollout-*.jsonl"))[0]
    data = source.read_bytes()
    lines = data.splitlines(keepends=True)
    huge = (
        b'{"timestamp":"2025-01-01T00:00:00.000Z","type":"response_item","payload":"'
        + b"z" * (64 * LIMIT)
        + b'"}\n'
    )
    path = tmp_path / source.name
    path.write_bytes(b"".join(lines[:3]) + huge + b"".join(lines[3:]))
    set_line_limit(LIMIT)
    try:
        session = CodexSession.open(path)
        plain = CodexSession.open(source)
        long_ones = sum(1 for line in lines if len(line) - 1 > LIMIT)  # the fixture's own
        assert plain.rollout.diagnostics.oversized_lines == long_ones
        assert session.rollout.diagnostics.oversized_lines == long_ones + 1
        assert session.rollout.bytes_read == path.stat().st_size
        assert len(session.rollout.records) == len(plain.rollout.records)
        assert session.rollout.diagnostics.as_json()["oversizedLines"] == long_ones + 1
        with open(path, "ab") as f:  # followed: another one, then a line after it
            f.write(huge + lines[-1])
        session.ingest()
        assert session.rollout.diagnostics.oversized_lines == long_ones + 2 + (len(lines[-1]) - 1 > LIMIT)
        assert session.rollout.bytes_read == path.stat().st_size
    finally:
        set_line_limit(bounded.DEFAULT_LINE_LIMIT)
