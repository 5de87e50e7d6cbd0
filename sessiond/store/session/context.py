"""A Pi session's context and what is derived from it: the projection, usage, compaction preparation.

The projection of the current branch is cached until the leaf or the session changes, and
appends that extend the leaf extend the cache instead of rebuilding it (the write path calls
:meth:`CachedContext._extend_light_context`), so asking for context or usage after every
append costs what was appended, not the branch. Usage is kept without the projection, which
the process's memory budget drops when it is not read (:mod:`sessiond.store.memory`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...compaction.lazy import LazyProjection, lazy_projection
from ...compaction.policy import ContextView
from ...compaction.prepare import CompactionPreparation, CompactionSettings, NoCompaction, prepare_compaction
from ...formats.pi import paused_gc
from ...model import entries as E
from ...model.entries import Entry
from ...model.js import UNDEFINED, key, truthy
from ...model.messages import entry_messages
from ...model.projection import (
    ContextSettings,
    ProjectedEntry,
    Projection,
    context_entries,
    context_settings,
    next_settings,
    project_entries,
)
from ...model.tokens import PI, ContextEstimate, ContextUsage, TokenEstimator, UsageTracker
from ..index import SessionIndex
from .reads import IndexedSession


@dataclass(slots=True)
class _LightContext:
    """The current leaf's path, settings and context entries, as light entries.

    Kept up to date on appends that extend the leaf, so rebuilding context after an append
    costs the context entries, not a walk of the whole branch.
    """

    leaf: Hashable
    count: int
    path: list[Any]
    settings: ContextSettings
    ctx: list[Any]


class CachedContext(IndexedSession):
    """Pi's context over the light index, cached per leaf and extended by appends.

    Two things are kept apart: the *light* context (the path, settings and context entries,
    a few references per entry) with the usage trackers, kept current by every append; and
    the *materialised* projection (every context message parsed, with its source entry), built
    when someone reads the context and dropped under the process's memory budget when unused.
    Reporting usage after an append needs only the first, so a session that is appended to
    all day but never read holds no parsed context.
    """

    def __init__(self, path: Path, index: SessionIndex) -> None:
        super().__init__(path, index)
        self._projection: tuple[Hashable, Projection] | None = None
        self._light_ctx: _LightContext | None = None
        self._usage: dict[str, tuple[Hashable, UsageTracker]] = {}
        """Estimator name -> the light context (leaf, entry count) it is current for, the tracker."""
        self._projection_bytes = 0
        self._context_holder = index.budget.holder(
            "context", self._drop_projection, str(index.header.get("id"))
        )

    def close(self) -> None:
        self._context_holder.close()
        super().close()

    def _drop_projection(self) -> None:
        """The memory budget's call (no lock taken): rebuilt from the file when next read."""
        self._projection = None

    def context(self) -> Projection:
        """The projection of the current branch; only the context entries are read in full.

        Cached until the leaf or the session changes, so asking twice costs nothing. Appends
        below the leaf extend its lists in place: read it, do not keep it across a write (or
        copy it, as :meth:`prepare_compaction_at_leaf` does).
        """
        with self._lock:
            cache_key = (key(self._index.tree.leaf_id), len(self._index))
            cached = self._projection
            if cached is not None and cached[0] == cache_key:
                self._context_holder.touch()
                return cached[1]
            light = self._light_context()
            # Tens of thousands of new containers and no garbage: the collector's passes over
            # every body the process holds were ~3/4 of a 25,000-entry projection (issue 30).
            with paused_gc():
                full, size = self._index.full_path_sized(light.ctx)
                projection = project_entries(full, light.settings)
            self._projection = (cache_key, projection)
            self._projection_bytes = size
            self._context_holder.hold(self._projection_bytes)
            return projection

    def _projection_now(self) -> Projection:
        """The projection, held if it already is, else built for this reader only: reporting
        usage (a tracker starting over) does not make the session keep a parsed context that
        every later append would extend."""
        if type(self).context is not CachedContext.context:
            return self.context()
        cached = self._projection
        if cached is not None and cached[0] == (key(self._index.tree.leaf_id), len(self._index)):
            return cached[1]
        light = self._light_context()
        with paused_gc():  # see context()
            return project_entries(self._index.full_path(light.ctx), light.settings)

    def context_view(self) -> ContextView:
        """The context's model and first entry from the light context, the projection only if
        the reader asks (the after-append checks: most need no parsed context in memory)."""
        if type(self).context is not CachedContext.context:
            return ContextView.of(self.context())  # a subclass projects its context otherwise
        with self._lock:
            light = self._light_context()
            return ContextView(light.settings.model, light.ctx[0] if light.ctx else None, self.context)

    def _light_context(self) -> _LightContext:
        tree = self._index.tree
        leaf = key(tree.leaf_id)
        cached = self._light_ctx
        if cached is not None and cached.leaf == leaf and cached.count == len(self._index):
            return cached
        path = tree.context_path()
        ctx = context_entries(path, unique_ids=True)
        if ctx is path:
            ctx = list(path)  # both lists grow on appends: they must not be one list
        self._light_ctx = _LightContext(leaf, len(self._index), path, context_settings(path), ctx)
        return self._light_ctx

    def _extend_light_context(self, parent: Any, light: Any, is_new_id: bool, full: Entry) -> None:
        """After an append: extend the cached path, projection and usage if the entry hangs below
        the leaf.

        Keeps rebuilding context after an append proportional to what was appended: the
        projection (when one is held) grows by the new entry's messages unless the entry
        changes how earlier ones project (a compaction or a context edit), which rebuilds it
        from the context entries; the usage trackers fold in the new messages the same way.
        """
        cached = self._light_ctx
        previous = self._projection
        self._projection = None
        trackers, self._usage = self._usage, {}
        if cached is None or not is_new_id or cached.leaf != key(parent) or type(light) is not dict:
            self._light_ctx = None
            return
        before = (cached.leaf, cached.count)
        cached.path.append(light)
        cached.settings = next_settings(cached.settings, light)
        marker = E.is_leaf_marker(light)
        if light.get("type") == E.COMPACTION:
            ctx = context_entries(cached.path)
            cached.ctx = list(ctx) if ctx is cached.path else ctx
        elif not marker:
            cached.ctx.append(light)
        cached.leaf = key(light.get("id", UNDEFINED))
        cached.count = len(self._index)
        after = (cached.leaf, cached.count)
        t = light.get("type")
        messages = [] if marker else entry_messages(full)
        for name, (at, tracker) in trackers.items():
            if at == before and tracker.append(messages, [light]):
                self._usage[name] = (after, tracker)
        if previous is not None and previous[0] == before and marker:
            self._projection = (after, previous[1])  # a marker is no context
        elif previous is not None and previous[0] == before and t not in (E.COMPACTION, E.CONTEXT_EDIT):
            # Extended in place, like the cached path: copying both lists per append made an
            # append cost grow with the branch (~50 us more per append at 10,000 entries). Who
            # keeps a projection beyond the lock takes a copy (prepare_compaction_at_leaf).
            old = previous[1]
            old.entries.append(ProjectedEntry(full, messages))
            old.messages.extend(messages)
            self._projection = (
                after,
                Projection(old.entries, old.messages, cached.settings),
            )
            self._projection_bytes += self._index.lengths[len(self._index) - 1]
            # an append is no read: a projection only appends extend still goes idle
            self._context_holder.resize(self._projection_bytes)

    def current_branch(self) -> list[Any]:
        """Light entries root -> leaf (cached while appends extend the leaf; do not modify)."""
        with self._lock:
            return self._current_branch()

    def _current_branch(self) -> list[Any]:
        """Light entries root -> leaf (Pi's ``getBranch()``), from the cache when it is current."""
        leaf = self._index.tree.leaf_id
        if not truthy(leaf) or self._index.tree.get(leaf) is None:
            return self._index.tree.branch()
        return self._light_context().path

    def context_usage(self, estimator: TokenEstimator = PI) -> ContextEstimate:
        """Tokens of the current context: last trusted usage + estimate of what follows.

        Kept current by appends (a ``UsageTracker`` per estimator, fed the appended messages),
        so asking after every append costs what was appended, and needs no projection in
        memory; the projection is built only when a tracker has to start over.
        """
        with self._lock:
            return self._tracker(estimator).estimate

    def _tracker(self, estimator: TokenEstimator) -> UsageTracker:
        light = self._light_context()
        at = (light.leaf, light.count)
        cached = self._usage.get(estimator.name)
        if cached is not None and cached[0] == at:
            return cached[1]
        tracker = UsageTracker(estimator)
        tracker.reset(self._projection_now(), self._current_branch())
        self._usage[estimator.name] = (at, tracker)
        return tracker

    def usage_view(self, estimator: TokenEstimator = PI) -> ContextUsage:
        """Usage, model and size of the context, from the light context and the tracker."""
        cls = type(self)
        if cls.context is not CachedContext.context or cls.context_usage is not CachedContext.context_usage:
            # A subclass projects its context otherwise (another agent's reader): ask it.
            with self._lock:
                projection = self.context()
                estimate = self.context_usage(estimator)
                return ContextUsage(estimate, projection.settings.model, len(projection.messages))
        with self._lock:
            tracker = self._tracker(estimator)
            return ContextUsage(tracker.estimate, self._light_context().settings.model, tracker.messages)

    def prepare_compaction(
        self, settings: CompactionSettings, estimator: TokenEstimator = PI
    ) -> CompactionPreparation | NoCompaction:
        return self.prepare_compaction_at_leaf(settings, estimator)[1]

    def prepare_compaction_at_leaf(
        self, settings: CompactionSettings, estimator: TokenEstimator = PI
    ) -> tuple[Any, CompactionPreparation | NoCompaction]:
        """The preparation and the leaf it was made at (one consistent view, for staleness checks).

        Only the snapshot is taken under the lock — the current branch and its cached projection,
        both copied (appends extend the cached lists in place) — so writers are not held up while
        the cut point is searched.
        """
        with self._lock:
            leaf = self._index.tree.leaf_id
            branch = list(self._current_branch())
            projection = self._projection_to_prepare()
        with paused_gc():  # lists of every summarised message: see context()
            return leaf, prepare_compaction(branch, settings, estimator, projection=projection)

    def _projection_to_prepare(self) -> Projection | LazyProjection:
        """(Under the lock.) The projection a preparation reads: the one held, copied (appends
        extend its lists in place); else one that reads each entry when the preparation asks
        (:mod:`sessiond.compaction.lazy`), so preparing right after open reads the entries the
        decision looks at, not the whole context (issue 30: 0.5 s at 50,000 entries where Pi,
        which parsed everything while loading, takes 70 ms); the messages to summarise are
        parsed when first used. A context with an edit is projected in full."""
        cached = self._projection
        current = cached is not None and cached[0] == (key(self._index.tree.leaf_id), len(self._index))
        if not current and type(self).context is CachedContext.context:
            read = self._body_reader()
            if read is not None:
                light = self._light_context()
                ctx = list(light.ctx)
                lazy = lazy_projection(ctx, light.settings, self._index.path_reader(ctx, read, self._lock))
                if lazy is not None:
                    return lazy
        held = self.context()
        return Projection(list(held.entries), list(held.messages), held.settings)

    def _body_reader(self) -> Callable[[int, int], bytes] | None:
        """How a preparation reads bodies after the lock is released (and after the session
        closed): ``None`` when it cannot, and the projection is then made at once."""
        return None

    def context_for(self, path: list[Any]) -> Projection:
        """The projection of an arbitrary light path (reading only its context entries)."""
        full = self._index.full_path(context_entries(path))
        return project_entries(full, context_settings(path))
