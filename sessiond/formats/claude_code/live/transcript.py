"""A transcript read once and then followed line by line, equal to a cold read after every line.

:class:`LiveTranscript` holds what :func:`~..reconstruct.reconstruct` computes — the graph,
the leaf, the resumed chain, the messages — and grows it with each appended line at a cost
that does not depend on the size of the file:

* the graph grows by the new entries (progress bridged through the targets already known,
  boundaries rooted, a live ``preservedSegment`` relink applied to a child of its anchor);
* the leaf rule keeps its candidates (:mod:`.leaf`);
* the resumed chain is walked from the new leaf up to the previous walk, and only the
  ``message.id`` groups the new entries touch are recovered again (:mod:`.chain`);
* the messages are redone from the first group the chain changed in (:mod:`.conversation`).

Some changes reach further than the tail:

* a compact boundary carrying a ``preservedSegment`` (or a plain one after such a boundary)
  prunes the history before it; the relinks are redone on the segment and the leaf and
  recovery indexes are rebuilt over what stays live, which is the segment and the new
  boundary: still a cost of the segment, not of the file;
* an entry whose parent arrives after it (the follower is told by its waiting children);

and a few cannot be followed at all, because they change entries anywhere in the file: a line
repeating an entry's uuid (the last line wins), a snip boundary removing entries already read,
a progress entry arriving after entries bridged through it, a tool result read before the call
that names it, an entry that is its own parent, or the first lines that set the session's
identity (its id, cwd or agent id). For those :meth:`LiveTranscript.extend` asks the caller to
read the file again (``Growth.reload``); they do not occur in the transcripts Claude Code writes
as far as the shipped samples show.

Only skeletons of the records stay in memory (:func:`~..records.skeleton`): the messages are
built from records read back through a ``fetch`` callback, and kept (:class:`Conversation`)
until the caller drops them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...lines import OversizedLine, span_of
from ...pi import paused_gc
from ..graph import (
    CHAINED_KEYS,
    Graph,
    graph_of,
    index_entry,
    is_compact_boundary,
    plan_preserved_segment,
    raw_parent,
    segment_of,
)
from ..messages import EMPTY_USAGE, Message, Usage4, max_usage, usage_tuple
from ..parse import TranscriptIndexer, parse_records
from ..reconstruct import Reconstruction, chain_diagnostics
from ..records import (
    ASSISTANT,
    CHAIN_TYPES,
    PROGRESS,
    SNIP_BOUNDARY,
    SYSTEM,
    ClaudeTranscript,
    message_id,
    skeleton,
    str_or_none,
)
from ..to_pi import pi_entry
from .chain import ResumedChain
from .conversation import Conversation, Fetch
from .leaf import LeafIndex

__all__ = ["Growth", "LiveTranscript"]


@dataclass(slots=True)
class Growth:
    """What :meth:`LiveTranscript.extend` changed."""

    new: list[tuple[str, int, int, dict[str, Any]]] = field(default_factory=list)
    """New message entries in file order: ``(uuid, offset, length, record)``."""
    usage_moved: set[str] = field(default_factory=set)
    """Assistant entries that carried their API message's usage and no longer do (a later piece
    of the message now carries it): their Pi entry has zero usage."""
    refreshed: set[str] = field(default_factory=set)
    """Entries whose Pi entry changed otherwise (usage zeroed or restored by a relink)."""
    reparented: dict[str, str | None] = field(default_factory=dict)
    """Entries whose parent changed (relinks), with the new parent."""
    reload: str | None = None
    """Why the transcript must be read again (a change this reader does not follow)."""


class LiveTranscript:
    """A Claude Code transcript's reconstruction, kept current as lines are appended."""

    def __init__(self, indexer: TranscriptIndexer) -> None:
        self._indexer = indexer
        self.t: ClaudeTranscript = indexer.transcript
        self.g: Graph = graph_of(self.t)
        t, g = self.t, self.g
        self.leaf_index = LeafIndex(g, t.chain, t.agent_id)
        self.resumed = ResumedChain(t, g)
        self.conversation: Conversation | None = None
        self.leaf: str | None = None
        self.rule = "resume-file"
        self.candidates = 0
        self.fallback = False
        self._carrier: dict[str, str] = {}
        """API message (``message.id``, or the uuid of an assistant without one) -> its last piece."""
        self._group_usage: dict[str, Usage4] = {}
        self._waiting: dict[str, list[str]] = {}
        """A uuid not in the file yet -> entries whose parent (or bridge target) it is."""
        self._unnamed: set[str] = set()
        """Tool ids a result answered before any call named them."""
        self._snip_listed: set[str] = set()
        self._moves: list[tuple[str, str | None]] = []
        """Parents a live relink changed, ``(entry, parent before)``, to undo it."""
        self._seg_boundary: str | None = None
        self._summary_leaves: set[str] = set()
        self._context_start = 0
        self._boundaries_on_chain: list[int] = []
        self._boundary_set: set[str] = set()
        self._rewalk = False
        self.first_timestamp: Any = ""
        """``timestamp`` of the file's first chain entry (the session header's)."""

    # ------------------------------------------------------------------ reading

    @classmethod
    def read(
        cls, data: bytes | Iterable[bytes], source: str
    ) -> tuple[LiveTranscript, list[tuple[str, int, int, dict[str, Any]]]]:
        """Read a transcript's complete lines; also every message entry ``(uuid, offset, length,
        record)`` in tree order (the last line of a uuid), for the caller to index and drop.

        ``data`` is the file's bytes, or its bytes in consecutive pieces that each end with a
        newline (a reader that does not hold the whole file while its records are parsed)."""
        indexer = TranscriptIndexer(source)
        t = indexer.transcript
        spans: dict[str, tuple[int, int]] = {}
        pieces = (data,) if isinstance(data, bytes | bytearray) else data
        end = 0
        with paused_gc():
            for piece in pieces:
                oversized = type(piece) is OversizedLine
                for _, offset, length, rec in parse_records(piece, t.diagnostics, end):
                    uuid = indexer.add(rec)
                    if uuid is not None:
                        spans[uuid] = (offset, span_of(piece) - 1 if oversized else length)
                if oversized:
                    t.diagnostics.oversized_lines += 1
                end += span_of(piece)
            indexer.finish()
            t.end = end
            g = graph_of(t)  # on the full records
            entries = [(u, *spans[u], t.chain[u]) for u in g.order]
            live = cls(indexer)
            live.first_timestamp = next(iter(t.chain.values()), {}).get("timestamp", "")
            live._seed(dict(t.chain))
            for u, rec in list(t.chain.items()):
                t.chain[u] = skeleton(rec)
            live._start()
        return live, entries

    def _seed(self, records: Mapping[str, dict[str, Any]]) -> None:
        """What the graph does not keep, from the full records: each API message's usage and
        the piece carrying it, the parents a live relink changed, who waits for which parent."""
        g = self.g
        self._boundary_set = set(g.boundaries)
        for b in g.boundaries:
            meta = records[b].get("compactMetadata")
            if type(meta) is dict and type(meta.get("preservedSegment")) is dict:
                self._seg_boundary = b
        for u, target in g.progress_target.items():
            if target is not None and target not in records:
                self._waiting.setdefault(target, []).append(u)
        self._moves = list(g.moves)  # which parents the relinks changed, to undo them later
        for u in g.order:
            e = records[u]
            p = g.parent[u]
            if p is not None and p not in records:
                self._waiting.setdefault(p, []).append(u)
            if e.get("type") == SYSTEM and e.get("subtype") == SNIP_BOUNDARY:
                meta = e.get("snipMetadata")
                ids = meta.get("removedUuids") if type(meta) is dict else None
                if type(ids) is list:
                    self._snip_listed.update(i for i in ids if type(i) is str)
            if e.get("type") == ASSISTANT:
                key = g.msg_ids.get(u) or u
                usage = EMPTY_USAGE if u in g.zero_usage else usage_tuple(e.get("message"))
                before = self._group_usage.get(key)
                self._group_usage[key] = usage if before is None else max_usage(before, usage)
                self._carrier[key] = u
            for tid in g.results.get(u, ()):
                if tid not in g.tool_names:
                    self._unnamed.add(tid)
        self._summary_leaves = self._indexer.summary_leaves()

    def _start(self) -> None:
        """The leaf and the chain from scratch (the messages are built when first asked for)."""
        g = self.g
        live = [u for u in g.order if u not in g.pruned]
        self.leaf_index.agent = self.t.agent_id
        self.leaf_index.rebuild(live, g.order)
        self.resumed.index(live)
        self.conversation = None
        self._find_leaf()
        dirty = self.resumed.update(self.leaf, set(), True)
        self._track_boundaries(dirty)

    # ------------------------------------------------------------------ the Pi view of entries

    def pi_entry(self, record: dict[str, Any]) -> dict[str, Any]:
        """A chain record as the Pi v3 entry :func:`~..to_pi.to_pi_entries` gives for it now."""
        g = self.g
        u = record["uuid"]
        usage: Usage4 | None = None
        if record.get("type") == ASSISTANT:
            key = message_id(record) or u
            usage = self._group_usage.get(key, EMPTY_USAGE) if self._carrier.get(key) == u else EMPTY_USAGE
        return pi_entry(u, record, g.parent.get(u), usage, g.tool_names)

    # ------------------------------------------------------------------ growing

    def extend(self, data: bytes | Iterable[bytes], fetch: Fetch) -> Growth:
        """Take in complete lines appended to the file (``data`` starts at :attr:`t.end`): its
        bytes, or consecutive pieces of them that each end with a newline, with
        :class:`~sessiond.formats.lines.OversizedLine` placeholders among them."""
        t = self.t
        growth = Growth()
        base = t.end
        pieces = (data,) if isinstance(data, bytes | bytearray) else data
        groups: set[str] = set()
        self._rewalk = False
        fresh: dict[str, dict[str, Any]] = {}

        def fetch_fresh(uuids: list[str]) -> Mapping[str, dict[str, Any]]:
            """Records of this batch from memory (the caller has not indexed them yet), others read."""
            found = {u: fresh[u] for u in uuids if u in fresh}
            rest = [u for u in uuids if u not in fresh]
            if rest:
                found.update(fetch(rest))
            return found

        with paused_gc():
            for piece in pieces:
                base = self._extend_piece(piece, base, growth, groups, fresh, fetch_fresh)
            t.end = base
            self._indexer.finish()
            if growth.reload is not None:
                return growth
            self._find_leaf()
            dirty = self.resumed.update(self.leaf, groups, self._rewalk)
            self._track_boundaries(dirty)
            conversation = self.conversation  # the memory budget may drop it meanwhile
            if conversation is not None:
                conversation.forget(growth.refreshed)
                conversation.sync(self.resumed.chain, self._context_start, dirty, fetch_fresh, fresh)
            self.leaf_index.compact()
        return growth

    def _extend_piece(
        self,
        piece: bytes,
        base: int,
        growth: Growth,
        groups: set[str],
        fresh: dict[str, dict[str, Any]],
        fetch_fresh: Fetch,
    ) -> int:
        """One piece of :meth:`extend`, at file offset ``base``; the offset after it."""
        t = self.t
        oversized = type(piece) is OversizedLine
        if oversized:
            t.diagnostics.oversized_lines += 1
        for _, offset, parsed_length, rec in parse_records(piece, t.diagnostics, base):
            # a placeholder's span is the real line's, not its own
            length = span_of(piece) - 1 if oversized else parsed_length
            kind = rec.get("type")
            uuid = rec.get("uuid")
            chain_entry = kind in CHAIN_TYPES and type(uuid) is str
            if chain_entry and growth.reload is None:
                growth.reload = self._refused(uuid, kind)
            had_chain = bool(t.chain)
            before = (t.session_id, t.cwd, t.agent_id)
            self._indexer.add(rec)
            if growth.reload is None and before != (t.session_id, t.cwd, t.agent_id) and had_chain:
                growth.reload = "the session's identity (id, cwd or agent) changed"
            if growth.reload is None and chain_entry and not had_chain:
                growth.reload = "the first entry of the session arrived"
            if not chain_entry or growth.reload is not None:
                continue
            t.chain[uuid] = skeleton(rec)
            if kind == PROGRESS:
                self._grow_progress(uuid, rec)
                continue
            mid = self._grow(uuid, rec, growth, fetch_fresh)
            if growth.reload is not None:
                continue
            if mid is not None:
                groups.add(mid)
            growth.new.append((uuid, offset, length, rec))
            fresh[uuid] = rec
        return base + span_of(piece)

    def _refused(self, uuid: str, kind: Any) -> str | None:
        """Why an arriving chain entry cannot be followed (``None``: it can)."""
        if uuid in self.t.chain:
            return "a line repeats an entry's uuid (the last line wins)"
        if uuid in self._snip_listed:
            return "an entry a snip boundary removed arrived"
        if uuid in self._waiting and kind == PROGRESS:
            return "a progress entry arrived after entries bridged through it"
        return None

    def _grow_progress(self, u: str, rec: dict[str, Any]) -> None:
        g = self.g
        raw = str_or_none(rec.get("parentUuid"))
        target = None if raw is None or raw == u else g.progress_target.get(raw, raw)
        g.progress_target[u] = target
        if target is not None and target not in self.t.chain:
            self._waiting.setdefault(target, []).append(u)

    def _grow(self, u: str, rec: dict[str, Any], growth: Growth, fetch: Fetch) -> str | None:
        """Add a message entry to the graph and the leaf and recovery indexes; its group."""
        t, g = self.t, self.g
        parent = raw_parent(rec, g.progress_target)
        if parent == u:
            growth.reload = "an entry is its own parent"
            return None
        boundary = is_compact_boundary(rec)
        if boundary:
            parent = None
        relink = g.relink
        if (
            relink is not None
            and relink.get("live")
            and not relink.get("applied")
            and u in (relink.get("headUuid"), relink.get("tailUuid"))
        ):
            # A fork's file writes the boundary before the segment it keeps: the check that
            # failed when the boundary arrived would pass now.
            growth.reload = "a preservedSegment's entries arrived after its boundary"
            return None
        if (
            parent is not None
            and relink is not None
            and relink.get("applied")
            and parent == relink["anchorUuid"]
        ):
            self._moves.append((u, parent))
            parent = relink["tailUuid"]
        if parent is not None and parent in g.snipped:
            seen: set[str] = set()
            while parent is not None and parent in g.snipped and parent not in seen:
                seen.add(parent)
                parent = g.parent.get(parent)
            if parent in g.snipped:
                parent = None
        if rec.get("type") == SYSTEM and rec.get("subtype") == "snip_boundary":
            meta = rec.get("snipMetadata")
            ids = meta.get("removedUuids") if type(meta) is dict else None
            listed = {i for i in ids if type(i) is str} if type(ids) is list else set()
            if any(i in g.parent for i in listed):
                growth.reload = "a snip boundary removed entries already read"
                return None
            self._snip_listed |= listed
        message = rec.get("message")
        if rec.get("type") == ASSISTANT and type(message) is dict and type(message.get("content")) is list:
            for block in message["content"]:
                if (
                    type(block) is dict
                    and block.get("type") == "tool_use"
                    and block.get("id") in self._unnamed
                ):
                    growth.reload = "a tool call arrived after a result for it"
                    return None
        g.pos[u] = len(g.order)
        g.order.append(u)
        g.parent[u] = parent
        index_entry(u, rec, g.ts, g.tool_names, g.msg_ids, g.uses, g.results)
        for tid in g.results.get(u, ()):
            if tid not in g.tool_names:
                self._unnamed.add(tid)
        if parent is not None and parent not in t.chain:
            self._waiting.setdefault(parent, []).append(u)
        if rec.get("type") == ASSISTANT:
            key = g.msg_ids.get(u) or u
            before = self._carrier.get(key)
            if before is not None:
                growth.usage_moved.add(before)
            usage = usage_tuple(message)
            known = self._group_usage.get(key)
            self._group_usage[key] = usage if known is None else max_usage(known, usage)
            self._carrier[key] = u
        self.leaf_index.add(u)
        group = self.resumed.add(u)
        waiting = self._waiting.pop(u, None)
        if waiting:
            children = [c for c in waiting if g.parent.get(c) == u]
            self.leaf_index.parent_arrived(u, children)
            naive = self.resumed.naive
            if naive and g.parent.get(naive[0]) == u:
                self._rewalk = True
        if u in self._summary_leaves:
            self._summary_leaves.discard(u)
        if boundary:
            g.boundaries.append(u)
            self._boundary_set.add(u)
            self._boundary(u, growth, fetch)
        return group

    def _boundary(self, b: str, growth: Growth, fetch: Fetch) -> None:
        """A new compact boundary: with a ``preservedSegment`` (or after one) it prunes."""
        t, g = self.t, self.g
        previous = g.relink
        chained_on = (
            segment_of(t.chain[b]) is not None
            and len(g.boundaries) > 1
            and self._seg_boundary == g.boundaries[-2]
        )
        if segment_of(t.chain[b]) is not None:
            self._seg_boundary = b
        if self._seg_boundary is None:
            return  # a plain boundary: a new root, the context starts after it
        pruning_before = bool(g.pruned - g.snipped)
        if not chained_on:
            for u, before in reversed(self._moves):  # the relinks of earlier boundaries end
                g.parent[u] = before
                growth.reparented[u] = before
            self._moves = []
        plan = plan_preserved_segment(t.chain, g.boundaries, g.parent)
        assert plan is not None
        if chained_on and previous is not None:
            # The relink before this one stays (graph.chained_segment_boundaries), as in a cold read.
            earlier = previous.get("chained", [])
            plan.info["chained"] = [*earlier, {k: v for k, v in previous.items() if k in CHAINED_KEYS}]
        if not plan.prunes:
            if pruning_before:
                growth.reload = "a broken preservedSegment ended the pruning of the history"
                return
            g.relink = plan.info
            return
        zero_before = g.zero_usage
        preserved = set(plan.walk)
        zero: set[str] = set()
        head, anchor, tail = plan.head, plan.anchor, plan.tail
        if plan.walk and head is not None:
            self._moves.append((head, g.parent[head]))
            g.parent[head] = anchor
            growth.reparented[head] = anchor
            if anchor is not None and anchor not in t.chain:
                self._waiting.setdefault(anchor, []).append(head)
            elif anchor is not None:
                for u in g.order:
                    if u != head and g.parent[u] == anchor:
                        self._moves.append((u, anchor))
                        g.parent[u] = tail
                        growth.reparented[u] = tail
            zero = {u for u in plan.walk if t.chain[u].get("type") == ASSISTANT}
        cut = g.pos[g.boundaries[-1]]
        pruned = set(g.order[:cut])
        pruned -= preserved
        plan.info["pruned"] = len(pruned)
        pruned |= g.snipped
        g.pruned, g.preserved, g.zero_usage, g.relink = pruned, preserved, zero, plan.info
        changed = zero ^ zero_before
        if changed:
            self._regroup_usage(changed, fetch)
            growth.refreshed |= changed
        live = sorted(preserved - g.snipped, key=g.pos.__getitem__) + [
            u for u in g.order[cut:] if u not in g.snipped
        ]
        self.leaf_index.rebuild(live)
        self.resumed.index(live)
        self._rewalk = True

    def _regroup_usage(self, changed: set[str], fetch: Fetch) -> None:
        """API messages whose pieces' usage was zeroed or restored: their usage again."""
        g = self.g
        keys = {g.msg_ids.get(u) or u for u in changed}
        pieces = [
            u for u in g.order if (g.msg_ids.get(u) or u) in keys and self.t.chain[u].get("type") == ASSISTANT
        ]
        records = fetch(pieces)
        for key in keys:
            self._group_usage.pop(key, None)
        for u in pieces:
            key = g.msg_ids.get(u) or u
            usage = EMPTY_USAGE if u in g.zero_usage else usage_tuple(records[u].get("message"))
            known = self._group_usage.get(key)
            self._group_usage[key] = usage if known is None else max_usage(known, usage)

    # ------------------------------------------------------------------ the leaf, the context

    def _find_leaf(self) -> None:
        index = self.leaf_index
        sidechain_file = index.message_entries > 0 and index.main_entries == 0
        self.leaf, self.rule, self.candidates, self.fallback = index.resume_leaf(sidechain_file)

    def _track_boundaries(self, dirty: int) -> None:
        """The compact boundaries on the chain (positions), from ``dirty`` on; the context start."""
        chain = self.resumed.chain
        marks = self._boundaries_on_chain
        while marks and marks[-1] >= dirty:
            marks.pop()
        boundaries = self._boundary_set
        for i in range(dirty, len(chain)):
            if chain[i] in boundaries:
                marks.append(i)
        self._context_start = marks[-1] + 1 if marks else 0

    @property
    def chain(self) -> list[str]:
        """The chain ``--resume`` rebuilds (uuids root -> leaf, orphans recovered)."""
        return self.resumed.chain

    @property
    def naive_chain(self) -> list[str]:
        return self.resumed.naive

    def messages(self, fetch: Fetch) -> list[tuple[str, Message]]:
        """The context's messages, built (reading the records with ``fetch``) if they were dropped."""
        return self.context(fetch).messages

    def context(self, fetch: Fetch) -> Conversation:
        conversation = self.conversation
        if conversation is None:
            conversation = self.conversation = Conversation(self.g, self.t.chain)
            with paused_gc():
                conversation.sync(self.resumed.chain, self._context_start, 0, fetch, {})
        return conversation

    def drop_context(self) -> None:
        """Forget the messages (rebuilt by the next :meth:`context`)."""
        self.conversation = None

    def diagnostics(self, fetch: Fetch) -> dict[str, Any]:
        """What :func:`~..reconstruct.reconstruct` reports (a pass over the graph: for reports)."""
        head: dict[str, Any] = {"leafRuleRequested": "resume-file", "leafCandidates": self.candidates}
        if self.fallback:
            head["leafTimestampFallback"] = True
        head["leafRule"] = self.rule
        r = self.resumed
        head.update(
            chain_diagnostics(
                self.t,
                self.g,
                self.leaf,
                r.naive,
                r.chain,
                r.recovered,
                r.missing,
                r.cycles,
                self.context(fetch).diagnostics(),
            )
        )
        return head

    def reconstruction(self, fetch: Fetch) -> Reconstruction:
        """The :class:`~..reconstruct.Reconstruction` a cold read would give."""
        return Reconstruction(
            self.leaf,
            self.rule,
            list(self.resumed.chain),
            list(self.messages(fetch)),
            self.diagnostics(fetch),
            list(self.resumed.naive),
        )
