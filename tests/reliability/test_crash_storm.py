"""The daemon SIGKILLed at random moments of an 8-client append storm, restarted, again and again.

Four sessions, eight client connections, mixed durability: session 0 is written by two
``fsync`` clients, session 1 by two ``buffered`` ones, sessions 2 and 3 by one of each. Every
client appends sequentially (one request in flight), mostly single entries, sometimes a batch
of three, sometimes a ~40 KB message so that a kill can land inside a large ``write()``. One
more connection subscribes to all four sessions and records what it is told.

After each SIGKILL, on the files as the dead daemon left them:

* every line parses, except fragments that an earlier kill tore (they stay junk lines once
  the next append terminated them) and an unterminated last line; sessiond's loader reads
  every file (Pi's too, at the end, when pi-oracle is installed);
* no entry id and no line appears twice;
* every acknowledged entry is there, with its text, in the order its client got the
  acknowledgements — both modes: a SIGKILL does not lose the page cache, so even ``buffered``
  acknowledgements survive the death of the daemon (only an OS crash could lose a buffered
  tail, which a test cannot cause);
* per client there is no hole: what is present is its acknowledged entries plus, at most,
  a prefix of the one batch that was in flight;
* every entry the subscriber was told about is in the file, in the same order (the update is
  published after the ``write()``).

Then the daemon is restarted on the same store (its stale socket left in place) and the
subscriber reconnects: ``session/subscribe`` and ``session/entries {afterId: <last seen>}``
must give it exactly the entries it missed — seen + fetched = the file. The clients reconnect
and carry on; the next kill checks everything again, including what earlier rounds left.

``SESSIOND_CRASH_ITERATIONS`` sets the number of kills (default 10, about half a minute);
``SESSIOND_CRASH_ITERATIONS=100 .venv/bin/python -m pytest tests/reliability/test_crash_storm.py``
is the full run documented in docs/reliability.md. ``SESSIOND_CRASH_SEED`` changes the seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client
from sessiond_client.client import ConnectionClosedError
from tests.harness.daemon import Daemon
from tests.reliability.common import (
    kill,
    load_checked,
    message,
    pi_loads,
    read_lines,
    restart,
    stop_cleanly,
    text_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ITERATIONS = int(os.environ.get("SESSIOND_CRASH_ITERATIONS", "10"))
SEED = int(os.environ.get("SESSIOND_CRASH_SEED", "9001"))
SESSIONS = 4
CLIENTS = 8
KILL_AFTER = (0.05, 0.6)
"""Seconds of storm before the kill (uniform)."""
BIG_TEXT = 40_000

# client -> (session, durability): session 0 all fsync, 1 all buffered, 2 and 3 mixed.
PLAN = [
    (0, "fsync"),
    (1, "buffered"),
    (2, "fsync"),
    (3, "buffered"),
    (0, "fsync"),
    (1, "buffered"),
    (2, "buffered"),
    (3, "fsync"),
]


def sid(n: int) -> str:
    return f"crash-s{n}"


@dataclass
class Writer:
    """One storm client's memory, kept across daemon lives."""

    index: int
    session: int
    durability: str
    next_seq: int = 0
    acked: list[tuple[str, int]] = field(default_factory=list)
    """(entry id, seq) of every acknowledged entry, in acknowledgement order."""
    in_flight: list[int] = field(default_factory=list)
    """Seqs of the batch sent but not acknowledged when the daemon died."""
    recovered: set[int] = field(default_factory=set)
    """Seqs that were in flight at a kill and turned out to be on disk (must stay there)."""

    def tag(self, seq: int) -> str:
        return f"c{self.index}:{seq}:"


@dataclass
class Stats:
    kills: int = 0
    acked_fsync: int = 0
    acked_buffered: int = 0
    torn_tails: int = 0
    in_flight_on_disk: int = 0
    in_flight_lost: int = 0
    resynced: int = 0
    seconds: list[float] = field(default_factory=list)


def parse_tag(entry: dict[str, Any]) -> tuple[int, int] | None:
    text = text_of(entry)
    if not text.startswith("c"):
        return None
    client, seq, _ = text[1:].split(":", 2)
    return int(client), int(seq)


async def storm_client(daemon: Daemon, writer: Writer, rng: random.Random, stop: asyncio.Event) -> None:
    """Append until the connection dies (the kill) or ``stop`` is set."""
    try:
        client = await daemon.client(notifications={"optOut": ["session/update"]})
    except (ConnectionError, OSError):
        return
    try:
        while not stop.is_set():
            n = 3 if rng.random() < 0.15 else 1
            seqs = list(range(writer.next_seq, writer.next_seq + n))
            entries = []
            for seq in seqs:
                big = rng.random() < 0.08
                body = "x" * BIG_TEXT if big else f"small {rng.randrange(1 << 30)}"
                role = "user" if seq % 2 == 0 else "assistant"
                entries.append({"type": "message", "message": message(role, writer.tag(seq) + body, seq)})
            writer.in_flight = seqs
            result = await client.request(
                "session/append",
                {"sessionId": sid(writer.session), "entries": entries, "durability": writer.durability},
                timeout=60,
            )
            writer.acked.extend(zip(result["entryIds"], seqs, strict=True))
            writer.in_flight = []
            writer.next_seq += n
    except (ConnectionClosedError, ConnectionError, OSError):
        pass  # the daemon died under us: writer.in_flight is the unknown batch
    finally:
        with contextlib.suppress(Exception):
            await client.close()


async def subscribe_all(daemon: Daemon, seen: dict[int, list[str]]) -> tuple[Client, asyncio.Future[None]]:
    """A subscriber on every session that appends what it is told to ``seen``."""
    client = await daemon.client(notifications={"optOut": ["usage_update"]})
    for n in range(SESSIONS):
        await client.request("session/subscribe", {"sessionId": sid(n)})
    by_id = {sid(n): n for n in range(SESSIONS)}

    def take(method: str, params: Any) -> None:
        if method != "session/update":
            return
        update = params["update"]
        kind = update["sessionUpdate"]
        assert kind != "resync_required", update  # this subscriber reads fast enough
        if kind == "entries_appended":
            seen[by_id[params["sessionId"]]].extend(update["entryIds"])

    async def record() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                take(*await client.notification(timeout=None))

    async def until_closed() -> None:
        """Record until the daemon dies, then what was still queued."""
        task = asyncio.ensure_future(record())
        await client.wait_closed()
        task.cancel()
        await task
        for method, params in client.drain_notifications():
            take(method, params)

    return client, asyncio.ensure_future(until_closed())


async def create_sessions(daemon: Daemon) -> None:
    client = await daemon.client()
    for n in range(SESSIONS):
        await client.request("session/new", {"cwd": f"/crash/{n}", "sessionId": sid(n)})
        await client.request(
            "session/append",
            {
                "sessionId": sid(n),
                "entries": [{"type": "message", "message": message("user", f"start of session {n}")}],
                "durability": "fsync",
            },
        )
    await client.close()


def check_files(
    paths: dict[int, Path],
    writers: list[Writer],
    seen: dict[int, list[str]],
    junk: dict[int, list[bytes]],
    pending: dict[int, bytes | None],
    stats: Stats,
) -> None:
    """What a kill left on disk, against what the clients and the subscriber were told."""
    for n, path in paths.items():
        lines = read_lines(path)
        load_checked(path)  # sessiond's loader reads it, with the same entries
        complete = lines.raw_lines
        assert len(complete) == len(set(complete)), f"session {n}: a line appears twice"
        ids = lines.ids
        assert len(ids) == len(set(ids)), f"session {n}: an entry id appears twice"
        # Junk lines are exactly the fragments earlier kills tore, once a later append terminated
        # them; a fragment nobody appended after yet is still the unterminated tail.
        torn_before = pending[n]
        if torn_before is not None and lines.junk == [*junk[n], torn_before]:
            junk[n], pending[n] = [*junk[n], torn_before], None
        assert lines.junk == junk[n], f"session {n}: a line does not parse: {lines.junk!r:.300}"
        if pending[n] is not None:
            assert lines.torn == pending[n], f"session {n}: the torn tail changed"
        elif lines.torn:
            stats.torn_tails += 1
            pending[n] = lines.torn
        position = {eid: i for i, eid in enumerate(ids)}
        by_tag = {}
        for entry in lines.entries:
            tag = parse_tag(entry)
            if tag is not None:
                assert tag not in by_tag, f"session {n}: {tag} written twice"
                by_tag[tag] = entry
        for w in (w for w in writers if w.session == n):
            missing = [(eid, seq) for eid, seq in w.acked if eid not in position]
            assert not missing, f"client {w.index} ({w.durability}): acknowledged entries lost: {missing[:3]}"
            for eid, seq in w.acked:
                assert text_of(by_tag[(w.index, seq)]).startswith(w.tag(seq))
                assert by_tag[(w.index, seq)]["id"] == eid
            order = [position[eid] for eid, _ in w.acked]
            assert order == sorted(order), f"client {w.index}: acknowledged entries out of order"
            present = sorted(seq for (c, seq) in by_tag if c == w.index)
            acked = {seq for _, seq in w.acked} | w.recovered
            extra = [s for s in present if s not in acked]
            # No hole: beyond what was acknowledged, only a prefix of the batch in flight.
            assert extra == w.in_flight[: len(extra)], (
                f"client {w.index}: unexpected entries {extra} (in flight {w.in_flight})"
            )
            assert acked <= set(present)
            stats.in_flight_on_disk += len(extra)
            stats.in_flight_lost += len(w.in_flight) - len(extra)
            w.recovered |= set(extra)
            w.next_seq = max([w.next_seq, *[s + 1 for s in extra]])
            w.in_flight = []
        told = [eid for eid in seen[n] if eid in position]
        assert told == seen[n], f"session {n}: the subscriber was told of entries not on disk"
        assert ids[: len(told)] == told, f"session {n}: updates were not in file order, or one is missing"


async def resync(daemon: Daemon, paths: dict[int, Path], seen: dict[int, list[str]], stats: Stats) -> None:
    """A subscriber reconnecting after the restart catches up from the last id it saw."""
    client = await daemon.client(notifications={"optOut": ["usage_update"]})
    for n in range(SESSIONS):
        loaded = await client.request("session/subscribe", {"sessionId": sid(n)})
        on_disk = read_lines(paths[n]).ids
        assert loaded["entryCount"] == len(on_disk)
        assert loaded["leafId"] == on_disk[-1]
        params: dict[str, Any] = {"sessionId": sid(n), "limit": 5000}
        if seen[n]:
            params["afterId"] = seen[n][-1]
        page = await client.request("session/entries", params)
        fetched = [e["id"] for e in page["entries"]]
        assert page["nextOffset"] is None
        # What it was told is the start of the file, and what it fetched is exactly the rest.
        assert on_disk[: len(seen[n])] == seen[n], f"session {n}: the subscriber missed an update"
        assert seen[n] + fetched == on_disk
        stats.resynced += len(fetched)
        seen[n] = on_disk  # the subscriber's view is the file again
    await client.close()


async def test_sigkill_during_append_storm(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    stats = Stats()
    daemon = restart(tmp_path, 0)
    writers = [Writer(i, s, d) for i, (s, d) in enumerate(PLAN)]
    seen: dict[int, list[str]] = {n: [] for n in range(SESSIONS)}
    junk: dict[int, list[bytes]] = {n: [] for n in range(SESSIONS)}
    pending: dict[int, bytes | None] = dict.fromkeys(range(SESSIONS))
    try:
        await create_sessions(daemon)
        probe = await daemon.client()
        paths = {}
        for n in range(SESSIONS):
            paths[n] = Path((await probe.request("session/load", {"sessionId": sid(n)}))["path"])
        await probe.close()
        seen = {n: read_lines(paths[n]).ids for n in range(SESSIONS)}
        for iteration in range(ITERATIONS):
            started = time.monotonic()
            subscriber, recording = await subscribe_all(daemon, seen)
            stop = asyncio.Event()
            rngs = [random.Random(rng.random()) for _ in writers]
            pairs = zip(writers, rngs, strict=True)
            tasks = [asyncio.ensure_future(storm_client(daemon, w, r, stop)) for w, r in pairs]
            await asyncio.sleep(rng.uniform(*KILL_AFTER))
            kill(daemon)
            stats.kills += 1
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            await asyncio.wait_for(recording, 60)
            await subscriber.close()

            check_files(paths, writers, seen, junk, pending, stats)

            daemon = restart(tmp_path, iteration + 1)
            await resync(daemon, paths, seen, stats)
            stats.seconds.append(time.monotonic() - started)

        # A last, gentle round: the restarted daemon appends on top of whatever the kills left.
        client = await daemon.client()
        for n in range(SESSIONS):
            await client.request(
                "session/append",
                {
                    "sessionId": sid(n),
                    "entries": [{"type": "message", "message": message("user", "after the storm")}],
                    "durability": "fsync",
                },
            )
        await client.close()
        stop_cleanly(daemon)
        for n, path in paths.items():
            lines = read_lines(path)
            assert not lines.tail and lines.junk == junk[n] + ([pending[n]] if pending[n] else [])
            loaded = load_checked(path)
            assert loaded.diagnostics.unparsable_lines == len(lines.junk)
            pi = pi_loads(path)
            if pi is not None:
                assert pi["leafId"] == lines.ids[-1]
    finally:
        if daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()
    for w in writers:
        if w.durability == "fsync":
            stats.acked_fsync += len(w.acked)
        else:
            stats.acked_buffered += len(w.acked)
    per = sum(stats.seconds) / max(1, len(stats.seconds))
    print(
        f"\ncrash storm: {stats.kills} kills, {stats.acked_fsync} fsync + {stats.acked_buffered} buffered "
        f"acknowledged entries checked after every kill, {stats.in_flight_on_disk} in-flight entries found "
        f"on disk, {stats.in_flight_lost} not, {stats.torn_tails} torn tails, {stats.resynced} entries "
        f"resynced by the subscriber, {per:.2f} s per kill"
    )
    assert stats.acked_fsync > 0 and stats.acked_buffered > 0
    assert stats.kills == ITERATIONS
