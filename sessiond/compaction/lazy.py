"""A projection whose entries are read when first asked, for preparing a compaction.

A store that keeps only light entries in memory (``sessiond.store.index``) would otherwise
read and parse every context entry before the cut point can be searched: 25,000 bodies of a
50,000-entry branch, ~0.5 s, for a decision that looks at a handful of them (issue 30: the
first ``prepare`` after ``Session.open`` was 6-8x Pi's, which parsed everything at load).
What ``prepare_compaction`` reads of the projection:

* the first entry (the previous compaction and its summary);
* the newest messages, back to the last usage anchor (``tokensBefore``);
* the newest entries, back to where ``keepRecentTokens`` are reached, and the first cut
  point after the start (the cut);
* the number of messages to summarise (whether there is anything to do).

Only the last needs every entry, and only its *count*, which the light entries give: a
``message`` entry contributes its message (one, whatever its content), a later compaction
none, and so on. The few entries whose count a light entry cannot tell (the first
compaction, a branch summary) are read at once. The messages themselves are parsed when
someone reads them (the summarizer, ``compaction/prepare``'s answer).

Entries and messages are exactly those of ``project_entries`` over the same context entries
(``tests/compaction/test_lazy_prepare.py`` compares the two on generated sessions); a context
holding a ``context_edit`` (an edit rewrites what an earlier entry contributes) is not made
lazy: :func:`lazy_projection` returns ``None`` and the caller projects it eagerly.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from typing import Any, Final, overload

from ..model import entries as E
from ..model.entries import Message
from ..model.js import UNDEFINED
from ..model.messages import entry_messages
from ..model.projection import ContextSettings, ProjectedEntry

Loader = Callable[[list[int]], list[Any]]
"""Full entries for positions in the context-entry list (in the order asked)."""

_CHUNK: Final = 32
"""Entries read at once going back from one asked for: the cut walk goes back entry by entry,
and a ``pread`` each would cost more than the parse."""
_CHUNK_FORWARD: Final = 8
"""The same going forward (the first cut point after the start is one of the first entries)."""


def projected_messages(source: Any, index: int) -> list[Message]:
    """What the context entry at ``index`` contributes, without edits (``project_entries``'
    rule: a compaction after the first contributes nothing)."""
    if type(source) is not dict:
        return []
    t = source.get("type")
    message = source.get("message") if t == E.MESSAGE else None
    if type(message) is dict and message.get("content") is not None:
        return [message]
    if index > 0 and t == E.COMPACTION:
        return []
    return entry_messages(source)


class LazyEntries(Sequence[ProjectedEntry]):
    """The projected entries of a context, each read and projected on first access."""

    __slots__ = ("_done", "_ends", "_last", "_light", "_load", "_system", "_unread")

    def __init__(self, light: list[Any], load: Loader) -> None:
        self._light = light
        self._load: Loader | None = load
        """Dropped once every entry is read (with the file descriptor it reads through)."""
        self._done: list[ProjectedEntry | None] = [None] * len(light)
        self._unread = len(light)
        self._last = len(light)
        """The entry read last (a walk from the end first)."""
        self._ends = array("q")
        """``ends[i]``: the messages entries ``0:i`` contribute (``len(light) + 1`` items)."""
        self._system: dict[int, int] = {}
        """Entry -> how many of its messages are ``system`` messages (left out of summaries)."""

    @classmethod
    def build(cls, light: list[Any], load: Loader) -> LazyEntries | None:
        """The entries of ``light`` (context entries as light entries); ``None`` when one is a
        ``context_edit``."""
        self = cls(light, load)
        counts: list[int] = []
        add = counts.append
        unknown: list[int] = []
        system = self._system
        message_type, custom, edit = E.MESSAGE, E.CUSTOM_MESSAGE, E.CONTEXT_EDIT
        for i, entry in enumerate(light):
            if type(entry) is not dict:
                add(0)
                continue
            t = entry.get("type")
            if t == message_type:
                # A light entry keeps an object message as its role/provider/model, any other
                # value as it is (project_entries: an object message is one message).
                message = entry.get("message", UNDEFINED)
                if type(message) is dict:
                    add(1)
                    if message.get("role") == "system":
                        system[i] = 1
                else:
                    add(0 if message is None or message is UNDEFINED else 1)
            elif t == custom:
                add(1)
            elif t == edit:
                return None
            elif t == E.BRANCH_SUMMARY or (t == E.COMPACTION and i == 0):
                unknown.append(i)  # (a summary only when non-empty; a system checkpoint)
                add(0)
            else:
                add(0)  # a later compaction, settings, labels, custom entries...
        if unknown:
            self._fill(unknown)
            for i in unknown:
                done = self._done[i]
                assert done is not None
                counts[i] = len(done.messages)
                n = sum(1 for m in done.messages if type(m) is dict and m.get("role") == "system")
                if n:
                    system[i] = n
        self._ends = array("q", accumulate(counts, initial=0))
        return self

    def _fill(self, positions: list[int]) -> None:
        done = self._done
        missing = [i for i in positions if done[i] is None]
        if not missing:
            return
        assert self._load is not None  # (dropped only once nothing is missing)
        for i, source in zip(missing, self._load(missing), strict=True):
            done[i] = ProjectedEntry(source, projected_messages(source, i))
        self._unread -= len(missing)
        if not self._unread:
            self._load = None

    def __len__(self) -> int:
        return len(self._done)

    @overload
    def __getitem__(self, i: int) -> ProjectedEntry: ...
    @overload
    def __getitem__(self, i: slice) -> list[ProjectedEntry]: ...
    def __getitem__(self, i: int | slice) -> ProjectedEntry | list[ProjectedEntry]:
        done = self._done
        if isinstance(i, slice):
            span = range(*i.indices(len(done)))
            self._fill(list(span))
            return [d for d in (done[j] for j in span) if d is not None]
        n = len(done)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        entry = done[i]
        if entry is None:
            # Read on in the direction of the walk: back from the newest (the cut, the usage
            # anchor), forward from the start (the first cut point).
            if i < self._last:
                self._fill(list(range(max(0, i - _CHUNK + 1), i + 1)))
            else:
                self._fill(list(range(i, min(n, i + _CHUNK_FORWARD))))
            entry = done[i]
            assert entry is not None
        self._last = i
        return entry

    def __iter__(self) -> Iterator[ProjectedEntry]:
        return iter(self[:])

    def summarized_count(self, start: int, end: int) -> int:
        """How many messages a summary of ``start:end`` gets: every message of the entries that
        are not compactions, ``system`` messages left out (``prepare``'s ``_for_summary``)."""
        if start >= end:
            return 0
        ends = self._ends
        total = ends[end] - ends[start]
        if start == 0:  # the only compaction that contributes messages is the first entry
            first = self._light[0]
            if type(first) is dict and first.get("type") == E.COMPACTION:
                total -= ends[1]
                start = 1
        if self._system:
            total -= sum(n for i, n in self._system.items() if start <= i < end)
        return total

    def messages(self) -> LazyMessages:
        """Every message of the context, in order (the projection's ``messages``)."""
        return LazyMessages(self, self._ends)


class LazyMessages(Sequence[Message]):
    """A context's messages in order; reading one reads only the entry it comes from."""

    __slots__ = ("_ends", "_entries")

    def __init__(self, entries: LazyEntries, ends: array[int]) -> None:
        self._entries = entries
        self._ends = ends
        """``ends[i]``: messages before entry ``i`` (the last item: all of them)."""

    def __len__(self) -> int:
        return self._ends[-1]

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> list[Message]: ...
    def __getitem__(self, i: int | slice) -> Message | list[Message]:
        if isinstance(i, slice):
            span = range(*i.indices(len(self)))
            if span.step == 1 and span:  # read the entries behind a run at once
                ends = self._ends
                self._entries[bisect_right(ends, span.start) - 1 : bisect_right(ends, span.stop - 1)]
            return [self[j] for j in span]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        ends = self._ends
        entry = bisect_right(ends, i) - 1
        message: Message = self._entries[entry].messages[i - ends[entry]]
        return message

    def __iter__(self) -> Iterator[Message]:
        for entry in self._entries:
            yield from entry.messages


class LazyProjection:
    """``Projection``'s shape (entries, messages, settings) over :class:`LazyEntries`."""

    __slots__ = ("entries", "messages", "settings")

    def __init__(self, entries: LazyEntries, settings: ContextSettings) -> None:
        self.entries = entries
        self.messages = entries.messages()
        self.settings = settings


def lazy_projection(light: list[Any], settings: ContextSettings, load: Loader) -> LazyProjection | None:
    """The projection of context entries ``light`` (light entries) read through ``load``, or
    ``None`` when the context holds an edit (project it eagerly)."""
    entries = LazyEntries.build(light, load)
    return None if entries is None else LazyProjection(entries, settings)
