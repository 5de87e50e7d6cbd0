"""A Claude Code transcript behind sessiond's session API: read-only, followed as it grows.

The tree holds every chain entry of the file in Pi's entry shape (``to_pi_entries``: ids are
Claude Code's uuids, so clients can name entries), with the leaf Claude Code's ``--resume``
would pick. The *context* is not a Pi projection of that tree: it is the conversation Claude
Code rebuilds (``reconstruct``: progress bridged, orphaned parallel tool results recovered,
streamed pieces merged into API messages, every tool call paired). Usage anchors on those
merged messages, so ``usage_update`` reports Claude's real context size.

It has no write operation at all (it is not a :class:`~sessiond.store.session.Session`):
sessiond never rewrites another agent's file, and the daemon refuses a write to it with
:class:`~sessiond.errors.ReadOnlySessionError` before reaching it.

What stays in memory is the light index of the tree and the skeleton of the reconstruction
(:class:`~sessiond.formats.claude_code.live.LiveTranscript`): the records themselves are not
kept. A full entry is the record's line read back (``pread`` on the open file) and converted
when asked for; the context's messages are built from lines read back the same way, kept
while they are used and dropped under the process's memory budget (:mod:`.memory`).

Growth is followed line by line: only the appended lines are parsed, and the reconstruction
is redone only as far back as an appended line can reach (docs/claude-code.md, Following a
transcript), so a line costs the same in a 50 MB file as in a small one. After every line the
session equals a cold read of the file so far. A change that cannot be followed (a line
repeating an entry's uuid, for one) makes :meth:`ClaudeSession.ingest` ask for a reload.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path
from typing import Any, Final

from ..errors import EntryNotFoundError
from ..formats.claude_code import (
    ClaudeTranscript,
    Reconstruction,
    parse_line,
    parse_transcript,
    reconstruct,
)
from ..formats.claude_code.live import LiveTranscript
from ..formats.claude_code.reconstruct import resumed_chain
from ..formats.lines import OversizedLine
from ..formats.pi import paused_gc
from ..model.js import UNDEFINED, get, key, truthy
from ..model.projection import ContextSettings, ProjectedEntry, Projection
from ..model.tokens import (
    PI,
    ContextEstimate,
    ContextUsage,
    TokenEstimator,
    estimate_projected_context_tokens,
)
from .bounded import BoundedLines, describe_claude, line_limit
from .claude_files import find_subagents
from .foreign import foreign_header, grown_to
from .index import SessionIndex
from .memory import BUDGET, MemoryBudget
from .regular import open_regular_fd
from .session import IndexedSession, IngestResult

READ_ONLY: Final = "it is a Claude Code transcript; sessiond never writes another agent's file"


class _Diagnostics:
    """What ``session/load`` reports for a Claude Code file: the load and the reconstruction.

    Built when asked for and kept until the file grows: the reconstruction's report is a pass
    over the whole graph, and linking sub-agents reads the transcript again.
    """

    def __init__(self, session: ClaudeSession) -> None:
        self._session = session
        self._cached: tuple[int, dict[str, Any]] | None = None

    def as_json(self) -> dict[str, Any]:
        s = self._session
        with s._lock:
            cached = self._cached
            if cached is not None and cached[0] == s._read_end:
                return cached[1]
            t = s.live.t
            report = {
                "format": "claude-code",
                "load": t.diagnostics.as_json(),
                "reconstruction": s.live.diagnostics(s._fetch),
                "titles": t.titles.as_json(),
                "subagents": [link.as_json() for link in find_subagents(s.path, s.read_transcript())],
            }
            self._cached = (s._read_end, report)
            return report


class ClaudeSession(IndexedSession):
    """A Claude Code transcript as a session sessiond reads and follows: a
    :class:`~sessiond.store.session.ReadableSession`, with no write operation at all."""

    def __init__(
        self,
        path: Path,
        live: LiveTranscript,
        entries: list[tuple[str, int, int, dict[str, Any]]],
        read_end: int,
        fd: int,
        budget: MemoryBudget = BUDGET,
    ) -> None:
        t = live.t
        header = foreign_header(t.session_id or Path(t.source).stem, live.first_timestamp, t.cwd)
        index = SessionIndex(header, budget=budget)
        super().__init__(path, index)
        self.read_only = READ_ONLY
        self.live = live
        self._fd = fd
        self._inode = os.fstat(fd).st_ino
        self._read_end = read_end
        self._skip_scanned: int | None = None
        """The unterminated tail is over the line limit: scanned for its end up to here."""
        index.read_body = self._pread
        index.decode = self._decode
        with paused_gc():
            for _, offset, length, record in entries:
                index.add(live.pi_entry(record), offset, length)
        self._set_leaf()
        self.diagnostics = _Diagnostics(self)
        self._context: tuple[Hashable, Projection] | None = None
        self._branch: tuple[tuple[Hashable, int], list[Any]] | None = None
        self._context_bytes = 0
        self._holder = budget.holder("context", self._drop_context, str(header["id"]))

    @classmethod
    def open(cls, path: Path, *, budget: MemoryBudget = BUDGET) -> ClaudeSession:
        path = Path(path)
        fd = open_regular_fd(path)
        try:
            lines = BoundedLines(fd, 0, os.fstat(fd).st_size, describe_claude)
            live, entries = LiveTranscript.read(lines, str(path))
            session = cls(path, live, entries, live.t.end, fd, budget)
            session._skip_scanned = lines.skip_scanned
            return session
        except BaseException:
            os.close(fd)
            raise

    def close(self) -> None:
        with self._lock:
            self._holder.close()
            self._index.close()
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    # ------------------------------------------------------------------ the file

    def _pread(self, offset: int, length: int) -> bytes:
        if length > line_limit():  # an oversized line: its placeholder, never the line
            return describe_claude(self._fd, offset, length)
        return os.pread(self._fd, length, offset)

    def _decode(self, raw: bytes) -> Any:
        """A line of the transcript as the Pi entry the tree shows for it now."""
        kind, record = parse_line(raw)
        if kind != 0 or type(record) is not dict or type(record.get("uuid")) is not str:
            return {}  # not what was indexed there: the file changed under us (a reload follows)
        return self.live.pi_entry(record)

    def _fetch(self, uuids: list[str]) -> dict[str, dict[str, Any]]:
        """The records of chain entries, read back from their lines (few large reads)."""
        index, tree = self._index, self._index.tree
        positions = [index.position(tree.get(u)) for u in uuids]
        out: dict[str, dict[str, Any]] = {}
        with paused_gc():
            limit = line_limit()
            for first, run in index.spans(positions):
                last = run[-1][0]
                if any(index.lengths[pos] > limit for pos, _ in run):
                    # one read across an oversized line would read it: the lines one by one
                    for pos, i in run:
                        kind, record = parse_line(
                            self._pread(int(index.offsets[pos]), int(index.lengths[pos]))
                        )
                        out[uuids[i]] = record if kind == 0 and type(record) is dict else {}
                    continue
                data = self._pread(first, index.offsets[last] + index.lengths[last] - first)
                for pos, i in run:
                    at = index.offsets[pos] - first
                    kind, record = parse_line(data[at : at + index.lengths[pos]])
                    out[uuids[i]] = record if kind == 0 and type(record) is dict else {}
        return out

    def read_transcript(self) -> ClaudeTranscript:
        """The transcript as far as it was read, parsed whole (for what needs every record:
        linking sub-agents, file-history checkpoints). Costs a full parse: not kept."""
        with self._lock:
            data = b"".join(BoundedLines(self._fd, 0, self._read_end, describe_claude))
        return parse_transcript(data, str(self.path))

    @property
    def transcript(self) -> ClaudeTranscript:
        """The transcript as it is followed: the chain holds skeletons of the records."""
        return self.live.t

    @property
    def reconstruction(self) -> Reconstruction:
        """What ``reconstruct`` gives for the file as read so far (diagnostics included)."""
        with self._lock:
            return self.live.reconstruction(self._fetch)

    # ------------------------------------------------------------------ reads

    @property
    def flushed(self) -> bool:
        return True

    @property
    def name(self) -> str | None:
        return self.live.t.title()

    def file_size(self) -> int | None:
        return self._read_end

    def _follows_rule(self) -> bool:
        """Whether the tree's leaf is the one the leaf rule picked (the reconstruction's)."""
        leaf = self.live.leaf
        return leaf is not None and key(leaf) == key(self.leaf_id)

    def context(self) -> Projection:
        """The conversation Claude Code resumes from the current leaf."""
        with self._lock:
            leaf = key(self.leaf_id)
            cached = self._context
            if cached is not None and cached[0] == leaf:
                self._holder.touch()
                return cached[1]
            if self._follows_rule() or not self.leaf_id:
                messages = self.live.messages(self._fetch)
            else:
                messages = reconstruct(self.live.t, leaf=self.leaf_id, bodies=self._fetch).messages
            projection = self._project(messages)
            self._context = (leaf, projection)
            self._hold_context()
            return projection

    def context_for(self, path: list[Any]) -> Projection:
        if not path:
            return Projection([], [], ContextSettings())
        with self._lock:
            return self._project(
                reconstruct(self.live.t, leaf=get(path[-1], "id"), bodies=self._fetch).messages
            )

    def branch(self, from_id: Any = UNDEFINED) -> list[Any]:
        """The conversation Claude Code resumes, root -> ``from_id``, as full entries."""
        with self._lock:
            return self._index.full_path(self._resumed_path(from_id))

    def branch_ids(self, from_id: Any = UNDEFINED) -> list[Any]:
        with self._lock:
            return [get(e, "id") for e in self._resumed_path(from_id)]

    def _resumed_path(self, from_id: Any) -> list[Any]:
        """Light entries of the chain ``--resume`` rebuilds, ending at ``from_id`` (default the leaf).

        A plain parent walk misses the parallel tool calls and results that Claude Code
        recovers (they are siblings in the tree), so the branch would disagree with the
        context and with ``sessiond inspect``. When the reconstruction does not end at the
        requested entry (a progress record bridged to an ancestor) the parent walk is kept.
        """
        tree = self._index.tree
        leaf = tree.leaf_id if from_id is UNDEFINED or from_id is None else from_id
        if not truthy(leaf) or tree.get(leaf) is None:
            return tree.branch(from_id)
        if self.live.leaf is not None and key(self.live.leaf) == key(leaf):
            chain = self.live.chain
        else:
            try:
                chain = resumed_chain(self.live.t, leaf)
            except EntryNotFoundError:
                return tree.branch(from_id)
        if not chain or key(chain[-1]) != key(leaf):
            return tree.branch(from_id)
        path = [tree.get(uuid) for uuid in chain]
        return [entry for entry in path if entry is not None]

    def current_branch(self) -> list[Any]:
        """Light entries root -> leaf along the tree's parents (cached per leaf and size)."""
        with self._lock:
            tree = self._index.tree
            leaf = tree.leaf_id
            if not truthy(leaf) or tree.get(leaf) is None:
                return tree.branch()
            cache_key = (key(leaf), len(self._index))
            if self._branch is None or self._branch[0] != cache_key:
                self._branch = (cache_key, tree.context_path())
            return self._branch[1]

    def context_usage(self, estimator: TokenEstimator = PI) -> ContextEstimate:
        with self._lock:
            if self._follows_rule():
                conversation = self.live.context(self._fetch)
                self._hold_context()
                return conversation.estimate(estimator, self._on_branch)
            return estimate_projected_context_tokens(self.context(), self.current_branch(), estimator)

    def usage_view(self, estimator: TokenEstimator = PI) -> ContextUsage:
        """The context's usage, model and size without materialising its projection."""
        with self._lock:
            if not self._follows_rule():
                projection = self.context()
                return ContextUsage(
                    self.context_usage(estimator), projection.settings.model, len(projection.messages)
                )
            conversation = self.live.context(self._fetch)
            estimate = conversation.estimate(estimator, self._on_branch)
            self._hold_context()
            model: Any = None
            for _, message in reversed(conversation.messages):
                if get(message, "role") == "assistant":
                    model = {"provider": get(message, "provider"), "modelId": get(message, "model")}
                    break
            return ContextUsage(estimate, model, len(conversation.messages))

    def _on_branch(self, uuid: str) -> bool:
        """Whether an entry is on the tree's branch to the leaf (where a usage anchor must be)."""
        if uuid in self.live.resumed.naive_at:
            return True  # the walk is the branch, up to a pruned entry it stops at
        return any(get(e, "id") == uuid for e in self.current_branch())

    def _project(self, messages: list[tuple[str, Any]]) -> Projection:
        entries: list[ProjectedEntry] = []
        out: list[Any] = []
        model: Any = None
        for uuid, message in messages:
            if not entries or key(get(entries[-1].source, "id")) != key(uuid):
                light = self._index.tree.get(uuid)
                source = self._index.full(light) if light is not None else {"type": "message", "id": uuid}
                entries.append(ProjectedEntry(source, []))
            entries[-1].messages.append(message)
            out.append(message)
            if get(message, "role") == "assistant":
                model = {"provider": get(message, "provider"), "modelId": get(message, "model")}
        return Projection(entries, out, ContextSettings("off", model))

    # ------------------------------------------------------------------ memory

    def _hold_context(self) -> None:
        """Tell the budget how much of the file the materialised context holds (its lines)."""
        conversation = self.live.conversation
        if conversation is None:
            self._context_bytes = 0
        elif not self._context_bytes:
            index, tree = self._index, self._index.tree
            total = 0
            for u in conversation.fed:
                light = tree.get(u)
                if light is not None:
                    total += index.lengths[index.position(light)]
            self._context_bytes = total
        self._holder.hold(self._context_bytes)

    def _drop_context(self) -> None:
        """The budget's call (no lock): forget the messages and the projection, rebuilt on demand."""
        self._context = None
        self.live.drop_context()
        self._context_bytes = 0

    # ------------------------------------------------------------------ following

    def ingest(self) -> IngestResult:
        """Take in what was appended to the transcript; report the entries that are new."""
        with self._lock:
            result = IngestResult()
            size = grown_to(self.path, self._inode, self._read_end, result)
            if size is None or size == self._read_end:
                return result
            # complete lines only, none over the line limit held (a placeholder instead); a
            # tail growing past the limit without a newline is scanned on from where it was
            lines = BoundedLines(
                self._fd, self._read_end, size, describe_claude, skip_scanned=self._skip_scanned
            )
            skipped = self._skip_scanned is not None
            pieces = list(lines)
            self._skip_scanned = lines.skip_scanned
            end = lines.pos - self._read_end
            if end and not skipped and not any(type(p) is OversizedLine for p in pieces):
                result.data, result.start = b"".join(pieces), self._read_end
            result.bytes_read = size - self._read_end
            result.partial_tail = lines.pos < size
            if not end:
                return result
            growth = self.live.extend(pieces, self._fetch)
            self._read_end += end
            if growth.reload is not None:
                result.reload_required = (
                    f"the transcript changed in a way that is not followed: {growth.reload}"
                )
                return result
            index, tree = self._index, self._index.tree
            new = set()
            with paused_gc():
                for uuid, offset, length, record in growth.new:
                    entry = self.live.pi_entry(record)
                    index.add(entry, offset, length, keep=True)
                    result.entries.append(entry)
                    new.add(uuid)
            for uuid in growth.usage_moved - new:
                pos = index.position(tree.get(uuid))
                index.forget_body(pos)
            for uuid, parent in growth.reparented.items():
                light = tree.get(uuid)
                if uuid not in new and light is not None:
                    tree.reparent(uuid, parent)
                    index.forget_body(index.position(light))
            refreshed = [u for u in growth.refreshed if u not in new and u in tree]
            if refreshed:
                for uuid, record in self._fetch(refreshed).items():
                    index.refresh(index.position(tree.get(uuid)), self.live.pi_entry(record))
            self._set_leaf()
            self._context = None
            self._branch = None
            if self.live.conversation is not None:
                self._context_bytes += sum(length for _, _, length, _ in growth.new)
                self._holder.resize(self._context_bytes)  # growth is no read (see memory.Holder)
            return result

    def _set_leaf(self) -> None:
        """The tree's leaf: the rule's, else (no candidate) the last entry, as a cold read leaves it."""
        tree = self._index.tree
        leaf = self.live.leaf
        if leaf is not None and leaf in tree:
            tree.set_leaf(leaf)
        elif self.live.g.order:
            tree.set_leaf(self.live.g.order[-1])
