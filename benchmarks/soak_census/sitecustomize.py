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

Each count also logs what the allocators hold, to tell a leak of objects from memory the
allocators keep but do not use: Python's own blocks in use (``sys.getallocatedblocks``) and,
on glibc, ``mallinfo2`` (``arena``: bytes in the heap and thread arenas, ``used``/``free`` of
those, ``mmap``: large blocks mapped on their own). With ``SOAK_CENSUS_TRIM=1`` each count then
calls ``malloc_trim(0)`` and logs the RSS after it, which shows how much of the RSS is freed
memory the allocator had kept.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import os
import sys
import tempfile
import threading
import time


def _rss_kib() -> str:
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            return f.read().split("VmRSS:")[1].split()[0]
    except (OSError, IndexError):
        return "?"


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallinfo2.restype = _MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def _allocators(libc: ctypes.CDLL | None) -> str:
    out = f"py_blocks={sys.getallocatedblocks()}"
    if libc is not None:
        m = libc.mallinfo2()
        mib = 1024 * 1024
        out += (
            f" malloc_arena_mib={m.arena / mib:.1f} used_mib={m.uordblks / mib:.1f}"
            f" free_mib={m.fordblks / mib:.1f} mmap_mib={m.hblkhd / mib:.1f}"
        )
    return out


def _census() -> None:
    interval = float(os.environ.get("SOAK_CENSUS_INTERVAL", "45"))
    directory = os.environ.get("SOAK_CENSUS_DIR", tempfile.gettempdir())
    path = os.path.join(directory, f"census.{os.getpid()}.log")
    previous: collections.Counter[str] | None = None
    libc = _libc()
    trim = os.environ.get("SOAK_CENSUS_TRIM") == "1" and libc is not None
    with open(path, "a") as out:
        while True:
            time.sleep(interval)
            counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
            out.write(f"--- t={time.time():.0f} rss_kib={_rss_kib()} objects={sum(counts.values())}\n")
            out.write(f"  alloc: {_allocators(libc)}\n")
            if trim:
                assert libc is not None
                released = libc.malloc_trim(0)
                out.write(f"  malloc_trim(0)={released} rss_kib after={_rss_kib()}\n")
            if previous is not None:
                grown = sorted(((counts[k] - previous.get(k, 0), k) for k in counts), reverse=True)[:15]
                out.write("  grew: " + ", ".join(f"{k} +{d}" for d, k in grown if d > 0) + "\n")
            out.write("  most: " + ", ".join(f"{k}={n}" for k, n in counts.most_common(12)) + "\n")
            out.flush()
            previous = counts


threading.Thread(target=_census, name="soak-census", daemon=True).start()
