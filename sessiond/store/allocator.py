"""Giving freed memory back to the system: glibc's ``malloc_trim``, a no-op elsewhere.

A long-running daemon opens and closes sessions all day. What a closed session or an evicted
context held is freed, but glibc keeps freed memory in its heaps (and in one arena per thread
that allocated, here the worker threads of ``anyio.to_thread``) for reuse, and only gives back
the top of a heap on its own. In the soak that kept 10-15 MiB of free chunks resident, a part
of the RSS that grew from epoch to epoch with nothing leaking. ``malloc_trim(0)`` returns the
free pages of every arena (``madvise``), wherever they are in the heap; the memory budget's
periodic sweep calls :func:`release_free_memory` after dropping what idle sessions held.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Callable
from typing import Final


class _Trimmer:
    """Loads ``malloc_trim`` once and counts what the calls did (for ``daemon/status``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trim: Callable[[int], int] | None = None
        self._loaded = False
        self.calls = 0
        """Calls made where trimming exists."""
        self.released = 0
        """Calls that gave memory back (``malloc_trim`` said so)."""

    def available(self) -> bool:
        with self._lock:
            if not self._loaded:
                self._trim, self._loaded = _load(), True
            return self._trim is not None

    def __call__(self) -> bool:
        if not self.available():
            return False
        assert self._trim is not None
        done = bool(self._trim(0))
        self.calls += 1
        if done:
            self.released += 1
        return done


def _load() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim  # glibc only: musl has no malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


TRIMMER: Final = _Trimmer()


def available() -> bool:
    """Whether :func:`release_free_memory` can do anything here (Linux with glibc)."""
    return TRIMMER.available()


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; True when some were released.

    False when nothing could be released, or where it is not available (not glibc). Takes a
    few milliseconds on a heap of tens of MiB; it holds the allocator's locks meanwhile.
    """
    return TRIMMER()
