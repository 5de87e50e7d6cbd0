"""A cold read of a Claude Code transcript in pieces gives what a read of the whole file gives.

``ClaudeSession.open`` parses the file in pieces of complete lines instead of holding all of
its bytes beside its records (the cold-read peak). With pieces of a few hundred bytes, so
that every fixture is cut in many places, the session must be the same as with one piece,
including a last line still being written (left for later) and the followed growth after.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiond.store import bounded
from sessiond.store.claude import ClaudeSession
from tests.conftest import CLAUDE_FIXTURES
from tests.store.test_claude_follow import state

FILES = sorted(CLAUDE_FIXTURES.rglob("*.jsonl"))[:6]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:12])
def test_a_read_in_small_pieces_equals_a_whole_read(
    tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = path.read_bytes()
    cut = data.rfind(b"\n", 0, len(data) - 1) + 1  # the last line arrives in two parts
    copy = tmp_path / path.name
    copy.write_bytes(data[: cut + (len(data) - cut) // 2])

    whole = ClaudeSession.open(copy)
    expected = state(whole, diagnostics=True)
    whole_end = whole.transcript.end
    whole.close()

    monkeypatch.setattr(bounded, "PIECE", 257)
    pieces = ClaudeSession.open(copy)
    assert pieces.transcript.end == whole_end == cut
    assert state(pieces, diagnostics=True) == expected
    with open(copy, "ab") as f:  # the rest of the last line: followed as usual
        f.write(data[cut + (len(data) - cut) // 2 :])
    pieces.ingest()
    grown = ClaudeSession.open(copy)
    assert state(pieces, diagnostics=False) == state(grown, diagnostics=False)
    pieces.close()
    grown.close()
    shutil.rmtree(tmp_path, ignore_errors=True)
