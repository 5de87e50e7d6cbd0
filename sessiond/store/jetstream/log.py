"""One session's log in the stream: compare-and-append, deduplicated retries, what others wrote.

* **Subject**: ``<prefix>.<escaped session id>``; a message is one append batch, its payload
  the batch's Pi lines (the first message: the header and everything held before the first
  flush). The subject's messages concatenated are the session's Pi file.
* **Compare-and-append**: every publish carries ``Nats-Expected-Last-Subject-Sequence`` = the
  stream sequence of the last message this replica holds (0 to create). A stream that moved
  on refuses it (``wrong last sequence``, 10071) and the session pulls, re-stages and retries.
* **Idempotence**: ``Nats-Msg-Id`` is derived from the session, the expected sequence and the
  bytes, so a publish retried after a lost acknowledgement is stored once (the stream's
  duplicate window) and acknowledged with the original sequence.
* **Metadata**: after each commit the session's KV key gets its file name, leaf and sequence
  (advisory: for listing and finding; the stream is the truth).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats.errors
import orjson
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import APIError, NotFoundError

from ...errors import BatchTooLargeError, ClusterUnavailableError
from ..remote import RemoteMoved, write_arrival
from .link import Link
from .replica import write_mark

EXPECTED_LAST = "Nats-Expected-Last-Subject-Sequence"
WRONG_LAST_SEQUENCE = 10071
log = logging.getLogger("sessiond.jetstream")
"""JetStream's error code for a failed ``Nats-Expected-Last-Subject-Sequence``."""


def header_bytes(headers: dict[str, str]) -> int:
    """What ``headers`` add to a message, counted against ``max_payload`` with the payload."""
    return len(b"NATS/1.0\r\n\r\n") + sum(len(k) + len(v) + 4 for k, v in headers.items())


def subject_token(session_id: str) -> str:
    """A session id as one subject token: ``.`` separates tokens, so it is escaped (reversibly)."""
    return session_id.replace("_", "_5F").replace(".", "_2E")


class JetStreamLog:
    """The :class:`~sessiond.store.remote.RemoteLog` of one session."""

    def __init__(
        self, link: Link, session_id: str, last_seq: int, file_name: str, replica: Path | None = None
    ) -> None:
        self.link = link
        self.replica = replica
        """The replica's path: marked with :attr:`last_seq` when the session lets go of it."""
        self.session_id = session_id
        self.subject = f"{link.settings.subject_prefix}.{subject_token(session_id)}"
        self.last_seq = last_seq
        """Stream sequence of the last message this replica holds (0: none)."""
        self.file_name = file_name
        """The replica's path below the store's ``sessions`` directory (kept in the metadata)."""
        self._delivered: deque[tuple[int, int | None, bytes]] = deque()
        """(sequence, the subject's sequence before it, payload) as the subscription delivered them."""
        self._sub: Any = None
        self._meta: dict[str, Any] = {}
        self._meta_busy = False
        self._meta_dirty = False
        self._closed = threading.Event()

    # ------------------------------------------------------------------ writing

    def commit(self, data: bytes, *, create: bool, leaf: Any) -> None:
        link = self.link
        link.require(self.session_id)
        expected = 0 if create else self.last_seq
        digest = hashlib.blake2b(data, digest_size=12).hexdigest()
        headers = {
            EXPECTED_LAST: str(expected),
            "Nats-Msg-Id": f"{self.session_id}:{expected}:{digest}",
        }
        limit = link.max_payload - header_bytes(headers)
        if len(data) > limit:
            raise BatchTooLargeError(self.session_id, len(data), limit)
        wait = link.settings.ack_wait
        arrived = write_arrival()
        asked = time.monotonic() if arrived is None else arrived
        deadline = asked + wait  # per request: the time queued behind earlier writes counts
        if time.monotonic() >= deadline:
            raise ClusterUnavailableError(
                self.session_id,
                f"the write waited {time.monotonic() - asked:.1f} s behind this session's earlier "
                f"writes, past ack_wait ({wait:g} s); it was not sent",
            )
        maybe_stored = False
        while True:
            remaining = max(deadline - time.monotonic(), 0.05)
            try:
                ack = link.call(
                    link.js.publish(self.subject, data, timeout=remaining, headers=headers), remaining + 1
                )
                break
            except APIError as exc:
                if exc.err_code == WRONG_LAST_SEQUENCE or "wrong last sequence" in str(exc.description):
                    raise RemoteMoved() from None
                if exc.code == 503:  # no stream leader right now (an election): retry
                    reason = f"the stream has no leader ({exc.description})"
                else:
                    raise ClusterUnavailableError(
                        self.session_id, f"the stream refused the append: {exc.description or exc}"
                    ) from exc
            except (TimeoutError, nats.errors.TimeoutError) as exc:
                maybe_stored = True  # the message may have been stored and only its ack lost
                reason = f"no acknowledgement within {wait:g} s ({type(exc).__name__})"
            except nats.errors.NoRespondersError:
                reason = "the stream has no leader to answer (an election, or a lost quorum)"
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError) as exc:
                maybe_stored = True
                reason = f"the connection is down ({type(exc).__name__})"
            except Exception as exc:  # NoStreamResponseError (a leader change) and the like
                maybe_stored = True
                reason = f"the stream did not answer ({str(exc) or type(exc).__name__})"
            if time.monotonic() >= deadline or not link.connected.is_set():
                raise ClusterUnavailableError(
                    self.session_id, reason, stored="maybe" if maybe_stored else "no"
                ) from None
            time.sleep(0.05)
        log.debug(
            "%s: committed %d after %d (duplicate: %s)", self.session_id, ack.seq, expected, ack.duplicate
        )
        self.last_seq = ack.seq
        self._meta = {"file": self.file_name, "leaf": leaf, "seq": ack.seq, "modified": time.time()}
        if create:
            # Other daemons find (and list) the session through its metadata from now on.
            try:
                self.flush_metadata()
            except Exception:
                link.spawn(self._put_meta())  # the entries are stored; the listing catches up
        else:
            link.spawn(self._put_meta())

    def flush_metadata(self) -> None:
        """Store the metadata now and wait for it (a command that exits right after)."""
        if self._meta:
            self.link.call(
                self.link.kv.put(self.session_id, orjson.dumps(self._meta)), self.link.settings.ack_wait
            )

    async def _put_meta(self) -> None:
        """Store the latest metadata; one put at a time, so an older one never lands last."""
        if self._meta_busy:
            self._meta_dirty = True
            return
        self._meta_busy = True
        try:
            while True:
                self._meta_dirty = False
                await self.link.kv.put(self.session_id, orjson.dumps(self._meta))
                if not self._meta_dirty:
                    break
        finally:
            self._meta_busy = False

    # ------------------------------------------------------------------ reading

    def pull(self, *, fetch: bool) -> list[bytes]:
        """Every message carries the subject sequence it was appended after (its
        ``Nats-Expected-Last-Subject-Sequence``), so a delivery that does not follow what this
        replica holds (a subscription that skipped a message while it restarted) is never
        applied: the missing range is read from the stream instead."""
        out: list[bytes] = []
        while self._delivered:
            seq, previous, data = self._delivered.popleft()
            if seq <= self.last_seq:
                continue
            if previous is not None and previous != self.last_seq:
                self._delivered.clear()  # a gap: read the stream from here
                fetch = True
                break
            log.debug("%s: delivered %d after %s", self.session_id, seq, previous)
            out.append(data)
            self.last_seq = seq
        if fetch:
            try:
                self._fetch(out)
            except ClusterUnavailableError:
                if out:
                    # What was delivered (and counted as held) must reach the replica now; the
                    # rest is read the next time. Raising here lost it (seen under a leader kill).
                    return out
                raise
        return out

    def _fetch(self, out: list[bytes]) -> None:
        """Read the subject after :attr:`last_seq` from the stream, into ``out``."""
        self.link.require(self.session_id)
        while True:
            try:
                msg = self.link.call(
                    self.link.js.get_msg(
                        self.link.settings.stream, seq=self.last_seq + 1, subject=self.subject, next=True
                    ),
                    self.link.settings.ack_wait,
                )
            except NotFoundError:
                return
            except Exception as exc:
                raise ClusterUnavailableError(self.session_id, f"cannot read the log: {exc}") from exc
            if msg.seq is None or msg.seq <= self.last_seq:
                return
            log.debug("%s: fetched %d after %d", self.session_id, msg.seq, self.last_seq)
            out.append(msg.data or b"")
            self.last_seq = msg.seq

    def vanished(self) -> bool:
        async def last() -> int:
            try:
                msg = await self.link.js.get_last_msg(self.link.settings.stream, self.subject)
            except NotFoundError:
                return 0
            return msg.seq or 0

        try:
            return self.link.call(last(), self.link.settings.ack_wait) < self.last_seq
        except Exception as exc:
            raise ClusterUnavailableError(self.session_id, f"cannot read the log: {exc}") from exc

    def follow(self, wake: Callable[[], None]) -> None:
        """Start the ordered consumer after what this replica holds; it survives reconnects."""
        if self._sub is not None:
            return

        async def delivered(msg: Any) -> None:
            headers = msg.headers or {}
            previous = headers.get(EXPECTED_LAST)
            self._delivered.append(
                (msg.metadata.sequence.stream, int(previous) if previous is not None else None, msg.data)
            )
            wake()

        async def subscribe() -> Any:
            return await self.link.js.subscribe(
                self.subject,
                cb=delivered,
                ordered_consumer=True,
                config=ConsumerConfig(
                    deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self.last_seq + 1
                ),
                idle_heartbeat=2.0,
                flow_control=True,
            )

        self._sub = self.link.call(subscribe(), self.link.settings.ack_wait)

    def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None and self.link.connected.is_set():
            self.link.spawn(sub.unsubscribe())
        if self.replica is not None and self.last_seq and not self._closed.is_set():
            write_mark(self.replica, self.last_seq)  # reopened later: only what follows is read
        self._closed.set()


def fetch_all(link: Link, subject: str, after: int = 0) -> tuple[list[bytes], int]:
    """Every message of a session's subject (``after``: those after that sequence), in order,
    and the last one's sequence (0: none; ``after`` when nothing follows it)."""

    async def read() -> tuple[list[bytes], int]:
        stream = link.settings.stream
        try:
            last = await link.js.get_last_msg(stream, subject)
        except NotFoundError:
            return [], 0
        assert last.seq is not None
        if last.seq <= after:
            return [], last.seq
        policy = (
            ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after + 1)
            if after
            else ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
        )
        sub = await link.js.subscribe(subject, ordered_consumer=True, config=policy)
        out: list[bytes] = []
        try:
            while True:
                msg = await sub.next_msg(timeout=link.settings.ack_wait)
                out.append(msg.data)
                if msg.metadata.sequence.stream >= last.seq:
                    return out, msg.metadata.sequence.stream
        finally:
            await sub.unsubscribe()

    return link.call(read(), None)
