"""What a compaction would summarise and keep, decided from the branch alone.

``prepare_compaction`` is the whole decision, pure: given the selected path and the settings,
it returns the messages to summarise (and a split turn's prefix), the previous summary to
update, the first entry to keep, the token count before, and the files touched — or the
precise reason there is nothing to do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from ..model import entries as E
from ..model.entries import Message
from ..model.js import UNDEFINED, get, truthy
from ..model.messages import convert_to_llm
from ..model.projection import ProjectedEntry, Projection, project
from ..model.tokens import PI, TokenEstimator, estimate_projected_context_tokens
from .cut_points import find_projected_cut_point
from .file_ops import FileOps, extract_all_file_ops, file_ops_from_details
from .lazy import LazyEntries, LazyProjection
from .serialize import serialize_conversation
from .settings import CompactionSettings as CompactionSettings  # noqa: PLC0414 (re-exported: its home before)


class CompactionPreparation:
    """What a compaction summarises and keeps (Pi's ``CompactionPreparation``).

    The messages to summarise (and the file operations found in them) may come from a
    projection that reads entries when first asked (:mod:`.lazy`): they are then parsed on
    first use of :attr:`messages_to_summarize`, :attr:`turn_prefix_messages` or
    :attr:`file_ops`, or by :meth:`materialize`, and are the same as if parsed at once.
    """

    __slots__ = (
        "_file_ops",
        "_history",
        "_prefix",
        "_previous_ops",
        "first_kept_entry_id",
        "first_kept_index",
        "is_split_turn",
        "previous_summary",
        "projected",
        "settings",
        "tokens_before",
    )

    def __init__(
        self,
        *,
        first_kept_entry_id: Any,
        history: Sequence[Message],
        turn_prefix: Sequence[Message],
        is_split_turn: bool,
        tokens_before: float,
        previous_summary: Any,
        previous_file_ops: FileOps,
        settings: CompactionSettings,
        first_kept_index: int = -1,
        projected: Sequence[ProjectedEntry] = (),
    ) -> None:
        self.first_kept_entry_id = first_kept_entry_id
        self._history = history
        self._prefix = turn_prefix
        self.is_split_turn = is_split_turn
        self.tokens_before = tokens_before
        self.previous_summary: Any = previous_summary
        """The summary of the compaction being superseded (``UNDEFINED`` for a first compaction)."""
        self._previous_ops = previous_file_ops
        self._file_ops: FileOps | None = None
        self.settings = settings
        self.first_kept_index = first_kept_index
        """Index of the first kept entry among the projected entries."""
        self.projected = projected

    @property
    def messages_to_summarize(self) -> list[Message]:
        if not isinstance(self._history, list):
            self._history = list(self._history)
        return self._history

    @property
    def turn_prefix_messages(self) -> list[Message]:
        if not isinstance(self._prefix, list):
            self._prefix = list(self._prefix)
        return self._prefix

    @property
    def history_length(self) -> int:
        """``len(messages_to_summarize)``, without reading them."""
        return len(self._history)

    @property
    def turn_prefix_length(self) -> int:
        """``len(turn_prefix_messages)``, without reading them."""
        return len(self._prefix)

    @property
    def file_ops(self) -> FileOps:
        """The previous compaction's files, then those of the summarised tool calls (first-seen
        order, as Pi collects them)."""
        if self._file_ops is None:
            previous = self._previous_ops
            ops = FileOps(dict(previous.read), dict(previous.written), dict(previous.edited))
            extract_all_file_ops(self.messages_to_summarize, ops)
            extract_all_file_ops(self.turn_prefix_messages, ops)
            self._file_ops = ops
        return self._file_ops

    def materialize(self) -> None:
        """Read and parse whatever is still unread, so that a later use costs nothing (the
        daemon calls this off its event loop) and the file is no longer read."""
        self.file_ops  # noqa: B018  (reads the messages, then collects the files)
        if isinstance(self.projected, LazyEntries):
            self.projected[:]  # the kept entries too: then the reader is let go

    def serialized_history(self) -> str:
        """The text a summarizer gets for the history part."""
        return serialize_conversation(convert_to_llm(self.messages_to_summarize))

    def serialized_turn_prefix(self) -> str:
        return serialize_conversation(convert_to_llm(self.turn_prefix_messages))


NoCompactionReason = Literal["already_compacted", "nothing_to_compact"]


@dataclass(frozen=True, slots=True)
class NoCompaction:
    """Why there is nothing to compact: the branch ends in a compaction, or it is too small."""

    reason: NoCompactionReason

    @property
    def message(self) -> str:
        if self.reason == "already_compacted":
            return "Already compacted"
        return "Nothing to compact (session too small)"


def _for_summary(entries: Sequence[ProjectedEntry]) -> list[Message]:
    """What the entries contribute to the summary: no compaction, no system prompt state.

    One loop with the lookups inlined (``get``'s semantics: a non-object has no type or role):
    it runs over the whole summarised history, 25,000 entries on a long branch (issue 30).
    """
    out: list[Message] = []
    compaction = E.COMPACTION
    for p in entries:
        source = p.source
        if type(source) is dict and source.get("type") == compaction:
            continue
        for m in p.messages:
            if type(m) is not dict or m.get("role") != "system":
                out.append(m)
    return out


class _Summarized(Sequence[Message]):
    """:func:`_for_summary` of lazy entries ``start:end``: counted from the light entries,
    read and parsed when first used."""

    __slots__ = ("_end", "_entries", "_items", "_len", "_start")

    def __init__(self, entries: LazyEntries, start: int, end: int) -> None:
        self._entries, self._start, self._end = entries, start, end
        self._len = entries.summarized_count(start, end)
        self._items: list[Message] | None = None

    def _list(self) -> list[Message]:
        if self._items is None:
            self._items = _for_summary(self._entries[self._start : self._end])
        return self._items

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> list[Message]: ...
    def __getitem__(self, i: int | slice) -> Message | list[Message]:
        return self._list()[i]

    def __iter__(self) -> Iterator[Message]:
        return iter(self._list())


def _summarized(entries: Sequence[ProjectedEntry], start: int, end: int) -> Sequence[Message]:
    if isinstance(entries, LazyEntries):
        return _Summarized(entries, start, end)
    return _for_summary(entries[start:end])


def prepare_compaction(
    path: list[Any],
    settings: CompactionSettings,
    estimator: TokenEstimator = PI,
    projection: Projection | LazyProjection | None = None,
) -> CompactionPreparation | NoCompaction:
    """Pi's ``prepareCompaction`` over the selected path (root -> leaf).

    ``projection`` may be given when the caller already has the projection of ``path``
    (a store whose path entries are light reads only the context entries in full), or a
    :class:`~.lazy.LazyProjection` of it (then only the entries the decision looks at are read;
    the messages to summarise when first used).
    """
    if get(E.last_decisive(path), "type") == E.COMPACTION:
        return NoCompaction("already_compacted")  # (a persisted leaf move below it changes nothing)
    if projection is None:
        projection = project(path)
    projected = projection.entries
    # Pi's findIndex over every projected entry; only the first can match: a projection gives
    # a compaction after the first no messages (project_entries; appends extend it otherwise
    # only by entries that are no compaction).
    prev_index = next(
        (i for i, p in enumerate(projected[:1]) if get(p.source, "type") == E.COMPACTION and p.messages), -1
    )
    previous_summary: Any = UNDEFINED
    boundary_start = 0
    if prev_index >= 0:
        previous_summary = get(projected[prev_index].source, "summary")
        boundary_start = prev_index + 1
    tokens_before = estimate_projected_context_tokens(projection, path, estimator).tokens
    cut = find_projected_cut_point(
        projected, boundary_start, len(projected), settings.keep_recent_tokens, estimator
    )
    first_kept = projected[cut.first_kept_index].source if cut.first_kept_index < len(projected) else None
    first_kept_id = get(first_kept, "id")
    if not truthy(first_kept_id):
        return NoCompaction("nothing_to_compact")
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _summarized(projected, boundary_start, history_end)
    prefix: Sequence[Message] = (
        _summarized(projected, cut.turn_start_index, cut.first_kept_index) if cut.is_split_turn else []
    )
    if not to_summarize and not prefix:
        return NoCompaction("nothing_to_compact")
    ops = FileOps()
    if prev_index >= 0:
        prev = projected[prev_index].source
        if not truthy(get(prev, "fromHook")):
            file_ops_from_details(get(prev, "details"), ops)
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        history=to_summarize,
        turn_prefix=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        previous_file_ops=ops,
        settings=settings,
        first_kept_index=cut.first_kept_index,
        projected=projected,
    )
