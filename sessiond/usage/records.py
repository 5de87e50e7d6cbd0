"""What one assistant response used, as every agent's reader hands it to the index."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Record:
    """One assistant response's usage.

    ``key`` is unique within the agent (root): the same key read again (Claude Code's streamed
    pieces of one response, a sub-agent message seen in its own transcript and in its parent's
    ``progress`` entries) replaces the earlier reading instead of adding to it.
    ``input`` excludes cached input; ``cache_creation`` is the sum of the 5-minute and 1-hour
    writes where the agent says which (``cache_5m``/``cache_1h``, else both 0).
    ``agent_cost`` is the cost the agent recorded itself (USD), ``None`` when it records none.
    """

    key: str
    session_id: str
    model: str
    ts: int
    """Milliseconds since the epoch (UTC)."""
    input: int
    output: int
    cache_read: int
    cache_creation: int
    cache_5m: int = 0
    cache_1h: int = 0
    agent_cost: float | None = None


@dataclass(slots=True)
class SessionInfo:
    """What reports show of a session besides its numbers (the first values found win)."""

    session_id: str
    cwd: str | None = None
    title: str | None = None


def lines_matching(data: bytes, start: int, pattern: re.Pattern[bytes] | bytes) -> list[tuple[int, bytes]]:
    """The lines of ``data`` (complete lines; ``start``: the file offset of its first byte) in
    which ``pattern`` occurs, as ``(offset, line)``, in order.

    The buffer is searched, not split: most lines of a transcript (tool results, file
    snapshots) hold no usage, and are never copied or looked at one by one. A JSON string
    cannot hold an unescaped quote, so a marker such as ``"usage"`` only matches a key. A
    ``bytes`` pattern is searched with ``bytes.find`` (several times faster than a regex)."""
    out: list[tuple[int, bytes]] = []
    pos = 0
    while True:
        if isinstance(pattern, bytes):
            at = data.find(pattern, pos)
            if at < 0:
                return out
            found, after = at, at + len(pattern)
        else:
            match = pattern.search(data, pos)
            if match is None:
                return out
            found, after = match.start(), match.end()
        begin = data.rfind(b"\n", 0, found) + 1
        end = data.find(b"\n", after)
        if end < 0:
            end = len(data)
        out.append((start + begin, data[begin:end]))
        pos = end + 1


def count(value: Any) -> int:
    """A token count as recorded: a non-negative integer, anything else 0 (never a crash)."""
    if type(value) is int:
        return value if value > 0 else 0
    if type(value) is float and value == value and value > 0:
        return int(value)
    return 0


def money(value: Any, *, zero: bool = False) -> float | None:
    """A cost the agent recorded (USD): a finite number above 0 (or 0 too with ``zero``), else
    ``None`` (not recorded)."""
    if type(value) not in (int, float) or value != value or value in (float("inf"), float("-inf")):
        return None
    number = float(value)
    return number if number > 0 or (zero and number == 0) else None


def epoch_ms(value: Any) -> int | None:
    """An ISO 8601 timestamp (``...Z`` or with an offset) or epoch milliseconds -> epoch ms."""
    if type(value) is int:
        return value
    if type(value) is not str or not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def first_text(content: Any, limit: int = 120) -> str | None:
    """The first text of a message's content (a string or a list of blocks), one line, cut."""
    text: Any = content
    if isinstance(content, list):
        text = next(
            (b.get("text") for b in content if isinstance(b, dict) and type(b.get("text")) is str), None
        )
    if type(text) is not str:
        return None
    line = " ".join(text.split())
    return (line[: limit - 1] + "…" if len(line) > limit else line) or None
