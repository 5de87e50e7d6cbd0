"""The file-history state machine of one session (docs/file-history.md).

Everything it knows comes from snapshot data (the ``data`` of ``sessiond.fileSnapshot``
entries), replayed in file order; every operation that learns something returns the data to
persist and has already replayed it itself, so a history rebuilt from the persisted data is
the one that produced it. It touches files only through :class:`Workspace` and
:class:`~.blobs.Blobs`.

A rewind is three calls, and the order is the safety argument::

    plan = history.plan(message_id, force=force)      # the dry run: plan.as_json()
    undo = history.undo_data(plan, undo_id)           # backs up every file about to change
    persist(undo)                                     # the caller: durably, *before* ...
    result, seen = history.execute(plan)              # ... anything is written
    persist(seen)

``execute`` overwrites or deletes a file only if it still holds exactly what ``undo_data``
backed up (``force`` included), so whatever a rewind replaces can be put back by rewinding to
the undo id. Conflicts are judged against ``seen``: what this session last saw or wrote.

Every snapshot records the identity (device, inode) of each root it was taken in (``roots``);
a rewind restores states only into the directory they were recorded in, so a session directory
replaced by a symlink to another one, or by another directory, is refused as a whole.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeAlias

from ..errors import InvalidArgumentError
from .blobs import Blobs
from .diff import FileDiff, diff_states
from .errors import (
    CheckpointNotFoundError,
    FileAccessError,
    FileChangedError,
    FileHistoryError,
    InvalidSnapshotError,
    PathRefusedError,
    RewindOrderError,
)
from .states import SYMLINK_PREFIX, FileState, content_key, same_state
from .workspace import RootId, Workspace, identity_json, root_mismatch

SnapshotKind: TypeAlias = Literal["checkpoint", "update", "undo"]
Action: TypeAlias = Literal["none", "write", "delete", "symlink"]
Status: TypeAlias = Literal["ok", "conflict", "refused", "forced", "failed"]

KINDS: Final = ("checkpoint", "update", "undo")
INITIAL: Final = "initial"
"""The message id of files tracked before the session's first checkpoint."""

CHANGED_SINCE_PLAN: Final = "changed since the plan"


# ---------------------------------------------------------------------- plans and results


@dataclass(frozen=True, slots=True)
class FileAction:
    """One file of a rewind: what it needs (``action``) and whether it is done (``status``).

    ``ok``: done (or nothing to do when ``action`` is ``none``); ``forced``: done although the
    file had changed since this session last saw it; ``conflict``: someone else changed it, left
    alone; ``refused``: the path may not be touched, left alone; ``failed``: it could not be done.
    """

    path: str
    action: Action
    status: Status
    target: FileState
    current: FileState | None = None
    """What the file held when judged (None when it could not be read)."""
    reason: str | None = None

    @property
    def changes(self) -> bool:
        """Whether this file is (to be) written or deleted."""
        return self.action != "none" and self.status in ("ok", "forced")

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "action": self.action, "status": self.status}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.current is not None:
            out["from"] = self.current.to_json()
        out["to"] = self.target.to_json()
        return out


def totals(files: list[FileAction]) -> dict[str, int]:
    out = {
        "files": len(files),
        "changes": 0,
        "unchanged": 0,
        "conflicts": 0,
        "refused": 0,
        "forced": 0,
        "failed": 0,
    }
    for f in files:
        if f.changes:
            out["changes"] += 1
        elif f.action == "none" and f.status == "ok":
            out["unchanged"] += 1
        if f.status == "conflict":
            out["conflicts"] += 1
        elif f.status == "refused":
            out["refused"] += 1
        elif f.status == "forced":
            out["forced"] += 1
        elif f.status == "failed":
            out["failed"] += 1
    return out


@dataclass(slots=True)
class RewindPlan:
    """What a rewind would do, file by file (sorted by path). ``as_json()`` is the dry run."""

    message_id: str
    force: bool
    files: list[FileAction]
    undo_id: str | None = None
    """Set by :meth:`FileHistory.undo_data`."""
    backed_up: dict[str, FileState | FileHistoryError] = field(default_factory=dict)
    """Per file to change: the state the undo snapshot recorded, or why it could not."""
    executed: bool = False
    roots: dict[str, RootId] = field(default_factory=dict)
    """The identity each root the plan touches must still have when it is carried out."""
    own_links: dict[str, str] = field(default_factory=dict)
    """For an undo: key -> the symlink (content key) the undone rewind created there, which the
    undo may replace although it is a symlink."""

    def as_json(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "force": self.force,
            "files": [f.as_json() for f in self.files],
            "totals": totals(self.files),
        }


@dataclass(frozen=True, slots=True)
class RewindResult:
    """What a rewind did. For every file that did not change between the plan and the run, its
    entry equals the plan's."""

    message_id: str
    undo_id: str
    force: bool
    files: list[FileAction]
    seen_data: dict[str, Any]
    """The snapshot data recording what was written (persist it; :meth:`FileHistory.execute`
    returns it too)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "undoId": self.undo_id,
            "force": self.force,
            "files": [f.as_json() for f in self.files],
            "totals": totals(self.files),
        }


# ---------------------------------------------------------------------- parsing


Roots: TypeAlias = dict[str, RootId]


@dataclass(frozen=True, slots=True)
class _Snapshot:
    message_id: str | None
    kind: SnapshotKind
    files: dict[str, FileState]
    seen: dict[str, str]
    roots: Roots | None
    """Root path -> identity when it was taken; None for snapshots written before identities."""


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_roots(raw: object) -> Roots | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidSnapshotError("roots must map root paths to {dev, ino}")
    out: Roots = {}
    for path, ident in raw.items():
        if not isinstance(path, str) or not path.startswith("/"):
            raise InvalidSnapshotError("a root must be an absolute path", root=path)
        if not (isinstance(ident, Mapping) and _is_count(ident.get("dev")) and _is_count(ident.get("ino"))):
            raise InvalidSnapshotError("a root's identity is {dev, ino}: integers >= 0", root=path)
        out[path] = (ident["dev"], ident["ino"])
    return out


def parse_snapshot(data: object) -> _Snapshot:
    """Validate snapshot data completely (a bad entry changes nothing)."""
    if not isinstance(data, Mapping):
        raise InvalidSnapshotError("snapshot data must be an object")
    kind = data.get("kind")
    if kind == "checkpoint":
        checked: SnapshotKind = "checkpoint"
    elif kind == "update":
        checked = "update"
    elif kind == "undo":
        checked = "undo"
    else:
        raise InvalidSnapshotError(f"unknown snapshot kind {kind!r}", kind=kind)
    message_id = data.get("messageId")
    if message_id is not None and (not isinstance(message_id, str) or not message_id):
        raise InvalidSnapshotError("messageId must be a non-empty string", messageId=message_id)
    raw_files = data.get("files")
    raw_seen = data.get("seen")
    raw_files = {} if raw_files is None else raw_files
    raw_seen = {} if raw_seen is None else raw_seen
    if not isinstance(raw_files, Mapping) or not isinstance(raw_seen, Mapping):
        raise InvalidSnapshotError("files and seen must be objects")
    files: dict[str, FileState] = {}
    for key, state in raw_files.items():
        if not isinstance(key, str) or not key:
            raise InvalidSnapshotError("a file key must be a non-empty string", key=key)
        files[key] = FileState.from_json(state)
    seen: dict[str, str] = {}
    for key, value in raw_seen.items():
        if not isinstance(key, str) or not key or not isinstance(value, str) or not value:
            raise InvalidSnapshotError("seen maps paths to content keys", key=key)
        seen[key] = value
    if message_id is None and (files or checked == "checkpoint"):
        raise InvalidSnapshotError("a snapshot with files needs a messageId")
    return _Snapshot(message_id, checked, files, seen, _parse_roots(data.get("roots")))


def _roots_json(roots: Roots) -> dict[str, Any]:
    return {path: identity_json(ident) for path, ident in roots.items()}


# ---------------------------------------------------------------------- the history


class FileHistory:
    """Replays snapshot entries (dicts: the ``data`` of ``sessiond.fileSnapshot`` custom
    entries) and plans/applies rewinds. Thread-safe (one lock per history); the caller keeps
    plan -> undo_data -> persist -> execute of one rewind together."""

    def __init__(self, blobs: Blobs, workspace: Workspace) -> None:
        self.blobs = blobs
        self.workspace = workspace
        self.tracked: set[str] = set()
        """Keys of every file this session tracked."""
        self.checkpoints: dict[str, dict[str, FileState]] = {}
        """messageId -> {key: state}, in order of first appearance; cumulative (a later entry for
        the same id overrides per file). Undo snapshots are here too (``kinds`` tells them)."""
        self.kinds: dict[str, SnapshotKind] = {}
        """messageId -> ``checkpoint`` (a checkpoint was taken), ``update`` (only files tracked
        under it, e.g. ``initial``) or ``undo`` (the state a rewind replaced)."""
        self.first_state: dict[str, FileState] = {}
        """key -> its state when first tracked."""
        self.seen: dict[str, str] = {}
        """key -> content key of what this session last saw or wrote."""
        self.known_roots: Roots = {}
        """root path -> the first identity a snapshot recorded for it: what states recorded
        without one (older snapshots, Claude Code's) are compared with."""
        self._state_roots: dict[str, dict[str, Roots | None]] = {}
        """messageId -> key -> the roots recorded with the snapshot its state came from."""
        self._first_roots: dict[str, Roots | None] = {}
        self._rewrote: dict[str, dict[str, str]] = {}
        """undo id -> what the rewind it undoes wrote (key -> content key)."""
        self._seq = 0
        self._message_seq: dict[str, int] = {}
        self._first_seq: dict[str, int] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ replay

    def replay(self, data: Mapping[str, Any]) -> None:
        """Apply one snapshot entry's data (in file order). Raises :class:`InvalidSnapshotError`
        (and changes nothing) for data of another shape."""
        snap = parse_snapshot(data)
        with self._lock:
            self._seq += 1
            mid = snap.message_id
            for path, ident in (snap.roots or {}).items():
                self.known_roots.setdefault(path, ident)
            if mid is not None and (snap.kind != "update" or snap.files):
                files = self.checkpoints.get(mid)
                if files is None:
                    files = self.checkpoints[mid] = {}
                    self._message_seq[mid] = self._seq
                labels = self._state_roots.setdefault(mid, {})
                if snap.kind != "update" or mid not in self.kinds:
                    self.kinds[mid] = snap.kind
                for key, state in snap.files.items():
                    files[key] = state
                    labels[key] = snap.roots
                    if snap.kind != "undo" and key not in self.tracked:
                        self.tracked.add(key)
                        self.first_state[key] = state
                        self._first_roots[key] = snap.roots
                        self._first_seq[key] = self._seq
            if mid is not None and snap.kind == "undo" and snap.seen:
                self._rewrote.setdefault(mid, {}).update(snap.seen)
            self.seen.update(snap.seen)

    def _record(self, data: dict[str, Any]) -> dict[str, Any]:
        self.replay(data)
        return data

    # ------------------------------------------------------------------ queries

    def latest_checkpoint_id(self) -> str | None:
        """The last message id with a snapshot that is not an undo."""
        with self._lock:
            for mid in reversed(self.checkpoints):
                if self.kinds.get(mid) != "undo":
                    return mid
            return None

    def latest_checkpoint(self) -> dict[str, dict[str, Any]] | None:
        """The files of the latest (non-undo) snapshot as recorded, in JSON form; None if none."""
        with self._lock:
            mid = self.latest_checkpoint_id()
            if mid is None:
                return None
            return {k: v.to_json() for k, v in self.checkpoints[mid].items()}

    def referenced_blobs(self) -> set[str]:
        """Every blob the snapshots refer to (what a fork must link into its store)."""
        with self._lock:
            out = {s.blob for files in self.checkpoints.values() for s in files.values() if s.blob}
            out.update(s.blob for s in self.first_state.values() if s.blob)
            return out

    def target(self, message_id: str) -> dict[str, FileState]:
        return {key: state for key, (state, _) in self._targets(message_id).items()}

    def _targets(self, message_id: str) -> dict[str, tuple[FileState, Roots | None]]:
        """key -> the state a rewind to ``message_id`` restores: the file's state in that
        snapshot (the last entry for it wins), or — for a file first tracked after it — its state
        when first tracked. For an undo id: exactly the files that rewind replaced. A file
        tracked before the checkpoint but absent from it (it could not be read then) has none and
        is left alone."""
        with self._lock:
            files = self.checkpoints.get(message_id)
            if files is None:
                raise CheckpointNotFoundError(message_id)
            labels = self._state_roots.get(message_id, {})
            if self.kinds.get(message_id) == "undo":
                return {key: (state, labels.get(key)) for key, state in files.items()}
            since = self._message_seq[message_id]
            out: dict[str, tuple[FileState, Roots | None]] = {}
            for key in self.tracked:
                if key in files:
                    out[key] = (files[key], labels.get(key))
                elif self._first_seq.get(key, 0) > since:
                    out[key] = (self.first_state[key], self._first_roots.get(key))
            return out

    # ------------------------------------------------------------------ the roots' identities

    def _recorded_root(self, root: str, labels: Roots | None) -> RootId | None:
        """The identity ``root`` had when a state was recorded: the one its snapshot recorded, else
        the first one any snapshot recorded (older snapshots carry none), else None."""
        if labels is not None and root in labels:
            return labels[root]
        return self.known_roots.get(root)

    def _check_roots(self, targets: dict[str, tuple[FileState, Roots | None]]) -> Roots:
        """The identity each root holding a target must have, checked against the disk now.

        Raises :class:`RootChangedError` when a root leads to another directory than the one
        its states were recorded in (or they were recorded in two different ones); with no
        identity recorded at all, when the root's path is itself a symlink now (it cannot be
        told from a swapped one). Keys outside every root are left to the per-file refusal."""
        expected: dict[str, set[RootId | None]] = {}
        for key, (_, labels) in targets.items():
            try:
                root = self.workspace.locate(key).root
            except PathRefusedError:
                continue
            expected.setdefault(root, set()).add(self._recorded_root(root, labels))
        out: Roots = {}
        for root in sorted(expected):
            now = self.workspace.identity(root)
            recorded = sorted(r for r in expected[root] if r is not None)
            if len(recorded) > 1:
                # States from two incarnations of the directory: whichever it is now, some of
                # them would land in the wrong one.
                wrong = next((r for r in recorded if r != now), recorded[0])
                raise root_mismatch(root, wrong, now)
            if recorded:
                (want,) = recorded
                if now != want:
                    raise root_mismatch(root, want, now)
            elif now is not None and self.workspace.is_symlink(root):
                raise root_mismatch(root, None, now)
            if now is not None:
                out[root] = now
        return out

    # ------------------------------------------------------------------ recording

    def track(self, path: str, message_id: str | None = None, phase: str = "before") -> dict[str, Any]:
        """Record ``path`` for the prompt ``message_id`` (None: the latest checkpoint, or
        ``initial`` before the first); returns the snapshot data to persist.

        ``before`` (call it before modifying the file): the current state is backed up and — unless
        this prompt's snapshot has the file already — added to it; ``seen`` becomes its content.
        ``after`` (the session wrote it): ``seen`` becomes its content; nothing is backed up. A file
        first reported ``after`` is not tracked (its earlier state is unknown): only ``seen`` is kept.
        """
        if phase not in ("before", "after"):
            raise InvalidArgumentError(f"phase must be 'before' or 'after', not {phase!r}", field="phase")
        _, key = self.workspace.resolve(path)
        with self._lock:
            mid = message_id if message_id is not None else (self.latest_checkpoint_id() or INITIAL)
            roots = self.workspace.identities()
            with self.workspace.pinned(roots):
                if phase == "after":
                    return self._record(
                        {
                            "messageId": mid,
                            "kind": "update",
                            "files": {},
                            "seen": {key: self.workspace.current_key(key)},
                            "roots": _roots_json(roots),
                        }
                    )
                state = self.workspace.read_state(key, self.blobs)
            recorded = key in self.checkpoints.get(mid, {}) and self.kinds.get(mid) != "undo"
            files = {} if recorded else {key: state.to_json()}
            return self._record(
                {
                    "messageId": mid,
                    "kind": "update",
                    "files": files,
                    "seen": {key: content_key(state)},
                    "roots": _roots_json(roots),
                }
            )

    def checkpoint(self, message_id: str) -> dict[str, Any]:
        """The state of every tracked file at a user prompt, backed up; returns the data to
        persist (persist it even with no files: a rewind to the first prompt needs it).

        Files already recorded for this prompt keep their recorded state. A file that cannot be
        read now (refused, unreadable) is left out. ``seen`` is not changed: a checkpoint is not
        this session looking at the files, and adopting what someone else wrote meanwhile would
        let a later rewind revert it without a conflict.
        """
        with self._lock:
            undo = self.kinds.get(message_id) == "undo"
            existing = self.checkpoints.get(message_id, {}) if not undo else {}
            labels = self._state_roots.get(message_id, {})
            roots = self.workspace.identities()
            files: dict[str, Any] = {}
            with self.workspace.pinned(roots):
                for key in sorted(self.tracked):
                    if key in existing:
                        # Recorded earlier for this prompt: carried, unless it was recorded in
                        # another directory than the root is now (then the earlier entry keeps it).
                        try:
                            root = self.workspace.locate(key).root
                        except PathRefusedError:
                            continue
                        if self._recorded_root(root, labels.get(key)) in (None, roots.get(root)):
                            files[key] = existing[key].to_json()
                        continue
                    try:
                        files[key] = self.workspace.read_state(key, self.blobs).to_json()
                    except FileHistoryError:
                        continue
            return self._record(
                {
                    "messageId": message_id,
                    "kind": "checkpoint",
                    "files": files,
                    "seen": {},
                    "roots": _roots_json(roots),
                }
            )

    # ------------------------------------------------------------------ diff

    def diff(
        self, message_id: str, path: str | None = None, *, max_bytes: int | None = None
    ) -> list[FileDiff]:
        """Per tracked file (or just ``path``): the diff from its state at ``message_id`` to the
        disk now. A path this checkpoint has no state for gives an empty list."""
        targets = self.target(message_id)
        if path is not None:
            key = path if path in targets else self.workspace.locate(path).key
            keys = [key] if key in targets else []
        else:
            keys = sorted(targets)
        out: list[FileDiff] = []
        for key in keys:
            old = targets[key]
            try:
                new = self.workspace.read_state(key, None)
            except FileHistoryError as exc:
                out.append(FileDiff(key, old, None, None, error=exc.message))
                continue
            if max_bytes is None:
                out.append(diff_states(key, old, new, self.blobs, self.workspace))
            else:
                out.append(diff_states(key, old, new, self.blobs, self.workspace, max_bytes=max_bytes))
        return out

    # ------------------------------------------------------------------ rewind

    def plan(self, message_id: str, *, force: bool = False) -> RewindPlan:
        """What a rewind to ``message_id`` does, file by file; nothing is written. This is the
        dry run, and exactly what :meth:`execute` carries out for files unchanged meanwhile."""
        with self._lock:
            targets = self._targets(message_id)
            roots = self._check_roots(targets)
            own_links: dict[str, str] = {}
            if self.kinds.get(message_id) == "undo":
                own_links = {
                    k: v for k, v in self._rewrote.get(message_id, {}).items() if v.startswith(SYMLINK_PREFIX)
                }
            with self.workspace.pinned(roots):
                files = [self._evaluate(k, targets[k][0], force, own_links.get(k)) for k in sorted(targets)]
            return RewindPlan(message_id, force, files, roots=roots, own_links=own_links)

    def _evaluate(self, key: str, target: FileState, force: bool, own_link: str | None) -> FileAction:
        try:
            current = self.workspace.read_state(key, None)
        except PathRefusedError as exc:
            return FileAction(key, target.action, "refused", target, None, exc.reason)
        except FileHistoryError as exc:
            return FileAction(key, target.action, "failed", target, None, _reason(exc))
        return self._judge(key, current, target, force, own_link)

    def _judge(
        self, key: str, current: FileState, target: FileState, force: bool, own_link: str | None = None
    ) -> FileAction:
        """``own_link``: for an undo, the symlink the undone rewind created at ``key`` — the one
        symlink a rewind may replace by a file or delete (it puts back what that rewind replaced)."""
        if same_state(current, target):
            return FileAction(key, "none", "ok", target, current)
        action = target.action
        if current.kind == "symlink" and target.kind != "symlink" and content_key(current) != own_link:
            return FileAction(key, action, "refused", target, current, "is a symlink")
        if target.kind == "file" and target.blob is not None and not self.blobs.has(target.blob):
            return FileAction(key, action, "failed", target, current, f"the backup {target.blob} is missing")
        now = content_key(current)
        seen = self.seen.get(key)
        if now != content_key(target) and now != seen:
            reason = (
                "changed since this session last saw or wrote it"
                if seen is not None
                else "this session has no record of writing its current content"
            )
            return FileAction(key, action, "forced" if force else "conflict", target, current, reason)
        return FileAction(key, action, "ok", target, current)

    def undo_data(self, plan: RewindPlan, undo_id: str) -> dict[str, Any]:
        """Back up every file ``plan`` will change (its state now, blobs stored) as an ``undo``
        snapshot with message id ``undo_id``; returns the data, which the caller must persist
        **before** calling :meth:`execute`. A file that cannot be backed up will not be changed."""
        if not isinstance(undo_id, str) or not undo_id:
            raise InvalidArgumentError("undo id must be a non-empty string", field="undoId")
        with self._lock:
            if plan.undo_id is not None:
                raise RewindOrderError("this plan already has an undo snapshot; plan the rewind again")
            files: dict[str, Any] = {}
            with self.workspace.pinned(plan.roots):
                for f in plan.files:
                    if not f.changes:
                        continue
                    try:
                        state = self.workspace.read_state(f.path, self.blobs)
                    except FileHistoryError as exc:
                        plan.backed_up[f.path] = exc
                        continue
                    plan.backed_up[f.path] = state
                    files[f.path] = state.to_json()
            plan.undo_id = undo_id
            return self._record(
                {
                    "messageId": undo_id,
                    "kind": "undo",
                    "files": files,
                    "seen": {},
                    "roots": _roots_json(plan.roots),
                }
            )

    def execute(self, plan: RewindPlan) -> tuple[RewindResult, dict[str, Any]]:
        """Carry out ``plan`` (after its undo snapshot was built and persisted).

        Each file is re-checked right before it is written: one that no longer holds what the
        undo snapshot backed up is reported as a conflict and left alone (with ``force`` too:
        nothing is overwritten that the undo could not put back). A failure on one file is
        reported for that file; the others go on. Returns the result and the snapshot data
        recording what was written (``seen``), to persist.
        """
        with self._lock:
            if plan.undo_id is None:
                raise RewindOrderError("build and persist the undo snapshot (undo_data) before execute")
            if plan.executed:
                raise RewindOrderError("this plan was executed already; plan the rewind again")
            plan.executed = True
            seen: dict[str, str] = {}
            with self.workspace.deferred_sync(), self.workspace.pinned(plan.roots):
                files = [self._execute_one(plan, f, seen) for f in plan.files]
            data = self._record({"messageId": plan.undo_id, "kind": "undo", "files": {}, "seen": seen})
            return RewindResult(plan.message_id, plan.undo_id, plan.force, files, data), data

    def _execute_one(self, plan: RewindPlan, f: FileAction, seen: dict[str, str]) -> FileAction:
        if f.status in ("conflict", "refused", "failed"):
            return f  # never touched
        if not f.changes:  # nothing to do at planning time: still nothing, unless it changed
            return self._recheck_unchanged(f)
        backed = plan.backed_up.get(f.path)
        if isinstance(backed, PathRefusedError):
            return replace(f, status="refused", reason=backed.reason)
        if not isinstance(backed, FileState):
            why = _reason(backed) if backed is not None else "it was not planned"
            return replace(f, status="failed", reason=f"not backed up by the undo snapshot: {why}")
        action = f
        if f.current is None or content_key(backed) != content_key(f.current):
            # Changed between the plan and the backup: the backup holds it, so only ``force`` may
            # go on, judged afresh against what is there now.
            if not plan.force:
                return replace(f, status="conflict", current=backed, reason=CHANGED_SINCE_PLAN)
            action = self._judge(f.path, backed, f.target, True, plan.own_links.get(f.path))
            if not action.changes:
                return action
        try:
            self.workspace.apply(
                f.path,
                f.target,
                self.blobs,
                expected=backed,
                own_link=backed.kind == "symlink" and content_key(backed) == plan.own_links.get(f.path),
            )
        except PathRefusedError as exc:
            return replace(action, status="refused", reason=exc.reason)
        except FileChangedError as exc:
            return replace(action, status="conflict", reason=f"{CHANGED_SINCE_PLAN}: {exc.reason}")
        except FileHistoryError as exc:
            return replace(action, status="failed", reason=_reason(exc))
        seen[f.path] = content_key(f.target)
        return action

    def _recheck_unchanged(self, f: FileAction) -> FileAction:
        try:
            current = self.workspace.read_state(f.path, None)
        except PathRefusedError as exc:
            return replace(f, status="refused", current=None, reason=exc.reason)
        except FileHistoryError as exc:
            return replace(f, status="failed", current=None, reason=_reason(exc))
        if f.current is not None and same_state(current, f.current):
            return f
        if same_state(current, f.target):
            return replace(f, current=current)
        return FileAction(
            f.path,
            f.target.action,
            "conflict",
            f.target,
            current,
            f"{CHANGED_SINCE_PLAN} (not backed up by the undo snapshot)",
        )


def _reason(exc: FileHistoryError) -> str:
    if isinstance(exc, (PathRefusedError, FileAccessError, FileChangedError)):
        return exc.reason
    return exc.message
