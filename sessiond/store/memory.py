"""How much of its sessions' content the process keeps parsed in memory: one budget for all.

An open session needs its light index (a few hundred bytes per entry) to answer most
requests. What costs real memory is the parsed content: the bodies kept in a session's
cache (:class:`~sessiond.store.index.SessionIndex`) and the *materialised context* (every
message of the context, parsed, with its source entries), which grows with the session
when it is followed or appended to. Both can be rebuilt from the file at any time, so both
are held here under one budget:

* every holder (a session's body cache, a session's context) reports how many bytes of
  session lines it holds parsed (line bytes: parsed objects cost a few times that);
* when the total goes over :attr:`MemoryBudget.limit`, the holders used least recently are
  asked to drop what they hold until the total fits;
* a holder not used for :attr:`MemoryBudget.idle` seconds drops what it holds (checked
  whenever any holder reports, at most once a second, and by :meth:`MemoryBudget.sweep`).

The daemon sets the limits from its configuration (``[memory]``, docs/configuration.md) on
the process-wide :data:`BUDGET`; sessions opened without a daemon (the CLI, tests) use the
same defaults. Eviction never takes a session's lock: a holder's ``drop`` only forgets
references (atomic assignments), and whoever still holds a reference keeps a consistent
object. The budget refers to its holders weakly: a session that is dropped without being
closed stops counting when it is collected.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

DEFAULT_LIMIT: Final = 64 * 1024 * 1024
"""Default budget: 64 MiB of session lines held parsed (about 3-4 times that in RSS)."""
DEFAULT_IDLE: Final = 60.0
"""Default seconds after which what a session holds parsed and has not used is dropped."""
_SWEEP_EVERY: Final = 1.0


def _nothing() -> None:
    """A closed holder's ``drop``."""


class Holder:
    """Something that keeps session content parsed and can drop it (see :class:`MemoryBudget`)."""

    __slots__ = ("__weakref__", "_budget", "_drop", "_ref", "bytes", "name", "session", "used_at")

    def __init__(
        self, budget: MemoryBudget, name: str, drop: Callable[[], None], session: str | None = None
    ) -> None:
        self._budget = budget
        self._drop = drop
        self.name = name
        """What it holds (``bodies``, ``context``), for status."""
        self.session = session
        """The session it belongs to, for status."""
        self.bytes = 0
        self.used_at = time.monotonic()
        self._ref: weakref.ref[Holder] | None = None

    @property
    def idle(self) -> float:
        """Seconds after which unused content should go (the budget's setting)."""
        return self._budget.idle

    def hold(self, nbytes: int) -> None:
        """What this holder keeps now (line bytes); marks it used."""
        self._budget._report(self, max(0, nbytes))

    def touch(self) -> None:
        """Mark it used (what it keeps is unchanged)."""
        self._budget._report(self, self.bytes)

    def resize(self, nbytes: int) -> None:
        """What it keeps grew or shrank without anyone using it (an append extending a held
        context): counted, but not marked used, so content nobody reads still goes idle."""
        self._budget._report(self, max(0, nbytes), touch=False, evict=True)

    def drop(self) -> None:
        """Drop what it keeps (the budget's own decision, or the owner's)."""
        self._drop()
        self._budget._report(self, 0, touch=False)

    def close(self) -> None:
        """The owner is gone: forget the holder (what it keeps no longer counts).

        Also lets go of the owner's ``drop`` (a bound method: owner -> holder -> owner is a
        reference cycle), so a closed session is freed by reference counting at once rather
        than by the collector's next full collection (which walks every object the process
        holds, and comes rarely in a daemon holding large sessions).
        """
        self._budget._forget(self)
        self._drop = _nothing


class MemoryBudget:
    """The process's budget for parsed session content (see the module's docstring)."""

    def __init__(self, limit: int = DEFAULT_LIMIT, idle: float = DEFAULT_IDLE) -> None:
        self.limit = limit
        self.idle = idle
        self._lock = threading.Lock()
        self._holders: OrderedDict[weakref.ref[Holder], int] = OrderedDict()
        """Holders (weakly) and the bytes each holds, least recently used first."""
        self.total = 0
        self._dead: list[weakref.ref[Holder]] = []
        self._swept = time.monotonic()
        self.evictions = 0
        """Holders dropped by the budget (over the limit or idle), for status and tests."""

    def configure(self, limit: int, idle: float) -> None:
        self.limit = limit
        self.idle = idle

    def holder(self, name: str, drop: Callable[[], None], session: str | None = None) -> Holder:
        return Holder(self, name, drop, session)

    def _gone(self, ref: weakref.ref[Holder]) -> None:
        # Called by the garbage collector, possibly inside one of this budget's own critical
        # sections: only queue the removal (a list append needs no lock).
        self._dead.append(ref)

    def _bury(self) -> None:
        """Forget holders that were collected (lock held)."""
        while self._dead:
            self.total -= self._holders.pop(self._dead.pop(), 0)

    def _report(self, holder: Holder, nbytes: int, *, touch: bool = True, evict: bool | None = None) -> None:
        now = time.monotonic()
        victims: list[Holder] = []
        with self._lock:
            self._bury()
            ref = holder._ref
            if ref is None or ref not in self._holders:
                if not touch:
                    return  # closed: it no longer counts
                ref = holder._ref = weakref.ref(holder, self._gone)
                self._holders[ref] = 0
            if touch:
                holder.used_at = now
                self._holders.move_to_end(ref)
            self.total += nbytes - self._holders[ref]
            self._holders[ref] = holder.bytes = nbytes
            if not (touch if evict is None else evict):
                # A drop only gives back: it must not pick victims itself (a drop made while
                # the total is still over the limit would evict the holder that asked).
                return
            if self.total > self.limit:
                over = self.total - self.limit
                for r, held in self._holders.items():
                    if over <= 0:
                        break
                    h = r()
                    if h is not None and h is not holder and held:
                        victims.append(h)
                        over -= held
            if now - self._swept >= _SWEEP_EVERY:
                self._swept = now
                victims += self._idle(now, holder, victims)
        for h in victims:  # outside the lock: a holder's drop reports back
            self.evictions += 1
            h.drop()

    def _idle(self, now: float, spare: Holder | None, already: list[Holder]) -> list[Holder]:
        """Holders not used for :attr:`idle` seconds that hold something (lock held)."""
        stale = now - self.idle
        out: list[Holder] = []
        for r, held in self._holders.items():
            h = r()
            if h is None:
                continue
            if h.used_at >= stale:
                break  # LRU order: the rest were used more recently
            if held and h is not spare and h not in already:
                out.append(h)
        return out

    def _forget(self, holder: Holder) -> None:
        with self._lock:
            ref = holder._ref
            if ref is not None:
                self.total -= self._holders.pop(ref, 0)
            holder._ref = None
            holder.bytes = 0

    def sweep(self) -> int:
        """Drop what idle holders keep now; how many were dropped (the daemon calls this from a
        timer, so memory is given back when nothing else happens)."""
        now = time.monotonic()
        with self._lock:
            self._bury()
            self._swept = now
            victims = self._idle(now, None, [])
        for h in victims:
            self.evictions += 1
            h.drop()
        return len(victims)

    def holders(self) -> list[tuple[str, int]]:
        """``(name, bytes)`` of every live holder, least recently used first (for status)."""
        with self._lock:
            self._bury()
            return [(h.name, held) for r, held in self._holders.items() if (h := r()) is not None]

    def by_session(self) -> dict[str | None, dict[str, int]]:
        """What each session holds now, by holder name (``bodies``, ``context``), in bytes of
        session lines; sessions that hold nothing are left out (``daemon/status``)."""
        out: dict[str | None, dict[str, int]] = {}
        with self._lock:
            self._bury()
            for r, held in self._holders.items():
                h = r()
                if h is not None and held:
                    kinds = out.setdefault(h.session, {})
                    kinds[h.name] = kinds.get(h.name, 0) + held
        return out


BUDGET: Final = MemoryBudget()
"""The process-wide budget (configured by the daemon)."""
