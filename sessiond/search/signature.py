"""What tells a session file changed: its inode, size, mtime and a CRC-32 of its last 4 KiB.

Its own module so that the build's reading process (:mod:`.worker`) takes a file's signature
as the engine does without importing the engine.
"""

from __future__ import annotations

import os
import zlib
from typing import Final

from ..store.regular import open_regular
from .index import Signature

TAIL_BYTES: Final = 4096


def stat_signature(path: str) -> Signature | None:
    """The file's inode, size, mtime and a CRC-32 of its last 4 KiB (``None``: it is gone)."""
    try:
        with open_regular(path) as f:  # a FIFO named like a session must not block the index
            st = os.fstat(f.fileno())
            if st.st_size > TAIL_BYTES:
                f.seek(st.st_size - TAIL_BYTES)
            tail = zlib.crc32(f.read(TAIL_BYTES))
    except OSError:
        return None
    return Signature(st.st_ino, st.st_size, st.st_mtime_ns, tail)
