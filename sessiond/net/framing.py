"""The two ways JSON-RPC messages are delimited on a byte stream.

Only the names live here: the reader and writer are :mod:`sessiond.rpc.framing`. A WebSocket
needs no framing of its own (one message per frame) but the connection frames its replies in
one of these, so the viewer's transport names :attr:`Framing.NDJSON` without importing the
JSON-RPC machinery.
"""

from __future__ import annotations

from enum import Enum


class Framing(Enum):
    LSP = "content-length"
    NDJSON = "ndjson"


__all__ = ["Framing"]
