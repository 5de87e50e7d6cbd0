"""Subscriptions: which connections want updates of which session, and fan-out to them.

Publishing never blocks and never waits for a reader: each subscriber has its own bounded
outgoing queue (the connection's), and decides there what happens when a reader falls
behind (drop updates and send ``resync_required`` later, or disconnect). Updates of one
session are published from the event loop in the order the entries were written, so every
subscriber sees them in file order.
"""

from __future__ import annotations

from typing import Any

from .peer import ERROR, INFO, WARNING, Peer

__all__ = ["ERROR", "INFO", "LIST_TOPIC", "WARNING", "Hub", "Subscriber"]

Subscriber = Peer
"""A subscriber is a peer (kept as a name: it says which role the hub uses)."""

LIST_TOPIC = "*sessions*"
"""The topic of ``session_list_update`` (not a session id: ids cannot contain ``*``)."""


class Hub:
    def __init__(self) -> None:
        self._subs: dict[str, dict[int, Subscriber]] = {}

    def subscribe(self, session_id: str, subscriber: Subscriber) -> None:
        self._subs.setdefault(session_id, {})[subscriber.id] = subscriber

    def unsubscribe(self, session_id: str, subscriber: Subscriber) -> bool:
        subs = self._subs.get(session_id)
        if not subs or subscriber.id not in subs:
            return False
        del subs[subscriber.id]
        if not subs:
            del self._subs[session_id]
        return True

    def unsubscribe_all(self, subscriber: Subscriber) -> list[str]:
        """Drop every subscription of a subscriber (a connection that closed)."""
        dropped = [sid for sid, subs in self._subs.items() if subscriber.id in subs]
        for sid in dropped:
            self.unsubscribe(sid, subscriber)
        return dropped

    def is_subscribed(self, session_id: str, subscriber: Subscriber) -> bool:
        return subscriber.id in self._subs.get(session_id, {})

    def subscribers(self, topic: str) -> list[Subscriber]:
        return list(self._subs.get(topic, {}).values())

    def subscriber_count(self, session_id: str) -> int:
        return len(self._subs.get(session_id, {}))

    def publish(self, session_id: str, update: dict[str, Any]) -> None:
        for subscriber in list(self._subs.get(session_id, {}).values()):
            subscriber.send_update(session_id, update)
