"""Following a Claude Code transcript line by line equals a cold read of the same lines.

Every transcript (the real ones in ``tests/fixtures/claude-code``, the synthetic fixture, and
generated ones: parallel tool calls, progress chains, compact boundaries with and without a
``preservedSegment``, streamed pieces, rewinds, lines written out of order) is written to a
file a few lines at a time, sometimes half a line first; after each write the session takes
in the growth (``ingest``), and at the checked points its tree, entries, context, usage,
branch and diagnostics must equal those of ``ClaudeSession.open`` on the file as it is. A
growth the reader does not follow must ask for a reload, and the reloaded session must then
equal the cold read too.

Checked points: every line for files up to ``EVERY_LINE`` lines, else about ``SAMPLES``
prefixes spread over the file plus each of its last ``TAIL`` lines. ``SESSIOND_EXHAUSTIVE_FOLLOW=1``
checks every line of every file (slow: minutes).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.formats.claude_code import reconstruct
from sessiond.model.js import get
from sessiond.model.tokens import PI
from sessiond.store.claude import ClaudeSession
from sessiond.store.claude_files import load_transcript
from tests.conftest import CLAUDE_FIXTURES, FIXTURES
from tests.formats.claude_synth import transcript

EXHAUSTIVE = os.environ.get("SESSIOND_EXHAUSTIVE_FOLLOW") == "1"
EVERY_LINE = 200
SAMPLES = 40
TAIL = 25

REAL = sorted(p for p in CLAUDE_FIXTURES.rglob("*.jsonl"))
SYNTHETIC = sorted((FIXTURES / "synthetic").glob("claude-code-*.jsonl"))
GENERATED = [(seed, seed % 3 == 0) for seed in range(8)]


def state(s: ClaudeSession, *, diagnostics: bool) -> dict[str, Any]:
    """Everything a client can read of the session."""
    ctx = s.context()
    view = s.usage_view(PI)
    out: dict[str, Any] = {
        "header": s.header,
        "leaf": s.leaf_id,
        "count": s.entry_count,
        "name": s.name,
        "tree": s.tree_view(),
        "entries": s.entries(),
        "context": [(get(p.source, "id"), p.messages) for p in ctx.entries],
        "contextSources": [p.source for p in ctx.entries],
        "settings": (ctx.settings.thinking_level, ctx.settings.model),
        "usage": s.context_usage(PI).as_json(),
        "view": (view.estimate.as_json(), view.model, view.messages),
        "branch": s.branch_ids(),
        "currentBranch": [get(e, "id") for e in s.current_branch()],
        "previews": list(s.index.previews),
    }
    if diagnostics:
        out["diagnostics"] = s.diagnostics.as_json()
    return out


def checkpoints(n: int, head: int) -> set[int]:
    """Line counts after which the followed session is compared with a cold read."""
    if EXHAUSTIVE or n <= EVERY_LINE:
        return set(range(head, n + 1))
    step = max(1, (n - head) // SAMPLES)
    return set(range(head, n + 1, step)) | set(range(max(head, n - TAIL), n + 1))


def replay(tmp_path: Path, name: str, data: bytes, seed: int) -> dict[str, int]:
    """Grow a copy of ``data`` and compare with cold reads; counts of what happened."""
    rng = random.Random(seed)
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"  # a torn last line would never be taken in
    head = rng.randint(0, min(5, len(lines) - 1))
    target = tmp_path / name
    target.write_bytes(b"".join(lines[:head]))
    followed = ClaudeSession.open(target)
    check = checkpoints(len(lines), head)
    stats = {"lines": len(lines), "checked": 0, "reloads": 0, "entries": 0, "final": 0}
    at = head
    try:
        while at < len(lines):
            k = 1 if rng.random() < 0.8 else rng.randint(2, 4)
            chunk = lines[at : at + k]
            if rng.random() < 0.1 and len(chunk[0]) > 4:
                # Half a line first: nothing of it is taken in until its newline arrives.
                half = len(chunk[0]) // 2
                with open(target, "ab") as f:
                    f.write(chunk[0][:half])
                before = followed.entry_count
                partial = followed.ingest()
                assert partial.reload_required is None and partial.partial_tail
                assert followed.entry_count == before
                with open(target, "ab") as f:
                    f.write(chunk[0][half:] + b"".join(chunk[1:]))
            else:
                with open(target, "ab") as f:
                    f.write(b"".join(chunk))
            at += len(chunk)
            result = followed.ingest()
            if result.reload_required is not None:
                stats["reloads"] += 1
                followed.close()
                followed = ClaudeSession.open(target)
            stats["entries"] += len(result.entries)
            if not any(n in check for n in range(at - len(chunk) + 1, at + 1)):
                continue
            cold = ClaudeSession.open(target)
            try:
                last = at == len(lines)
                want = state(cold, diagnostics=last or EXHAUSTIVE)
                got = state(followed, diagnostics=last or EXHAUSTIVE)
                for field in want:
                    assert got[field] == want[field], (
                        f"{name}: after line {at}: {field} differs from a cold read"
                    )
                stats["checked"] += 1
                stats["final"] = int(last)
            finally:
                cold.close()
    finally:
        followed.close()
    return stats


@pytest.mark.parametrize("path", REAL + SYNTHETIC, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_following_a_real_transcript_equals_a_cold_read(tmp_path: Path, path: Path) -> None:
    stats = replay(tmp_path, path.name, path.read_bytes(), seed=len(path.name))
    assert stats["final"] and stats["checked"] >= min(stats["lines"] - 6, SAMPLES) // 2
    assert stats["reloads"] <= 1  # at most when the session's first entry arrives


@pytest.mark.parametrize(("seed", "rare"), GENERATED, ids=str)
def test_following_a_generated_transcript_equals_a_cold_read(tmp_path: Path, seed: int, rare: bool) -> None:
    data = transcript(seed, 25, rare=rare)
    stats = replay(tmp_path, f"{seed:08x}-0000-4000-8000-000000000000.jsonl", data, seed)
    assert stats["final"] and stats["checked"] >= SAMPLES // 2
    assert stats["entries"] > 100


def test_a_generated_transcript_exercises_what_following_must_repair() -> None:
    """The generator writes what the property test is about (else it would prove little)."""
    data = b"".join(transcript(seed, 25) for seed in range(8))
    assert data.count(b'"preservedSegment"') >= 3
    assert data.count(b'"compact_boundary"') >= 6
    assert data.count(b'"type":"progress"') >= 50
    assert data.count(b'"sourceToolAssistantUUID"') >= 300


def test_a_repeated_uuid_is_read_back_from_its_last_line(tmp_path: Path) -> None:
    """An entry whose uuid a later line repeats is indexed where it was first seen but read at
    its last line, so reading bodies back in batches must not assume file order. The context
    lost that entry's tool result (an empty message list) before the reads were ordered by
    offset; the reference reconstruction keeps it."""
    lines = transcript(3, 25, rare=True).splitlines(keepends=True)
    uuids = [orjson.loads(line).get("uuid") for line in lines]
    cut = next(n for n in range(1, len(lines)) if uuids[n] is not None and uuids[n] in uuids[:n]) + 1
    path = tmp_path / "00000003-0000-4000-8000-000000000000.jsonl"
    path.write_bytes(b"".join(lines[:cut]))
    s = ClaudeSession.open(path)
    try:
        want = reconstruct(load_transcript(path)).messages
        assert s.live.messages(s._fetch) == want
        assert [m for p in s.context().entries for m in p.messages] == [m for _, m in want]
    finally:
        s.close()
