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
    ack_wait: float = 15.0
    """Seconds a write may wait for the cluster, counted from its request (the time queued behind
    the session's earlier writes included), before it is refused. Above a leader election: one
    took 4.7-7.9 s on a loaded 3-node loopback cluster (issue 24), which refused 1-3 appends
    per election with the old default of 5 s."""
    connect_timeout: float = 5.0
    """Seconds the daemon waits for the cluster when it starts."""
