"""The chain ``--resume`` rebuilds, kept current while a transcript grows.

Two steps, as in :func:`~..reconstruct.reconstruct`: the parent walk from the leaf (the
*naive* chain), then orphan recovery (docs/claude-code.md, The walk and orphan recovery).
Both are redone only where they can change:

* the walk from a new leaf stops at the first entry of the previous walk (everything above it
  is the previous walk's), so following a conversation walks one or two entries per line;
* recovery is per ``message.id`` group: a group's inserted pieces and results depend only on
  which of its pieces and results are on the walk, so only the groups an appended entry or a
  changed part of the walk touches are redone, and the recovered chain is rebuilt from the
  first naive position whose insertions changed.

:meth:`ResumedChain.update` returns the first chain position that changed, so the
conversation built from the chain is redone from there only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..graph import Graph
from ..reconstruct import walk_up
from ..records import ClaudeTranscript


class ResumedChain:
    """The naive walk, the recovered chain and the recovery indexes of one transcript."""

    def __init__(self, t: ClaudeTranscript, g: Graph) -> None:
        self.t = t
        self.g = g
        self.naive: list[str] = []
        self.naive_at: dict[str, int] = {}
        self.missing: list[dict[str, Any]] = []
        self.cycles: list[str] = []
        self.chain: list[str] = []
        self._chain_at: list[int] = []
        """Chain position of each naive entry."""
        self.pieces: dict[str, list[str]] = {}
        """``message.id`` -> its live assistant pieces, in first-seen order."""
        self.results: dict[str, list[str]] = {}
        """uuid -> the live tool-result entries whose (effective) parent it is, first-seen order."""
        self._anchor: dict[str, str] = {}
        """``message.id`` -> its last piece on the walk, for groups that recover something."""
        self._inserted: dict[str, list[str]] = {}
        """anchor -> what is inserted after it (the group's lost pieces, then its lost results)."""
        self.recovered = 0
        self.leaf: str | None = None

    # ------------------------------------------------------------------ indexes

    def index(self, live: Iterable[str]) -> None:
        """Rebuild the recovery indexes from the live entries (``g.order`` minus pruned, in order)."""
        self.pieces = {}
        self.results = {}
        for u in live:
            self.add(u)

    def add(self, u: str) -> str | None:
        """Index a new live entry; the ``message.id`` of the group it may change (or ``None``)."""
        g = self.g
        mid = g.msg_ids.get(u)
        if mid is not None:
            self.pieces.setdefault(mid, []).append(u)
            return mid
        if u in g.results:
            p = g.parent[u]
            if p is not None:
                self.results.setdefault(p, []).append(u)
                return g.msg_ids.get(p)
        return None

    # ------------------------------------------------------------------ the walk and recovery

    def update(self, leaf: str | None, groups: set[str], rewalk: bool) -> int:
        """Follow a new leaf (or new entries under the same one); the first changed chain position.

        ``groups`` are the ``message.id`` groups new entries touched. ``rewalk`` forces a full
        walk: an entry above the previous walk changed (a parent arrived, a relink).
        """
        old = self.naive
        if rewalk or self.cycles or leaf is None or self.leaf is None:
            join = -1
            out, self.missing, self.cycles = self._walk(leaf)
        else:
            out, join = self._walk_to(leaf)
        self.leaf = leaf
        out.reverse()
        removed = old[join + 1 :]
        naive_at = self.naive_at
        if join < 0:
            self.naive = out
            self.naive_at = naive_at = {u: i for i, u in enumerate(out)}
            self._anchor, self._inserted, self.recovered = {}, {}, 0
            groups = set(groups)
            groups.update(m for u in out if (m := self._group_of(u)) is not None)
        else:
            for u in removed:
                del naive_at[u]
            del old[join + 1 :]
            for u in out:
                naive_at[u] = len(old)
                old.append(u)
            groups = set(groups)
            for u in removed:
                m = self._group_of(u)
                if m is not None:
                    groups.add(m)
            for u in out:
                m = self._group_of(u)
                if m is not None:
                    groups.add(m)
        dirty = join + 1
        for mid in groups:
            before = self._anchor.get(mid)
            anchor, lost = self._recover(mid)
            if before == anchor and (anchor is None or self._inserted.get(anchor) == lost):
                continue
            if before is not None:
                self.recovered -= len(self._inserted.pop(before))
                del self._anchor[mid]
                at = naive_at.get(before)
                if at is not None:
                    dirty = min(dirty, at)
            if anchor is not None:
                self._anchor[mid] = anchor
                self._inserted[anchor] = lost
                self.recovered += len(lost)
                dirty = min(dirty, naive_at[anchor])
        return self._rebuild(dirty)

    def _group_of(self, u: str) -> str | None:
        g = self.g
        mid = g.msg_ids.get(u)
        if mid is not None:
            return mid
        if u in g.results:
            p = g.parent[u]
            if p is not None:
                return g.msg_ids.get(p)
        return None

    def _recover(self, mid: str) -> tuple[str | None, list[str]]:
        """The group's anchor (its last piece on the walk) and what goes after it, or ``(None, [])``."""
        pieces = self.pieces.get(mid, ())
        naive_at = self.naive_at
        anchor: str | None = None
        at = -1
        lost_pieces: list[str] = []
        for p in pieces:
            i = naive_at.get(p)
            if i is None:
                lost_pieces.append(p)
            elif i > at:
                anchor, at = p, i
        if anchor is None:
            return None, []
        results = self.results
        lost_results = [r for p in pieces for r in results.get(p, ()) if r not in naive_at]
        if not lost_pieces and not lost_results:
            return None, []
        ts = self.g.ts

        def order_key(u: str) -> float:
            value = ts[u]
            return value if value == value else math.inf

        lost_pieces.sort(key=order_key)
        lost = lost_pieces + sorted(dict.fromkeys(lost_results), key=order_key)
        return anchor, lost

    def _rebuild(self, start: int) -> int:
        """Rebuild the recovered chain from naive position ``start``; the first chain position
        rebuilt."""
        chain, chain_at, naive = self.chain, self._chain_at, self.naive
        start = min(start, len(naive), len(chain_at))
        at = chain_at[start] if start < len(chain_at) else len(chain)
        del chain[at:]
        del chain_at[start:]
        inserted = self._inserted
        for i in range(start, len(naive)):
            u = naive[i]
            chain_at.append(len(chain))
            chain.append(u)
            extra = inserted.get(u)
            if extra:
                chain.extend(extra)
        return at

    def _walk_to(self, leaf: str) -> tuple[list[str], int]:
        """The walk from ``leaf`` up to the previous walk: ``(new entries leaf-first, join)``,
        ``join`` being the naive position it reached (``-1``: it did not, a new walk)."""
        naive_at = self.naive_at
        g = self.g
        out: list[str] = []
        seen: set[str] = set()
        pruned = g.pruned if leaf not in g.pruned else set()
        cur: str | None = leaf
        while cur is not None:
            at = naive_at.get(cur)
            if at is not None:
                return out, at
            if cur in seen:
                break
            seen.add(cur)
            out.append(cur)
            p = g.parent[cur]
            if p is None or p not in g.parent or p in pruned:
                break
            cur = p
        # A walk of its own (a new root, or another branch): redone whole, with its diagnostics.
        out, self.missing, self.cycles = self._walk(leaf)
        return out, -1

    def _walk(self, leaf: str | None) -> tuple[list[str], list[dict[str, Any]], list[str]]:
        """The parent walk from ``leaf`` (leaf first), exactly the cold reconstruction's."""
        return walk_up(self.t, self.g, leaf)
