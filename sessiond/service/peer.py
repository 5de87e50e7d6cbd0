"""What the service needs of a connected client: one protocol for every role a client plays.

A connection is at once a subscriber (updates of the sessions it watches), an audience
(``window/logMessage`` when background work on its session fails) and possibly the
summarizer of a compaction (a server -> client ``compaction/summarize`` request). The
service only ever holds connections through this protocol, so it runs in-process with a
fake peer in tests and never imports the transport: the RPC ``Connection`` satisfies it
structurally.
"""

from __future__ import annotations

from typing import Any, Protocol

ERROR, WARNING, INFO = 1, 2, 3
"""``window/logMessage`` levels (LSP's ``MessageType``)."""


class Peer(Protocol):
    @property
    def id(self) -> int:
        """Unique among the daemon's connections; positive (negative ids are internal pins)."""
        ...

    @property
    def summarizer(self) -> bool:
        """The client declared that it answers ``compaction/summarize``."""
        ...

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Queue a ``session/update`` notification (must not block: the event loop publishes)."""

    def log_message(self, level: int, message: str) -> None:
        """Queue a ``window/logMessage`` notification (must not block)."""

    async def request_client(self, method: str, params: Any) -> Any:
        """Send the client a request and wait for its answer.

        Raises ``ClientRequestError`` when the client answers with an error and
        ``ConnectionError`` when the connection closes first.
        """
