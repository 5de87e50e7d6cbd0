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

Growth is followed by parsing only the new lines and indexing only the new entries; the
conversation is reconstructed again (repairs can reach back), which costs time in the size of
the chain, not of the file's bytes. Entries already in the tree keep the shape they had when
first seen (a later preserved-segment relink or a later piece of the same API message does not
rewrite them); the context always reflects the whole file.
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
    extend_transcript,
    parse_transcript,
    reconstruct,
    to_pi_entries,
)
from ..model.js import UNDEFINED, get, key, truthy
from ..model.projection import ContextSettings, ProjectedEntry, Projection
from ..model.tokens import PI, ContextEstimate, TokenEstimator, estimate_projected_context_tokens
from .claude_files import find_subagents
from .index import SessionIndex
from .session import IndexedSession, IngestResult

READ_ONLY: Final = "it is a Claude Code transcript; sessiond never writes another agent's file"


class _Diagnostics:
    """What ``session/load`` reports for a Claude Code file: the load and the reconstruction."""

    def __init__(self, path: Path, transcript: ClaudeTranscript, rec: Reconstruction) -> None:
        self.path = path
        self.transcript = transcript
        self.rec = rec

    def as_json(self) -> dict[str, Any]:
        return {
            "format": "claude-code",
            "load": self.transcript.diagnostics.as_json(),
            "reconstruction": self.rec.diagnostics,
            "titles": self.transcript.titles.as_json(),
            "subagents": [link.as_json() for link in find_subagents(self.path, self.transcript)],
        }


class ClaudeSession(IndexedSession):
    """A Claude Code transcript as a session sessiond reads and follows: a
    :class:`~sessiond.store.session.ReadableSession`, with no write operation at all."""

    def __init__(self, path: Path, transcript: ClaudeTranscript, read_end: int, inode: int | None) -> None:
        rec = reconstruct(transcript)
        super().__init__(path, _index(transcript, rec))
        self.read_only = READ_ONLY
        self.transcript = transcript
        self.reconstruction = rec
        self.diagnostics = _Diagnostics(path, transcript, rec)
        self._read_end = read_end
        self._inode = inode
        self._context: tuple[Any, Projection] | None = None
        self._branch: tuple[tuple[Hashable, int], list[Any]] | None = None

    @classmethod
    def open(cls, path: Path) -> ClaudeSession:
        path = Path(path)
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
        end = data.rfind(b"\n") + 1
        return cls(path, parse_transcript(data[:end], str(path)), end, st.st_ino)

    # ------------------------------------------------------------------ reads

    @property
    def flushed(self) -> bool:
        return True

    @property
    def name(self) -> str | None:
        return self.transcript.title()

    def file_size(self) -> int | None:
        return self._read_end

    def context(self) -> Projection:
        """The conversation Claude Code resumes from the current leaf."""
        with self._lock:
            leaf = key(self.leaf_id)
            if self._context is not None and self._context[0] == leaf:
                return self._context[1]
            rec = self.reconstruction
            if key(rec.leaf_uuid) != leaf:
                rec = reconstruct(self.transcript, leaf=self.leaf_id) if self.leaf_id else rec
            projection = self._project(rec)
            self._context = (leaf, projection)
            return projection

    def context_for(self, path: list[Any]) -> Projection:
        if not path:
            return Projection([], [], ContextSettings())
        return self._project(reconstruct(self.transcript, leaf=get(path[-1], "id")))

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
        rec = self.reconstruction
        if key(rec.leaf_uuid) != key(leaf):
            try:
                rec = reconstruct(self.transcript, leaf=leaf)
            except EntryNotFoundError:
                return tree.branch(from_id)
        if not rec.chain or key(rec.chain[-1]) != key(leaf):
            return tree.branch(from_id)
        path = [tree.get(uuid) for uuid in rec.chain]
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
            return estimate_projected_context_tokens(self.context(), self.current_branch(), estimator)

    def _project(self, rec: Reconstruction) -> Projection:
        entries: list[ProjectedEntry] = []
        messages: list[Any] = []
        model: Any = None
        for uuid, message in rec.messages:
            if not entries or key(get(entries[-1].source, "id")) != key(uuid):
                light = self._index.tree.get(uuid)
                source = self._index.full(light) if light is not None else {"type": "message", "id": uuid}
                entries.append(ProjectedEntry(source, []))
            entries[-1].messages.append(message)
            messages.append(message)
            if get(message, "role") == "assistant":
                model = {"provider": get(message, "provider"), "modelId": get(message, "model")}
        return Projection(entries, messages, ContextSettings("off", model))

    # ------------------------------------------------------------------ following

    def ingest(self) -> IngestResult:
        """Re-read the transcript when it grew; report the entries that are new."""
        with self._lock:
            result = IngestResult()
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                result.reload_required = "the file was deleted"
                return result
            if self._inode is not None and st.st_ino != self._inode:
                result.reload_required = "the file was replaced"
                return result
            if st.st_size < self._read_end:
                result.reload_required = "the file was truncated"
                return result
            if st.st_size == self._read_end:
                return result
            with open(self.path, "rb") as f:
                f.seek(self._read_end)
                data = f.read(st.st_size - self._read_end)
            end = data.rfind(b"\n") + 1
            result.bytes_read = len(data)
            result.partial_tail = end < len(data)
            if not end:
                return result
            # Only the new lines are parsed and only the new entries indexed; the conversation
            # itself is rebuilt, because repairs can reach back (a late tool result, a piece of
            # an earlier message).
            transcript = extend_transcript(self.transcript, data[:end])
            rec = reconstruct(transcript)
            new = [u for u in transcript.chain if u not in self._index.tree]
            for entry in to_pi_entries(transcript, only=set(new)):
                self._index.add(entry, -1, 0)
                result.entries.append(entry)
            if rec.leaf_uuid is not None and rec.leaf_uuid in self._index.tree:
                self._index.tree.set_leaf(rec.leaf_uuid)
            self.transcript, self.reconstruction = transcript, rec
            self.diagnostics = _Diagnostics(self.path, transcript, rec)
            self._read_end += end
            self._context = None
            self._branch = None
            return result


def _index(transcript: ClaudeTranscript, rec: Reconstruction) -> SessionIndex:
    first = next(iter(transcript.chain.values()), {})
    header = {
        "type": "session",
        "version": 3,
        "id": transcript.session_id or Path(transcript.source).stem,
        "timestamp": first.get("timestamp", ""),
        "cwd": transcript.cwd or "",
    }
    index = SessionIndex(header)
    for entry in to_pi_entries(transcript):
        index.add(entry, -1, 0)
    if rec.leaf_uuid is not None and rec.leaf_uuid in index.tree:
        index.tree.set_leaf(rec.leaf_uuid)
    return index
