"""A session: its file, its lazy index, its leaf, and every operation Pi's SessionManager has.

This is the object the daemon owns one of per open session. It is the only writer of its
file. Reads work on the light index (:mod:`sessiond.store.index`) and read full entries back
only for what a request touches (the context, an entry, a branch). Every append follows one
path: validate -> build the entry in Pi's key order -> encode one line -> one ``write()`` ->
index -> (``fsync`` mode) wait for the shared ``fdatasync`` -> acknowledge. A write that fails
leaves the in-memory state untouched: the entry is only indexed once its line is written.

Pi's behaviours are kept, including its error messages, with three deliberate additions:
v1/v2 files are migrated *atomically* when opened for writing, ``fork_from`` migrates old
sources (Pi 1.6.0 copies them unmigrated), and leaf moves can be persisted (:meth:`move_leaf`).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ..compaction.prepare import CompactionPreparation, CompactionSettings, NoCompaction, prepare_compaction
from ..errors import (
    EntryNotFoundError,
    InvalidArgumentError,
    LeafMismatchError,
    ReadOnlySessionError,
    SessionChangedError,
    SessiondError,
    SessionExistsError,
    SessionNotSavedError,
)
from ..formats.pi import LoadDiagnostics, encode_line, header_version, load_session, paused_gc, scan_lines
from ..model import entries as E
from ..model.entries import Entry
from ..model.js import UNDEFINED, get, iso_now, key, nullish, trim, truthy
from ..model.messages import current_system_message, entry_messages
from ..model.projection import (
    ContextSettings,
    ProjectedEntry,
    Projection,
    context_entries,
    context_settings,
    next_settings,
    project_entries,
)
from ..model.tokens import PI, ContextEstimate, TokenEstimator, UsageTracker
from ..model.tree import SessionTree, TreeNode
from .ids import short_id, uuid7
from .index import DEFAULT_CACHE_BYTES, SessionIndex
from .journal import Durability, Journal
from .layout import resolve_cwd, session_file_name, validate_session_id
from .specs import StageView
from .specs import build as build_entry

LEAF_MARKER: Final = "sessiond.leaf"
"""``customType`` of the entry that persists a leaf move (its ``parentId`` is the new leaf)."""


@dataclass(frozen=True, slots=True)
class PendingAppend:
    """Entries written (and visible) but not yet acknowledged: :meth:`wait` makes them durable.

    Splitting the two lets an event loop write inline (microseconds, in order) and wait for
    the shared ``fdatasync`` elsewhere (a worker thread), so waiting appends group-commit.
    """

    entry_ids: list[str]
    journal: Journal | None
    """Set when the acknowledgement must wait for the lines to reach the disk."""
    end: int | None

    @property
    def needs_sync(self) -> bool:
        return self.journal is not None and self.end is not None

    def wait(self) -> list[str]:
        """Block until the entries are durable (in ``fsync`` mode; at once otherwise)."""
        if self.journal is not None and self.end is not None:
            self.journal.sync(self.end)
        return self.entry_ids


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


@dataclass(slots=True)
class IngestResult:
    """What :meth:`Session.ingest` found after the last known end of the file."""

    entries: list[Any] = field(default_factory=list)
    """New full entries, in file order."""
    bytes_read: int = 0
    partial_tail: bool = False
    """A last line without its newline was left for later."""
    reload_required: str | None = None
    """Why the file cannot be followed incrementally (truncated, replaced, deleted)."""


class Session:
    """One session. Thread-safe: mutations serialise on a lock, ``fsync`` waits are shared."""

    def __init__(
        self,
        path: Path,
        index: SessionIndex,
        journal: Journal | None,
        diagnostics: LoadDiagnostics,
        durability: Durability,
        scan_end: int = 0,
    ) -> None:
        self.path = path
        self._index = index
        self._journal = journal
        self.diagnostics = diagnostics
        self.durability = durability
        self._lock = threading.RLock()
        self._scan_end = scan_end
        self._projection: tuple[Hashable, Projection] | None = None
        self._light_ctx: _LightContext | None = None
        self._generation = 0
        """Bumped whenever the projection is rebuilt rather than extended."""
        self._usage: dict[str, tuple[int, UsageTracker]] = {}
        if journal is not None:
            index.read_body = journal.pread
        self._tail_start = -1  # offset of an unterminated last line indexed at open, if any
        self.read_only: str | None = None
        self.external_backlog: list[Any] = []
        """Why sessiond must not write this session (another agent's file), or None."""

    # ------------------------------------------------------------------ construction

    @classmethod
    def create(
        cls,
        directory: Path,
        cwd: str,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
        durability: Durability = Durability.BUFFERED,
        path: Path | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> Session:
        """A new session in ``directory``. Its file appears with the first user/assistant message."""
        sid = uuid7() if session_id is None else validate_session_id(session_id)
        timestamp = iso_now()
        header = E.new_header(
            sid, timestamp, resolve_cwd(cwd), UNDEFINED if parent_session is None else parent_session
        )
        file = path if path is not None else directory / session_file_name(timestamp, sid)
        if file.exists():
            raise SessionExistsError(str(file))
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cls(file, SessionIndex(header, cache_bytes), None, LoadDiagnostics(), durability)

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        durability: Durability = Durability.BUFFERED,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        read_only: str | None = None,
    ) -> Session:
        """Open an existing session file for reading and appending.

        Reading builds the light index in one pass and writes nothing, except for v1/v2 files:
        those are migrated and rewritten atomically first (Pi rewrites them in place on open).
        A torn last line is repaired by the next append, not here.

        ``read_only`` (the reason, for the error) opens a file sessiond must never write —
        another agent's — for reading and following its growth; a v1/v2 file is then migrated
        in memory only.
        """
        path = Path(path)
        with open(path, "rb") as f:
            index, diag = SessionIndex.from_lines(f, str(path), cache_bytes)
        if read_only is not None:
            if _needs_migration(index.header):
                loaded = load_session(path)
                index = SessionIndex(loaded.header, cache_bytes)
                for entry in loaded.entries:
                    index.add(entry, -1, len(encode_line(entry)))
                session = cls(path, index, None, loaded.diagnostics, durability)
            else:
                journal = Journal.open(path, read_only=True)
                session = cls(path, index, journal, diag, durability, scan_end=journal.size)
                if diag.torn_tail and diag.torn_tail_parsed:
                    session._tail_start = int(index.offsets[len(index) - 1])
            session.read_only = read_only
            return session
        if _needs_migration(index.header):
            migrated_from = _migrate_file(path)
            with open(path, "rb") as f:
                index, diag = SessionIndex.from_lines(f, str(path), cache_bytes)
            diag.source_version = migrated_from
        journal = Journal.open(path)
        session = cls(path, index, journal, diag, durability, scan_end=journal.size)
        if diag.torn_tail:
            # The unterminated last line stays where it is; ingest must not read it again.
            session._scan_end = journal.size
            if diag.torn_tail_parsed:
                session._tail_start = int(index.offsets[len(index) - 1])
        return session

    def close(self) -> None:
        with self._lock:
            if self._journal is not None:
                self._journal.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ identity and reads

    @property
    def header(self) -> dict[str, Any]:
        return self._index.header

    @property
    def id(self) -> str:
        sid: str = self._index.header["id"]
        return sid

    @property
    def cwd(self) -> str:
        cwd = self._index.header.get("cwd")
        return cwd if type(cwd) is str else ""

    def file_size(self) -> int | None:
        """Bytes of the file as far as this session has read or written it (None: no file yet)."""
        return None if self._journal is None else self._journal.size

    @property
    def flushed(self) -> bool:
        """Whether the file exists (Pi's first-flush rule may still be holding entries)."""
        return self._journal is not None

    @property
    def tree(self) -> SessionTree:
        """The tree over *light* entries (use :meth:`get` for full ones)."""
        return self._index.tree

    @property
    def index(self) -> SessionIndex:
        return self._index

    @property
    def leaf_id(self) -> Any:
        return self._index.tree.leaf_id

    @property
    def entry_count(self) -> int:
        return len(self._index.tree)

    @property
    def name(self) -> str | None:
        """The latest ``session_info`` name in file order (an empty one clears it)."""
        name = self._index.session_name
        if type(name) is str and trim(name):
            return trim(name)
        return None

    def get(self, entry_id: Any) -> Any | None:
        """The full entry with this id (the last line carrying it), or ``None``."""
        with self._lock:
            light = self._index.tree.get(entry_id)
            return None if light is None else self._index.full(light)

    def branch(self, from_id: Any = UNDEFINED) -> list[Any]:
        """Full entries root -> ``from_id`` (default: the leaf); ``[]`` for an unknown id."""
        with self._lock:
            return self._index.full_path(self._index.tree.branch(from_id))

    def branch_ids(self, from_id: Any = UNDEFINED) -> list[Any]:
        with self._lock:
            return [get(e, "id") for e in self._index.tree.branch(from_id)]

    def children(self, entry_id: Any) -> list[Any]:
        with self._lock:
            return self._index.full_path(self._index.tree.children(entry_id))

    def tree_view(self) -> dict[str, Any]:
        """``tree/get``'s answer: every entry as a flat node, in file order, and the leaf.

        Flat (parent ids and child counts) rather than nested, so a client can draw a huge
        tree lazily, and with the index's previews so drawing it reads no entry bodies.
        """
        with self._lock:
            index, tree = self._index, self._index.tree
            children: dict[Any, int] = {}
            for light in (tree.get(i) for i in tree.ids()):
                parent_key = key(get(light, "parentId"))
                children[parent_key] = children.get(parent_key, 0) + 1
            nodes = []
            for pos, light in enumerate(tree.entries):
                eid = get(light, "id")
                label = tree.label(eid)
                node: dict[str, Any] = {
                    "id": eid,
                    "parentId": get(light, "parentId"),
                    "type": get(light, "type"),
                    "preview": index.previews[pos],
                    "timestamp": get(light, "timestamp"),
                    "childCount": children.get(key(eid), 0),
                }
                role = get(get(light, "message"), "role")
                if type(role) is str:
                    node["role"] = role
                if type(label) is str:
                    node["label"] = label
                nodes.append(node)
            return {"leafId": tree.leaf_id, "nodes": nodes}

    def tree_nodes(self) -> list[TreeNode]:
        """Pi's ``getTree()`` over light entries."""
        with self._lock:
            return self._index.tree.tree()

    def label(self, entry_id: Any) -> Any:
        return self._index.tree.label(entry_id)

    def entries(self) -> list[Any]:
        """Every non-header line in file order, full (reads the whole file: for small sessions)."""
        with self._lock:
            return [self._index.full_at(i) for i in range(len(self._index))]

    # ------------------------------------------------------------------ context

    def context(self) -> Projection:
        """The projection of the current branch; only the context entries are read in full.

        Cached until the leaf or the session changes, so asking twice costs nothing.
        """
        with self._lock:
            cache_key = (key(self._index.tree.leaf_id), len(self._index))
            if self._projection is not None and self._projection[0] == cache_key:
                return self._projection[1]
            light = self._light_context()
            projection = project_entries(self._index.full_path(light.ctx), light.settings)
            self._projection = (cache_key, projection)
            self._generation += 1
            return projection

    def _light_context(self) -> _LightContext:
        tree = self._index.tree
        leaf = key(tree.leaf_id)
        cached = self._light_ctx
        if cached is not None and cached.leaf == leaf and cached.count == len(self._index):
            return cached
        path = tree.context_path()
        ctx = context_entries(path)
        if ctx is path:
            ctx = list(path)  # both lists grow on appends: they must not be one list
        self._light_ctx = _LightContext(leaf, len(self._index), path, context_settings(path), ctx)
        return self._light_ctx

    def _extend_light_context(self, parent: Any, light: Any, is_new_id: bool, full: Entry) -> None:
        """After an append: extend the cached path (and projection) if the entry hangs below the leaf.

        Keeps rebuilding context after an append proportional to what was appended: the
        projection grows by the new entry's messages unless the entry changes how earlier
        ones project (a compaction or a context edit), which rebuilds it from the context
        entries.
        """
        cached = self._light_ctx
        previous = self._projection
        self._projection = None
        if cached is None or not is_new_id or cached.leaf != key(parent) or type(light) is not dict:
            self._light_ctx = None
            return
        before = (cached.leaf, cached.count)
        cached.path.append(light)
        cached.settings = next_settings(cached.settings, light)
        if light.get("type") == E.COMPACTION:
            ctx = context_entries(cached.path)
            cached.ctx = list(ctx) if ctx is cached.path else ctx
        else:
            cached.ctx.append(light)
        cached.leaf = key(light.get("id", UNDEFINED))
        cached.count = len(self._index)
        t = light.get("type")
        if previous is not None and previous[0] == before and t not in (E.COMPACTION, E.CONTEXT_EDIT):
            old = previous[1]
            messages = entry_messages(full)
            self._projection = (
                (cached.leaf, cached.count),
                Projection(
                    [*old.entries, ProjectedEntry(full, messages)],
                    [*old.messages, *messages],
                    cached.settings,
                ),
            )

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

        Kept current incrementally while appends only extend the context, so asking after
        every append costs what was appended (a ``UsageTracker`` per estimator).
        """
        with self._lock:
            projection = self.context()
            branch = self._current_branch()
            cached = self._usage.get(estimator.name)
            if cached is not None and cached[0] == self._generation:
                return cached[1].extend(projection, branch)
            tracker = UsageTracker(estimator)
            self._usage[estimator.name] = (self._generation, tracker)
            return tracker.reset(projection, branch)

    def prepare_compaction(
        self, settings: CompactionSettings, estimator: TokenEstimator = PI
    ) -> CompactionPreparation | NoCompaction:
        return self.prepare_compaction_at_leaf(settings, estimator)[1]

    def prepare_compaction_at_leaf(
        self, settings: CompactionSettings, estimator: TokenEstimator = PI
    ) -> tuple[Any, CompactionPreparation | NoCompaction]:
        """The preparation and the leaf it was made at (one consistent view, for staleness checks).

        Only the snapshot is taken under the lock — the current branch (copied: appends extend
        the cached list) and its cached projection (appends replace it, never change it) — so
        writers are not held up while the cut point is searched.
        """
        with self._lock:
            leaf = self._index.tree.leaf_id
            branch = list(self._current_branch())
            projection = self.context()
        return leaf, prepare_compaction(branch, settings, estimator, projection=projection)

    def context_for(self, path: list[Any]) -> Projection:
        """The projection of an arbitrary light path (reading only its context entries)."""
        full = self._index.full_path(context_entries(path))
        return project_entries(full, context_settings(path))

    # ------------------------------------------------------------------ leaf

    def set_leaf(self, entry_id: Any) -> None:
        """Pi's ``branch(id)``: move the leaf in memory (the next entry becomes its child)."""
        with self._lock:
            try:
                self._index.tree.set_leaf(entry_id)
            except KeyError:
                raise EntryNotFoundError(entry_id) from None

    def reset_leaf(self) -> None:
        """Pi's ``resetLeaf()``: the next entry starts a new root."""
        with self._lock:
            self._index.tree.reset_leaf()

    def move_leaf(self, entry_id: Any, *, durability: Durability | None = None) -> str | None:
        """Move the leaf and persist the move, so a reopen (in sessiond or Pi) restores it.

        Appends a ``custom`` entry (``customType: "sessiond.leaf"``) whose parent is the new
        leaf: the last line of the file then leads back to it, which is how Pi picks its leaf.
        The marker contributes nothing to context. ``None`` means "before the first entry".
        Returns the marker's id, or ``None`` when the leaf is already there.
        """
        pending = self.begin_move_leaf(entry_id, durability=durability)
        return None if pending is None else pending.wait()[0]

    def begin_move_leaf(self, entry_id: Any, *, durability: Durability | None = None) -> PendingAppend | None:
        """:meth:`move_leaf` without waiting for durability (``None``: already there)."""
        with self._lock:
            self._before_write()
            if entry_id is not None and entry_id not in self._index.tree:
                raise EntryNotFoundError(entry_id)
            old = self._index.tree.leaf_id
            if key(old) == key(entry_id):
                return None
            marker = {
                "type": E.CUSTOM,
                "customType": LEAF_MARKER,
                "data": {"from": None if nullish(old) else old},
            }
            return self._stage_and_write([marker], entry_id, durability)

    # ------------------------------------------------------------------ appends

    def append_entries(
        self,
        specs: list[Any],
        *,
        parent_id: Any = UNDEFINED,
        expect_leaf_id: Any = UNDEFINED,
        durability: Durability | None = None,
    ) -> list[str]:
        """Append a batch of entries (specs: entries without id/parentId/timestamp).

        The first entry hangs below ``parent_id`` (default: the leaf; ``None``: a new root),
        each next one below the previous; the leaf ends on the last. With ``expect_leaf_id``
        the batch is only appended if the leaf is still that entry (compare-and-append, for
        several writers sharing a session). Every spec is validated before anything is
        written, and the batch is written with one ``write()``: all of it or nothing.
        """
        return self.begin_append(
            specs, parent_id=parent_id, expect_leaf_id=expect_leaf_id, durability=durability
        ).wait()

    def begin_append(
        self,
        specs: list[Any],
        *,
        parent_id: Any = UNDEFINED,
        expect_leaf_id: Any = UNDEFINED,
        durability: Durability | None = None,
    ) -> PendingAppend:
        """:meth:`append_entries` without waiting for durability: call ``.wait()`` to acknowledge."""
        if type(specs) is not list or not specs:
            raise InvalidArgumentError("entries must be a non-empty array", field="entries")
        with self._lock:
            self._before_write()
            current = self._leaf_for_append()
            if expect_leaf_id is not UNDEFINED and key(expect_leaf_id) != key(current):
                raise LeafMismatchError(expect_leaf_id, current)
            if parent_id is UNDEFINED:
                parent = current
            elif parent_id is None or parent_id in self._index.tree:
                parent = parent_id
            else:
                raise EntryNotFoundError(parent_id)
            return self._stage_and_write(specs, parent, durability)

    def _one(self, spec: dict[str, Any], durability: Durability | None) -> str:
        return self.append_entries([spec], durability=durability)[0]

    def append_message(self, message: Any, *, durability: Durability | None = None) -> str:
        return self._one({"type": E.MESSAGE, "message": message}, durability)

    def append_thinking_level_change(self, level: str, *, durability: Durability | None = None) -> str:
        return self._one({"type": E.THINKING_LEVEL_CHANGE, "thinkingLevel": level}, durability)

    def append_model_change(
        self, provider: str, model_id: str, *, durability: Durability | None = None
    ) -> str:
        return self._one({"type": E.MODEL_CHANGE, "provider": provider, "modelId": model_id}, durability)

    def append_usage(
        self,
        kind: str,
        provider: str,
        model: str,
        usage: Any,
        note: Any = UNDEFINED,
        *,
        durability: Durability | None = None,
    ) -> str:
        spec = {
            "type": E.USAGE,
            "kind": kind,
            "provider": provider,
            "model": model,
            "usage": usage,
            "note": note,
        }
        return self._one(_defined(spec), durability)

    def append_custom(
        self, custom_type: str, data: Any = UNDEFINED, *, durability: Durability | None = None
    ) -> str:
        return self._one(_defined({"type": E.CUSTOM, "customType": custom_type, "data": data}), durability)

    def append_custom_message(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = UNDEFINED,
        *,
        durability: Durability | None = None,
    ) -> str:
        spec = {
            "type": E.CUSTOM_MESSAGE,
            "customType": custom_type,
            "content": content,
            "display": display,
            "details": details,
        }
        return self._one(_defined(spec), durability)

    def append_label(
        self, target_id: Any, label: Any = UNDEFINED, *, durability: Durability | None = None
    ) -> str:
        """Set (or, with no/empty label, clear) the label of any entry."""
        return self._one(_defined({"type": E.LABEL, "targetId": target_id, "label": label}), durability)

    def set_name(self, name: str, *, durability: Durability | None = None) -> str:
        """Pi's ``appendSessionInfo``: newlines become spaces, the name is trimmed, empty clears."""
        return self._one({"type": E.SESSION_INFO, "name": name}, durability)

    def append_context_edit(
        self, target_id: Any, replacement: Any, *, durability: Durability | None = None
    ) -> str:
        """Pi's ``appendContextEdit``: replace (or with ``None`` hide) what an entry contributes."""
        return self._one(
            {"type": E.CONTEXT_EDIT, "targetId": target_id, "replacement": replacement}, durability
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: Any,
        tokens_before: int,
        details: Any = UNDEFINED,
        from_hook: Any = UNDEFINED,
        usage: Any = UNDEFINED,
        *,
        durability: Durability | None = None,
    ) -> str:
        """A compaction checkpoint after the leaf; ``first_kept_entry_id=None`` keeps nothing.

        Snapshots the current system prompt and tools (every system message of the current
        context replayed into one) on the entry, as Pi does. Unlike Pi, the kept entry must be
        on the current branch: a checkpoint that keeps an entry of another branch would
        silently keep nothing.
        """
        spec = {
            "type": E.COMPACTION,
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
            "details": details,
            "usage": usage,
            "fromHook": from_hook,
        }
        return self._one(_defined(spec), durability)

    def branch_with_summary(
        self,
        branch_from_id: Any,
        summary: str,
        details: Any = UNDEFINED,
        from_hook: Any = UNDEFINED,
        usage: Any = UNDEFINED,
        *,
        durability: Durability | None = None,
    ) -> str:
        """Pi's ``branchWithSummary``: move the leaf and record what the old branch did."""
        spec = {
            "type": E.BRANCH_SUMMARY,
            "summary": summary,
            "details": details,
            "usage": usage,
            "fromHook": from_hook,
        }
        return self.append_entries([_defined(spec)], parent_id=branch_from_id, durability=durability)[0]

    # ------------------------------------------------------------------ the write path

    def _new_id(self, staged: dict[Hashable, Any] | None = None) -> str:
        tree = self._index.tree
        if not staged:
            return short_id(lambda candidate: candidate in tree)
        return short_id(lambda candidate: candidate in tree or candidate in staged)

    def _leaf_for_append(self) -> Any:
        leaf = self._index.tree.leaf_id
        return None if leaf is UNDEFINED else leaf

    def _stage_and_write(self, specs: list[Any], parent: Any, durability: Durability | None) -> PendingAppend:
        """Validate and build every spec, then write them all (caller holds the lock)."""
        if self.read_only is not None:
            raise ReadOnlySessionError(self.id, self.read_only)
        tree = self._index.tree
        if parent is None:
            light_path: list[Any] = []
        elif key(parent) == key(tree.leaf_id) and truthy(parent):
            light_path = self._light_context().path  # read only here; never copied per append
        else:
            light_path = tree.branch(parent)
        staged: dict[Hashable, Entry] = {}
        entries: list[Entry] = []
        leaf_before = self._leaf_for_append()
        on_path_cache: set[Hashable] = set()

        def on_path(entry_id: Any) -> bool:
            """Whether an id is on the branch being extended (built only if a spec asks)."""
            k = key(entry_id)
            if k in staged:
                return True
            if not on_path_cache and light_path:
                on_path_cache.update(key(get(e, "id")) for e in light_path)
            return k in on_path_cache

        def system_snapshot() -> Any:
            ctx = context_entries([*light_path, *entries])
            full = [e if key(get(e, "id")) in staged else self._index.full(e) for e in ctx]
            return current_system_message(project_entries(full, context_settings(ctx)).messages)

        for index, spec in enumerate(specs):
            view = StageView(
                exists=lambda i: i in tree or key(i) in staged,
                on_branch=on_path,
                lookup=lambda i: staged.get(key(i)) or tree.get(i),
                leaf=leaf_before,
                system_snapshot=system_snapshot,
            )
            try:
                entry = build_entry(spec, self._new_id(staged), parent, iso_now(), view)
            except SessiondError as exc:
                if len(specs) > 1:
                    exc.data["index"] = index  # which entry of the batch was refused
                raise
            entries.append(entry)
            eid = entry["id"]
            staged[key(eid)] = entry
            parent = leaf_before = eid
        return self._write_locked(entries, durability)

    def _write_locked(self, entries: list[Entry], durability: Durability | None) -> PendingAppend:
        """Write built entries with one ``write()`` and index them (caller holds the lock)."""
        mode = durability or self.durability
        lines = [encode_line(e) for e in entries]
        ids = [str(e["id"]) for e in entries]
        if self._journal is None:
            self._projection = None
            self._light_ctx = None
            if not any(self._is_conversation(e) for e in entries) and not self._has_conversation():
                for entry, line in zip(entries, lines, strict=True):
                    self._index.add(entry, -1, len(line))
                return PendingAppend(ids, None, None)
            self._flush_first(entries, lines, mode)  # an fsync-mode create is durable on return
            return PendingAppend(ids, None, None)
        start, end = self._journal.append(b"".join(lines))
        offset = start
        for entry, line in zip(entries, lines, strict=True):
            is_new_id = entry["id"] not in self._index.tree
            light = self._index.add(entry, offset, len(line), keep=True)
            self._extend_light_context(entry.get("parentId"), light, is_new_id, entry)
            offset += len(line)
        self._scan_end = end
        return PendingAppend(ids, self._journal if mode is Durability.FSYNC else None, end)

    @staticmethod
    def _is_conversation(e: Any) -> bool:
        return get(e, "type") == E.MESSAGE and get(get(e, "message"), "role") in ("user", "assistant")

    def _has_conversation(self) -> bool:
        return any(self._is_conversation(e) for e in self._index.tree.entries)

    def _flush_first(self, entries: list[Entry], lines: list[bytes], mode: Durability) -> None:
        """Pi's first flush: create the file with the header, everything held, and the new lines."""
        index = self._index
        head = [encode_line(index.header)]
        held = [encode_line(index.full_at(pos)) for pos in range(len(index))]
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        journal = Journal.create(self.path, b"".join(head + held + lines), mode)
        offset = len(head[0])
        written: list[tuple[int, int]] = []
        for raw in held:
            written.append((offset, len(raw)))
            offset += len(raw)
        index.mark_written(0, written)
        for entry, line in zip(entries, lines, strict=True):
            index.add(entry, offset, len(line), keep=True)
            offset += len(line)
        index.read_body = journal.pread
        self._journal = journal
        self._scan_end = journal.size

    # ------------------------------------------------------------------ someone else's appends

    def _before_write(self) -> None:
        if self.read_only is not None:
            raise ReadOnlySessionError(self.id, self.read_only)
        self._catch_up()

    def _catch_up(self) -> None:
        """Before writing (under the lock): index what another program appended meanwhile.

        Without this an external append would be skipped by the index (the journal adopts the
        new end of file) and the daemon's entry would hang below a stale leaf. What is read here
        waits in :attr:`external_backlog` for the owner to announce it. A line another program
        is writing right now (no newline yet, file touched within the last second) is not cut
        off: the write is refused and can be retried.
        """
        journal = self._journal
        if journal is None or journal.broken:
            return  # (a broken journal refuses the write itself)
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise SessionChangedError(str(self.path), "the file was deleted") from None
        if st.st_size == self._scan_end and st.st_size == journal.size:
            return
        result = self.ingest()
        if result.reload_required is not None:
            raise SessionChangedError(str(self.path), result.reload_required)
        self.external_backlog.extend(result.entries)
        if result.partial_tail and time.time() - st.st_mtime < 1.0:
            raise SessionChangedError(
                str(self.path), "another program is writing a line to it right now; retry"
            )

    def take_external(self) -> list[Any]:
        """Entries another program appended that a write indexed first (see :meth:`_catch_up`)."""
        with self._lock:
            backlog, self.external_backlog = self.external_backlog, []
            return backlog

    def ingest(self) -> IngestResult:
        """Index complete lines another program appended since the last known end of file.

        A last line without its newline is left alone until it completes. A file that shrank,
        was replaced or deleted cannot be followed: ``reload_required`` says why.
        """
        with self._lock:
            result = IngestResult()
            if self._journal is None:
                return result
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                result.reload_required = "the file was deleted"
                return result
            fst = self._journal.fstat()
            if (st.st_ino, st.st_dev) != (fst.st_ino, fst.st_dev):
                result.reload_required = "the file was replaced"
                return result
            if st.st_size < self._scan_end:
                result.reload_required = "the file was truncated"
                return result
            if st.st_size == self._scan_end:
                return result
            start = self._scan_end
            data = self._journal.pread(start, st.st_size - start)
            result.bytes_read = len(data)
            if self._tail_start >= 0:
                # A line without newline was indexed at open; its newline may have arrived now.
                if data[:1] == b"\n":
                    data = data[1:]
                    start += 1
                    self._tail_start = -1
                else:
                    result.reload_required = "the unterminated last line was extended"
                    return result
            cut = data.rfind(b"\n") + 1
            complete, rest = data[:cut], data[cut:]
            diag = LoadDiagnostics()
            with paused_gc():
                for offset, length, value in scan_lines(io.BytesIO(complete), diag, start):
                    if type(value) is dict and value.get("type") == E.HEADER:
                        self.diagnostics.extra_headers += 1
                        continue
                    if type(value) is dict:
                        # Like an own append: the cached context grows instead of being rebuilt.
                        is_new_id = value.get("id", UNDEFINED) not in self._index.tree
                        light = self._index.add(value, offset, length, keep=True)
                        self._extend_light_context(value.get("parentId"), light, is_new_id, value)
                    else:
                        self._index.add(value, offset, length)
                        self._projection = None
                        self._light_ctx = None
                    result.entries.append(value)
            self.diagnostics.blank_lines += diag.blank_lines
            self.diagnostics.unparsable_lines += diag.unparsable_lines
            self.diagnostics.falsy_lines += diag.falsy_lines
            self._scan_end = start + len(complete)
            result.partial_tail = bool(rest)
            self._journal.observe_external_growth(self._scan_end, ends_with_newline=True)
            return result

    # ------------------------------------------------------------------ fork and clone

    def create_branched_session(
        self, leaf_id: Any, *, durability: Durability | None = None, directory: Path | None = None
    ) -> Session:
        """Pi's ``createBranchedSession``: a new session holding only the path to ``leaf_id``.

        Labels are dropped from the path and re-created after it (with their original
        timestamps); entries that hung below a label are re-chained to the previous kept entry,
        and a compaction keeping from a label keeps from the entry after it (#5669). The new
        file is written at once when the path holds a user or assistant message.
        """
        with self._lock:
            path = self.branch(leaf_id)
            if not path:
                raise EntryNotFoundError(leaf_id)
            kept: list[Any] = []
            replacement_for_label: dict[Hashable, Any] = {}
            pending_labels: list[Any] = []
            parent: Any = None
            for entry in path:
                if get(entry, "type") == E.LABEL:
                    pending_labels.append(get(entry, "id"))
                    continue
                for label_id in pending_labels:
                    replacement_for_label[key(label_id)] = get(entry, "id")
                pending_labels.clear()
                copy = dict(entry) if type(entry) is dict else entry
                if type(copy) is dict:
                    copy["parentId"] = parent
                    if copy.get("type") == E.COMPACTION:
                        fk = copy.get("firstKeptEntryId", UNDEFINED)
                        if key(fk) != key(copy.get("id", UNDEFINED)):
                            new_fk = replacement_for_label.get(key(fk), fk)
                            if new_fk is UNDEFINED:
                                copy.pop("firstKeptEntryId", None)
                            else:
                                copy["firstKeptEntryId"] = new_fk
                kept.append(copy)
                parent = get(entry, "id")
            sid = uuid7()
            timestamp = iso_now()
            header = E.new_header(sid, timestamp, self.cwd, str(self.path))
            kept_ids = {key(get(e, "id")) for e in kept}
            labels = [(k, v) for k, v in self._index.tree.labels().items() if k in kept_ids]
            last_id = get(kept[-1], "id") if kept else None
            label_parent: Any = last_id if truthy(last_id) else None
            taken = set(kept_ids)
            label_entries: list[Entry] = []
            for target_key, (label, label_ts) in labels:
                target = next(get(e, "id") for e in kept if key(get(e, "id")) == target_key)
                lid = short_id(lambda c: c in taken)
                taken.add(lid)
                label_entries.append(E.new_label(lid, label_parent, label_ts, target, label))
                label_parent = lid
            new_path = (directory or self.path.parent) / session_file_name(timestamp, sid)
            new_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return _session_from_entries(
                new_path, header, [*kept, *label_entries], durability or self.durability
            )

    def fork(
        self,
        entry_id: Any,
        position: Literal["before", "at"] = "before",
        *,
        durability: Durability | None = None,
        directory: Path | None = None,
    ) -> Session:
        """``/fork`` (before a user message: its parent becomes the leaf) or ``/clone`` (at an entry).

        Forking before a first message gives a new, empty session whose ``parentSession`` is
        this one. The new session goes beside this one, or into ``directory`` (a read-only
        session's forks go to sessiond's store).
        """
        with self._lock:
            selected = self.get(entry_id)
            if selected is None:
                raise InvalidArgumentError("Invalid entry ID for forking", field="entryId")
            if not self.flushed:
                raise SessionNotSavedError(
                    "This session has not been saved yet. Send a message before cloning or forking it."
                )
            if position == "at":
                target = get(selected, "id")
            elif position == "before":
                if get(selected, "type") != E.MESSAGE or get(get(selected, "message"), "role") != "user":
                    raise InvalidArgumentError("Invalid entry ID for forking", field="entryId")
                target = get(selected, "parentId")
            else:
                raise InvalidArgumentError("position must be 'before' or 'at'", field="position")
            if not truthy(target):
                return Session.create(
                    directory or self.path.parent,
                    self.cwd,
                    parent_session=str(self.path),
                    durability=durability or self.durability,
                )
            return self.create_branched_session(target, durability=durability, directory=directory)

    @classmethod
    def fork_from(
        cls,
        source: Path,
        target_dir: Path,
        target_cwd: str,
        *,
        session_id: str | None = None,
        durability: Durability = Durability.BUFFERED,
    ) -> Session:
        """Pi's ``forkFrom`` (``--fork``): copy every entry of another session into a new one.

        The source is only read (Pi appends a newline to it). A v1/v2 source is migrated
        first, so the copy is a valid v3 session (Pi 1.6.0 copies it unmigrated).
        """
        loaded = load_session(source)
        sid = uuid7() if session_id is None else validate_session_id(session_id)
        timestamp = iso_now()
        header = E.new_header(sid, timestamp, resolve_cwd(target_cwd), os.path.abspath(source))
        target_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = target_dir / session_file_name(timestamp, sid)
        data = encode_line(header) + b"".join(encode_line(e) for e in loaded.entries)
        Journal.create(path, data, durability).close()
        return cls.open(path, durability=durability)


# ---------------------------------------------------------------------------- helpers


def _defined(spec: dict[str, Any]) -> dict[str, Any]:
    """A spec without the optional fields left ``UNDEFINED``."""
    return {k: v for k, v in spec.items() if v is not UNDEFINED}


def _needs_migration(header: dict[str, Any]) -> bool:
    version = header_version(header)
    return isinstance(version, int | float) and not isinstance(version, bool) and version < E.CURRENT_VERSION


def _migrate_file(path: Path) -> Any:
    """Migrate a v1/v2 file to v3 and replace it atomically (temp file, fsync, rename)."""
    loaded = load_session(path)
    data = b"".join(encode_line(line) for line in loaded.file_lines)
    fd, tmp = tempfile.mkstemp(prefix=".migrate-", suffix=".jsonl", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return loaded.diagnostics.source_version


def _session_from_entries(
    path: Path, header: dict[str, Any], entries: list[Any], durability: Durability
) -> Session:
    """A new session holding ``entries``; written now iff they include a conversation (Pi's rule)."""
    if path.exists():
        raise SessionExistsError(str(path))
    index = SessionIndex(header)
    lines = [encode_line(e) for e in entries]
    for entry, line in zip(entries, lines, strict=True):
        index.add(entry, -1, len(line))
    session = Session(path, index, None, LoadDiagnostics(), durability)
    conversation = any(
        get(e, "type") == E.MESSAGE and get(get(e, "message"), "role") in ("user", "assistant")
        for e in entries
    )
    if conversation:
        head = encode_line(header)
        journal = Journal.create(path, head + b"".join(lines), durability)
        offsets = []
        offset = len(head)
        for line in lines:
            offsets.append((offset, len(line)))
            offset += len(line)
        index.mark_written(0, offsets)
        index.read_body = journal.pread
        session._journal = journal
        session._scan_end = journal.size
    return session
