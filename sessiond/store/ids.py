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


def short_id(taken: Callable[[str], bool]) -> str:
    """Pi's ``generateId``: 8 hex digits not yet used in the session."""
    for _ in range(100):
        # The first 8 hex digits of a random UUID are 32 random bits: read them directly (a
        # UUID object per append cost more than the rest of the id).
        candidate = os.urandom(4).hex()
        if not taken(candidate):
            return candidate
    return str(uuid.uuid4())
