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
from typing import Any, Final

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
    moves: list[tuple[str, str | None]] = field(default_factory=list)
    """The parents the ``preservedSegment`` relinks changed, in order: ``(uuid, parent before)``
    (a follower undoes them when a later plain boundary ends the relinks)."""


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
    moves: list[tuple[str, str | None]] = []
    relink = _apply_preserved_segment(
        chain, order, pos, parent, boundaries, pruned, preserved, zero_usage, moves
    )
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
    graph.moves = moves
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


def segment_of(entry: dict[str, Any]) -> dict[str, Any] | None:
    """A boundary's ``compactMetadata.preservedSegment``, if it has one."""
    meta = entry.get("compactMetadata")
    seg = meta.get("preservedSegment") if type(meta) is dict else None
    return seg if type(seg) is dict else None


def chained_segment_boundaries(chain: dict[str, dict[str, Any]], boundaries: list[str]) -> list[str]:
    """The boundaries whose relinks come before the last one's: the run of boundaries carrying
    a ``preservedSegment`` that ends with the last boundary, without that last one, in file order.

    Claude Code 2.1.3xx compacts again on top of a compaction (auto-compaction after "prompt is
    too long", twice in a turn) and keeps a segment each time; the later segment runs through
    the earlier one's relink (its tail leads to its head only with the earlier relink made), so
    the relinks are made in order. A plain boundary ends the run: what came before it is gone.
    """
    run: list[str] = []
    for b in reversed(boundaries):
        if segment_of(chain[b]) is None:
            break
        run.append(b)
    run.reverse()
    return run[:-1]


def plan_preserved_segment(
    chain: dict[str, dict[str, Any]], boundaries: list[str], parent: dict[str, str | None]
) -> SegmentPlan | None:
    """The relink of the last boundary carrying ``compactMetadata.preservedSegment`` (``None``
    when no boundary carries one). Only reads: the segment is checked by walking ``parent``
    from ``tailUuid``, which must reach ``headUuid``; nothing is changed."""
    seg: dict[str, Any] | None = None
    seg_boundary: str | None = None
    for b in boundaries:
        candidate = segment_of(chain[b])
        if candidate is not None:
            seg, seg_boundary = candidate, b
    if seg is None or seg_boundary is None:
        return None
    return plan_segment(seg, seg_boundary, seg_boundary == boundaries[-1], parent)


def plan_segment(
    seg: dict[str, Any], seg_boundary: str, live: bool, parent: dict[str, str | None]
) -> SegmentPlan:
    """The relink one boundary's segment asks for, checked against ``parent`` as it is now."""
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


CHAINED_KEYS: Final = ("boundary", "applied", "preserved", "reason")
"""What the diagnostics keep of an earlier relink of a chain (``preservedSegment.chained``)."""


def chained_report(plan: SegmentPlan) -> dict[str, Any]:
    """An earlier relink of a chain as ``preservedSegment.chained`` reports it."""
    return {k: plan.info[k] for k in CHAINED_KEYS if k in plan.info}


def relink(
    plan: SegmentPlan, order: list[str], parent: dict[str, str | None], moves: list[tuple[str, str | None]]
) -> None:
    """Make a checked segment's relink: ``head`` hangs off the anchor, the anchor's other
    children off ``tail``. Each changed parent is recorded in ``moves`` (before the change)."""
    head, anchor, tail = plan.head, plan.anchor, plan.tail
    if not plan.walk or head is None:
        return
    moves.append((head, parent[head]))
    parent[head] = anchor
    for u in order:
        if u != head and parent[u] == anchor:
            moves.append((u, anchor))
            parent[u] = tail


def _apply_preserved_segment(
    chain: dict[str, dict[str, Any]],
    order: list[str],
    pos: dict[str, int],
    parent: dict[str, str | None],
    boundaries: list[str],
    pruned: set[str],
    preserved: set[str],
    zero_usage: set[str],
    moves: list[tuple[str, str | None]],
) -> dict[str, Any] | None:
    """Claude Code's in-memory compaction relinks (docs/claude-code.md, The graph), applied to ``parent``.

    The last boundary carrying ``compactMetadata.preservedSegment`` counts, and only while it is
    the last boundary of all (a later plain boundary compacted the segment away); the
    boundaries with a segment right before it (:func:`chained_segment_boundaries`) have their
    relinks made first, in file order, each checked the same way. A segment is checked first:
    walking parents from ``tailUuid`` must reach ``headUuid``. Then ``head`` hangs off
    ``anchorUuid``, the anchor's other children off ``tail``, the last segment's assistants lose
    their usage, and every entry before the last boundary that is not in the last segment is
    pruned (it stays in the tree, but is no leaf candidate and ends walks). ``moves`` records
    every parent changed.
    """
    if not boundaries:
        return None
    chained: list[dict[str, Any]] = []
    for b in chained_segment_boundaries(chain, boundaries):
        seg = segment_of(chain[b])
        assert seg is not None
        earlier = plan_segment(seg, b, True, parent)
        relink(earlier, order, parent, moves)
        chained.append(chained_report(earlier))
    plan = plan_preserved_segment(chain, boundaries, parent)
    if plan is None:
        return None
    if chained:
        plan.info["chained"] = chained
    if plan.walk and plan.head is not None:
        preserved.update(plan.walk)
        relink(plan, order, parent, moves)
        for u in plan.walk:
            if chain[u].get("type") == ASSISTANT:
                zero_usage.add(u)
    if plan.prunes:
        pruned.update(order[: pos[boundaries[-1]]])
        pruned.difference_update(preserved)
        plan.info["pruned"] = len(pruned)
    return plan.info
