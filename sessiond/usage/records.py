"""What one assistant response used, as every agent's reader hands it to the index."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple


class Record(NamedTuple):
    """One assistant response's usage.

    A named tuple, not a dataclass: the first build makes one per response (hundreds of
    thousands), sends them from worker processes and hands them to SQLite, and a tuple is
    the cheapest to make, pickle and unpack.

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


def lines_matching(
    data: bytes, start: int, pattern: re.Pattern[bytes] | bytes
) -> Iterator[tuple[int, bytes]]:
    """The lines of ``data`` (complete lines; ``start``: the file offset of its first byte) in
    which ``pattern`` occurs, as ``(offset, line)``, in order.

    The buffer is searched, not split: most lines of a transcript (tool results, file
    snapshots) hold no usage, and are never copied or looked at one by one. A JSON string
    cannot hold an unescaped quote, so a marker such as ``"usage"`` only matches a key. A
    ``bytes`` pattern is searched with ``bytes.find`` (several times faster than a regex).
    Lazily: a caller that found what it looked for (a title) stops the search there."""
    pos = 0
    while True:
        if isinstance(pattern, bytes):
            at = data.find(pattern, pos)
            if at < 0:
                return
            found, after = at, at + len(pattern)
        else:
            match = pattern.search(data, pos)
            if match is None:
                return
            found, after = match.start(), match.end()
        begin = data.rfind(b"\n", 0, found) + 1
        end = data.find(b"\n", after)
        if end < 0:
            end = len(data)
        yield start + begin, data[begin:end]
        pos = end + 1


class Fields(NamedTuple):
    """Where an agent's ``usage`` object keeps its four counts (``None``: not recorded)."""

    input: str
    output: str
    cache_read: str
    cache_creation: str | None
    input_has_cache: bool = False
    """The input count includes the cache reads (Codex): the record's input is without them."""


def response(
    key: str,
    session_id: str,
    model: str,
    ts: int,
    usage: dict[str, Any],
    fields: Fields,
    *,
    cache_5m: int = 0,
    cache_1h: int = 0,
    agent_cost: float | None = None,
) -> Record:
    """One response's record from its ``usage`` object: every agent's reader builds its
    records here, so a count is read the same way (:func:`count`) for all of them."""
    cache_read = count(usage.get(fields.cache_read))
    given = count(usage.get(fields.input))
    return Record(
        key,
        session_id,
        model,
        ts,
        max(given - cache_read, 0) if fields.input_has_cache else given,
        count(usage.get(fields.output)),
        cache_read,
        count(usage.get(fields.cache_creation)) if fields.cache_creation else 0,
        cache_5m,
        cache_1h,
        agent_cost,
    )


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
    try:  # Python 3.11 reads a trailing "Z"
        return int(datetime.fromisoformat(value).timestamp() * 1000)
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
