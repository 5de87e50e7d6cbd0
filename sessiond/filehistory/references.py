"""Which blobs a session's lines name: what a blob collector must keep (docs/scale-out.md).

Snapshots are ``custom`` entries of type :data:`SNAPSHOT`; the blobs they name are the
``blob`` of their file states. The collector errs on the side of keeping: every SHA-256 that
appears as a JSON string anywhere in a line carrying the snapshot type counts — the states'
blobs, and also ``seen``'s content keys and a line the loader would skip (no replay reads
those, but an object kept too many costs bytes, one deleted too many loses a backup). Lines
without the type's name are never parsed, so scanning a whole stream costs one substring
search per message.
"""

from __future__ import annotations

import re
from typing import Final

SNAPSHOT: Final = "sessiond.fileSnapshot"
"""``customType`` of a file-history snapshot entry."""

_MARK: Final = b'"' + SNAPSHOT.encode() + b'"'
_HASH: Final = re.compile(rb'"([0-9a-f]{64})"')


def snapshot_blobs(lines: bytes) -> set[str]:
    """Every SHA-256 named by the snapshot lines among ``lines`` (Pi JSONL, whole lines)."""
    if _MARK not in lines:
        return set()
    out: set[str] = set()
    for line in lines.splitlines():
        if _MARK in line:
            out.update(m.decode() for m in _HASH.findall(line))
    return out
