"""What ``claude --resume <file>`` rebuilds: the leaf, the chain to it, and the messages.

A leaf is chosen with one of Claude Code's leaf rules, the effective parents are walked to
the root (cycles and missing parents stopped at and reported), orphaned parallel tool calls
and results are put back (docs/claude-code.md, The walk and orphan recovery), and the
messages the model sees are built from the chain (:mod:`.messages`). Every walk is a loop
with a seen-set: nothing recurses on the depth of a conversation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final

from ...errors import EntryNotFoundError
from ..pi import paused_gc
from .graph import Graph, graph_of
from .messages import Message, build_messages
from .records import ASSISTANT, USER, ClaudeTranscript, str_or_none

LEAF_RULES: Final = ("resume-file", "picker", "session", "agent")


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


Bodies = Callable[[list[str]], Mapping[str, dict[str, Any]]]
"""Reads the full records of chain entries (a follower keeps only skeletons in ``t.chain``)."""


def reconstruct(
    t: ClaudeTranscript, *, leaf: str | None = None, rule: str = "resume-file", bodies: Bodies | None = None
) -> Reconstruction:
    """Rebuild the conversation from a leaf, as ``claude --resume`` does (docs/claude-code.md).

    ``leaf`` (any chain uuid; a progress uuid stands for its bridged ancestor) overrides the
    rule; :class:`~sessiond.errors.EntryNotFoundError` when it is not in the file. ``rule`` is
    one of :data:`LEAF_RULES`. When ``resume-file`` finds no leaf because every entry is a
    sidechain entry (a sub-agent transcript), the ``agent`` rule is used and reported.
    ``bodies`` reads the records the messages are built from, when ``t.chain`` holds
    :func:`~.records.skeleton` records (a followed transcript); by default ``t.chain`` is used.
    """
    if rule not in LEAF_RULES:
        raise ValueError(f"unknown leaf rule {rule!r} (expected one of: {', '.join(LEAF_RULES)})")
    with paused_gc():  # many small containers, none garbage: the collector would rescan the records
        return _reconstruct(t, leaf, rule, bodies)


def _reconstruct(t: ClaudeTranscript, leaf: str | None, rule: str, bodies: Bodies | None) -> Reconstruction:
    g = graph_of(t)
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
    entries: Mapping[str, dict[str, Any]] = t.chain
    if bodies is not None:
        entries = bodies(chain[context_start(g, chain) :])
    messages, mdiag = build_messages(t, g, chain, entries)
    diag.update(chain_diagnostics(t, g, chosen, naive, chain, recovered, missing, cycle, mdiag))
    return Reconstruction(chosen, used, chain, messages, diag, naive)


def resumed_chain(t: ClaudeTranscript, leaf: str) -> list[str]:
    """The chain ``reconstruct(t, leaf=leaf)`` gives, without building its messages."""
    if leaf not in t.chain:
        raise EntryNotFoundError(leaf)
    g = graph_of(t)
    chosen: str | None = leaf
    if leaf in g.progress_target:
        chosen = g.progress_target[leaf]
        if chosen is not None and chosen not in g.parent:
            chosen = None
    naive, _, _ = _walk(t, g, chosen)
    return _recover_orphans(t, g, naive)[0]


def context_start(g: Graph, chain: list[str]) -> int:
    """Position of the first chain entry after the last compact boundary on it (0: none)."""
    boundaries = set(g.boundaries)
    for i in range(len(chain) - 1, -1, -1):
        if chain[i] in boundaries:
            return i + 1
    return 0


def chain_diagnostics(
    t: ClaudeTranscript,
    g: Graph,
    leaf: str | None,
    naive: list[str],
    chain: list[str],
    recovered: int,
    missing: list[dict[str, Any]],
    cycles: list[str],
    messages: dict[str, Any],
) -> dict[str, Any]:
    """The reconstruction's diagnostics after the leaf rule's (``messages``: what building the
    messages reported). A pass over the whole graph: for reports, not for following."""
    diag: dict[str, Any] = {
        "naiveChainLength": len(naive),
        "chainLength": len(chain),
        "orphansRecovered": recovered,
        "missingParents": missing,
        "cycles": cycles,
        "unpairedBefore": _unpaired(g, naive),
        "unpairedAfter": _unpaired(g, chain),
    }
    diag.update(messages)
    lp = t.titles.last_prompt_leaf
    on_chain = set(chain)
    diag["lastPromptLeaf"] = lp
    diag["lastPromptLeafAgrees"] = None if lp is None else lp == leaf
    diag["lastPromptLeafOnChain"] = None if lp is None else lp in on_chain
    diag["compactBoundaries"] = _boundary_report(t, g, chain)
    diag["preservedSegment"] = g.relink
    diag["snipRemoved"] = len(g.snipped)
    diag["sidechainEntriesExcluded"] = sum(
        1 for u in g.order if u not in on_chain and t.chain[u].get("isSidechain") is True
    )
    diag["danglingParentEntries"] = sum(
        1 for u in g.order if (p := g.parent[u]) is not None and p not in g.parent
    )
    return diag


def _select_leaf(t: ClaudeTranscript, g: Graph, rule: str) -> tuple[str | None, str, int, bool]:
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
            found, _ = walk_to_message(u, chain, g.parent, live_set, nearest)
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


def _newest(g: Graph, cands: list[str]) -> tuple[str | None, bool]:
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


def walk_to_message(
    start: str,
    chain: Mapping[str, Mapping[str, Any]],
    parent: Mapping[str, str | None],
    live: AbstractSet[str],
    nearest: dict[str, str | None],
) -> tuple[str | None, str | None]:
    """From ``start`` up the parents to the nearest user/assistant entry among ``live``: that entry
    (None when the walk leaves ``live``, loops, or meets a memo of None) and where the walk
    stopped. Every entry passed on the way is memoised in ``nearest``, so a later walk through
    them stops at once; shared by the cold leaf rule and the live one."""
    path: list[str] = []
    seen: set[str] = set()
    cur: str | None = start
    found: str | None = None
    while cur is not None and cur in live and cur not in seen:
        if cur in nearest:
            found = nearest[cur]
            break
        if chain[cur].get("type") in (USER, ASSISTANT):
            found = cur
            break
        seen.add(cur)
        path.append(cur)
        cur = parent[cur]
    for p in path:
        nearest[p] = found
    return found, cur


def _walk(
    t: ClaudeTranscript, g: Graph, leaf: str | None
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """Parent walk from ``leaf``, reversed to root -> leaf."""
    out, missing, cycles = walk_up(t, g, leaf)
    out.reverse()
    return out, missing, cycles


def walk_up(
    t: ClaudeTranscript, g: Graph, leaf: str | None
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """Parent walk from ``leaf`` (a loop with a seen-set), leaf first; with the missing parents
    and the cycles it ran into. Shared with the live chain, which keeps it leaf first."""
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
    return out, missing, cycles


def _missing_parent(t: ClaudeTranscript, g: Graph, child: str, parent: str) -> dict[str, Any]:
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


def _recover_orphans(t: ClaudeTranscript, g: Graph, chain: list[str]) -> tuple[list[str], int]:
    """Put back the parallel tool-call pieces and results a parent walk skips (docs/claude-code.md).

    For every ``message.id`` with a piece on the chain: its pieces that are not on the chain,
    then the tool-result entries whose parent is any of its pieces and that are not on the
    chain, go right after the group's last piece on the chain. Each list is sorted by
    timestamp with a stable sort over the order Claude Code collects it in: pieces in file
    order; results piece by piece (the pieces in file order), each piece's results in file
    order. So results written in the same millisecond keep the order of the pieces they
    answer, not their own file order. Works for both eras: 2.1.x parents results to the
    piece holding the ``tool_use`` (``sourceToolAssistantUUID``); older linear chains have
    nothing to recover except copies of a retried message with the same id.
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
    # Both indexes are filled in first-seen order (Claude Code's Map order); the sorts below
    # are stable, so a timestamp tie keeps the collection order, as in Claude Code.
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

    def order_key(u: str) -> float:
        ts = g.ts[u]
        return ts if ts == ts else math.inf

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


def _unpaired(g: Graph, chain: list[str]) -> int:
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


def _boundary_report(t: ClaudeTranscript, g: Graph, chain: list[str]) -> list[dict[str, Any]]:
    on_chain = set(chain)
    out: list[dict[str, Any]] = []
    for b in g.boundaries:
        e = t.chain[b]
        meta = e.get("compactMetadata")
        meta = meta if type(meta) is dict else {}
        logical = str_or_none(e.get("logicalParentUuid"))
        report: dict[str, Any] = {
            "uuid": b,
            "trigger": meta.get("trigger"),
            "preTokens": meta.get("preTokens"),
            "logicalParentUuid": logical,
            "logicalParentPresent": logical is not None and logical in t.chain,
            "preservedSegment": type(meta.get("preservedSegment")) is dict,
            "onChain": b in on_chain,
        }
        kept = meta.get("preservedMessages")
        uuids = kept.get("uuids") if type(kept) is dict else None
        if type(uuids) is list:
            # 2.1.3xx lists the kept messages; the relink above already keeps them (the segment
            # head..tail), so this is reported for comparison, not used.
            report["preservedMessages"] = len(uuids)
            report["preservedMessagesInFile"] = sum(1 for u in uuids if type(u) is str and u in t.chain)
        out.append(report)
    return out
