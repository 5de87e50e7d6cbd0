"""Every dialect reports skipped lines the same way: the exact count, the first
``MAX_REPORTED_LINES`` 1-based line numbers, blank lines apart, and a torn tail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sessiond.formats.claude_code import parse_transcript
from sessiond.formats.codex import parse_rollout
from sessiond.formats.lines import MAX_REPORTED_LINES, LineDiagnostics
from sessiond.formats.pi import parse_session

PI_HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
CODEX_META = b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_meta","payload":{"id":"t1"}}\n'
CLAUDE_USER = (
    b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"c1",'
    b'"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}\n'
)

READERS: dict[str, tuple[bytes, Callable[[bytes], Any]]] = {
    "pi": (PI_HEADER, lambda data: parse_session(data).diagnostics),
    "codex": (CODEX_META, lambda data: parse_rollout(data).diagnostics),
    "claude_code": (CLAUDE_USER, lambda data: parse_transcript(data).diagnostics),
}


@pytest.mark.parametrize("dialect", sorted(READERS))
def test_skipped_lines_are_counted_exactly_and_listed_up_to_the_cap(dialect: str) -> None:
    first, read = READERS[dialect]
    junk = MAX_REPORTED_LINES + 5
    data = first + b"\n" + b"{not json\n" * junk + b"   \n" + first.rstrip(b"\n")  # torn: no newline
    diag = read(data)
    assert isinstance(diag, LineDiagnostics)
    assert diag.unparsable_lines == junk
    assert diag.unparsable_line_numbers == list(range(3, 3 + MAX_REPORTED_LINES))
    assert diag.blank_lines == 2
    assert diag.torn_tail
    shared = diag.as_json()
    assert shared["unparsableLines"] == junk and shared["blankLines"] == 2
    assert shared["unparsableLineNumbers"] == diag.unparsable_line_numbers
    assert shared["tornTail"] is True
