"""Sessions: the read protocol every session answers (:class:`ReadableSession`), the writable Pi
:class:`Session`, and the layers it is built from (see :mod:`.session`).

The public names live here, so ``from sessiond.store.session import Session`` keeps working
whichever module of the package defines them.
"""

from __future__ import annotations

from ...model.tokens import ContextUsage
from .context import CachedContext
from .ingest import FollowedSession, IngestResult
from .leaf import LEAF_MARKER, LeafMoves
from .protocol import ReadableSession, SessionDiagnostics
from .reads import IndexedSession
from .session import Session
from .writes import PendingAppend, WritableSession

__all__ = [
    "LEAF_MARKER",
    "CachedContext",
    "ContextUsage",
    "FollowedSession",
    "IndexedSession",
    "IngestResult",
    "LeafMoves",
    "PendingAppend",
    "ReadableSession",
    "Session",
    "SessionDiagnostics",
    "WritableSession",
]
