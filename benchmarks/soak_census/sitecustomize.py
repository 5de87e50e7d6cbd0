"""A census of the daemon's objects during a soak: which types grow, if any.

Put this directory on the daemon's path only, with ``SOAK_DAEMON_PYTHONPATH``::

    SOAK_DAEMON_PYTHONPATH=benchmarks/soak_census .venv/bin/python -m benchmarks.soak --duration 300

Every ``SOAK_CENSUS_INTERVAL`` seconds (default 45) a thread counts the objects the garbage
collector tracks, by type name, and appends the RSS, the total, the 15 types that grew most
since the last count and the 12 most common to ``$SOAK_CENSUS_DIR/census.<pid>.log`` (default
the system temp directory). A leak of containers shows as a type that grows at every count;
strings, bytes and dicts holding only such values are not tracked by the collector, so growth
there shows in RSS without showing here. Costs ~100 ms per count on a busy daemon, unlike
tracemalloc, whose bookkeeping inflates RSS by more than the growth being looked for.
"""

from __future__ import annotations

import collections
import gc
import os
import tempfile
import threading
import time


def _rss_kib() -> str:
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            return f.read().split("VmRSS:")[1].split()[0]
    except (OSError, IndexError):
        return "?"


def _census() -> None:
    interval = float(os.environ.get("SOAK_CENSUS_INTERVAL", "45"))
    directory = os.environ.get("SOAK_CENSUS_DIR", tempfile.gettempdir())
    path = os.path.join(directory, f"census.{os.getpid()}.log")
    previous: collections.Counter[str] | None = None
    with open(path, "a") as out:
        while True:
            time.sleep(interval)
            counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
            out.write(f"--- t={time.time():.0f} rss_kib={_rss_kib()} objects={sum(counts.values())}\n")
            if previous is not None:
                grown = sorted(((counts[k] - previous.get(k, 0), k) for k in counts), reverse=True)[:15]
                out.write("  grew: " + ", ".join(f"{k} +{d}" for d, k in grown if d > 0) + "\n")
            out.write("  most: " + ", ".join(f"{k}={n}" for k, n in counts.most_common(12)) + "\n")
            out.flush()
            previous = counts


threading.Thread(target=_census, name="soak-census", daemon=True).start()
