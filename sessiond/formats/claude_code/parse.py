"""Reading a transcript's bytes: tolerant line parsing, the indexes over the records, growth.

Every line is parsed on its own (blank, torn and unparsable lines are skipped and reported,
unknown record types counted) into a :class:`~.records.ClaudeTranscript`, each record with
the byte span of its line (a reader can drop records and read them back). The indexes over
the records are built record by record (:class:`TranscriptIndexer`), so a follower extends
them with what is appended. Nothing here touches the disk: callers hand in bytes (the store
layer reads the files).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from ...model.js_json import JSONParseError, parse
from ..lines import MAX_REPORTED_LINES
from ..pi import paused_gc
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


def parse_records(
    data: bytes, diag: ClaudeLoadDiagnostics, base: int = 0
) -> Iterator[tuple[int, int, int, Any]]:
    """``(line number, byte offset, length, record)`` of every JSON object in ``data``.

    Line numbers continue from ``diag.physical_lines`` and offsets from ``base`` (``data`` is
    what follows them in the file), so a follower parsing appended bytes gets the numbers a
    whole read would give. Blank, unparsable and non-object lines are counted in ``diag``.
    """
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # the terminator of the last line, not a line
    first = diag.physical_lines
    diag.physical_lines += len(raw_lines)
    diag.torn_tail = bool(data) and not data.endswith(b"\n")
    diag.torn_tail_parsed = False
    offset = base
    for number, raw in enumerate(raw_lines, first + 1):
        length = len(raw)
        at = offset
        offset += length + 1
        if not raw or raw == b"\r":
            diag.blank_lines += 1
            continue
        kind, value = parse_line(raw)
        if kind == 1:
            diag.blank_lines += 1
        elif kind == 2:
            diag.skip_unparsable(number)
        elif type(value) is not dict:
            diag.non_object_lines += 1
            if len(diag.non_object_line_numbers) < MAX_REPORTED_LINES:
                diag.non_object_line_numbers.append(number)
        else:
            if number == diag.physical_lines and diag.torn_tail:
                diag.torn_tail_parsed = True
            yield number, at, length, value


def parse_transcript(data: bytes, source: str = "<bytes>") -> ClaudeTranscript:
    """Parse a transcript held in memory. Never raises on content: odd lines are reported."""
    index = TranscriptIndexer(source)
    t = index.transcript
    with paused_gc():
        for number, offset, length, value in parse_records(data, t.diagnostics):
            t.records.append(value)
            t.lines.append(number)
            t.spans.append((offset, length))
            index.add(value)
        index.finish()
    t.end = len(data)
    return t


def extend_transcript(t: ClaudeTranscript, data: bytes) -> ClaudeTranscript:
    """``t`` followed by ``data``: complete lines appended to its file since it was read.

    Only the new lines are parsed; the indexes (chain, titles, counts) are rebuilt over all
    records, which is cheap next to parsing. ``t`` itself is left as it was.
    """
    old = t.diagnostics
    diag = ClaudeLoadDiagnostics(
        physical_lines=old.physical_lines,
        blank_lines=old.blank_lines,
        unparsable_lines=old.unparsable_lines,
        unparsable_line_numbers=list(old.unparsable_line_numbers),
        non_object_lines=old.non_object_lines,
        non_object_line_numbers=list(old.non_object_line_numbers),
    )
    base = t.end
    index = TranscriptIndexer(t.source, diag)
    grown = index.transcript
    with paused_gc():
        for rec, number, span in zip(t.records, t.lines, t.spans, strict=True):
            grown.records.append(rec)
            grown.lines.append(number)
            grown.spans.append(span)
            index.add(rec)
        for number, offset, length, value in parse_records(data, diag, base):
            grown.records.append(value)
            grown.lines.append(number)
            grown.spans.append((offset, length))
            index.add(value)
        index.finish()
    grown.end = base + len(data)
    return grown


class TranscriptIndexer:
    """The indexes over a transcript's records (chain, titles, counts), built record by record.

    A whole read adds every record then calls :meth:`finish`; a follower keeps the indexer and
    adds what is appended (``finish`` again after each batch: a ``summary`` is trusted only
    when its ``leafUuid`` is a chain entry, which can arrive after it).
    """

    def __init__(self, source: str, diag: ClaudeLoadDiagnostics | None = None) -> None:
        self.transcript = ClaudeTranscript(
            source=source,
            session_id=None,
            cwd=None,
            version=None,
            records=[],
            lines=[],
            chain={},
            titles=Titles(),
            diagnostics=diag if diag is not None else ClaudeLoadDiagnostics(),
        )
        self._summaries: list[tuple[Any, Any]] = []
        """``(leafUuid, summary)`` of every ``summary`` record, in file order."""
        self._session_ids: dict[str, None] = {}
        self._versions: dict[str, None] = {}
        self._session_id: str | None = None
        self._fallback_session: str | None = None

    def add(self, rec: dict[str, Any]) -> str | None:
        """Index one record; the uuid when it is a chain entry (``None`` otherwise)."""
        t = self.transcript
        diag = t.diagnostics
        chain = t.chain
        kind = rec.get("type")
        tname = kind if type(kind) is str else "<none>"
        diag.type_counts[tname] = diag.type_counts.get(tname, 0) + 1
        if kind in CHAIN_TYPES:
            uuid = rec.get("uuid")
            if type(uuid) is not str:
                diag.chain_without_uuid += 1
                return None
            if uuid in chain:
                diag.duplicate_uuids += 1
                if len(diag.duplicate_uuid_examples) < 20:
                    diag.duplicate_uuid_examples.append(uuid)
            chain[uuid] = rec
            if kind == PROGRESS:
                diag.progress_entries += 1
            if rec.get("isSidechain") is True:
                diag.sidechain_entries += 1
            sid = rec.get("sessionId")
            if type(sid) is str:
                self._session_ids[sid] = None
                if self._session_id is None:
                    self._session_id = t.session_id = sid
            if t.cwd is None and type(rec.get("cwd")) is str:
                t.cwd = rec["cwd"]
            v = rec.get("version")
            if type(v) is str:
                self._versions[v] = None
                t.version = v
            if t.agent_id is None and type(rec.get("agentId")) is str:
                t.agent_id = rec["agentId"]
            return uuid
        if self._fallback_session is None and type(rec.get("sessionId")) is str:
            self._fallback_session = rec["sessionId"]
            if self._session_id is None:
                t.session_id = self._fallback_session
        titles = t.titles
        if kind == "summary":
            self._summaries.append((rec.get("leafUuid"), rec.get("summary")))
        elif kind == "custom-title":
            value = rec.get("customTitle")
            titles.custom_title = value.strip() or None if type(value) is str else None
        elif kind == "ai-title":
            value = rec.get("aiTitle")
            titles.ai_title = value.strip() or None if type(value) is str else None
        elif kind == "last-prompt":
            value = rec.get("lastPrompt")
            titles.last_prompt = value.strip() or None if type(value) is str else None
            leaf = rec.get("leafUuid")
            titles.last_prompt_leaf = leaf if type(leaf) is str else None
        elif kind not in METADATA_TYPES:
            diag.unknown_types[tname] = diag.unknown_types.get(tname, 0) + 1
        return None

    def finish(self) -> None:
        """Settle what depends on the records seen so far as a whole (trusted summaries, lists)."""
        t = self.transcript
        titles = t.titles
        titles.summaries = len(self._summaries)
        titles.summary = titles.summary_leaf = None
        titles.untrusted_summaries = 0
        for leaf, text in self._summaries:
            if type(leaf) is str and leaf in t.chain and type(text) is str and text.strip():
                titles.summary = text.strip()
                titles.summary_leaf = leaf
            else:
                titles.untrusted_summaries += 1
        t.diagnostics.session_ids = list(self._session_ids)
        t.diagnostics.versions = list(self._versions)

    def summary_leaves(self) -> set[str]:
        """``leafUuid`` values of summaries not trusted yet (a chain entry arriving with one of
        these uuids changes the title)."""
        return {
            leaf for leaf, _ in self._summaries if type(leaf) is str and leaf not in self.transcript.chain
        }


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
