"""Codex CLI rollout files, line by line: a tolerant parse into records.

A rollout (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``) is JSON Lines; each
line is ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta``,
``response_item``, ``compacted``, ``turn_context`` and ``event_msg``. Codex itself skips a
line it cannot parse and takes the *first* ``session_meta`` as the thread's identity; so does
this reader. The earliest builds wrote a bare ``{"id", "timestamp", "instructions"}`` first
line and bare response items after it (plus ``{"record_type": "state"}`` lines): those are
read as ``session_meta`` and ``response_item`` records and the rollout is marked ``legacy``.

Lines are only read up to the last newline: Codex writes each line with its ``\\n`` in one
write, so an unterminated last line is a write in progress (reported, read when it ends).
Nothing here touches the disk.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from sessiond.formats.lines import LineDiagnostics
from sessiond.formats.pi import paused_gc

SESSION_META: Final = "session_meta"
RESPONSE_ITEM: Final = "response_item"
COMPACTED: Final = "compacted"
TURN_CONTEXT: Final = "turn_context"
EVENT_MSG: Final = "event_msg"
RECORD_TYPES: Final = frozenset({SESSION_META, RESPONSE_ITEM, COMPACTED, TURN_CONTEXT, EVENT_MSG})
BOOKKEEPING_RECORD_TYPES: Final = frozenset({"world_state", "token_usage_record"})
"""Record types Codex 0.169 writes that change nothing Codex resumes with: ``world_state`` (a
snapshot of the settings and environment the model's context was rendered from) and
``token_usage_record`` (one response's usage; the ``token_count`` event right after it carries
the same numbers). Counted by name (``diagnostics.load.bookkeeping``), not as unknown."""
BOOKKEEPING_EVENTS: Final = frozenset({"item_completed", "thread_settings_applied"})
"""``event_msg`` types of 0.169 that are bookkeeping too: ``item_completed`` (the finished item
as the UI shows it; the response item it mirrors is its own line) and
``thread_settings_applied`` (the settings a turn runs with; ``turn_context`` says the same)."""

_LEGACY_ITEM_TYPES: Final = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "local_shell_call",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
    }
)


@dataclass(slots=True)
class Record:
    """One rollout line that parsed: where it is, when, what kind, and its payload."""

    line: int
    """1-based line number in the file."""
    timestamp: str
    type: str
    payload: dict[str, Any]


@dataclass(slots=True)
class RolloutDiagnostics(LineDiagnostics):
    """What reading skipped. Nothing here stops a rollout from loading.

    Only complete lines are read (``torn_tail``: the unterminated last line is not read yet).
    """

    lines: int = 0
    """Complete lines read."""
    not_objects: int = 0
    unknown_record_types: Counter[str] = field(default_factory=Counter)
    bookkeeping: Counter[str] = field(default_factory=Counter)
    """Known records that carry nothing for the tree or the context, by name (``world_state``,
    ``event_msg/item_completed``, …)."""
    legacy: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            **self.skipped_json(),
            "notObjects": self.not_objects,
            "unknownRecordTypes": dict(sorted(self.unknown_record_types.items())),
            "bookkeeping": dict(sorted(self.bookkeeping.items())),
            "legacy": self.legacy,
            "tornTail": self.torn_tail,
        }


@dataclass(slots=True)
class Rollout:
    """A rollout read so far: its records in file order and the thread's identity."""

    source: str
    records: list[Record] = field(default_factory=list)
    meta: dict[str, Any] | None = None
    """The first ``session_meta`` payload (Codex ignores later ones)."""
    diagnostics: RolloutDiagnostics = field(default_factory=RolloutDiagnostics)
    bytes_read: int = 0
    """Bytes consumed, up to and including the last newline."""

    @property
    def session_id(self) -> str | None:
        value = self.meta.get("id") if self.meta is not None else None
        return value if type(value) is str and value else None

    @property
    def cwd(self) -> str | None:
        value = self.meta.get("cwd") if self.meta is not None else None
        return value if type(value) is str else None

    @property
    def cli_version(self) -> str | None:
        value = self.meta.get("cli_version") if self.meta is not None else None
        return value if type(value) is str else None


def looks_like_rollout(head: bytes) -> bool:
    """Whether the first line of ``head`` is a rollout's: a ``session_meta`` record (or the
    earliest builds' bare meta line). A first line longer than ``head`` is judged by its prefix."""
    first = head.split(b"\n", 1)[0].strip()
    if not first:
        return False
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return (
            first.startswith((b'{"timestamp":', b'{"type":"session_meta"'))
            and b'"session_meta"' in first[:80]
        )
    if type(obj) is not dict:
        return False
    if obj.get("type") == SESSION_META and type(obj.get("payload")) is dict:
        return True
    return "type" not in obj and type(obj.get("id")) is str and "timestamp" in obj and "instructions" in obj


def parse_rollout(data: bytes, source: str = "<bytes>") -> Rollout:
    """Read a whole rollout (complete lines only)."""
    return extend_rollout(Rollout(source), data)


def extend_rollout(rollout: Rollout, data: bytes) -> Rollout:
    """Add the complete lines of ``data`` (what followed ``rollout.bytes_read``) in place."""
    with paused_gc():
        return _extend(rollout, data)


def _extend(rollout: Rollout, data: bytes) -> Rollout:
    end = data.rfind(b"\n") + 1
    diag = rollout.diagnostics
    diag.torn_tail = end < len(data)
    if not end:
        return rollout
    number = diag.lines
    records = rollout.records
    for raw in data[:end].split(b"\n")[:-1]:
        number += 1
        if not raw.strip():
            diag.blank_lines += 1
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            diag.skip_unparsable(number)
            continue
        if type(obj) is not dict:
            diag.not_objects += 1
            continue
        record = _record(obj, number, rollout)
        if record is None:
            continue
        if record.type == SESSION_META and rollout.meta is None:
            rollout.meta = record.payload
        records.append(record)
    diag.lines = number
    rollout.bytes_read += end
    return rollout


def _record(obj: dict[str, Any], number: int, rollout: Rollout) -> Record | None:
    diag = rollout.diagnostics
    kind = obj.get("type")
    payload = obj.get("payload")
    ts = obj.get("timestamp")
    timestamp = ts if type(ts) is str else ""
    if type(kind) is str and kind in RECORD_TYPES:
        if type(payload) is not dict:
            # A compacted line of the earliest builds, or a damaged line: keep what is usable.
            payload = {} if payload is None else {"value": payload}
        if kind == EVENT_MSG:
            event = payload.get("type")
            if type(event) is str and event in BOOKKEEPING_EVENTS:
                diag.bookkeeping[f"{EVENT_MSG}/{event}"] += 1
                return None
        return Record(number, timestamp, kind, payload)
    if type(kind) is str and kind in BOOKKEEPING_RECORD_TYPES:
        diag.bookkeeping[kind] += 1
        return None
    # The earliest rollouts: a bare meta line first, then bare response items.
    if "record_type" in obj:
        return None
    if not rollout.records and type(obj.get("id")) is str and "timestamp" in obj and kind is None:
        diag.legacy = True
        return Record(number, timestamp, SESSION_META, obj)
    if type(kind) is str and kind in _LEGACY_ITEM_TYPES and payload is None:
        diag.legacy = True
        return Record(number, timestamp, RESPONSE_ITEM, obj)
    diag.unknown_record_types[kind if type(kind) is str else repr(kind)[:40]] += 1
    return None


__all__ = [
    "BOOKKEEPING_EVENTS",
    "BOOKKEEPING_RECORD_TYPES",
    "COMPACTED",
    "EVENT_MSG",
    "RECORD_TYPES",
    "RESPONSE_ITEM",
    "SESSION_META",
    "TURN_CONTEXT",
    "Record",
    "Rollout",
    "RolloutDiagnostics",
    "extend_rollout",
    "looks_like_rollout",
    "parse_rollout",
]
