"""The effective parent graph of a transcript, computed once and shared by every reconstruction.

Claude Code does not take ``parentUuid`` at face value when it loads a file: legacy
``progress`` entries are bridged over, compact boundaries start new roots, the last
``preservedSegment`` relinks a kept segment under its anchor and prunes what came before,
and snip boundaries remove entries. :func:`graph_of` applies all of that once per
transcript and also indexes what the later stages look up per entry (timestamps, message
ids, tool calls and results), so a reconstruction is a walk over this graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..pi import paused_gc
from .records import (
    ASSISTANT,
    COMPACT_BOUNDARY,
    PROGRESS,
    SNIP_BOUNDARY,
    SYSTEM,
    USER,
    ClaudeTranscript,
    str_or_none,
    timestamp_ms,
)


@dataclass(slots=True)
class Graph:
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


def graph_of(t: ClaudeTranscript) -> Graph:
    """The transcript's graph, built on first use and kept on the transcript."""
    g = t.graph_cache
    if not isinstance(g, Graph):
        with paused_gc():
            g = t.graph_cache = build_graph(t)
    return g


def build_graph(t: ClaudeTranscript) -> Graph:
    chain = t.chain
    progress: dict[str, str | None] = {}
    order: list[str] = []
    for uuid, entry in chain.items():
        if entry.get("type") == PROGRESS:
            progress[uuid] = str_or_none(entry.get("parentUuid"))
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
        raw = raw_parent(entry, target)
        if is_compact_boundary(entry):
            boundaries.append(uuid)
            raw = None
        parent[uuid] = raw
        index_entry(uuid, entry, ts, tool_names, msg_ids, uses, results)
    pruned: set[str] = set()
    preserved: set[str] = set()
    zero_usage: set[str] = set()
    relink = _apply_preserved_segment(chain, order, pos, parent, boundaries, pruned, preserved, zero_usage)
    snipped = _apply_snip_removals(chain, order, parent)
    pruned |= snipped
    graph = Graph(
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


def raw_parent(entry: dict[str, Any], bridge: dict[str, str | None]) -> str | None:
    """``parentUuid`` with progress bridged (before boundaries, relinks and snips)."""
    raw = entry.get("parentUuid")
    if type(raw) is not str or not raw:
        return None
    return bridge.get(raw, raw)


def is_compact_boundary(entry: dict[str, Any]) -> bool:
    return entry.get("type") == SYSTEM and entry.get("subtype") == COMPACT_BOUNDARY


def index_entry(
    uuid: str,
    entry: dict[str, Any],
    ts: dict[str, float],
    tool_names: dict[str, str],
    msg_ids: dict[str, str],
    uses: dict[str, list[str]],
    results: dict[str, list[str]],
) -> None:
    """What the later stages look up per message entry: its timestamp, and for assistants the
    ``message.id`` and ``tool_use`` ids (the first name of an id wins), for users the ids their
    ``tool_result`` blocks answer. Shared by :func:`build_graph` and by followers growing a graph."""
    ts[uuid] = timestamp_ms(entry.get("timestamp"))
    etype = entry.get("type")
    if etype not in (ASSISTANT, USER):
        return
    message = entry.get("message")
    if type(message) is not dict:
        return
    content = message.get("content")
    if etype == ASSISTANT:
        mid = message.get("id")
        if type(mid) is str and mid:
            msg_ids[uuid] = mid
        if type(content) is not list:
            return
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


@dataclass(slots=True)
class SegmentPlan:
    """What the last ``preservedSegment`` boundary asks for (docs/claude-code.md, The graph)."""

    info: dict[str, Any]
    """The ``preservedSegment`` diagnostic (``pruned`` is filled in when the plan is applied)."""
    walk: list[str]
    """The segment, tail -> head, when it is applied (``info["applied"]``); else empty."""
    head: str | None
    anchor: str | None
    tail: str | None
    prunes: bool
    """Whether entries before the last boundary leave the conversation: the segment is applied,
    or its boundary is no longer the last one. A live but broken segment prunes nothing."""


def plan_preserved_segment(
    chain: dict[str, dict[str, Any]], boundaries: list[str], parent: dict[str, str | None]
) -> SegmentPlan | None:
    """The relink of the last boundary carrying ``compactMetadata.preservedSegment`` (``None``
    when no boundary carries one). Only reads: the segment is checked by walking ``parent``
    from ``tailUuid``, which must reach ``headUuid``; nothing is changed."""
    seg: dict[str, Any] | None = None
    seg_boundary: str | None = None
    for b in boundaries:
        meta = chain[b].get("compactMetadata")
        candidate = meta.get("preservedSegment") if type(meta) is dict else None
        if type(candidate) is dict:
            seg, seg_boundary = candidate, b
    if seg is None or seg_boundary is None:
        return None
    live = seg_boundary == boundaries[-1]
    head, anchor, tail = (str_or_none(seg.get(k)) for k in ("headUuid", "anchorUuid", "tailUuid"))
    info: dict[str, Any] = {
        "boundary": seg_boundary,
        "headUuid": head,
        "anchorUuid": anchor,
        "tailUuid": tail,
        "live": live,
        "applied": False,
        "preserved": 0,
        "pruned": 0,
    }
    if not live:
        return SegmentPlan(info, [], head, anchor, tail, True)
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
        return SegmentPlan(info, [], head, anchor, tail, False)
    info["applied"] = True
    info["preserved"] = len(walk)
    return SegmentPlan(info, walk, head, anchor, tail, True)


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
    plan = plan_preserved_segment(chain, boundaries, parent)
    if plan is None:
        return None
    head, anchor, tail = plan.head, plan.anchor, plan.tail
    if plan.walk and head is not None:
        preserved.update(plan.walk)
        parent[head] = anchor
        for u in order:
            if u != head and parent[u] == anchor:
                parent[u] = tail
        for u in plan.walk:
            if chain[u].get("type") == ASSISTANT:
                zero_usage.add(u)
    if plan.prunes:
        pruned.update(order[: pos[boundaries[-1]]])
        pruned.difference_update(preserved)
        plan.info["pruned"] = len(pruned)
    return plan.info
