"""The garbage collector's thresholds for a daemon that holds large sessions in memory.

CPython's defaults (700, 10, 10) start a young collection every 700 net container
allocations, and every hundredth one becomes a *full* collection, which walks every object the
process holds: every light entry of every open session. An append leaves ~9 containers alive
(its light entry, the cached body, the context's lists grow), so with the defaults a daemon
appending to a 30,000-entry session spent ~14 µs of CPU per append in the collector, most of
it in the full walks (``gc.callbacks`` over 20,000 appends: 240 young, 22 middle, 2 full
collections). A larger young generation lets most short-lived objects die by reference
counting before a collection looks at them, and makes the full walks ~7 times rarer: ~1-2 µs
per append, the same run.

Cyclic garbage is still found, later: at most this many young objects wait for it.
``gc.freeze()`` (objects loaded with a session never walked again) was measured too and not
taken: a frozen object is never collected, and a closed session's index holds cycles (its
memory holders' bound methods), so every session closed after a freeze would stay in memory.

Set once, by ``sessiond serve``, not by the library: a CLI run or a test keeps Python's
defaults.
"""

from __future__ import annotations

import gc
from typing import Final

YOUNG_THRESHOLD: Final = 10_000
"""Net container allocations between two young collections (CPython's default: 700)."""


def tune_for_daemon() -> None:
    """Raise the young generation's threshold; the older generations keep their ratios."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
