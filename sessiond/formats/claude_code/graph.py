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
    head, anchor, tail = (str_or_none(seg.get(k)) for k in ("headUuid", "anchorUuid", "tailUuid"))
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
