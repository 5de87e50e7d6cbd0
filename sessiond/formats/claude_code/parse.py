"""Reading a transcript's bytes: tolerant line parsing, the indexes over the records, growth.

Every line is parsed on its own (blank, torn and unparsable lines are skipped and reported,
unknown record types counted) into a :class:`~.records.ClaudeTranscript`. Growth is handled
by :func:`extend_transcript`, which parses only the appended lines; the indexes are rebuilt
over all records, which is cheap next to parsing. Nothing here touches the disk: callers
hand in bytes (the store layer reads the files).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ...model.js_json import JSONParseError, parse
from ..pi import MAX_REPORTED_LINES, paused_gc
from .records import (
    CHAIN_TYPES,
    METADATA_TYPES,
    PROGRESS,
    ClaudeLoadDiagnostics,
    ClaudeTranscript,
    Titles,
    looks_like_claude_record,
)


def parse_line(raw: bytes) -> tuple[int, Any]:
    """``(kind, value)``: kind 0 = a value, 1 = blank, 2 = unparsable."""
    try:
        return 0, orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    if not raw.strip():
        return 1, None
    try:
        return 0, parse(raw)  # what orjson refuses but JSON.parse accepts (bad UTF-8, lone surrogates)
    except JSONParseError:
        return 2, None


def parse_transcript(data: bytes, source: str = "<bytes>") -> ClaudeTranscript:
    """Parse a transcript held in memory. Never raises on content: odd lines are reported."""
    diag = ClaudeLoadDiagnostics()
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # the terminator of the last line, not a line
    diag.physical_lines = len(raw_lines)
    diag.torn_tail = bool(data) and not data.endswith(b"\n")
    with paused_gc():
        for number, raw in enumerate(raw_lines, 1):
            if not raw or raw == b"\r":
                diag.blank_lines += 1
                continue
            kind, value = parse_line(raw)
            if kind == 1:
                diag.blank_lines += 1
            elif kind == 2:
                diag.unparsable_lines += 1
                if len(diag.unparsable_line_numbers) < MAX_REPORTED_LINES:
                    diag.unparsable_line_numbers.append(number)
            elif type(value) is not dict:
                diag.non_object_lines += 1
                if len(diag.non_object_line_numbers) < MAX_REPORTED_LINES:
                    diag.non_object_line_numbers.append(number)
            else:
                records.append(value)
                lines.append(number)
                if number == diag.physical_lines and diag.torn_tail:
                    diag.torn_tail_parsed = True
        return _index(records, lines, diag, source)


def extend_transcript(t: ClaudeTranscript, data: bytes) -> ClaudeTranscript:
    """``t`` followed by ``data``: complete lines appended to its file since it was read.

    Only the new lines are parsed; the indexes (chain, titles, counts) are rebuilt over all
    records, which is cheap next to parsing. ``t`` itself is left as it was.
    """
    more = parse_transcript(data, t.source)
    old, new = t.diagnostics, more.diagnostics
    offset = old.physical_lines
    diag = ClaudeLoadDiagnostics(
        physical_lines=old.physical_lines + new.physical_lines,
        blank_lines=old.blank_lines + new.blank_lines,
        unparsable_lines=old.unparsable_lines + new.unparsable_lines,
        unparsable_line_numbers=(
            old.unparsable_line_numbers + [n + offset for n in new.unparsable_line_numbers]
        )[:MAX_REPORTED_LINES],
        non_object_lines=old.non_object_lines + new.non_object_lines,
        non_object_line_numbers=(
            old.non_object_line_numbers + [n + offset for n in new.non_object_line_numbers]
        )[:MAX_REPORTED_LINES],
        torn_tail=new.torn_tail,
        torn_tail_parsed=new.torn_tail_parsed,
    )
    records = t.records + more.records
    lines = t.lines + [n + offset for n in more.lines]
    with paused_gc():
        return _index(records, lines, diag, t.source)


def _index(
    records: list[dict[str, Any]], lines: list[int], diag: ClaudeLoadDiagnostics, source: str
) -> ClaudeTranscript:
    chain: dict[str, dict[str, Any]] = {}
    titles = Titles()
    summaries: list[dict[str, Any]] = []
    type_counts = diag.type_counts
    unknown = diag.unknown_types
    session_ids: dict[str, None] = {}
    versions: dict[str, None] = {}
    session_id: str | None = None
    fallback_session: str | None = None
    cwd: str | None = None
    version: str | None = None
    agent_id: str | None = None
    for rec in records:
        t = rec.get("type")
        tname = t if type(t) is str else "<none>"
        type_counts[tname] = type_counts.get(tname, 0) + 1
        if t in CHAIN_TYPES:
            uuid = rec.get("uuid")
            if type(uuid) is not str:
                diag.chain_without_uuid += 1
                continue
            if uuid in chain:
                diag.duplicate_uuids += 1
                if len(diag.duplicate_uuid_examples) < 20:
                    diag.duplicate_uuid_examples.append(uuid)
            chain[uuid] = rec
            if t == PROGRESS:
                diag.progress_entries += 1
            if rec.get("isSidechain") is True:
                diag.sidechain_entries += 1
            sid = rec.get("sessionId")
            if type(sid) is str:
                session_ids[sid] = None
                if session_id is None:
                    session_id = sid
            if cwd is None and type(rec.get("cwd")) is str:
                cwd = rec["cwd"]
            v = rec.get("version")
            if type(v) is str:
                versions[v] = None
                version = v
            if agent_id is None and type(rec.get("agentId")) is str:
                agent_id = rec["agentId"]
            continue
        if fallback_session is None and type(rec.get("sessionId")) is str:
            fallback_session = rec["sessionId"]
        if t == "summary":
            summaries.append(rec)
        elif t == "custom-title":
            value = rec.get("customTitle")
            titles.custom_title = value.strip() or None if type(value) is str else None
        elif t == "ai-title":
            value = rec.get("aiTitle")
            titles.ai_title = value.strip() or None if type(value) is str else None
        elif t == "last-prompt":
            value = rec.get("lastPrompt")
            titles.last_prompt = value.strip() or None if type(value) is str else None
            leaf = rec.get("leafUuid")
            titles.last_prompt_leaf = leaf if type(leaf) is str else None
        elif t not in METADATA_TYPES:
            unknown[tname] = unknown.get(tname, 0) + 1
    titles.summaries = len(summaries)
    for rec in summaries:
        leaf = rec.get("leafUuid")
        text = rec.get("summary")
        if type(leaf) is str and leaf in chain and type(text) is str and text.strip():
            titles.summary = text.strip()
            titles.summary_leaf = leaf
        else:
            titles.untrusted_summaries += 1
    diag.session_ids = list(session_ids)
    diag.versions = list(versions)
    return ClaudeTranscript(
        source=source,
        session_id=session_id if session_id is not None else fallback_session,
        cwd=cwd,
        version=version,
        records=records,
        lines=lines,
        chain=chain,
        titles=titles,
        diagnostics=diag,
        agent_id=agent_id,
    )


def sniff(head: bytes, *, truncated: bool) -> bool:
    """Is the first JSON object in ``head`` (the start of a file) a Claude Code record?

    A chain entry (``uuid`` + ``parentUuid`` + ``sessionId`` or a chain type) or a known
    metadata record (``summary``, ``file-history-snapshot``, ``queue-operation``...) says yes;
    a Pi header (``type: "session"``) or anything else says no. ``truncated``: ``head`` stops
    inside the file, so its last line is incomplete; when no complete line holds an object,
    that line is judged by its prefix (Claude Code writes chain entries starting with
    ``{"parentUuid":`` and metadata starting with ``{"type":``).
    """
    complete = head.split(b"\n")
    tail = complete.pop() if truncated else None
    for raw in complete:
        kind, value = parse_line(raw)
        if kind != 0:
            continue
        return type(value) is dict and looks_like_claude_record(value)
    if tail:  # the first object is on a line longer than the sniff window
        start = tail.lstrip()
        if start.startswith(b'{"parentUuid":'):
            return True
        if start.startswith(b'{"type":"'):
            name = start[9:].split(b'"', 1)[0].decode("utf-8", "replace")
            return name in METADATA_TYPES
    return False


def first_session_id(lines: Iterable[bytes]) -> str | None:
    """``sessionId`` of the first record among ``lines`` that has one."""
    for raw in lines:
        kind, value = parse_line(raw)
        if kind == 0 and type(value) is dict and type(value.get("sessionId")) is str:
            return str(value["sessionId"])
    return None
