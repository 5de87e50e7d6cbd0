"""Writing a Pi session: every append follows one path, and the first flush creates the file.

validate -> build the entry in Pi's key order -> encode one line -> one ``write()`` ->
index -> (``fsync`` mode) wait for the shared ``fdatasync`` -> acknowledge. A write that
fails leaves the in-memory state untouched: the entry is only indexed once its line is
written. Pi's first-flush rule is kept: a session's file appears with its first user or
assistant message, holding everything appended before it.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import (
    ClusterUnavailableError,
    EntryNotFoundError,
    InvalidArgumentError,
    LeafMismatchError,
    ReadOnlySessionError,
    SessionChangedError,
    SessiondError,
    SessionExistsError,
)
from ...formats.pi import LoadDiagnostics, encode_line
from ...model import entries as E
from ...model.entries import Entry
from ...model.js import UNDEFINED, get, iso_now, key, truthy
from ...model.messages import current_system_message
from ...model.projection import ContextSettings, context_entries, project_entries
from ..ids import short_id
from ..index import SessionIndex
from ..journal import Durability, Journal
from ..remote import RemoteLog, RemoteMoved
from ..specs import StageView
from ..specs import build as build_entry
from .ingest import FollowedSession


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
    start: int = -1
    """The file offset where the entries' lines begin (-1: not written to the file yet)."""
    data: bytes | None = None
    """The lines written, exactly the file's bytes from :attr:`start` (``None``: not a plain
    append, e.g. the first flush that creates the file): the daemon hands them to the other
    readers of the file (the usage records), which then need not read them back."""

    @property
    def needs_sync(self) -> bool:
        return self.journal is not None and self.end is not None

    def wait(self) -> list[str]:
        """Block until the entries are durable (in ``fsync`` mode; at once otherwise)."""
        if self.journal is not None and self.end is not None:
            self.journal.sync(self.end)
        return self.entry_ids


_RECENT_ON_PATH = 512
"""Entries at the end of the branch an on-branch check reads before building the set of all."""

REMOTE_ATTEMPTS = 50
"""How often an append is staged again after other daemons appended first (a shared log)."""
REMOTE_BACKOFF = 0.05
"""Seconds to wait before committing again after a transient refusal (a leader change)."""


class WritableSession(FollowedSession):
    """A Pi session sessiond writes: the only writer of its file. Mutations serialise on the lock,
    ``fsync`` waits are shared."""

    def __init__(
        self,
        path: Path,
        index: SessionIndex,
        journal: Journal | None,
        diagnostics: LoadDiagnostics,
        durability: Durability,
        scan_end: int = 0,
    ) -> None:
        super().__init__(path, index, journal, diagnostics, scan_end)
        self.durability = durability
        self.remote: RemoteLog | None = None
        """The shared log this session's file replicates (a JetStream store), or ``None``: the
        file is the log (the local store)."""

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
            if self.remote is None:  # the local store: the file is the log
                return self._begin_locked(specs, parent_id, expect_leaf_id, durability)
            for _ in range(REMOTE_ATTEMPTS):
                try:
                    return self._begin_locked(specs, parent_id, expect_leaf_id, durability)
                except RemoteMoved:
                    # Another daemon appended first: take its entries, then stage again on the
                    # new leaf (or refuse, if the caller expected the old one).
                    self._pull_remote(fetch=True, after_conflict=True)
            raise ClusterUnavailableError(self.id, f"the log kept moving for {REMOTE_ATTEMPTS} attempts")

    def _begin_locked(
        self, specs: list[Any], parent_id: Any, expect_leaf_id: Any, durability: Durability | None
    ) -> PendingAppend:
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
        light_ctx: list[Any] | None = None
        """The context entries of ``light_path`` when the light context already has them."""
        if parent is None:
            light_path: list[Any] = []
        elif key(parent) == key(tree.leaf_id) and truthy(parent):
            cached = self._light_context()
            light_path, light_ctx = cached.path, cached.ctx  # read only here; never copied per append
        else:
            light_path = tree.branch(parent)
        staged: dict[Hashable, Entry] = {}
        entries: list[Entry] = []
        leaf_before = self._leaf_for_append()
        on_path_cache: set[Hashable] = set()

        def on_path(entry_id: Any) -> bool:
            """Whether an id is on the branch being extended. What specs name is usually recent
            (a checkpoint's first kept entry, a context edit's target): the newest entries are
            looked at first, the set of every id is built only if the id is not among them."""
            k = key(entry_id)
            if k in staged:
                return True
            if not on_path_cache and light_path:
                for e in light_path[-1 : -_RECENT_ON_PATH - 1 : -1]:
                    if key(get(e, "id")) == k:
                        return True
                on_path_cache.update(key(get(e, "id")) for e in light_path)
            return k in on_path_cache

        def system_snapshot() -> Any:
            if light_ctx is not None and not any(
                get(e, "type") == E.COMPACTION or E.is_leaf_marker(e) for e in entries
            ):
                # what context_entries gives for the path and the staged entries, without a walk
                sources = [*system_sources(light_ctx), *system_sources(entries, first=not light_ctx)]
            else:
                sources = system_sources(context_entries([*light_path, *entries]))
            full = [
                e if get(e, "type") == E.CONTEXT_EDIT or key(get(e, "id")) in staged else self._index.full(e)
                for e in sources
            ]
            # (the settings do not change a system message)
            return current_system_message(project_entries(full, ContextSettings()).messages)

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
        data = b"".join(lines)
        if self.remote is not None:
            self.remote.commit(data, create=False, leaf=ids[-1])
        start, end = self._journal.append(data)
        offset = start
        for entry, line in zip(entries, lines, strict=True):
            is_new_id = entry["id"] not in self._index.tree
            light = self._index.add(entry, offset, len(line), keep=True, preview_later=True)
            self._extend_light_context(entry.get("parentId"), light, is_new_id, entry)
            offset += len(line)
        self._scan_end = end
        return PendingAppend(ids, self._journal if mode is Durability.FSYNC else None, end, start, data)

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
        data = b"".join(head + held + lines)
        if self.remote is not None:
            self.remote.commit(data, create=True, leaf=entries[-1]["id"])
            mode = Durability.BUFFERED  # the replica: durability is the log's
        journal = Journal.create(self.path, data, mode)
        offset = len(head[0])
        written: list[tuple[int, int]] = []
        for raw in held:
            written.append((offset, len(raw)))
            offset += len(raw)
        index.mark_written(0, written)
        for entry, line in zip(entries, lines, strict=True):
            index.add(entry, offset, len(line), keep=True, preview_later=True)
            offset += len(line)
        index.read_body = journal.pread
        self._journal = journal
        self._scan_end = journal.size

    def _before_write(self) -> None:
        if self.read_only is not None:
            raise ReadOnlySessionError(self.id, self.read_only)
        self._catch_up()
        if self.remote is not None:
            self._pull_remote(fetch=False)

    # ------------------------------------------------------------------ a shared log

    def take_remote(self) -> list[Any]:
        """Write and index what other daemons committed (delivered by the log's subscription);
        returns every entry another writer appended that is not announced yet."""
        with self._lock:
            if self.remote is not None:
                self._pull_remote(fetch=False)
        return self.take_external()

    def _pull_remote(self, *, fetch: bool, after_conflict: bool = False) -> None:
        """Write other daemons' batches to the replica file and index them as external lines.

        After a refused commit there must be something new; nothing means the log no longer
        ends where this replica does (the session was deleted from the shared store)."""
        assert self.remote is not None
        batches = self.remote.pull(fetch=fetch)
        if not batches:
            if after_conflict:
                if self.remote.vanished():
                    raise SessionChangedError(
                        str(self.path), "its log in the shared store was deleted or cut short; reload it"
                    )
                time.sleep(REMOTE_BACKOFF)  # a refusal during a leader change: try again
            return
        if self._journal is None:
            # Our first write lost the race to create the log: someone owns this id already.
            raise SessionExistsError(f"{self.id} (in the shared store)")
        self._journal.append(b"".join(batches))
        result = self.ingest()
        if result.reload_required is not None:
            raise SessionChangedError(str(self.path), result.reload_required)
        self.external_backlog.extend(result.entries)


def _defined(spec: dict[str, Any]) -> dict[str, Any]:
    """A spec without the optional fields left ``UNDEFINED``."""
    return {k: v for k, v in spec.items() if v is not UNDEFINED}


def system_sources(ctx: list[Any], *, first: bool = True) -> list[Any]:
    """The context entries the current system message is made from, in order.

    A system message reaches the projection from a ``message`` entry of role ``system`` (the
    light entry has the role) or from the compaction the context starts with; a
    ``context_edit`` can only hide one (``null``: system messages take no replacement), which
    its light form tells (its target, whether the replacement is ``null``). Everything else
    contributes no system message and changes none, so the snapshot a checkpoint carries reads
    these few bodies instead of the whole context (a 10,000-entry context: ~40 ms, issue 30).
    Context edits are returned as they are (light); the others are read in full by the caller.
    ``first``: ``ctx`` starts the context (a compaction there is the context's checkpoint).
    """
    out: list[Any] = []
    message, edit, compaction = E.MESSAGE, E.CONTEXT_EDIT, E.COMPACTION
    for n, entry in enumerate(ctx):
        if type(entry) is not dict:
            continue
        t = entry.get("type")
        if t == message:
            if get(entry.get("message"), "role") == "system":
                out.append(entry)
        elif t == edit or (t == compaction and n == 0 and first):
            out.append(entry)
    return out
