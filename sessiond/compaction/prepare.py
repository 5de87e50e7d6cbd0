"""What a compaction would summarise and keep, decided from the branch alone.

``prepare_compaction`` is the whole decision, pure: given the selected path and the settings,
it returns the messages to summarise (and a split turn's prefix), the previous summary to
update, the first entry to keep, the token count before, and the files touched — or the
precise reason there is nothing to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..model import entries as E
from ..model.entries import Message
from ..model.js import UNDEFINED, get, truthy
from ..model.messages import convert_to_llm
from ..model.projection import ProjectedEntry, Projection, project
from ..model.tokens import PI, TokenEstimator, estimate_projected_context_tokens
from .cut_points import find_projected_cut_point
from .file_ops import FileOps, extract_all_file_ops, file_ops_from_details
from .serialize import serialize_conversation
from .settings import CompactionSettings as CompactionSettings  # noqa: PLC0414 (re-exported: its home before)


@dataclass(slots=True)
class CompactionPreparation:
    first_kept_entry_id: Any
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: float
    previous_summary: Any
    """The summary of the compaction being superseded (``UNDEFINED`` for a first compaction)."""
    file_ops: FileOps
    settings: CompactionSettings
    first_kept_index: int = -1
    """Index of the first kept entry among the projected entries."""
    projected: list[ProjectedEntry] = field(default_factory=list)

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


def _for_summary(entries: list[ProjectedEntry]) -> list[Message]:
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


def prepare_compaction(
    path: list[Any],
    settings: CompactionSettings,
    estimator: TokenEstimator = PI,
    projection: Projection | None = None,
) -> CompactionPreparation | NoCompaction:
    """Pi's ``prepareCompaction`` over the selected path (root -> leaf).

    ``projection`` may be given when the caller already has the projection of ``path``
    (a store whose path entries are light reads only the context entries in full).
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
    to_summarize = _for_summary(projected[boundary_start:history_end])
    prefix = _for_summary(projected[cut.turn_start_index : cut.first_kept_index]) if cut.is_split_turn else []
    if not to_summarize and not prefix:
        return NoCompaction("nothing_to_compact")
    ops = FileOps()
    if prev_index >= 0:
        prev = projected[prev_index].source
        if not truthy(get(prev, "fromHook")):
            file_ops_from_details(get(prev, "details"), ops)
    extract_all_file_ops(to_summarize, ops)
    extract_all_file_ops(prefix, ops)
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
        first_kept_index=cut.first_kept_index,
        projected=projected,
    )
