"""``sessiond gc`` on a JetStream store: the object store's blobs no session names any more.

Blobs are shared by every session of every daemon (one object per content), so what is still
needed is read from the shared state, never from a daemon's cache: every message of the
sessions' stream (all subjects, whichever daemon wrote them) is scanned for the hashes its
file-history snapshots name (:func:`~sessiond.filehistory.references.snapshot_blobs`). An
object is collected only when

* no snapshot in the stream names it (its sessions were deleted, or never committed one), and
* its metadata was stamped more than ``grace`` before the scan began: a backup uploads (or, for
  content already stored, re-stamps: :data:`~.objects.RESTAMP_AFTER`) *before* its snapshot
  entry is written, so a blob younger than the grace may be about to be named;
* and it is still exactly what was listed when it is deleted: the delete is a compare-and-set
  on its metadata's sequence, so an object re-uploaded or re-stamped meanwhile stays.

Why the grace must exceed the re-stamp interval: a backup that found the object at time *w*
(stamped at least ``w - RESTAMP_AFTER``) writes its snapshot within moments of *w*; the
collector deletes only objects stamped before ``start - grace``, so *w* was more than
``grace - RESTAMP_AFTER`` before the scan began and the snapshot is in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from ...errors import ClusterUnavailableError, InvalidArgumentError
from ...filehistory.references import snapshot_blobs
from ...filehistory.states import is_sha256
from .link import Link
from .objects import RESTAMP_AFTER, StoredObject, object_stream, remove_object

DEFAULT_GRACE: Final = 86400.0
"""Seconds an unreferenced object is kept after it was last stamped (one day)."""
MIN_GRACE: Final = 2 * RESTAMP_AFTER
"""A shorter grace could delete an object a backup found stored a moment ago (see above)."""

Progress = Callable[[str, int, int], None]
"""``(stage, done, total)``: ``scan`` (messages of the stream) or ``delete`` (objects)."""

_STALL: Final = 30.0
"""Seconds a delivery may take before the cluster counts as gone (a scan is not a write)."""


def _quiet(stage: str, done: int, total: int) -> None:
    """No progress reports."""


@dataclass(slots=True)
class BlobCandidate:
    object: StoredObject
    age: float
    """Seconds since the object was last stamped, at the scan's start."""


@dataclass(slots=True)
class BlobPlan:
    bucket: str
    grace: float
    started: float
    """When the scan began (epoch seconds; the cutoff is this less ``grace``)."""
    candidates: list[BlobCandidate] = field(default_factory=list)
    referenced: int = 0
    """Objects kept because a snapshot names them, and ..."""
    recent: int = 0
    """... unreferenced objects kept because they were stamped within the grace."""
    recent_bytes: int = 0
    messages: int = 0
    """Messages of the stream scanned, and their payload bytes."""
    scanned_bytes: int = 0
    sessions: int = 0
    """Subjects (sessions) seen in the stream."""
    deleted: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """Candidates left alone at deletion because they were re-uploaded or re-stamped since."""
    errors: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(c.object.size for c in self.candidates)

    def as_json(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "graceSeconds": self.grace,
            "scanned": {"messages": self.messages, "bytes": self.scanned_bytes, "sessions": self.sessions},
            "kept": {"referenced": self.referenced, "recent": self.recent, "recentBytes": self.recent_bytes},
            "changed": self.changed,
        }


def check_grace(grace: float) -> None:
    if not grace >= MIN_GRACE:
        raise InvalidArgumentError(
            f"the grace period must be at least {MIN_GRACE / 3600:g} hours (a backup re-stamps the "
            f"object it reuses every {RESTAMP_AFTER / 3600:g} hours; a shorter grace could delete "
            "one a snapshot is about to name)",
            field="grace",
        )


def plan(
    link: Link, grace: float = DEFAULT_GRACE, *, now: float | None = None, progress: Progress = _quiet
) -> BlobPlan:
    """What would be collected: nothing is changed. ``now``: the clock (tests); raises
    :class:`~sessiond.errors.ClusterUnavailableError` when the cluster cannot be read whole."""
    check_grace(grace)
    settings = link.settings
    link.require("(gc)")
    if settings.stream in link.created:
        raise ClusterUnavailableError(
            "(gc)",
            f"the stream {settings.stream} did not exist: no session's snapshots can be read",
            outcome="nothing was collected (check [store.jetstream] stream and subject_prefix)",
        )
    started = time.time() if now is None else now
    result = BlobPlan(settings.object_bucket, grace, started)
    try:
        referenced = link.call(_scan(link, result, progress), None)
        objects = link.call(_objects(link), None)
    except ClusterUnavailableError:
        raise
    except Exception as exc:
        raise ClusterUnavailableError(
            "(gc)",
            f"cannot read the stream and the blobs: {str(exc) or type(exc).__name__}",
            outcome="nothing was collected",
        ) from exc
    cutoff = started - grace
    for stored in objects:
        if stored.deleted or not is_sha256(stored.name):
            continue  # gone already; or not a blob (someone else's object): never ours to delete
        if stored.name in referenced:
            result.referenced += 1
        elif stored.stamped >= cutoff:
            result.recent += 1
            result.recent_bytes += stored.size
        else:
            result.candidates.append(BlobCandidate(stored, started - stored.stamped))
    result.candidates.sort(key=lambda c: c.object.name)
    return result


def apply(link: Link, result: BlobPlan, progress: Progress = _quiet) -> BlobPlan:
    """Delete the candidates of :func:`plan`, each only if unchanged since it was listed."""
    total = len(result.candidates)
    for done, candidate in enumerate(result.candidates, 1):
        name = candidate.object.name
        try:
            link.require("(gc)")
            removed = link.call(remove_object(link, candidate.object), link.settings.ack_wait + 5)
        except Exception as exc:
            result.errors.append(f"{result.bucket}/{name}: {str(exc) or type(exc).__name__}")
            continue
        (result.deleted if removed else result.changed).append(name)
        progress("delete", done, total)
    return result


async def _scan(link: Link, result: BlobPlan, progress: Progress) -> set[str]:
    """Every hash the stream's snapshots name, reading each message once (to the last one the
    stream held when the scan began)."""
    settings = link.settings
    info = await link.js.stream_info(settings.stream)
    last = info.state.last_seq
    if not info.state.messages:
        return set()
    referenced: set[str] = set()
    subjects: set[str] = set()
    sub = await link.js.subscribe(
        f"{settings.subject_prefix}.>",
        ordered_consumer=True,
        config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
    )
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=_STALL)
            except TimeoutError as exc:
                raise ClusterUnavailableError(
                    "(gc)",
                    f"the stream stopped delivering after {result.messages} messages",
                    outcome="nothing was collected",
                ) from exc
            data = msg.data or b""
            referenced |= snapshot_blobs(data)
            subjects.add(msg.subject)
            result.messages += 1
            result.scanned_bytes += len(data)
            meta = msg.metadata
            if result.messages % 1000 == 0:
                progress("scan", result.messages, result.messages + meta.num_pending)
            if meta.sequence.stream >= last or meta.num_pending == 0:
                break
    finally:
        await sub.unsubscribe()
    result.sessions = len(subjects)
    progress("scan", result.messages, result.messages)
    return referenced


async def _objects(link: Link) -> list[StoredObject]:
    """Every object's current metadata, with its sequence and server time."""
    bucket = link.settings.object_bucket
    stream = object_stream(bucket)
    meta_subjects = f"$O.{bucket}.M.>"
    try:
        info = await link.js.stream_info(stream, subjects_filter=meta_subjects)
    except NotFoundError:
        return []
    if not info.state.messages or not info.state.subjects:
        return []  # no object has metadata yet (an upload's chunks come before its metadata)
    # Each metadata subject has a last message, so there is one to wait for; each delivery says
    # how many are still to come. (The consumer's own count right after it was created could
    # read 0 on a busy cluster: the plan then listed no object at all.)
    sub = await link.js.subscribe(
        meta_subjects,
        ordered_consumer=True,
        config=ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT),
    )
    out: list[StoredObject] = []
    try:
        while True:
            msg = await sub.next_msg(timeout=_STALL)
            meta = msg.metadata
            stored = StoredObject.parse(msg.data, meta.sequence.stream, meta.timestamp)
            if stored is not None:
                out.append(stored)
            if not meta.num_pending:
                break
    finally:
        await sub.unsubscribe()
    return out
