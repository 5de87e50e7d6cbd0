"""``[store.jetstream]``: where the cluster is and how durable a write must be (docs/scale-out.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JetStreamSettings:
    servers: tuple[str, ...] = ("nats://127.0.0.1:4222",)
    stream: str = "SESSIOND"
    """The stream holding every session's entries, one subject per session."""
    subject_prefix: str = "sessiond.sessions"
    kv_bucket: str = "sessiond-sessions"
    """Each session's metadata and leaf (listing; where to find the session's file)."""
    object_bucket: str = "sessiond-blobs"
    """File-history blobs (backed-up file contents), one object per content hash."""
    replicas: int = 3
    """Copies of every entry (and of the metadata); an append is acknowledged once a majority has it."""
    ack_wait: float = 5.0
    """Seconds an append waits for the cluster (covering a leader election) before it is refused."""
    connect_timeout: float = 5.0
    """Seconds the daemon waits for the cluster when it starts."""
