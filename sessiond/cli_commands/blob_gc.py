"""``sessiond gc`` on a JetStream store: the object store's part (docs/scale-out.md).

The local part (file history of deleted sessions, old trash) stays in ``sessiond.cli``; this
module connects to the cluster, plans the blobs to collect (:mod:`sessiond.store.jetstream.collect`),
deletes them with ``--apply``, and renders them as items of the same report. The plan is made
before anything is changed, so a cluster that cannot be read refuses the whole run.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store.jetstream.collect import BlobPlan
    from ..store.jetstream.link import Link
    from ..store.jetstream.settings import JetStreamSettings

PROGRESS_EVERY = 1.0
"""Seconds between progress lines on stderr (a run shorter than this prints none)."""


class Progress:
    """Progress of a long scan or delete on stderr, at most one line per :data:`PROGRESS_EVERY`."""

    def __init__(self) -> None:
        self._next = time.monotonic() + PROGRESS_EVERY

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + PROGRESS_EVERY
        what = "messages scanned" if stage == "scan" else "unreferenced blobs deleted"
        print(f"sessiond gc: {done}/{total} {what}", file=sys.stderr, flush=True)


class BlobCollection:
    """The object store's part of one ``gc`` run: connected while it lasts."""

    def __init__(self, settings: JetStreamSettings, grace: float) -> None:
        from ..errors import SessiondError  # noqa: PLC0415

        try:
            from ..store.jetstream import collect  # noqa: PLC0415 - only with the nats extra
            from ..store.jetstream.link import Link  # noqa: PLC0415
        except ImportError as exc:
            raise SessiondError(
                f"store.backend = 'jetstream' needs the nats extra (pip install 'sessiond[nats]'): {exc}"
            ) from exc
        collect.check_grace(grace)
        self._collect = collect
        self.progress = Progress()
        self.link: Link = Link(settings)
        try:
            self.plan: BlobPlan = collect.plan(self.link, grace, progress=self.progress)
        except BaseException:
            self.link.close()
            raise

    def apply(self) -> None:
        self._collect.apply(self.link, self.plan, self.progress)

    def close(self) -> None:
        self.link.close()

    def items(self) -> list[dict[str, Any]]:
        """The candidates as report items (``object`` where a local item has ``path``); one
        re-uploaded or re-stamped since it was listed is not (it was kept)."""
        plan = self.plan
        changed = set(plan.changed)
        return [
            {
                "action": "delete",
                "object": f"{plan.bucket}/{c.object.name}",
                "bytes": c.object.size,
                "reason": f"no session's file history names it (stamped {c.age / 86400:.1f} days ago)",
            }
            for c in plan.candidates
            if c.object.name not in changed
        ]

    def errors(self) -> list[str]:
        return list(self.plan.errors)

    def summary(self) -> str:
        plan = self.plan
        kept = (
            f"kept {plan.referenced} referenced and {plan.recent} unreferenced within the "
            f"{plan.grace / 3600:g} h grace ({plan.recent_bytes / 1e6:.1f} MB)"
        )
        scanned = f"{plan.messages} messages of {plan.sessions} sessions scanned"
        changed = f"; {len(plan.changed)} changed since listed and kept" if plan.changed else ""
        return f"object store {plan.bucket}: {scanned}; {kept}{changed}"
