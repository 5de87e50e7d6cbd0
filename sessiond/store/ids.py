"""Identifiers: UUIDv7 session ids and Pi's short entry ids.

Session ids are UUIDv7 (time-ordered, so file names and ids sort by creation) and monotonic
within a process, like pi-ai's generator. Entry ids are Pi's: the first 8 hex digits of a
random UUID, retried while they collide with an id of the same session, a full UUID after 100
collisions. Ids only need to be unique within their session.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable


class _Uuid7Clock:
    """Millisecond clock plus a counter that keeps ids increasing within one millisecond."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._seq = 0

    def next(self) -> tuple[int, int]:
        with self._lock:
            ms = time.time_ns() // 1_000_000
            if ms > self._last_ms:
                self._last_ms = ms
                self._seq = int.from_bytes(os.urandom(6), "big") >> 7  # 41 random bits, room to count up
            else:
                ms = self._last_ms
                self._seq += 1
                if self._seq >= 1 << 42:  # counter exhausted within one ms: borrow the next ms
                    self._last_ms = ms = ms + 1
                    self._seq = 0
            return ms, self._seq


_clock = _Uuid7Clock()


def uuid7() -> str:
    """A new UUIDv7 string (lowercase), strictly increasing within this process."""
    ms, seq = _clock.next()
    rand_a = (seq >> 30) & 0xFFF  # 12 bits
    rand_b_hi = seq & ((1 << 30) - 1)  # 30 bits
    rand_b = (rand_b_hi << 32) | int.from_bytes(os.urandom(4), "big")  # 62 bits in total
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


class _RandomHex:
    """Random hex digits from the kernel, read 4 KiB at a time.

    ``os.urandom(4)`` per entry id was one ``getrandom(2)`` system call per append; the bytes are
    the same kernel CSPRNG's, drawn once per 1,024 ids. Threads may draw concurrently (appends
    to different sessions in worker threads): a lock keeps two ids from sharing bytes. A forked
    child starts with an empty pool, so it never repeats its parent's ids.
    """

    _SIZE = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._at = 0

    def hex8(self) -> str:
        with self._lock:
            at = self._at
            if at + 4 > len(self._pool):
                self._pool, at = os.urandom(self._SIZE), 0
            self._at = at + 4
            return self._pool[at : at + 4].hex()

    def reset(self) -> None:
        self._pool, self._at = b"", 0


_RANDOM = _RandomHex()
os.register_at_fork(after_in_child=_RANDOM.reset)


def short_id(taken: Callable[[str], bool]) -> str:
    """Pi's ``generateId``: 8 hex digits not yet used in the session."""
    for _ in range(100):
        # The first 8 hex digits of a random UUID are 32 random bits: read them directly (a
        # UUID object per append cost more than the rest of the id).
        candidate = _RANDOM.hex8()
        if not taken(candidate):
            return candidate
    return str(uuid.uuid4())
