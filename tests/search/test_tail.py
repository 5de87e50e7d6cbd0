"""A session file nobody has open that grows is read from where the index left it: the work
of each change is the growth's, not the file's (counted in bytes the writer read, not time).
A rewrite, a truncation or a replacement is still read whole, and the index stays right."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.search.engine import SearchEngine, SourceFile, stat_signature
from sessiond.search.index import Filters, Signature
from sessiond.search.pi_file import read_pi_v3
from sessiond.search.query import words_match
from sessiond.store.claude import ClaudeSession

from .conftest import CLAUDE_FIXTURE, CLAUDE_ID

APPENDS = 10


class Source:
    """One Claude Code transcript and one Pi v3 file, opened with the readers the daemon uses."""

    def __init__(self, claude: Path, pi: Path) -> None:
        self.claude, self.pi = claude, pi

    def files(self) -> Iterator[SourceFile]:
        yield from (f for f in (self.classify(str(self.claude)), self.classify(str(self.pi))) if f)

    def classify(self, path: str) -> SourceFile | None:
        if path == str(self.claude):
            return SourceFile(path, "claude-code", "claude-code")
        return SourceFile(path, "pi", "pi") if path == str(self.pi) else None

    def signature(self, path: str) -> Signature | None:
        return stat_signature(path)

    def open(self, file: SourceFile, *, follow: bool = False) -> Any:
        if file.agent == "claude-code":
            return ClaudeSession.open(Path(file.path))
        return read_pi_v3(Path(file.path))


def _claude_line(path: Path, word: str) -> bytes:
    records = [orjson.loads(raw) for raw in path.read_bytes().splitlines()]
    template = next(r for r in reversed(records) if r.get("type") == "user")
    parent = next(r["uuid"] for r in reversed(records) if r.get("uuid"))
    record = {
        **template,
        "uuid": str(uuid.uuid4()),
        "parentUuid": parent,
        "message": {"role": "user", "content": f"look at {word} please"},
    }
    return orjson.dumps(record) + b"\n"


def _pi_line(n: int, word: str) -> bytes:
    entry = {
        "type": "message",
        "id": f"e{n}",
        "parentId": f"e{n - 1}" if n else None,
        "timestamp": "2026-01-02T00:00:00Z",
        "message": {"role": "user", "content": f"{word} filler text " * 4, "timestamp": 1},
    }
    return orjson.dumps(entry) + b"\n"


def _count(engine: SearchEngine, word: str) -> int:
    return engine.search(match=words_match(word), needle=None, filters=Filters(), offset=0, limit=1).total


def _found(engine: SearchEngine, word: str) -> set[str]:
    page = engine.search(match=words_match(word), needle=None, filters=Filters(), offset=0, limit=50)
    return {h.entry_id for h in page.hits}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[SearchEngine, Path, Path]]:
    claude = tmp_path / "claude" / f"{CLAUDE_ID}.jsonl"
    claude.parent.mkdir()
    shutil.copyfile(CLAUDE_FIXTURE, claude)
    pi = tmp_path / "pi" / "s.jsonl"
    pi.parent.mkdir()
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/p"}
    pi.write_bytes(orjson.dumps(header) + b"\n" + b"".join(_pi_line(n, "bulk") for n in range(500)))
    engine = SearchEngine(tmp_path / "index" / "index.sqlite3", Source(claude, pi))
    engine.start()
    engine.ready.wait(60)
    deadline = time.monotonic() + 60
    while engine.progress is not None and time.monotonic() < deadline:  # the first build
        time.sleep(0.01)
    try:
        yield engine, claude, pi
    finally:
        engine.close()


@pytest.mark.parametrize("which", ["claude", "pi"])
def test_growth_costs_the_growth(setup: tuple[SearchEngine, Path, Path], which: str) -> None:
    engine, claude, pi = setup
    path = claude if which == "claude" else pi
    before, grown = engine.bytes_read, 0
    for i in range(APPENDS):
        word = f"walrus{i}"
        line = _claude_line(path, word) if which == "claude" else _pi_line(5000 + i, word)
        with open(path, "ab") as f:
            f.write(line)
        grown += len(line)
        engine.changed(str(path))
        engine.flush()
        assert len(_found(engine, word)) == 1, word
        if i == 0:  # the first change of a file reads it whole (and keeps its reader)
            assert engine.bytes_read - before == os.path.getsize(path)
            before, grown = engine.bytes_read, 0
    assert engine.bytes_read - before == grown, (engine.bytes_read - before, grown)


def test_rewrites_and_truncations_are_read_whole(setup: tuple[SearchEngine, Path, Path]) -> None:
    engine, _claude, pi = setup
    with open(pi, "ab") as f:
        f.write(_pi_line(8000, "seal"))
    engine.changed(str(pi))  # read whole: its reader is kept
    engine.flush()
    data = pi.read_bytes()
    # in place, same inode, longer than before: only the bytes tell
    with open(pi, "r+b") as f:
        f.write(data.replace(b"bulk", b"tusk") + _pi_line(9000, "narwhal"))
    engine.changed(str(pi))
    engine.flush()
    assert not _found(engine, "bulk") and _count(engine, "tusk") == 500 and _found(engine, "seal")
    assert _found(engine, "narwhal") == {"e9000"}
    # truncated in place, then grown again
    lines = pi.read_bytes().splitlines(keepends=True)
    with open(pi, "r+b") as f:
        f.truncate(len(b"".join(lines[:11])))
    engine.changed(str(pi))
    engine.flush()
    assert _count(engine, "tusk") == 10 and not _found(engine, "narwhal")
    with open(pi, "ab") as f:
        f.write(_pi_line(9001, "orca"))
    engine.changed(str(pi))
    engine.flush()
    assert _found(engine, "orca") == {"e9001"} and _count(engine, "tusk") == 10
    # replaced by another file
    replacement = pi.with_suffix(".new")
    replacement.write_bytes(b"".join(lines[:1]) + _pi_line(1, "beluga"))
    os.replace(replacement, pi)
    engine.changed(str(pi))
    engine.flush()
    assert not _found(engine, "tusk") and not _found(engine, "orca") and _found(engine, "beluga") == {"e1"}
