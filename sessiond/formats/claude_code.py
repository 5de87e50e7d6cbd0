"""Claude Code transcripts (``~/.claude/projects/<dir>/<sessionId>.jsonl``): a read-only reader.

Claude Code's record format is undocumented; what this module does follows the rules stated in
``docs/claude-code.md`` and is checked against real transcripts from 1.0.98 to 2.1.114
(``tests/fixtures/claude-code``). The goal is to rebuild what
``claude --resume <file>`` rebuilds, and to map it onto sessiond's Pi-shaped model:

* :func:`load_transcript` / :func:`parse_transcript` read every line tolerantly (blank, torn and
  unparsable lines are skipped and reported, unknown record types counted) into a
  :class:`ClaudeTranscript`: the records, the chain entries by ``uuid`` (last line wins), titles.
* :func:`reconstruct` picks a leaf with one of Claude Code's leaf rules, walks ``parentUuid`` to
  the root (legacy ``progress`` entries bridged, ``preservedSegment`` relinks applied, cycles
  and missing parents stopped at and reported), recovers orphaned parallel tool calls and
  results, and builds the messages the model sees: assistant pieces merged by ``message.id``
  (walking back across assistants and tool results), duplicate ``tool_use`` ids removed, and
  every tool call paired with a result (a synthetic error result when none was recorded).
* :func:`to_pi_entries` turns every chain entry of every branch into a Pi v3 entry, keeping the
  Claude Code uuids as ids, so sessiond's tree machinery can show the whole file.
* :func:`find_subagents` finds sub-agent transcripts in the three layouts (inline sidechains,
  flat ``agent-*.jsonl`` siblings, ``<sessionId>/subagents/``) and links them to the spawning
  tool call (or, for the compaction worker, to its compact boundary).

Nothing here recurses on the depth of a conversation: every walk is a loop with a seen-set.
Reading is one ``orjson`` parse per line with the cyclic GC paused; everything after that is
linear in the number of entries. See ``docs/claude-code.md`` for the rules and the known
differences from Claude Code.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import orjson

from ..errors import EntryNotFoundError
from ..model.js import date_ms
from ..model.js_json import JSONParseError, parse
from .pi import MAX_REPORTED_LINES, paused_gc

Message = dict[str, Any]

# --------------------------------------------------------------------------- record types

USER: Final = "user"
ASSISTANT: Final = "assistant"
SYSTEM: Final = "system"
ATTACHMENT: Final = "attachment"
PROGRESS: Final = "progress"

CHAIN_TYPES: Final = frozenset({USER, ASSISTANT, SYSTEM, ATTACHMENT, PROGRESS})
"""Records with ``uuid``/``parentUuid`` that take part in the conversation tree."""

MESSAGE_TYPES: Final = frozenset({USER, ASSISTANT, SYSTEM, ATTACHMENT})
"""Chain types Claude Code loads into its message map (``progress`` is bridged over)."""

METADATA_TYPES: Final = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "last-prompt",
        "custom-title",
        "ai-title",
        "permission-mode",
        "atis-latch",
        "tag",
        "mode",
        "agent-name",
        "agent-setting",
        "pr-link",
        "bridge-session",
        "cost-state",
        "attribution-snapshot",
        "content-replacement",
        "frame-link",
        "fork-context-ref",
        "worktree-state",
        "continued-in",
        "saved_hook_context",
    }
)
"""Non-chain record types seen in real files or named by parsers (docs/claude-code.md, Loading)."""

COMPACT_BOUNDARY: Final = "compact_boundary"
SNIP_BOUNDARY: Final = "snip_boundary"
"""A ``system`` entry whose ``snipMetadata.removedUuids`` Claude Code drops when it loads."""
LEAF_RULES: Final = ("resume-file", "picker", "session", "agent")
SYNTHETIC_TOOL_RESULT_TEXT: Final = "[Tool result missing due to internal error]"
"""Text of the error result given to a tool call that has none (Claude Code's placeholder wording)."""

_STOP_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
    "error": "error",
}
_SNIFF_BYTES: Final = 1 << 20
Usage4 = tuple[int, int, int, int]
"""Anthropic usage as ``(input, output, cache read, cache write)`` token counts."""
_EMPTY_USAGE: Final[Usage4] = (0, 0, 0, 0)


# --------------------------------------------------------------------------- loading


@dataclass(slots=True)
class ClaudeLoadDiagnostics:
    """What the loader skipped or noticed. Nothing here stops a file from loading."""

    physical_lines: int = 0
    blank_lines: int = 0
    unparsable_lines: int = 0
    unparsable_line_numbers: list[int] = field(default_factory=list)
    non_object_lines: int = 0
    """Valid JSON that is not an object (``null``, numbers, arrays...)."""
    non_object_line_numbers: list[int] = field(default_factory=list)
    torn_tail: bool = False
    """The file does not end with ``\\n`` (a crash mid-write, or a writer still appending)."""
    torn_tail_parsed: bool = False
    type_counts: dict[str, int] = field(default_factory=dict)
    """Records per ``type`` (``<none>`` for objects without a string type)."""
    unknown_types: dict[str, int] = field(default_factory=dict)
    """Types that are neither chain nor known metadata types (ignored, as Claude Code does)."""
    chain_without_uuid: int = 0
    """Chain-typed records without a string ``uuid`` (not usable; left out of ``chain``)."""
    duplicate_uuids: int = 0
    """Chain records whose uuid an earlier line already used (the last line wins)."""
    duplicate_uuid_examples: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)
    """Distinct ``sessionId`` values of chain entries, first seen first (several = a resume bug)."""
    versions: list[str] = field(default_factory=list)
    """Distinct Claude Code versions that wrote chain entries, first seen first."""
    sidechain_entries: int = 0
    progress_entries: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "physicalLines": self.physical_lines,
            "blankLines": self.blank_lines,
            "unparsableLines": self.unparsable_lines,
            "unparsableLineNumbers": self.unparsable_line_numbers,
            "nonObjectLines": self.non_object_lines,
            "nonObjectLineNumbers": self.non_object_line_numbers,
            "tornTail": self.torn_tail,
            "tornTailParsed": self.torn_tail_parsed,
            "typeCounts": self.type_counts,
            "unknownTypes": self.unknown_types,
            "chainWithoutUuid": self.chain_without_uuid,
            "duplicateUuids": self.duplicate_uuids,
            "duplicateUuidExamples": self.duplicate_uuid_examples,
            "sessionIds": self.session_ids,
            "versions": self.versions,
            "sidechainEntries": self.sidechain_entries,
            "progressEntries": self.progress_entries,
        }


@dataclass(slots=True)
class Titles:
    """Session titles as the file records them (docs/claude-code.md, Titles and listing)."""

    custom_title: str | None = None
    """The last ``custom-title`` (``/rename``, SDK); an empty one clears it."""
    ai_title: str | None = None
    """The last ``ai-title``."""
    summary: str | None = None
    """The last ``summary`` whose ``leafUuid`` is a chain entry of this file."""
    summary_leaf: str | None = None
    last_prompt: str | None = None
    """Text of the last ``last-prompt`` record (truncated by Claude Code)."""
    last_prompt_leaf: str | None = None
    """``leafUuid`` of the last ``last-prompt`` record (written from ~2.1.123), a diagnostic only."""
    summaries: int = 0
    untrusted_summaries: int = 0
    """``summary`` lines whose ``leafUuid`` is not in this file (usually other sessions', 1.0.x)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "customTitle": self.custom_title,
            "aiTitle": self.ai_title,
            "summary": self.summary,
            "summaryLeaf": self.summary_leaf,
            "lastPrompt": self.last_prompt,
            "lastPromptLeaf": self.last_prompt_leaf,
            "summaries": self.summaries,
            "untrustedSummaries": self.untrusted_summaries,
        }


@dataclass(eq=False)
class ClaudeTranscript:
    """A parsed Claude Code transcript. Records are kept as parsed and never modified."""

    source: str
    session_id: str | None
    """``sessionId`` of the first chain entry (for sub-agent files: the parent session's)."""
    cwd: str | None
    """``cwd`` of the first chain entry (it can change later: worktrees, ``/cd``)."""
    version: str | None
    """The Claude Code version of the last chain entry (the newest writer of the file)."""
    records: list[dict[str, Any]]
    """Every parsed JSON object, in file order."""
    lines: list[int]
    """1-based line number of each record (parallel to ``records``)."""
    chain: dict[str, dict[str, Any]]
    """uuid -> chain entry (user/assistant/system/attachment/progress); the last line wins, the
    iteration order is the order in which each uuid was first seen (as in Claude Code's Map)."""
    titles: Titles
    diagnostics: ClaudeLoadDiagnostics
    agent_id: str | None = None
    """``agentId`` of the first chain entry carrying one (sub-agent transcripts, 2.0+)."""
    _graph: _Graph | None = field(default=None, repr=False)

    def title(self) -> str | None:
        """The session's display title: custom > AI > trusted summary > last prompt.

        A custom title is the user's explicit choice (``/rename``) and always wins; the AI title
        is Claude Code's own generated title (2.1.x); a ``summary`` is the older equivalent of
        the AI title, trusted only when its ``leafUuid`` is in this file (1.0.x files carry
        other sessions' summaries at the top); the last prompt is the fallback Claude Code's
        picker shows when nothing else is known.
        """
        t = self.titles
        for candidate in (t.custom_title, t.ai_title, t.summary, t.last_prompt):
            if candidate:
                return candidate
        return None

    @property
    def is_sidechain_file(self) -> bool:
        """Every message entry is a sidechain entry (a sub-agent transcript file)."""
        g = _graph(self)
        return bool(g.order) and all(self.chain[u].get("isSidechain") is True for u in g.order)


def load_transcript(path: str | os.PathLike[str]) -> ClaudeTranscript:
    """Read a whole transcript file (read-only) and parse it. Raises ``OSError`` only."""
    with open(path, "rb") as f:
        data = f.read()
    return parse_transcript(data, os.fspath(path))


def _parse_line(raw: bytes) -> tuple[int, Any]:
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
            kind, value = _parse_line(raw)
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


def is_claude_code_file(path: str | os.PathLike[str]) -> bool:
    """Cheap sniff: is the first JSON object of the file a Claude Code record?

    A chain entry (``uuid`` + ``parentUuid`` + ``sessionId`` or a chain type) or a known
    metadata record (``summary``, ``file-history-snapshot``, ``queue-operation``...) says yes;
    a Pi header (``type: "session"``) or anything else says no. Reads at most 1 MiB; a first
    line longer than that is judged by its prefix (Claude Code writes chain entries starting
    with ``{"parentUuid":`` and metadata starting with ``{"type":``).
    """
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return False
    complete = head.split(b"\n")
    tail = complete.pop() if len(head) == _SNIFF_BYTES else None
    for raw in complete:
        kind, value = _parse_line(raw)
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


def looks_like_claude_record(obj: dict[str, Any]) -> bool:
    """A parsed object that only Claude Code writes (see :func:`is_claude_code_file`)."""
    t = obj.get("type")
    if t == "session":
        return False
    if type(obj.get("uuid")) is str and "parentUuid" in obj:
        return t in CHAIN_TYPES or type(obj.get("sessionId")) is str
    return t in METADATA_TYPES


# --------------------------------------------------------------------------- the graph


@dataclass(slots=True)
class _Graph:
    """Effective parent links, computed once per transcript and shared by every reconstruction."""

    order: list[str]
    """Message entries (chain minus progress), in first-seen order (Claude Code's Map order)."""
    pos: dict[str, int]
    parent: dict[str, str | None]
    """Effective parent: progress bridged, boundaries rooted, ``preservedSegment`` relinks applied."""
    progress_target: dict[str, str | None]
    """progress uuid -> the nearest non-progress ancestor (or a missing uuid, or ``None``)."""
    ts: dict[str, float]
    pruned: set[str]
    """Entries Claude Code drops when a ``preservedSegment`` boundary exists (before the last boundary)."""
    preserved: set[str]
    zero_usage: set[str]
    boundaries: list[str]
    relink: dict[str, Any] | None
    tool_names: dict[str, str]
    """tool_use id -> tool name, over every assistant entry."""
    msg_ids: dict[str, str]
    """assistant uuid -> ``message.id`` (assistants without one are absent)."""
    uses: dict[str, list[str]]
    """assistant uuid -> its tool_use ids (only assistants that have some)."""
    results: dict[str, list[str]]
    """user uuid -> its tool_result ids (only the tool-result users)."""
    snipped: set[str] = field(default_factory=set)
    """Entries removed by snip boundaries (their children hang off the nearest survivor)."""


def _graph(t: ClaudeTranscript) -> _Graph:
    if t._graph is None:
        with paused_gc():
            t._graph = _build_graph(t)
    return t._graph


def timestamp_ms(value: Any) -> float:
    """``Date.parse`` of a record timestamp (NaN when invalid), fast for ``...Z`` ISO strings."""
    if type(value) is str and len(value) >= 20 and value[-1] == "Z" and value[10] == "T":
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return date_ms(value)
        return float(math.floor(dt.timestamp()) * 1000 + dt.microsecond // 1000)
    return date_ms(value)


def _str_or_none(value: Any) -> str | None:
    return value if type(value) is str and value else None


def _build_graph(t: ClaudeTranscript) -> _Graph:
    chain = t.chain
    progress: dict[str, str | None] = {}
    order: list[str] = []
    for uuid, entry in chain.items():
        if entry.get("type") == PROGRESS:
            progress[uuid] = _str_or_none(entry.get("parentUuid"))
        else:
            order.append(uuid)
    # Bridge: a progress entry stands for its nearest non-progress ancestor. Resolved after the
    # whole file is read, so a child written before its progress parent is bridged too.
    target: dict[str, str | None] = {}
    for start in progress:
        if start in target:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        cur: str | None = start
        while cur is not None and cur in progress and cur not in target and cur not in on_path:
            path.append(cur)
            on_path.add(cur)
            cur = progress[cur]
        if cur is not None and cur in on_path:
            end: str | None = None  # a cycle made only of progress entries
        elif cur is not None and cur in target:
            end = target[cur]
        else:
            end = cur
        for p in path:
            target[p] = end
    pos = {u: i for i, u in enumerate(order)}
    parent: dict[str, str | None] = {}
    ts: dict[str, float] = {}
    boundaries: list[str] = []
    tool_names: dict[str, str] = {}
    msg_ids: dict[str, str] = {}
    uses: dict[str, list[str]] = {}
    results: dict[str, list[str]] = {}
    for uuid in order:
        entry = chain[uuid]
        raw = entry.get("parentUuid")
        if type(raw) is not str or not raw:
            raw = None
        elif raw in target:
            raw = target[raw]
        etype = entry.get("type")
        if etype == SYSTEM and entry.get("subtype") == COMPACT_BOUNDARY:
            boundaries.append(uuid)
            raw = None
        parent[uuid] = raw
        ts[uuid] = timestamp_ms(entry.get("timestamp"))
        if etype not in (ASSISTANT, USER):
            continue
        message = entry.get("message")
        if type(message) is not dict:
            continue
        content = message.get("content")
        if etype == ASSISTANT:
            mid = message.get("id")
            if type(mid) is str and mid:
                msg_ids[uuid] = mid
            if type(content) is not list:
                continue
            ids: list[str] = []
            for block in content:
                if type(block) is dict and block.get("type") == "tool_use":
                    tid = block.get("id")
                    if type(tid) is str:
                        ids.append(tid)
                        if tid not in tool_names:
                            name = block.get("name")
                            tool_names[tid] = name if type(name) is str else ""
            if ids:
                uses[uuid] = ids
        elif type(content) is list:
            found = False
            ids = []
            for block in content:
                if type(block) is dict and block.get("type") == "tool_result":
                    found = True
                    tid = block.get("tool_use_id")
                    if type(tid) is str:
                        ids.append(tid)
            if found:
                results[uuid] = ids
    pruned: set[str] = set()
    preserved: set[str] = set()
    zero_usage: set[str] = set()
    relink = _apply_preserved_segment(chain, order, pos, parent, boundaries, pruned, preserved, zero_usage)
    snipped = _apply_snip_removals(chain, order, parent)
    pruned |= snipped
    graph = _Graph(
        order,
        pos,
        parent,
        target,
        ts,
        pruned,
        preserved,
        zero_usage,
        boundaries,
        relink,
        tool_names,
        msg_ids,
        uses,
        results,
    )
    graph.snipped = snipped
    return graph


def _apply_snip_removals(
    chain: dict[str, dict[str, Any]], order: list[str], parent: dict[str, str | None]
) -> set[str]:
    """Claude Code's snip (``applySnipRemovals``): entries a ``snip_boundary`` lists in
    ``snipMetadata.removedUuids`` leave the conversation, and an entry whose parent was removed
    hangs off the nearest ancestor that was not. The removed entries stay in the tree (pruned:
    never a leaf, never on a walk)."""
    removed: set[str] = set()
    for u in order:
        e = chain[u]
        if e.get("type") != SYSTEM or e.get("subtype") != SNIP_BOUNDARY:
            continue
        meta = e.get("snipMetadata")
        ids = meta.get("removedUuids") if type(meta) is dict else None
        if type(ids) is list:
            removed.update(i for i in ids if type(i) is str and i in parent)
    if not removed:
        return removed
    for u in order:
        p = parent[u]
        if u in removed or p not in removed:
            continue
        seen: set[str] = set()
        while p is not None and p in removed and p not in seen:
            seen.add(p)
            p = parent.get(p)
        parent[u] = None if p in removed else p
    return removed


def _apply_preserved_segment(
    chain: dict[str, dict[str, Any]],
    order: list[str],
    pos: dict[str, int],
    parent: dict[str, str | None],
    boundaries: list[str],
    pruned: set[str],
    preserved: set[str],
    zero_usage: set[str],
) -> dict[str, Any] | None:
    """Claude Code's in-memory compaction relinks (docs/claude-code.md, The graph), applied to ``parent``.

    Only the last boundary carrying ``compactMetadata.preservedSegment`` counts, and only while
    it is the last boundary of all (a later plain boundary compacted the segment away). The
    segment is checked first: walking parents from ``tailUuid`` must reach ``headUuid``. Then
    ``head`` hangs off ``anchorUuid``, the anchor's other children off ``tail``, the segment's
    assistants lose their usage, and every entry before the last boundary that is not in the
    segment is pruned (it stays in the tree, but is no leaf candidate and ends walks).
    """
    if not boundaries:
        return None
    seg: dict[str, Any] | None = None
    seg_boundary: str | None = None
    for b in boundaries:
        meta = chain[b].get("compactMetadata")
        candidate = meta.get("preservedSegment") if type(meta) is dict else None
        if type(candidate) is dict:
            seg, seg_boundary = candidate, b
    if seg is None or seg_boundary is None:
        return None
    last_boundary = boundaries[-1]
    head, anchor, tail = (_str_or_none(seg.get(k)) for k in ("headUuid", "anchorUuid", "tailUuid"))
    info: dict[str, Any] = {
        "boundary": seg_boundary,
        "headUuid": head,
        "anchorUuid": anchor,
        "tailUuid": tail,
        "live": seg_boundary == last_boundary,
        "applied": False,
        "preserved": 0,
        "pruned": 0,
    }
    if seg_boundary == last_boundary:
        walk: list[str] = []
        seen: set[str] = set()
        cur = tail
        reached = False
        while cur is not None and cur in parent and cur not in seen:
            seen.add(cur)
            walk.append(cur)
            if cur == head:
                reached = True
                break
            cur = parent[cur]
        if not reached or head is None or anchor is None or tail is None:
            info["reason"] = "tailUuid does not lead to headUuid"
            return info
        preserved.update(walk)
        parent[head] = anchor
        for u in order:
            if u != head and parent[u] == anchor:
                parent[u] = tail
        for u in walk:
            if chain[u].get("type") == ASSISTANT:
                zero_usage.add(u)
        info["applied"] = True
        info["preserved"] = len(walk)
    cut = pos[last_boundary]
    for u in order:
        if pos[u] < cut and u not in preserved:
            pruned.add(u)
    info["pruned"] = len(pruned)
    return info


def _content(entry: dict[str, Any]) -> Any:
    message = entry.get("message")
    return message.get("content") if type(message) is dict else None


def _message_id(entry: dict[str, Any]) -> str | None:
    message = entry.get("message")
    if type(message) is dict:
        mid = message.get("id")
        if type(mid) is str and mid:
            return mid
    return None


def _is_tool_result_user(entry: dict[str, Any]) -> bool:
    if entry.get("type") != USER:
        return False
    content = _content(entry)
    if type(content) is not list:
        return False
    return any(type(b) is dict and b.get("type") == "tool_result" for b in content)


def _tool_result_ids(entry: dict[str, Any]) -> list[str]:
    content = _content(entry)
    if type(content) is not list:
        return []
    return [
        b["tool_use_id"]
        for b in content
        if type(b) is dict and b.get("type") == "tool_result" and type(b.get("tool_use_id")) is str
    ]


# --------------------------------------------------------------------------- reconstruction


@dataclass(slots=True)
class Reconstruction:
    """The conversation Claude Code would resume: which leaf, which entries, which messages."""

    leaf_uuid: str | None
    rule: str
    """The rule that chose the leaf: ``resume-file``, ``picker``, ``session``, ``agent``, ``explicit``."""
    chain: list[str]
    """Entry uuids root -> leaf in API order (bridged, relinked, orphans recovered)."""
    messages: list[tuple[str, Message]]
    """``(source uuid, Pi message)``: the context the model sees."""
    diagnostics: dict[str, Any]
    naive_chain: list[str] = field(default_factory=list)
    """The plain parent walk from the leaf (before orphan recovery)."""


def reconstruct(t: ClaudeTranscript, *, leaf: str | None = None, rule: str = "resume-file") -> Reconstruction:
    """Rebuild the conversation from a leaf, as ``claude --resume`` does (docs/claude-code.md).

    ``leaf`` (any chain uuid; a progress uuid stands for its bridged ancestor) overrides the
    rule; :class:`~sessiond.errors.EntryNotFoundError` when it is not in the file. ``rule`` is
    one of :data:`LEAF_RULES`. When ``resume-file`` finds no leaf because every entry is a
    sidechain entry (a sub-agent transcript), the ``agent`` rule is used and reported.
    """
    if rule not in LEAF_RULES:
        raise ValueError(f"unknown leaf rule {rule!r} (expected one of: {', '.join(LEAF_RULES)})")
    with paused_gc():  # many small containers, none garbage: the collector would rescan the records
        return _reconstruct(t, leaf, rule)


def _reconstruct(t: ClaudeTranscript, leaf: str | None, rule: str) -> Reconstruction:
    g = _graph(t)
    diag: dict[str, Any] = {"leafRuleRequested": "explicit" if leaf is not None else rule}
    if leaf is not None:
        if leaf not in t.chain:
            raise EntryNotFoundError(leaf)
        chosen: str | None = leaf
        if leaf in g.progress_target:
            chosen = g.progress_target[leaf]
            if chosen is not None and chosen not in g.parent:
                chosen = None
        used = "explicit"
        diag["leafCandidates"] = None
    else:
        chosen, used, candidates, fallback = _select_leaf(t, g, rule)
        diag["leafCandidates"] = candidates
        if fallback:
            diag["leafTimestampFallback"] = True
    diag["leafRule"] = used
    naive, missing, cycle = _walk(t, g, chosen)
    chain, recovered = _recover_orphans(t, g, naive)
    diag["naiveChainLength"] = len(naive)
    diag["chainLength"] = len(chain)
    diag["orphansRecovered"] = recovered
    diag["missingParents"] = missing
    diag["cycles"] = cycle
    diag["unpairedBefore"] = _unpaired(g, naive)
    diag["unpairedAfter"] = _unpaired(g, chain)
    messages, mdiag = _build_messages(t, g, chain)
    diag.update(mdiag)
    lp = t.titles.last_prompt_leaf
    diag["lastPromptLeaf"] = lp
    diag["lastPromptLeafAgrees"] = None if lp is None else lp == chosen
    diag["lastPromptLeafOnChain"] = None if lp is None else lp in set(chain)
    diag["compactBoundaries"] = _boundary_report(t, g, chain)
    diag["preservedSegment"] = g.relink
    diag["snipRemoved"] = len(g.snipped)
    on_chain = set(chain)
    diag["sidechainEntriesExcluded"] = sum(
        1 for u in g.order if u not in on_chain and t.chain[u].get("isSidechain") is True
    )
    diag["danglingParentEntries"] = sum(
        1 for u in g.order if (p := g.parent[u]) is not None and p not in g.parent
    )
    return Reconstruction(chosen, used, chain, messages, diag, naive)


def _select_leaf(t: ClaudeTranscript, g: _Graph, rule: str) -> tuple[str | None, str, int, bool]:
    """``(leaf, rule used, number of candidates, timestamp fallback used)``."""
    live = [u for u in g.order if u not in g.pruned]
    has_child: set[str] = set()
    for u in live:
        p = g.parent[u]
        if p is not None:
            has_child.add(p)
    chain = t.chain
    if rule == "session":
        cands = [u for u in live if chain[u].get("isSidechain") is not True]
        leaf, fb = _newest(g, cands)
        return leaf, rule, len(cands), fb
    if rule in ("resume-file", "picker"):
        # From every childless entry walk back to the nearest user/assistant entry.
        nearest: dict[str, str | None] = {}
        leaves: set[str] = set()
        live_set = set(live)
        for u in live:
            if u in has_child:
                continue
            path: list[str] = []
            seen: set[str] = set()
            cur: str | None = u
            found: str | None = None
            while cur is not None and cur in live_set and cur not in seen:
                if cur in nearest:
                    found = nearest[cur]
                    break
                if chain[cur].get("type") in (USER, ASSISTANT):
                    found = cur
                    break
                seen.add(cur)
                path.append(cur)
                cur = g.parent[cur]
            for p in path:
                nearest[p] = found
            if found is not None:
                leaves.add(found)
        cands = [u for u in live if u in leaves]
        if rule == "resume-file":
            main = [u for u in cands if chain[u].get("isSidechain") is not True]
            if main or not t.is_sidechain_file:
                leaf, fb = _newest(g, main)
                return leaf, rule, len(main), fb
            rule = "agent"  # a sub-agent transcript: every entry is a sidechain entry
        else:
            leaf, fb = _newest(g, cands)
            return leaf, rule, len(cands), fb
    # agent: the newest childless entry carrying the transcript's agentId
    agent = t.agent_id
    cands = [u for u in live if u not in has_child and (agent is None or chain[u].get("agentId") == agent)]
    leaf, fb = _newest(g, cands)
    return leaf, "agent", len(cands), fb


def _newest(g: _Graph, cands: list[str]) -> tuple[str | None, bool]:
    """Newest timestamp, ties to the first in file order (strict ``>``); unparsable never wins."""
    best: str | None = None
    best_ts = -math.inf
    for u in cands:
        ts = g.ts[u]
        if ts > best_ts:
            best, best_ts = u, ts
    if best is None and cands:
        return cands[-1], True  # no candidate has a valid timestamp: the last one written
    return best, False


def _walk(
    t: ClaudeTranscript, g: _Graph, leaf: str | None
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """Parent walk from ``leaf`` (a loop with a seen-set), reversed to root -> leaf."""
    out: list[str] = []
    missing: list[dict[str, Any]] = []
    cycles: list[str] = []
    seen: set[str] = set()
    # Pruned entries end a walk, as in Claude Code, unless the walk starts among them (an
    # explicit leaf in the compacted part of the file: the tree view asks for that history).
    pruned = g.pruned if leaf not in g.pruned else set()
    cur = leaf
    while cur is not None:
        if cur in seen:
            cycles.append(cur)
            break
        seen.add(cur)
        out.append(cur)
        p = g.parent[cur]
        if p is None:
            break
        if p not in g.parent or p in pruned:
            missing.append(_missing_parent(t, g, cur, p))
            break
        cur = p
    out.reverse()
    return out, missing, cycles


def _missing_parent(t: ClaudeTranscript, g: _Graph, child: str, parent: str) -> dict[str, Any]:
    item: dict[str, Any] = {"uuid": child, "parentUuid": parent}
    agent = t.agent_id or ""
    if parent in g.pruned:
        item["expected"] = True
        item["reason"] = "pruned: before the last compact boundary and not in its preserved segment"
    elif agent.startswith("acompact"):
        item["expected"] = True
        item["reason"] = "compaction worker: hangs off the main session at the boundary's logicalParentUuid"
    else:
        item["expected"] = False
        item["reason"] = "parent not in this file (never written, or written to another file)"
    return item


def _recover_orphans(t: ClaudeTranscript, g: _Graph, chain: list[str]) -> tuple[list[str], int]:
    """Put back the parallel tool-call pieces and results a parent walk skips (docs/claude-code.md).

    For every ``message.id`` with a piece on the chain: its pieces that are not on the chain,
    then the tool-result entries whose parent is any of its pieces and that are not on the
    chain (each group sorted by timestamp, then file order), go right after the group's last
    piece on the chain. Works for both eras: 2.1.x parents results to the piece holding the
    ``tool_use`` (``sourceToolAssistantUUID``); older linear chains have nothing to recover
    except copies of a retried message with the same id.
    """
    msg_ids = g.msg_ids
    anchors: dict[str, str] = {}
    group_order: list[str] = []
    for u in chain:
        mid = msg_ids.get(u)
        if mid is not None:
            if mid not in anchors:
                group_order.append(mid)
            anchors[mid] = u
    if not anchors:
        return chain, 0
    # Both indexes are filled in first-seen order; the sorts below keep that order on ties.
    siblings: dict[str, list[str]] = {}
    for u, mid in msg_ids.items():
        if mid in anchors and u not in g.pruned:
            siblings.setdefault(mid, []).append(u)
    results_by_parent: dict[str, list[str]] = {}
    for u in g.results:
        p = g.parent[u]
        if p is not None and u not in g.pruned:
            results_by_parent.setdefault(p, []).append(u)
    seen = set(chain)
    inserts: dict[str, list[str]] = {}
    recovered = 0

    def order_key(u: str) -> tuple[float, int]:
        ts = g.ts[u]
        return (ts if ts == ts else math.inf, g.pos[u])

    for mid in group_order:
        group = siblings.get(mid, [])
        lost_pieces = [u for u in group if u not in seen]
        lost_results = [r for m in group for r in results_by_parent.get(m, ()) if r not in seen]
        if not lost_pieces and not lost_results:
            continue
        lost_pieces.sort(key=order_key)
        lost_results = sorted(dict.fromkeys(lost_results), key=order_key)
        add = lost_pieces + lost_results
        seen.update(add)
        recovered += len(add)
        inserts.setdefault(anchors[mid], []).extend(add)
    if not inserts:
        return chain, 0
    out: list[str] = []
    for u in chain:
        out.append(u)
        extra = inserts.get(u)
        if extra:
            out.extend(extra)
    return out, recovered


def _unpaired(g: _Graph, chain: list[str]) -> int:
    """tool_use ids on ``chain`` without a tool_result on ``chain`` (the "unpaired" measure of
    docs/claude-code.md's table of results)."""
    uses: dict[str, None] = {}
    results: set[str] = set()
    for u in chain:
        ids = g.uses.get(u)
        if ids is not None:
            for tid in ids:
                uses[tid] = None
            continue
        done = g.results.get(u)
        if done is not None:
            results.update(done)
    return sum(1 for tid in uses if tid not in results)


def _boundary_report(t: ClaudeTranscript, g: _Graph, chain: list[str]) -> list[dict[str, Any]]:
    on_chain = set(chain)
    out: list[dict[str, Any]] = []
    for b in g.boundaries:
        e = t.chain[b]
        meta = e.get("compactMetadata")
        meta = meta if type(meta) is dict else {}
        logical = _str_or_none(e.get("logicalParentUuid"))
        out.append(
            {
                "uuid": b,
                "trigger": meta.get("trigger"),
                "preTokens": meta.get("preTokens"),
                "logicalParentUuid": logical,
                "logicalParentPresent": logical is not None and logical in t.chain,
                "preservedSegment": type(meta.get("preservedSegment")) is dict,
                "onChain": b in on_chain,
            }
        )
    return out


# --------------------------------------------------------------------------- messages


def _ms(value: Any) -> int:
    d = timestamp_ms(value)
    return int(d) if d == d else 0


def _number(value: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value == value and not math.isinf(value):
        return int(value)
    return 0


def _max_usage(a: Usage4, b: Usage4) -> Usage4:
    """Field-wise maximum: streamed pieces carry partial (growing) counts of the same message."""
    return (max(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _usage_tuple(message: Any) -> Usage4:
    usage = message.get("usage") if type(message) is dict else None
    if type(usage) is not dict:
        return _EMPTY_USAGE
    return (
        _number(usage.get("input_tokens")),
        _number(usage.get("output_tokens")),
        _number(usage.get("cache_read_input_tokens")),
        _number(usage.get("cache_creation_input_tokens")),
    )


def pi_usage(fields: Usage4) -> dict[str, Any]:
    """Anthropic usage ``(input, output, cacheRead, cacheWrite)`` as Pi's usage object."""
    i, o, r, w = fields
    return {
        "input": i,
        "output": o,
        "cacheRead": r,
        "cacheWrite": w,
        "totalTokens": i + o + r + w,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def _image_block(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    if type(source) is dict and source.get("type") == "base64" and type(source.get("data")) is str:
        mime = source.get("media_type")
        return {"type": "image", "data": source["data"], "mimeType": mime if type(mime) is str else ""}
    return {"type": "text", "text": "[image]"}


def _user_blocks(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    """Text and image blocks as Pi content; other block types become a short text placeholder."""
    out: list[dict[str, Any]] = []
    for b in blocks:
        if type(b) is str:
            out.append({"type": "text", "text": b})
            continue
        if type(b) is not dict:
            continue
        bt = b.get("type")
        if bt == "text":
            text = b.get("text")
            out.append({"type": "text", "text": text if type(text) is str else ""})
        elif bt == "image":
            out.append(_image_block(b))
        elif bt == "tool_reference":
            out.append({"type": "text", "text": f"[tool_reference {b.get('tool_name', '')}]"})
        else:
            out.append({"type": "text", "text": f"[{bt}]"})
    return out


def _tool_result_message(block: dict[str, Any], tool_names: dict[str, str], ts: int) -> Message:
    content = block.get("content")
    if type(content) is str:
        blocks = [{"type": "text", "text": content}] if content else []
    elif type(content) is list:
        blocks = _user_blocks(content)
    else:
        blocks = []
    tid = block.get("tool_use_id")
    tid = tid if type(tid) is str else ""
    return {
        "role": "toolResult",
        "toolCallId": tid,
        "toolName": tool_names.get(tid, ""),
        "content": blocks,
        "isError": block.get("is_error") is True,
        "timestamp": ts,
    }


def user_messages(entry: dict[str, Any], tool_names: dict[str, str]) -> list[Message]:
    """What one user entry contributes: its tool results first (as the API requires), then the
    rest of its content as one Pi user message. A string content stays a string."""
    message = entry.get("message")
    if type(message) is not dict:
        return []
    ts = _ms(entry.get("timestamp"))
    content = message.get("content")
    if type(content) is str:
        return [{"role": "user", "content": content, "timestamp": ts}]
    if type(content) is not list:
        return []
    results: list[Message] = []
    rest: list[Any] = []
    for b in content:
        if type(b) is dict and b.get("type") == "tool_result":
            results.append(_tool_result_message(b, tool_names, ts))
        else:
            rest.append(b)
    if rest:
        results.append({"role": "user", "content": _user_blocks(rest), "timestamp": ts})
    return results


def _blocks_of(content: Any) -> list[Any]:
    """An assistant ``content`` as a block list (a plain string is one text block)."""
    if type(content) is list:
        return list(content)
    if type(content) is str and content:
        return [{"type": "text", "text": content}]
    return []


def _assistant_blocks(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if type(b) is not dict:
            continue
        bt = b.get("type")
        if bt == "text":
            text = b.get("text")
            out.append({"type": "text", "text": text if type(text) is str else ""})
        elif bt == "thinking":
            thinking = b.get("thinking")
            block: dict[str, Any] = {
                "type": "thinking",
                "thinking": thinking if type(thinking) is str else "",
            }
            if type(b.get("signature")) is str:
                block["thinkingSignature"] = b["signature"]
            out.append(block)
        elif bt == "redacted_thinking":
            data = b.get("data")
            out.append(
                {
                    "type": "thinking",
                    "thinking": "",
                    "thinkingSignature": data if type(data) is str else "",
                    "redacted": True,
                }
            )
        elif bt == "tool_use":
            args = b.get("input")
            tid = b.get("id")
            name = b.get("name")
            out.append(
                {
                    "type": "toolCall",
                    "id": tid if type(tid) is str else "",
                    "name": name if type(name) is str else "",
                    "arguments": args if type(args) is dict else {},
                }
            )
        else:
            out.append({"type": "text", "text": f"[{bt}]"})
    return out


def _stop_reason(raw: Any, has_tool_calls: bool) -> str:
    if type(raw) is str and raw in _STOP_REASONS:
        return _STOP_REASONS[raw]
    if raw is None and has_tool_calls:
        return "toolUse"  # 2.1.17-2.1.42 write stop_reason null on every piece
    return "stop"


def assistant_message(
    entry: dict[str, Any],
    blocks: list[Any] | None = None,
    usage: Usage4 | None = None,
    stop: Any = None,
) -> Message:
    """A Pi assistant message for an assistant entry (or a merged API message)."""
    message = entry.get("message")
    message = message if type(message) is dict else {}
    content = _assistant_blocks(blocks if blocks is not None else _blocks_of(message.get("content")))
    has_calls = any(b["type"] == "toolCall" for b in content)
    reason = message.get("stop_reason") if stop is None else stop
    model = message.get("model")
    out: Message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model if type(model) is str else "",
        "usage": pi_usage(usage if usage is not None else _usage_tuple(message)),
        "stopReason": _stop_reason(reason, has_calls),
    }
    if entry.get("isApiErrorMessage") is True:
        out["stopReason"] = "error"
        text = " ".join(b["text"] for b in content if b["type"] == "text")
        out["errorMessage"] = text or str(entry.get("error") or "API error")
    out["timestamp"] = _ms(entry.get("timestamp"))
    return out


@dataclass(slots=True)
class _Api:
    """One API assistant message being merged from its pieces."""

    uuid: str
    entry: dict[str, Any]
    blocks: list[Any]
    usage: Usage4
    stop: Any
    pieces: int = 1


def _build_messages(
    t: ClaudeTranscript, g: _Graph, chain: list[str]
) -> tuple[list[tuple[str, Message]], dict[str, Any]]:
    entries = t.chain
    start = 0
    boundaries = set(g.boundaries)
    for i in range(len(chain) - 1, -1, -1):
        if chain[i] in boundaries:
            start = i + 1  # the model's context starts after the last compact boundary
            break
    items: list[tuple[str, Any]] = []  # ("a", _Api) | ("u", uuid)
    open_ids: dict[str, int] = {}  # message.id -> index in items, since the last non-tool-result user
    excluded: dict[str, int] = {}
    merged_pieces = 0
    for u in chain[start:]:
        e = entries[u]
        etype = e.get("type")
        if etype == ASSISTANT:
            message = e.get("message")
            content = message.get("content") if type(message) is dict else None
            blocks = _blocks_of(content)
            usage = _EMPTY_USAGE if u in g.zero_usage else _usage_tuple(message)
            stop = message.get("stop_reason") if type(message) is dict else None
            mid = g.msg_ids.get(u)
            if mid is not None and mid in open_ids:
                api: _Api = items[open_ids[mid]][1]
                api.blocks.extend(blocks)
                api.usage = _max_usage(api.usage, usage)
                if stop is not None:
                    api.stop = stop
                api.pieces += 1
                merged_pieces += 1
                continue
            items.append(("a", _Api(u, e, blocks, usage, stop)))
            if mid is not None:
                open_ids[mid] = len(items) - 1
        elif etype == USER:
            items.append(("u", u))
            if u not in g.results:
                open_ids.clear()  # the walk back stops at a user entry that is not a tool result
        else:
            sub = e.get("subtype") if etype == SYSTEM else _attachment_type(e)
            name = f"{etype}/{sub or 'none'}"
            excluded[name] = excluded.get(name, 0) + 1
    raw: list[tuple[str, Message]] = []
    seen_calls: set[str] = set()
    duplicate_calls = 0
    dropped_assistants = 0
    for kind, item in items:
        if kind == "u":
            raw.extend((item, m) for m in user_messages(entries[item], g.tool_names))
            continue
        api = item
        msg = assistant_message(api.entry, api.blocks, api.usage, api.stop)
        kept: list[dict[str, Any]] = []
        for b in msg["content"]:
            if b["type"] == "toolCall":
                if b["id"] in seen_calls:
                    duplicate_calls += 1
                    continue
                seen_calls.add(b["id"])
            kept.append(b)
        if len(kept) != len(msg["content"]):
            if not kept:
                dropped_assistants += 1
                continue
            msg["content"] = kept
        raw.append((api.uuid, msg))
    paired, pdiag = _pair_tool_results(raw)
    usage_sum = 0
    last_total: int | None = None
    api_messages = 0
    for _, m in paired:
        if m["role"] == "assistant":
            api_messages += 1
            usage_sum += m["usage"]["totalTokens"]
            if m["usage"]["totalTokens"] > 0 and m["stopReason"] != "error":
                last_total = m["usage"]["totalTokens"]
    diag: dict[str, Any] = {
        "contextStart": chain[start] if start < len(chain) else None,
        "apiAssistantMessages": api_messages,
        "mergedAssistantPieces": merged_pieces,
        "duplicateToolUses": duplicate_calls,
        "assistantsEmptiedByDedup": dropped_assistants,
        **pdiag,
        "excludedFromMessages": excluded,
        "usageTotalTokensSum": usage_sum,
        "lastAssistantTotalTokens": last_total,
    }
    return paired, diag


def _attachment_type(e: dict[str, Any]) -> Any:
    att = e.get("attachment")
    return att.get("type") if type(att) is dict else None


def _pair_tool_results(raw: list[tuple[str, Message]]) -> tuple[list[tuple[str, Message]], dict[str, Any]]:
    """Every tool call answered right after its assistant message, every result with its call.

    Between an assistant message and the next one, the results of its calls come first (in
    the order they were recorded), then a synthetic error result for each call without one,
    then the other messages of that stretch. Results for calls of another message, and second
    results for a call, are dropped. This is the shape the Messages API accepts and the repair
    Claude Code applies when it builds a request.
    """
    out: list[tuple[str, Message]] = []
    synthetic = 0
    dropped = 0
    i = 0
    n = len(raw)
    while i < n:
        source, m = raw[i]
        if m["role"] != "assistant":
            if m["role"] == "toolResult":
                dropped += 1  # a result before any call
            else:
                out.append((source, m))
            i += 1
            continue
        out.append((source, m))
        calls = [b for b in m["content"] if b["type"] == "toolCall"]
        j = i + 1
        results: list[tuple[str, Message]] = []
        others: list[tuple[str, Message]] = []
        answered: set[str] = set()
        wanted = {b["id"] for b in calls}
        while j < n and raw[j][1]["role"] != "assistant":
            item = raw[j]
            if item[1]["role"] == "toolResult":
                tid = item[1]["toolCallId"]
                if tid in wanted and tid not in answered:
                    answered.add(tid)
                    results.append(item)
                else:
                    dropped += 1
            else:
                others.append(item)
            j += 1
        out.extend(results)
        ts = m["timestamp"]
        for b in calls:
            if b["id"] not in answered:
                synthetic += 1
                out.append(
                    (
                        source,
                        {
                            "role": "toolResult",
                            "toolCallId": b["id"],
                            "toolName": b["name"],
                            "content": [{"type": "text", "text": SYNTHETIC_TOOL_RESULT_TEXT}],
                            "details": {"synthetic": True},
                            "isError": True,
                            "timestamp": ts,
                        },
                    )
                )
        out.extend(others)
        i = j
    return out, {"syntheticToolResults": synthetic, "droppedToolResults": dropped}


# --------------------------------------------------------------------------- Pi entries


def to_pi_entries(t: ClaudeTranscript, only: Container[str] | None = None) -> list[dict[str, Any]]:
    """Every chain entry of every branch as a Pi v3 entry, in first-seen file order.

    * ids are the Claude Code uuids; ``parentId`` is the parent after progress bridging and
      ``preservedSegment`` relinks (``null`` for roots and compact boundaries; a parent missing
      from the file is kept, so the tree shows the entry as an orphan root);
    * a user entry is a ``message`` entry: role ``user`` for prompts, role ``toolResult`` when
      it holds exactly one tool result and nothing else (the common case); an entry with
      several results, or results plus text, is a ``custom`` entry ``claude-code.user/tool-results``
      whose ``data.messages`` holds its Pi messages;
    * an assistant entry (one streamed piece) is a ``message`` entry with that piece's blocks;
      the usage of an API message sits on its last piece in the file, the other pieces carry
      zero usage, so usage summed over entries counts each API message once;
    * system and attachment entries are ``custom`` entries ``claude-code.system/<subtype>`` and
      ``claude-code.attachment/<type>`` with a small ``data`` summary; progress entries are
      bridged away. Each entry carries ``claudeCode`` with the record type and its flags.

    ``only`` converts just those uuids (the ones a follower has not seen yet).
    """
    with paused_gc():
        return _to_pi_entries(t, only)


def _to_pi_entries(t: ClaudeTranscript, only: Container[str] | None = None) -> list[dict[str, Any]]:
    g = _graph(t)
    chain = t.chain
    carrier: dict[str, str] = {}
    group_usage: dict[str, Usage4] = {}
    for u in g.order:
        e = chain[u]
        if e.get("type") != ASSISTANT:
            continue
        mid = _message_id(e) or u
        carrier[mid] = u
        usage = _EMPTY_USAGE if u in g.zero_usage else _usage_tuple(e.get("message"))
        prev = group_usage.get(mid)
        group_usage[mid] = usage if prev is None else _max_usage(prev, usage)
    out: list[dict[str, Any]] = []
    for u in g.order:
        if only is not None and u not in only:
            continue
        e = chain[u]
        etype = e.get("type")
        ts = e.get("timestamp")
        timestamp = ts if type(ts) is str else ""
        meta = _cc_meta(e)
        base: dict[str, Any]
        if etype == ASSISTANT:
            mid = _message_id(e) or u
            message = assistant_message(e, usage=group_usage[mid] if carrier[mid] == u else _EMPTY_USAGE)
            base = {
                "type": "message",
                "id": u,
                "parentId": g.parent[u],
                "timestamp": timestamp,
                "message": message,
            }
        elif etype == USER:
            msgs = user_messages(e, g.tool_names)
            if len(msgs) == 1:
                base = {
                    "type": "message",
                    "id": u,
                    "parentId": g.parent[u],
                    "timestamp": timestamp,
                    "message": msgs[0],
                }
            elif not msgs:
                base = {
                    "type": "message",
                    "id": u,
                    "parentId": g.parent[u],
                    "timestamp": timestamp,
                    "message": {"role": "user", "content": [], "timestamp": _ms(ts)},
                }
            else:
                base = {
                    "type": "custom",
                    "customType": "claude-code.user/tool-results",
                    "data": {"messages": msgs},
                    "id": u,
                    "parentId": g.parent[u],
                    "timestamp": timestamp,
                }
        else:
            if etype == SYSTEM:
                custom_type = f"claude-code.system/{e.get('subtype') or 'none'}"
                data = _system_data(e)
            else:
                custom_type = f"claude-code.attachment/{_attachment_type(e) or 'none'}"
                data = _attachment_data(e)
            base = {
                "type": "custom",
                "customType": custom_type,
                "data": data,
                "id": u,
                "parentId": g.parent[u],
                "timestamp": timestamp,
            }
        base["claudeCode"] = meta
        out.append(base)
    return out


_FLAGS: Final = (
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "isVisibleInTranscriptOnly",
    "isApiErrorMessage",
)


def _cc_meta(e: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"type": e.get("type")}
    for flag in _FLAGS:
        if e.get(flag) is True:
            meta[flag] = True
    for name in ("agentId", "promptId", "requestId"):
        value = e.get(name)
        if type(value) is str:
            meta[name] = value
    mid = _message_id(e)
    if mid is not None and e.get("type") == ASSISTANT:
        meta["messageId"] = mid
    raw_parent = e.get("parentUuid")
    if type(raw_parent) is str:
        meta["parentUuid"] = raw_parent
    return meta


def _clip(value: Any, limit: int = 200) -> Any:
    if type(value) is str and len(value) > limit:
        return value[: limit - 3] + "..."
    return value


def _system_data(e: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in (
        "subtype",
        "level",
        "content",
        "durationMs",
        "retryAttempt",
        "logicalParentUuid",
        "toolUseID",
    ):
        if name in e:
            data[name] = _clip(e[name])
    meta = e.get("compactMetadata")
    if type(meta) is dict:
        data["compactMetadata"] = {k: meta[k] for k in ("trigger", "preTokens", "postTokens") if k in meta}
        if type(meta.get("preservedSegment")) is dict:
            data["compactMetadata"]["preservedSegment"] = meta["preservedSegment"]
    error = e.get("error")
    if type(error) is dict:
        data["error"] = _clip(orjson.dumps(error).decode(), 300)
    return data


def _attachment_data(e: dict[str, Any]) -> dict[str, Any]:
    att = e.get("attachment")
    if type(att) is not dict:
        return {}
    data: dict[str, Any] = {}
    for name in ("type", "hookName", "hookEvent", "toolUseID"):
        value = att.get(name)
        if type(value) is str:
            data[name] = value
    content = att.get("content")
    if type(content) is str:
        data["content"] = _clip(content)
    return data


# --------------------------------------------------------------------------- sub-agents


@dataclass(slots=True)
class SubagentLink:
    """A sub-agent transcript and, when the main transcript says so, the call that spawned it."""

    agent_id: str
    """``agentId`` (the ``agent-<id>.jsonl`` stem); for 1.0.x inline sidechains the root's uuid."""
    path: str | None
    """The transcript file; ``None`` for inline sidechains."""
    layout: str
    """``inline`` (1.0.x, inside the main file), ``flat`` (2.0.x siblings), ``nested`` (2.1.x)."""
    tool_use_id: str | None
    """The Task/Agent ``tool_use`` that spawned it (``None`` for the compaction worker)."""
    parent_entry_uuid: str | None
    """The main-session entry holding that ``tool_use``; for the compaction worker, its boundary."""
    agent_type: str | None
    description: str | None
    entry_count: int
    """Chain entries of the sub-agent (progress entries not counted)."""
    kind: str = "task"
    """``task`` or ``compaction`` (``agent-acompact-*``)."""
    linked_by: str | None = None
    """What linked it: ``toolUseResult``, ``agent_progress``, ``meta``, ``prompt``, ``logicalParentUuid``,
    ``timestamp``; ``None`` when nothing in the main transcript names it."""
    root_uuid: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "path": self.path,
            "layout": self.layout,
            "kind": self.kind,
            "toolUseId": self.tool_use_id,
            "parentEntryUuid": self.parent_entry_uuid,
            "agentType": self.agent_type,
            "description": self.description,
            "entryCount": self.entry_count,
            "linkedBy": self.linked_by,
            "rootUuid": self.root_uuid,
        }


@dataclass(slots=True)
class _Spawns:
    calls: dict[str, tuple[str, str, dict[str, Any]]]
    """tool_use id -> (entry uuid, tool name, input) for the main transcript's Task/Agent calls."""
    by_result: dict[str, str]
    """agentId -> tool_use id, from ``toolUseResult.agentId``."""
    by_progress: dict[str, str]
    """agentId -> tool_use id, from ``agent_progress`` progress entries."""


_SPAWN_TOOLS: Final = frozenset({"Task", "Agent"})


def _spawns(t: ClaudeTranscript) -> _Spawns:
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {}
    by_result: dict[str, str] = {}
    by_progress: dict[str, str] = {}
    for u, e in t.chain.items():
        etype = e.get("type")
        if etype == ASSISTANT:
            content = _content(e)
            for b in content if type(content) is list else ():
                if type(b) is dict and b.get("type") == "tool_use" and b.get("name") in _SPAWN_TOOLS:
                    tid = b.get("id")
                    if type(tid) is str and tid not in calls:
                        args = b.get("input")
                        calls[tid] = (u, b["name"], args if type(args) is dict else {})
        elif etype == USER:
            result = e.get("toolUseResult")
            if type(result) is dict and type(result.get("agentId")) is str:
                ids = _tool_result_ids(e)
                if ids:
                    by_result.setdefault(result["agentId"], ids[0])
        elif etype == PROGRESS:
            data = e.get("data")
            if (
                type(data) is dict
                and data.get("type") == "agent_progress"
                and type(data.get("agentId")) is str
            ):
                ptu = e.get("parentToolUseID")
                if type(ptu) is str:
                    by_progress.setdefault(data["agentId"], ptu)
    return _Spawns(calls, by_result, by_progress)


def find_subagents(path: str | os.PathLike[str], t: ClaudeTranscript) -> list[SubagentLink]:
    """Sub-agent transcripts of the session in ``path`` (already loaded as ``t``), in all layouts.

    * inline (1.0.x): sidechain roots inside the file, linked to a Task call by prompt text;
    * nested (2.1.x): ``<dir>/<sessionId>/subagents/**/agent-*.jsonl`` with ``.meta.json``;
    * flat (2.0.x): ``<dir>/agent-*.jsonl`` whose entries carry this session's ``sessionId``.

    File-based agents are linked by ``meta.json`` ``toolUseId``, ``toolUseResult.agentId`` or
    ``agent_progress`` (``data.agentId`` + ``parentToolUseID``); the compaction worker
    (``agent-acompact-*``) is linked to the compact boundary whose ``logicalParentUuid`` it
    hangs off. Unreadable files are skipped. Sorted by first timestamp, then agent id.
    """
    p = Path(path)
    spawns = _spawns(t)
    links: list[tuple[float, SubagentLink]] = []
    links.extend(_inline_links(t, spawns))
    seen_files: set[Path] = {p.resolve()} if p.exists() else set()
    directory = p.parent
    session_dirs = [directory / p.stem]
    if t.session_id and t.session_id != p.stem:
        session_dirs.append(directory / t.session_id)
    for sdir in session_dirs:
        sub = sdir / "subagents"
        if not sub.is_dir():
            continue
        for f in sorted(sub.rglob("agent-*.jsonl")):
            resolved = f.resolve()
            if resolved in seen_files:
                continue
            seen_files.add(resolved)
            link = _file_link(f, "nested", t, spawns, require_session=False)
            if link is not None:
                links.append(link)
    try:
        flat = sorted(directory.glob("agent-*.jsonl"))
    except OSError:
        flat = []
    for f in flat:
        resolved = f.resolve()
        if resolved in seen_files:
            continue
        seen_files.add(resolved)
        link = _file_link(f, "flat", t, spawns, require_session=True)
        if link is not None:
            links.append(link)
    links.sort(key=lambda x: (x[0] if x[0] == x[0] else math.inf, x[1].agent_id))
    return [link for _, link in links]


def _inline_links(t: ClaudeTranscript, spawns: _Spawns) -> list[tuple[float, SubagentLink]]:
    g = _graph(t)
    chain = t.chain
    if t.is_sidechain_file:
        return []
    root_of: dict[str, str | None] = {}
    sizes: dict[str, int] = {}
    for u in g.order:
        if chain[u].get("isSidechain") is not True:
            continue
        path: list[str] = []
        seen: set[str] = set()
        cur: str | None = u
        root: str | None = None
        while cur is not None and cur not in seen:
            if cur in root_of:
                root = root_of[cur]
                break
            seen.add(cur)
            path.append(cur)
            p = g.parent[cur]
            if p is None or p not in g.parent:
                root = cur
                break
            cur = p
        for x in path:
            root_of[x] = root
        if root is not None:
            sizes[root] = sizes.get(root, 0) + 1
    used: set[str] = set()
    out: list[tuple[float, SubagentLink]] = []
    for root, size in sizes.items():
        e = chain[root]
        if e.get("isSidechain") is not True:
            continue
        agent = e.get("agentId")
        tool_use: str | None = None
        linked_by: str | None = None
        if type(agent) is str:
            tool_use = spawns.by_result.get(agent) or spawns.by_progress.get(agent)
            linked_by = (
                "toolUseResult" if agent in spawns.by_result else "agent_progress" if tool_use else None
            )
        if tool_use is None:
            prompt = _prompt_text(e)
            for tid, (_, _, args) in spawns.calls.items():
                if tid not in used and prompt is not None and args.get("prompt") == prompt:
                    tool_use, linked_by = tid, "prompt"
                    break
        if tool_use is not None:
            used.add(tool_use)
        out.append(
            (
                g.ts[root],
                _link(
                    agent if type(agent) is str else root,
                    None,
                    "inline",
                    tool_use,
                    spawns,
                    size,
                    linked_by,
                    root,
                    meta={},
                ),
            )
        )
    return out


def _prompt_text(e: dict[str, Any]) -> str | None:
    content = _content(e)
    if type(content) is str:
        return content
    if type(content) is list:
        texts = [b.get("text") for b in content if type(b) is dict and b.get("type") == "text"]
        return "\n".join(x for x in texts if type(x) is str) if texts else None
    return None


def _link(
    agent_id: str,
    path: str | None,
    layout: str,
    tool_use: str | None,
    spawns: _Spawns,
    count: int,
    linked_by: str | None,
    root: str | None,
    meta: dict[str, Any],
) -> SubagentLink:
    call = spawns.calls.get(tool_use) if tool_use is not None else None
    args = call[2] if call is not None else {}
    agent_type = meta.get("agentType") if type(meta.get("agentType")) is str else args.get("subagent_type")
    description = meta.get("description") if type(meta.get("description")) is str else args.get("description")
    return SubagentLink(
        agent_id=agent_id,
        path=path,
        layout=layout,
        tool_use_id=tool_use,
        parent_entry_uuid=call[0] if call is not None else None,
        agent_type=agent_type if type(agent_type) is str else None,
        description=description if type(description) is str else None,
        entry_count=count,
        linked_by=linked_by,
        root_uuid=root,
    )


def _first_session_id(path: Path) -> str | None:
    """``sessionId`` of the first record that has one, reading a few lines at most."""
    try:
        with open(path, "rb") as f:
            for raw in itertools.islice(f, 8):
                kind, value = _parse_line(raw)
                if kind == 0 and type(value) is dict and type(value.get("sessionId")) is str:
                    return str(value["sessionId"])
    except OSError:
        return None
    return None


def _file_link(
    f: Path, layout: str, t: ClaudeTranscript, spawns: _Spawns, *, require_session: bool
) -> tuple[float, SubagentLink] | None:
    if require_session and (t.session_id is None or _first_session_id(f) != t.session_id):
        return None
    try:
        sub = load_transcript(f)
    except OSError:
        return None
    stem = f.name[: -len(".jsonl")]
    agent_id = sub.agent_id or (stem[len("agent-") :] if stem.startswith("agent-") else stem)
    meta: dict[str, Any] = {}
    meta_path = f.with_name(stem + ".meta.json")
    try:
        loaded = orjson.loads(meta_path.read_bytes())
        if type(loaded) is dict:
            meta = loaded
    except (OSError, orjson.JSONDecodeError):
        pass
    g = _graph(sub)
    first_ts = min((g.ts[u] for u in g.order if g.ts[u] == g.ts[u]), default=math.nan)
    tool_use: str | None = None
    linked_by: str | None = None
    if type(meta.get("toolUseId")) is str:
        tool_use, linked_by = meta["toolUseId"], "meta"
    elif agent_id in spawns.by_result:
        tool_use, linked_by = spawns.by_result[agent_id], "toolUseResult"
    elif agent_id in spawns.by_progress:
        tool_use, linked_by = spawns.by_progress[agent_id], "agent_progress"
    if require_session and t.is_sidechain_file and tool_use is None:
        return None  # a sibling of a sub-agent transcript, not one of its children
    root = g.order[0] if g.order else None
    link = _link(agent_id, str(f), layout, tool_use, spawns, len(g.order), linked_by, root, meta)
    if agent_id.startswith("acompact"):
        link.kind = "compaction"
        boundary, how = _compaction_boundary(t, sub, g, first_ts)
        link.parent_entry_uuid = boundary
        link.linked_by = how
        if link.agent_type is None:
            link.agent_type = "compaction"
        if link.description is None and boundary is not None:
            meta_c = t.chain[boundary].get("compactMetadata")
            trigger = meta_c.get("trigger") if type(meta_c) is dict else None
            link.description = f"compaction ({trigger})" if type(trigger) is str else "compaction"
    return first_ts, link


def _compaction_boundary(
    t: ClaudeTranscript, sub: ClaudeTranscript, sg: _Graph, first_ts: float
) -> tuple[str | None, str | None]:
    """The main transcript's boundary a compaction worker belongs to, and how it was found."""
    g = _graph(t)
    if not g.boundaries:
        return None, None
    parents = {sg.parent[u] for u in sg.order if sg.parent[u] is not None and sg.parent[u] not in sg.parent}
    for b in g.boundaries:
        logical = t.chain[b].get("logicalParentUuid")
        if type(logical) is str and logical in parents:
            return b, "logicalParentUuid"
    if first_ts == first_ts:
        for b in g.boundaries:
            if g.ts[b] >= first_ts:
                return b, "timestamp"
    return None, None


# --------------------------------------------------------------------------- listing


def listing_fields(t: ClaudeTranscript) -> dict[str, Any]:
    """What a session list shows for a transcript (main-session entries only).

    ``created_ms``/``modified_ms``: earliest/latest valid timestamp of a user or assistant entry
    (``None`` when there is none); ``message_count``: user and assistant entries of every branch;
    ``first_message``: the text of the first prompt a human typed (meta, tool-result, compact
    summary and local-command entries skipped), or ``None``.
    """
    g = _graph(t)
    created = math.inf
    modified = -math.inf
    count = 0
    first: str | None = None
    for u in g.order:
        e = t.chain[u]
        etype = e.get("type")
        if etype not in (USER, ASSISTANT) or e.get("isSidechain") is True:
            continue
        count += 1
        ts = g.ts[u]
        if ts == ts:
            created = min(created, ts)
            modified = max(modified, ts)
        if first is None and etype == USER and not _is_tool_result_user(e):
            if e.get("isMeta") is True or e.get("isCompactSummary") is True:
                continue
            text = _prompt_text(e)
            if text is not None and text.strip() and not text.lstrip().startswith(_NOT_PROMPTS):
                first = text.strip()
    return {
        "created_ms": None if created == math.inf else created,
        "modified_ms": None if modified == -math.inf else modified,
        "message_count": count,
        "first_message": first,
    }


_NOT_PROMPTS: Final = ("<local-command-", "<command-name>", "<command-message>", "[Request interrupted")


__all__ = [
    "LEAF_RULES",
    "SYNTHETIC_TOOL_RESULT_TEXT",
    "ClaudeLoadDiagnostics",
    "ClaudeTranscript",
    "Reconstruction",
    "SubagentLink",
    "Titles",
    "assistant_message",
    "extend_transcript",
    "find_subagents",
    "is_claude_code_file",
    "listing_fields",
    "load_transcript",
    "looks_like_claude_record",
    "parse_transcript",
    "pi_usage",
    "reconstruct",
    "to_pi_entries",
    "user_messages",
]
