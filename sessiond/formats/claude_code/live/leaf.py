"""Claude Code's leaf rules, kept current while a transcript grows.

The ``resume-file`` rule (docs/claude-code.md, Leaf rules) takes, from every childless entry,
the nearest user/assistant entry at or above it, and picks the newest of those that is not a
sidechain entry. Rebuilt from scratch that is a pass over every entry; here each entry's
*nearest* is computed once when it arrives (from its parent's), the candidates are counted
(several childless entries can lead to one candidate), and the newest candidate is the top of
a heap with lazy deletion. An appended entry costs a few dictionary operations and a heap
push; asking for the leaf pops the candidates that stopped being ones.

The ``agent`` rule (a sub-agent transcript: every entry a sidechain entry) is kept the same
way over the childless entries themselves.

Entries must arrive parent first. A parent that arrives after its children (rare: the
follower is told, see :meth:`LeafIndex.parent_arrived`) and structural changes (pruning by a
compaction boundary) are handled by the caller rebuilding over the live entries.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Any

from ..graph import Graph
from ..reconstruct import walk_to_message
from ..records import ASSISTANT, PROGRESS, USER


class LeafIndex:
    """The candidates of the ``resume-file`` and ``agent`` rules over the live entries of a graph.

    Live entries are those of ``g.order`` not in ``g.pruned``; ``chain`` gives an entry's type,
    sidechain flag and ``agentId`` (records or skeletons). ``agent`` is the transcript's
    ``agentId`` (``None``: any entry qualifies for the agent rule).
    """

    def __init__(self, g: Graph, chain: dict[str, dict[str, Any]], agent: str | None) -> None:
        self.g = g
        self.chain = chain
        self.agent = agent
        self.nearest: dict[str, str | None] = {}
        """Live entry -> its nearest user/assistant entry at or above it (``None``: none)."""
        self.children: dict[str, int] = {}
        """Any uuid (live, pruned or missing) -> its number of live children."""
        self.count: dict[str, int] = {}
        """Candidate -> how many childless live entries lead to it."""
        self._main: list[tuple[float, int, str]] = []
        self._main_nan: list[tuple[int, str]] = []
        self._agent: list[tuple[float, int, str]] = []
        self._agent_nan: list[tuple[int, str]] = []
        self.main_candidates = 0
        """Candidates that are not sidechain entries (``leafCandidates`` of ``resume-file``)."""
        self.agent_candidates = 0
        self.message_entries = 0
        self.main_entries = 0
        """Message entries (all, pruned included) and those that are not sidechain entries:
        :attr:`~.records.ClaudeTranscript.is_sidechain_file` without a pass over the chain."""

    # ------------------------------------------------------------------ building

    def rebuild(self, live: Iterable[str], every: Iterable[str] | None = None) -> None:
        """Start over from the live entries (``g.order`` minus pruned, in order); with ``every``
        (all of ``g.order``), count the message entries again too."""
        self.nearest = {}
        self.children = {}
        self.count = {}
        self._main, self._main_nan, self._agent, self._agent_nan = [], [], [], []
        self.main_candidates = self.agent_candidates = 0
        if every is not None:
            self.message_entries = self.main_entries = 0
            for u in every:
                self.note_entry(u)
        g, chain = self.g, self.chain
        order = list(live)
        live_set = set(order)
        nearest = self.nearest
        for u in order:
            if u in nearest:
                continue
            found, cur = walk_to_message(u, chain, g.parent, live_set, nearest)
            if cur is not None and found == cur and cur not in nearest:
                nearest[cur] = cur
        children = self.children
        for u in order:
            above = g.parent[u]
            if above is not None:
                children[above] = children.get(above, 0) + 1
        for u in order:
            if u not in children:
                self._childless(u, +1)

    def note_entry(self, u: str) -> None:
        """Count a new message entry of the file (pruned or not) for the sidechain-file test."""
        e = self.chain[u]
        if e.get("type") == PROGRESS:
            return
        self.message_entries += 1
        if e.get("isSidechain") is not True:
            self.main_entries += 1

    def add(self, u: str) -> None:
        """A new live entry (no live children yet, its parent arrived before it, if ever)."""
        self.note_entry(u)
        g = self.g
        parent = g.parent[u]
        if self.chain[u].get("type") in (USER, ASSISTANT):
            self.nearest[u] = u
        else:
            self.nearest[u] = self.nearest.get(parent) if parent is not None else None
        if parent is not None:
            had = self.children.get(parent, 0)
            self.children[parent] = had + 1
            if had == 0 and parent in self.nearest:
                self._childless(parent, -1)
        if u not in self.children:
            self._childless(u, +1)

    def parent_arrived(self, x: str, children: list[str]) -> None:
        """``x`` (just added) is the parent of live entries that arrived before it: their walks
        now go on through ``x``. Entries that are not user/assistant entries take ``x``'s nearest,
        and so do their descendants that reached them."""
        near = self.nearest.get(x)
        if near is None:
            return
        chain, g = self.chain, self.g
        stack = [c for c in children if c in self.nearest and chain[c].get("type") not in (USER, ASSISTANT)]
        if not stack:
            return
        below: dict[str, list[str]] = {}
        for u in self.nearest:
            p = g.parent[u]
            if p is not None:
                below.setdefault(p, []).append(u)
        seen: set[str] = set()
        while stack:
            c = stack.pop()
            if c in seen or self.nearest.get(c) is not None:
                continue
            seen.add(c)
            childless = c not in self.children
            if childless:
                self._childless(c, -1)
            self.nearest[c] = near
            if childless:
                self._childless(c, +1)
            stack.extend(k for k in below.get(c, ()) if chain[k].get("type") not in (USER, ASSISTANT))

    # ------------------------------------------------------------------ candidates

    def _childless(self, u: str, delta: int) -> None:
        """``u`` became childless (+1) or got its first live child (-1)."""
        near = self.nearest.get(u)
        if near is not None:
            n = self.count.get(near, 0) + delta
            if n:
                self.count[near] = n
            else:
                del self.count[near]
            if n == 1 and delta > 0:
                if self.chain[near].get("isSidechain") is not True:
                    self.main_candidates += 1
                    _push(self._main, self._main_nan, self.g, near)
            elif n == 0 and self.chain[near].get("isSidechain") is not True:
                self.main_candidates -= 1
        agent = self.agent
        if agent is None or self.chain[u].get("agentId") == agent:
            self.agent_candidates += delta
            if delta > 0:
                _push(self._agent, self._agent_nan, self.g, u)

    def resume_leaf(self, sidechain_file: bool) -> tuple[str | None, str, int, bool]:
        """``(leaf, rule used, number of candidates, timestamp fallback)`` as
        :func:`~..reconstruct.reconstruct`'s ``resume-file`` rule gives them."""
        if self.main_candidates or not sidechain_file:
            leaf, fallback = self._top(self._main, self._main_nan, self._is_main_candidate)
            return leaf, "resume-file", self.main_candidates, fallback
        leaf, fallback = self._top(self._agent, self._agent_nan, self._is_agent_candidate)
        return leaf, "agent", self.agent_candidates, fallback

    def _is_main_candidate(self, u: str) -> bool:
        return u in self.count

    def _is_agent_candidate(self, u: str) -> bool:
        return u in self.nearest and u not in self.children

    def _top(
        self, valid: list[tuple[float, int, str]], nan: list[tuple[int, str]], alive: Any
    ) -> tuple[str | None, bool]:
        """Newest candidate (ties: first in file); when none has a valid timestamp, the last."""
        while valid and not alive(valid[0][2]):
            heapq.heappop(valid)
        if valid:
            return valid[0][2], False
        while nan and not alive(nan[0][1]):
            heapq.heappop(nan)
        if nan:
            return nan[0][1], True
        return None, False

    def compact(self) -> None:
        """Drop the heaps' stale items once they far outnumber the candidates (amortised: each
        item is pushed once per time its entry becomes a candidate)."""
        limit = 4 * (len(self.count) + self.agent_candidates) + 256
        heaps: list[tuple[list[Any], Any]] = [
            (self._main, self._is_main_candidate),
            (self._main_nan, self._is_main_candidate),
            (self._agent, self._is_agent_candidate),
            (self._agent_nan, self._is_agent_candidate),
        ]
        for heap, alive in heaps:
            if len(heap) > limit:
                kept = {item[-1]: item for item in heap if alive(item[-1])}
                heap[:] = list(kept.values())
                heapq.heapify(heap)


def _push(valid: list[tuple[float, int, str]], nan: list[tuple[int, str]], g: Graph, u: str) -> None:
    ts = g.ts[u]
    if math.isnan(ts):
        heapq.heappush(nan, (-g.pos[u], u))
    else:
        heapq.heappush(valid, (-ts, g.pos[u], u))
