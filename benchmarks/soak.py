"""Load and soak: the real daemon under 32 clients for minutes, checked for lost entries and leaks.

What runs (all against one ``python -m sessiond serve`` on a fresh store, see ``docs/soak.md``):

* **writers** append one message, or a batch of 2-4, to their group's session at a paced rate;
  a quarter of the appends ask for ``durability: "fsync"``, the rest ``"buffered"``; one in 20
  is a compare-and-append (``expectLeafId``) that may be refused with -32012. Every message
  carries a nonce (``[soak c<client>-<seq>.<i>]``) so an acknowledged id can be tied to the
  line it names and a refused append can be looked for in the file.
* **readers** alternate ``context/get``, ``context/usage`` and ``session/entries``.
* **subscribers** subscribe to their group's session and to the watched Pi session and record
  every ``session/update`` in arrival order: the ids of ``entries_appended`` must form a
  contiguous run of the file's order (no gap, no duplicate, no reordering).
* **a compactor** runs ``compaction/run`` (extractive summarizer, no model) on every group's
  session every ``--compact-every`` seconds (default: a tenth of the run, 60 s for 10 minutes).
* **an external writer** (its own process) appends Pi-format lines straight into a Pi session
  file under ``$PI_CODING_AGENT_DIR/sessions`` (a watched, read-only root), sometimes in two
  ``write()`` calls and sometimes several lines at once. A *pinned* subscriber that stays
  connected for the whole run must receive every one of them (``external: true``) in order,
  and at the end the daemon must report them all.

Sessions and connections turn over: the run is cut into epochs (a fifth of the run); at each
epoch every client closes its connection, reconnects and moves to a new session per group
(``soak-<run>-g<group>-e<epoch>``, created by whichever client gets there first). Agents come
and go in real use, and a daemon that keeps every entry of an open session indexed cannot have
flat memory while one session grows forever; turning sessions over is what makes a flat RSS
a meaningful requirement, and it exercises closing sessions and dropping connections.

Clients are asyncio tasks spread over ``--procs`` processes (default 4 x 8 = 32 connections).
The daemon sees 32 independent connections either way; 32 interpreters on 2 shared cores would
mostly measure the scheduler and cost ~1 GB and ~10 s of CPU just to start. ``--procs 32`` runs
one client per process. Latency is measured in the client (request written -> response read),
so it includes the client's own event loop, shared by the clients of that process.

Reported per time window (a tenth of the run): latency p50/p95/p99/max per operation, operations
per second, the daemon's RSS (``/proc/<pid>/status`` VmRSS), CPU and open file descriptors.
Verdicts (exit 1 if one fails): the daemon stayed up and stopped cleanly (SIGTERM -> exit 0, no
traceback in its log); every acknowledged entry id appears exactly once, holding the nonce it was
acknowledged for; no refused append was written; every line of every file parses and every file
loads with sessiond's loader without junk; subscribers saw contiguous, duplicate-free runs in file
order; the external writer's entries are all visible; no unexpected RPC error or timeout; RSS flat
(the median of the last window at most ``--rss-growth`` (default 15%) + ``--rss-slack`` (default
16 MiB) above the median of the second window, the first after warm-up).

Run: ``.venv/bin/python -m benchmarks.soak [--duration 600] [--clients 32] [--procs 4] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from benchmarks.harness import OUT_DIR, REPO, Daemon, module_command, monotonic, pct

MODULE = "benchmarks.soak"
CWD_PREFIX = "/soak/group"
PI_CWD = "/soak/pi"
PI_SESSION_ID = "soak-pi-external"
NONCE = re.compile(r"^\[soak (c\d+-\d+\.\d+)\]")
EXT_NONCE = re.compile(r"^\[ext (\d+)\]")

# Error codes (sessiond_protocol.ErrorCode) the workload provokes on purpose.
LEAF_MISMATCH = -32012
SESSION_EXISTS = -32015
NOTHING_TO_COMPACT = -32024
COMPACTION_RUNNING = -32023
REQUEST_TIMEOUT_S = 60.0

# --------------------------------------------------------------------------- shared helpers


def usage_block(total: int) -> dict[str, Any]:
    """A provider usage well below any context window: the daemon must not compact by itself."""
    return {
        "input": total - 20,
        "output": 20,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


WORDS = [
    "append", "branch", "context", "daemon", "entry", "file", "journal", "leaf", "model",
    "notify", "offset", "parent", "reader", "session", "subscribe", "summary", "token", "update",
    "watch", "writer", "fix", "test", "refactor", "module", "error", "latency", "memory",
]  # fmt: skip


def filler(rng: random.Random, size: int) -> str:
    return " ".join(rng.choices(WORDS, k=size // 6 + 1))[:size]


def make_message(rng: random.Random, nonce: str, role: str, ts: int) -> dict[str, Any]:
    """A Pi agent message (~300 B) whose text starts with the nonce that identifies it."""
    if role == "user":
        text = f"[soak {nonce}] " + filler(rng, rng.randint(80, 260))
        return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
    text = f"[soak {nonce}] " + filler(rng, rng.randint(40, 200))
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": usage_block(1200),
        "stopReason": "stop",
        "timestamp": ts,
    }


def session_id_for(run: str, group: int, epoch: int) -> str:
    return f"soak-{run}-g{group}-e{epoch}"


# --------------------------------------------------------------------------- worker: clients


@dataclass
class Recorder:
    """What one worker process measured and saw; dumped as JSON for the orchestrator."""

    t0: float
    window: float
    windows: int
    latency: dict[str, list[list[float]]] = field(default_factory=dict)
    acked: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unacked: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    seen: list[dict[str, Any]] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)

    def sample(self, op: str, sent: float, seconds: float) -> None:
        w = min(self.windows - 1, max(0, int((sent - self.t0) / self.window)))
        per = self.latency.get(op)
        if per is None:
            per = self.latency[op] = [[] for _ in range(self.windows)]
        per[w].append(seconds)

    def dump(self) -> dict[str, Any]:
        return {
            "latency": self.latency,
            "acked": self.acked,
            "refused": self.refused,
            "unacked": self.unacked,
            "errors": self.errors,
            "outcomes": dict(self.outcomes),
            "seen": self.seen,
            "sessions": self.sessions,
        }


class Worker:
    """One process's clients: a share of the 32, each an asyncio task with its own connection."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.socket = cfg["socket"]
        self.run = cfg["run"]
        self.groups = cfg["groups"]
        self.rec: Recorder | None = None
        self.t0 = 0.0
        self.end = 0.0
        self.epoch_len: float = cfg["epoch"]

    # -- time -----------------------------------------------------------------

    def epoch_at(self, t: float) -> int:
        return max(0, int((t - self.t0) / self.epoch_len))

    def epoch_end(self, epoch: int) -> float:
        return min(self.end, self.t0 + (epoch + 1) * self.epoch_len)

    # -- requests -------------------------------------------------------------

    async def call(self, client: Any, op: str, method: str, params: dict[str, Any]) -> Any:
        """A timed request; errors propagate (the caller decides which are expected)."""
        assert self.rec is not None
        sent = monotonic()
        try:
            result = await client.request(method, params, timeout=REQUEST_TIMEOUT_S)
        finally:
            self.rec.sample(op, sent, monotonic() - sent)
        return result

    def error(self, client_idx: int, op: str, exc: BaseException) -> None:
        assert self.rec is not None
        code = getattr(exc, "code", None)
        self.rec.errors.append(
            {"client": client_idx, "op": op, "code": code, "error": f"{type(exc).__name__}: {exc}"[:300]}
        )

    async def connect(self, name: str) -> Any:
        from sessiond_client import Client  # noqa: PLC0415

        client = await Client.connect_unix(self.socket)
        await client.initialize(name)
        return client

    async def open_session(self, client: Any, group: int, epoch: int) -> str:
        """The group's session of this epoch: created by the first client to ask, loaded by the rest."""
        from sessiond_client import RpcError  # noqa: PLC0415

        assert self.rec is not None
        sid = session_id_for(self.run, group, epoch)
        try:
            res = await self.call(
                client, "session/new", "session/new", {"cwd": f"{CWD_PREFIX}{group}", "sessionId": sid}
            )
        except RpcError as exc:
            if exc.code != SESSION_EXISTS:
                raise
            res = await self.call(client, "session/load", "session/load", {"sessionId": sid})
        self.rec.sessions[sid] = res["path"]
        return sid

    # -- roles ----------------------------------------------------------------

    async def writer(self, idx: int, group: int) -> None:
        from sessiond_client import RpcError  # noqa: PLC0415

        assert self.rec is not None
        rec = self.rec
        rng = random.Random(self.cfg["seed"] * 1000 + idx)
        rate = self.cfg["writer_rate"]
        seq = 0
        while monotonic() < self.end:
            epoch = self.epoch_at(monotonic())
            stop = self.epoch_end(epoch)
            client = await self.connect(f"soak-writer-{idx}")
            try:
                sid = await self.open_session(client, group, epoch)
                leaf: str | None = None
                next_t = monotonic()
                while True:
                    next_t += rng.uniform(0.5, 1.5) / rate
                    delay = next_t - monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    else:
                        next_t = monotonic()  # behind: do not burst to catch up
                    if monotonic() >= stop:
                        break
                    seq += 1
                    count = 1 if rng.random() < 0.8 else rng.randint(2, 4)
                    nonces = [f"c{idx}-{seq}.{i}" for i in range(count)]
                    ts = int(time.time() * 1000)
                    entries = [
                        {"type": "message", "message": make_message(rng, n, ("user", "assistant")[i % 2], ts)}
                        for i, n in enumerate(nonces)
                    ]
                    durability = "fsync" if rng.random() < self.cfg["fsync_fraction"] else "buffered"
                    params: dict[str, Any] = {"sessionId": sid, "entries": entries, "durability": durability}
                    cas = leaf is not None and rng.random() < 0.05
                    if cas:
                        params["expectLeafId"] = leaf
                    op = f"append/{durability}"
                    try:
                        res = await self.call(client, op, "session/append", params)
                    except RpcError as exc:
                        if cas and exc.code == LEAF_MISMATCH:
                            rec.refused.extend(nonces)
                            rec.outcomes["append refused (leaf moved)"] += 1
                            leaf = (exc.data or {}).get("currentLeafId")
                            continue
                        self.error(idx, op, exc)
                        rec.unacked.append({"sessionId": sid, "nonces": nonces})
                        continue
                    except (TimeoutError, ConnectionError) as exc:
                        self.error(idx, op, exc)
                        rec.unacked.append({"sessionId": sid, "nonces": nonces})
                        if isinstance(exc, ConnectionError):
                            return
                        continue
                    leaf = res["leafId"]
                    rec.outcomes["append ok" + (" (compare-and-append)" if cas else "")] += 1
                    rec.acked.append(
                        {"sessionId": sid, "ids": res["entryIds"], "nonces": nonces, "durability": durability}
                    )
            finally:
                await client.close()

    async def reader(self, idx: int, group: int) -> None:
        from sessiond_client import RpcError  # noqa: PLC0415

        assert self.rec is not None
        rng = random.Random(self.cfg["seed"] * 1000 + idx)
        rate = self.cfg["reader_rate"]
        n = 0
        while monotonic() < self.end:
            epoch = self.epoch_at(monotonic())
            stop = self.epoch_end(epoch)
            client = await self.connect(f"soak-reader-{idx}")
            try:
                sid = await self.open_session(client, group, epoch)
                next_t = monotonic()
                while True:
                    next_t += rng.uniform(0.5, 1.5) / rate
                    delay = next_t - monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    else:
                        next_t = monotonic()
                    if monotonic() >= stop:
                        break
                    n += 1
                    kind = ("context/get", "context/usage", "context/get", "session/entries")[n % 4]
                    params: dict[str, Any] = {"sessionId": sid}
                    if kind == "session/entries":
                        params["limit"] = 200
                    try:
                        res = await self.call(client, kind, kind, params)
                    except (RpcError, TimeoutError) as exc:
                        self.error(idx, kind, exc)
                        continue
                    if (
                        kind == "context/get"
                        and res["messages"]
                        and res["entryIds"] != [m["entryId"] for m in res["messages"]]
                    ):
                        # Not an error of the protocol (entryIds lists entries, not messages),
                        # but they must at least cover the messages' entries.
                        missing = {m["entryId"] for m in res["messages"]} - set(res["entryIds"])
                        if missing:
                            self.error(idx, kind, AssertionError(f"messages from unlisted entries {missing}"))
            finally:
                await client.close()

    async def compactor(self, idx: int) -> None:
        from sessiond_client import RpcError  # noqa: PLC0415

        assert self.rec is not None
        rec = self.rec
        every = self.cfg["compact_every"]
        k = 1
        while True:
            at = self.t0 + k * every
            k += 1
            if at >= self.end:
                return
            await asyncio.sleep(max(0.0, at - monotonic()))
            epoch = self.epoch_at(monotonic())
            client = await self.connect(f"soak-compactor-{idx}")
            try:
                for group in range(self.groups):
                    sid = await self.open_session(client, group, epoch)
                    params = {
                        "sessionId": sid,
                        "summarizer": "extractive",
                        "keepRecentTokens": self.cfg["keep_recent_tokens"],
                    }
                    try:
                        res = await self.call(client, "compaction/run", "compaction/run", params)
                    except RpcError as exc:
                        if exc.code in (NOTHING_TO_COMPACT, COMPACTION_RUNNING):
                            rec.outcomes[f"compaction skipped ({exc.code})"] += 1
                            continue
                        self.error(idx, "compaction/run", exc)
                        continue
                    except TimeoutError as exc:
                        self.error(idx, "compaction/run", exc)
                        continue
                    rec.outcomes["compaction ok"] += 1
                    rec.acked.append(
                        {
                            "sessionId": sid,
                            "ids": [res["entryId"]],
                            "nonces": [None],
                            "durability": "compaction",
                        }
                    )
            finally:
                await client.close()

    async def consume(self, client: Any, seen: dict[str, dict[str, Any]]) -> None:
        """Record every update in arrival order: entry ids per session, counts per kind."""
        while True:
            method, params = await client.notification(timeout=None)
            if method != "session/update":
                continue
            sid = params["sessionId"]
            update = params["update"]
            kind = update["sessionUpdate"]
            s = seen.setdefault(sid, {"ids": [], "kinds": Counter(), "external": 0})
            s["kinds"][kind] += 1
            if kind == "entries_appended":
                s["ids"].extend(update["entryIds"])
                if update.get("external"):
                    s["external"] += len(update["entryIds"])
            elif kind in ("resync_required", "external_change"):
                s["ids"].append(None)  # a break: order is checked per segment

    def flush_seen(self, idx: int, role: str, seen: dict[str, dict[str, Any]]) -> None:
        assert self.rec is not None
        for sid, s in seen.items():
            self.rec.seen.append(
                {
                    "client": idx,
                    "role": role,
                    "sessionId": sid,
                    "ids": s["ids"],
                    "kinds": dict(s["kinds"]),
                    "external": s["external"],
                }
            )

    async def subscriber(self, idx: int, group: int) -> None:
        assert self.rec is not None
        grace = self.cfg["grace"]
        while monotonic() < self.end:
            epoch = self.epoch_at(monotonic())
            stop = self.epoch_end(epoch)
            client = await self.connect(f"soak-subscriber-{idx}")
            seen: dict[str, dict[str, Any]] = {}
            task = asyncio.ensure_future(self.consume(client, seen))
            try:
                sid = await self.open_session(client, group, epoch)
                await self.call(client, "session/subscribe", "session/subscribe", {"sessionId": sid})
                await self.call(
                    client, "session/load", "session/load", {"sessionId": PI_SESSION_ID, "subscribe": True}
                )
                # The last epoch stays a moment longer to collect the final updates.
                await asyncio.sleep(max(0.0, stop - monotonic() + (grace if stop >= self.end else 0.0)))
            finally:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                await client.close()
                self.flush_seen(idx, "subscriber", seen)

    async def pinned_setup(self) -> tuple[Any, dict[str, dict[str, Any]], asyncio.Future[None]]:
        """The Pi-session subscriber that never reconnects: subscribed before the writer starts."""
        client = await self.connect("soak-pinned")
        seen: dict[str, dict[str, Any]] = {}
        task = asyncio.ensure_future(self.consume(client, seen))
        await client.request("session/load", {"sessionId": PI_SESSION_ID, "subscribe": True})
        return client, seen, task

    async def pinned(self, idx: int, client: Any, seen: dict[str, Any], task: asyncio.Future[None]) -> None:
        """Wait for the external writer's last line to be announced (or give up after a while)."""
        done = Path(self.cfg["external_result"])
        await asyncio.sleep(max(0.0, self.end - monotonic()))
        deadline = monotonic() + 15
        last: str | None = None
        while monotonic() < deadline:
            if last is None and done.exists():
                with contextlib.suppress(ValueError):
                    ids = json.loads(done.read_text())["ids"]
                    last = ids[-1] if ids else ""
            ids_seen = seen.get(PI_SESSION_ID, {}).get("ids", [])
            if last is not None and (last == "" or (ids_seen and ids_seen[-1] == last)):
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await client.close()
        self.flush_seen(idx, "pinned", seen)

    # -- main -----------------------------------------------------------------

    async def main(self) -> None:
        cfg = self.cfg
        pinned = None
        if cfg["pinned"] is not None:
            pinned = await self.pinned_setup()
        print("ready", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        self.t0 = float(line.split()[1])
        self.end = self.t0 + cfg["duration"]
        self.rec = Recorder(self.t0, cfg["window"], cfg["windows"])
        await asyncio.sleep(max(0.0, self.t0 - monotonic()))
        tasks = []
        for idx, role, group in cfg["clients"]:
            if role == "writer":
                tasks.append(self.writer(idx, group))
            elif role == "reader":
                tasks.append(self.reader(idx, group))
            elif role == "subscriber":
                tasks.append(self.subscriber(idx, group))
            elif role == "compactor":
                tasks.append(self.compactor(idx))
        names = [(idx, role) for idx, role, _ in cfg["clients"]]
        if pinned is not None:
            tasks.append(self.pinned(cfg["pinned"], *pinned))
            names.append((cfg["pinned"], "pinned"))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for (idx, role), res in zip(names, results, strict=True):
            if isinstance(res, BaseException):  # a client that died is an unexpected error
                self.error(idx, f"{role} task", res)
        Path(cfg["result"]).write_text(json.dumps(self.rec.dump()))
        print("done", flush=True)


def worker_main() -> None:
    cfg = json.loads(sys.stdin.readline())
    asyncio.run(Worker(cfg).main())


# --------------------------------------------------------------------------- external writer


def pi_line(entry_id: str, parent: str | None, message: dict[str, Any]) -> bytes:
    """One Pi v3 message entry, written as Pi writes it (compact JSON, one line)."""
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "message": message,
    }
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def external_main() -> None:
    """Append Pi lines to a file the daemon watches: single lines, split lines, small bursts."""
    cfg = json.loads(sys.stdin.readline())
    path = Path(cfg["path"])
    rng = random.Random(cfg["seed"] + 99)
    parent = cfg["first_id"]
    ids: list[str] = []
    print("ready", flush=True)
    t0 = float(sys.stdin.readline().split()[1])
    end = t0 + cfg["duration"]
    time.sleep(max(0.0, t0 - monotonic()))
    n = 0
    next_t = monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        while True:
            next_t += rng.uniform(0.5, 1.5) / cfg["rate"]
            time.sleep(max(0.0, next_t - monotonic()))
            if monotonic() >= end:
                break
            burst = 1 if rng.random() < 0.85 else rng.randint(2, 5)
            data = b""
            for _ in range(burst):
                n += 1
                eid = f"e{n:07x}"
                role = ("user", "assistant")[n % 2]
                msg = make_message(rng, f"x{n}", role, int(time.time() * 1000))
                msg["content"][0]["text"] = f"[ext {n}] " + msg["content"][0]["text"]
                data += pi_line(eid, parent, msg)
                parent = eid
                ids.append(eid)
            if burst == 1 and rng.random() < 0.15:
                cut = rng.randint(1, len(data) - 1)  # a line written in two pieces
                os.write(fd, data[:cut])
                time.sleep(rng.uniform(0.001, 0.03))
                os.write(fd, data[cut:])
            else:
                os.write(fd, data)
    finally:
        os.close(fd)
    Path(cfg["result"]).write_text(json.dumps({"ids": ids}))
    print("done", flush=True)


# --------------------------------------------------------------------------- orchestrator


def read_status(pid: int) -> dict[str, int]:
    """VmRSS (KiB), CPU ticks (utime+stime), threads and open fds of the daemon."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "Threads:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0])
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    out["ticks"] = int(fields[11]) + int(fields[12])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


class Sampler(threading.Thread):
    """Samples the daemon's /proc every ``interval`` seconds; notices when it dies."""

    def __init__(self, proc: subprocess.Popen[bytes], interval: float, live: bool) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.interval = interval
        self.live = live
        self.samples: list[dict[str, float]] = []
        self.stopping = threading.Event()
        self.died_at: float | None = None

    def run(self) -> None:
        while not self.stopping.is_set():
            if self.proc.poll() is not None:
                self.died_at = monotonic()
                return
            try:
                st = read_status(self.proc.pid)
            except (OSError, ValueError, IndexError):
                continue
            self.samples.append({"t": monotonic(), **st})
            self.stopping.wait(self.interval)


def assign_roles(clients: int, groups: int) -> list[tuple[int, str, int]]:
    """(client index, role, group): 1 compactor, ~1/6 subscribers, ~1/8 readers, the rest writers."""
    n_sub = max(2, clients // 6)
    n_read = max(1, clients // 8)
    n_write = clients - 1 - n_sub - n_read
    if n_write < 1:
        raise SystemExit("--clients must be at least 5")
    roles = ["compactor"] + ["subscriber"] * n_sub + ["reader"] * n_read + ["writer"] * n_write
    counters: Counter[str] = Counter()
    out = []
    for idx, role in enumerate(roles):
        out.append((idx, role, counters[role] % groups))
        counters[role] += 1
    return out


def write_pi_session(root: Path) -> tuple[Path, str]:
    """A Pi v3 session in Pi's (watched, read-only) root: header and one user message."""
    directory = root / "sessions" / "--soak-pi--"
    directory.mkdir(parents=True)
    path = directory / f"2026-01-01T00-00-00-000Z_{PI_SESSION_ID}.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": PI_SESSION_ID,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": PI_CWD,
    }
    first = "e0000000"
    msg = {"role": "user", "content": [{"type": "text", "text": "[ext 0] start"}], "timestamp": 1}
    path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + pi_line(first, None, msg))
    return path, first


def start_daemon(tmp: Path, config: str) -> tuple[subprocess.Popen[bytes], Path, Path, dict[str, str]]:
    """The daemon on ``tmp`` (harness layout), and the environment its clients run with."""
    path = os.pathsep.join([str(REPO), str(REPO / "clients" / "python")])
    # Diagnostics only (e.g. a sitecustomize that runs tracemalloc): SOAK_DAEMON_PYTHONPATH
    # is put in front of the daemon's PYTHONPATH; the clients never see it.
    extra = os.environ.get("SOAK_DAEMON_PYTHONPATH")
    daemon = Daemon(
        tmp, config, env={"PYTHONPATH": os.pathsep.join([extra, path]) if extra else path}, log_level="info"
    ).start()
    assert daemon.process is not None
    return daemon.process, daemon.socket, daemon.log, {**daemon.env, "PYTHONPATH": path}


def stop_daemon(proc: subprocess.Popen[bytes]) -> tuple[int | None, float]:
    """SIGTERM and wait: (exit code, seconds it took); killed after 30 s (code None)."""
    if proc.poll() is not None:
        return proc.returncode, 0.0
    t = monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None, monotonic() - t
    return code, monotonic() - t


async def daemon_view_of_pi(sock: Path, expected_last: str | None, count: int) -> dict[str, Any]:
    """After the run: does the daemon hold every external line? Waits up to 10 s for the watcher."""
    from sessiond_client import Client  # noqa: PLC0415

    client = await Client.connect_unix(sock)
    try:
        await client.initialize("soak-final")
        deadline = monotonic() + 10
        while True:
            res = await client.request("session/load", {"sessionId": PI_SESSION_ID})
            ok = res["entryCount"] == count and res["leafId"] == expected_last
            if ok or monotonic() > deadline:
                return {"entryCount": res["entryCount"], "leafId": res["leafId"], "ok": ok}
            await asyncio.sleep(0.1)
    finally:
        await client.close()


def verify_files(
    store: Path, pi_path: Path, results: list[dict[str, Any]], external_ids: list[str]
) -> dict[str, Any]:
    """The end-of-run correctness checks against the files on disk (daemon stopped)."""
    import orjson  # noqa: PLC0415

    from sessiond.formats.pi import load_session  # noqa: PLC0415

    problems: list[str] = []
    file_order: dict[str, list[str]] = {}
    id_count: dict[str, Counter[str]] = {}
    nonce_of: dict[str, dict[str, str | None]] = {}
    nonce_count: Counter[str] = Counter()
    lines_total = 0
    files = [*sorted((store / "sessions").rglob("*.jsonl")), pi_path]
    for path in files:
        raw = path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            problems.append(f"{path.name}: does not end with a newline")
        lines = raw.split(b"\n")[:-1] if raw.endswith(b"\n") else raw.split(b"\n")
        header = None
        order: list[str] = []
        counts: Counter[str] = Counter()
        nonces: dict[str, str | None] = {}
        for n, line in enumerate(lines, 1):
            lines_total += 1
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                problems.append(f"{path.name}:{n}: line does not parse")
                continue
            if obj.get("type") == "session":
                header = obj
                continue
            eid = obj.get("id")
            order.append(eid)
            counts[eid] += 1
            nonce = None
            msg = obj.get("message")
            if isinstance(msg, dict) and msg.get("content"):
                m = NONCE.match(msg["content"][0].get("text", ""))
                nonce = m.group(1) if m else None
                if nonce is not None:
                    nonce_count[nonce] += 1
            nonces[eid] = nonce
        loaded = load_session(path)
        d = loaded.diagnostics
        if d.unparsable_lines or d.blank_lines or d.torn_tail or d.leading_junk_lines or d.extra_headers:
            problems.append(f"{path.name}: the loader reports {d.to_dict() if hasattr(d, 'to_dict') else d}")
        if len(loaded.entries) != len(order):
            problems.append(f"{path.name}: loader kept {len(loaded.entries)} entries, file has {len(order)}")
        if header is None:
            problems.append(f"{path.name}: no header")
            continue
        sid = header["id"]
        file_order[sid] = order
        id_count[sid] = counts
        nonce_of[sid] = nonces
        for eid, c in counts.items():
            if c > 1:
                problems.append(f"{sid}: entry {eid} appears {c} times")

    acked_entries = 0
    lost: list[str] = []
    mismatched: list[str] = []
    acked_nonces: set[str] = set()
    by_durability: Counter[str] = Counter()
    for res in results:
        for a in res["acked"]:
            sid = a["sessionId"]
            for eid, nonce in zip(a["ids"], a["nonces"], strict=True):
                acked_entries += 1
                by_durability[a["durability"]] += 1
                if nonce is not None:
                    acked_nonces.add(nonce)
                if id_count.get(sid, Counter())[eid] != 1:
                    lost.append(f"{sid}/{eid}")
                elif nonce is not None and nonce_of[sid].get(eid) != nonce:
                    mismatched.append(f"{sid}/{eid}: holds {nonce_of[sid].get(eid)}, acked for {nonce}")
    dup_nonces = [n for n, c in nonce_count.items() if c > 1]
    refused_written = [n for res in results for n in res["refused"] if nonce_count[n]]
    unacked_written = [n for res in results for u in res["unacked"] for n in u["nonces"] if nonce_count[n]]
    stray = [n for n in nonce_count if n not in acked_nonces]
    stray_unexplained = sorted(set(stray) - set(unacked_written))
    problems += [f"lost (acknowledged, not exactly once in its file): {x}" for x in lost[:20]]
    problems += [f"acknowledged id names another line: {x}" for x in mismatched[:20]]
    problems += [f"message written more than once: {x}" for x in dup_nonces[:20]]
    problems += [f"refused append was written: {x}" for x in refused_written[:20]]
    problems += [f"written but never acknowledged or refused: {x}" for x in stray_unexplained[:20]]

    # Subscribers: every run between breaks is a contiguous slice of the file's order.
    order_problems = 0
    updates_seen = 0
    for res in results:
        for s in res["seen"]:
            if s["sessionId"] not in file_order:
                continue
            order = file_order[s["sessionId"]]
            pos = {eid: i for i, eid in enumerate(order)}
            segment: list[str] = []
            for eid in [*s["ids"], None]:
                if eid is not None:
                    segment.append(eid)
                    continue
                if segment:
                    start = pos.get(segment[0])
                    if start is None or order[start : start + len(segment)] != segment:
                        order_problems += 1
                        if order_problems <= 10:
                            problems.append(
                                f"subscriber {s['client']} on {s['sessionId']}: updates are not a "
                                f"contiguous run of the file ({len(segment)} ids from {segment[0]})"
                            )
                segment = []
            updates_seen += sum(s["kinds"].values())

    # The external writer: all lines in the file, all announced to the pinned subscriber.
    pi_order = file_order.get(PI_SESSION_ID, [])
    external_ok = pi_order[1:] == external_ids
    if not external_ok:
        problems.append(
            f"the Pi file holds {len(pi_order) - 1} written entries, the writer wrote {len(external_ids)}"
        )
    pinned = [
        s for res in results for s in res["seen"] if s["role"] == "pinned" and s["sessionId"] == PI_SESSION_ID
    ]
    pinned_ids = pinned[0]["ids"] if pinned else []
    pinned_ok = pinned_ids == external_ids and (
        pinned[0]["external"] == len(external_ids) if pinned else False
    )
    if not pinned_ok:
        missing = len(set(external_ids) - {i for i in pinned_ids if i})
        problems.append(
            f"pinned subscriber saw {len(pinned_ids)} external ids (writer wrote {len(external_ids)}, "
            f"{missing} never announced, order equal: {pinned_ids == external_ids})"
        )
    return {
        "files": len(files),
        "lines": lines_total,
        "ackedEntries": acked_entries,
        "ackedByDurability": dict(by_durability),
        "lost": len(lost),
        "mismatched": len(mismatched),
        "duplicated": len(dup_nonces) + sum(1 for c in id_count.values() for v in c.values() if v > 1),
        "refusedWritten": len(refused_written),
        "unackedWritten": len(unacked_written),
        "strayWritten": len(stray_unexplained),
        "subscriberOrderProblems": order_problems,
        "updatesSeen": updates_seen,
        "externalWritten": len(external_ids),
        "externalInFile": external_ok,
        "externalAnnounced": pinned_ok,
        "problems": problems,
    }


def window_stats(
    results: list[dict[str, Any]], samples: list[dict[str, float]], t0: float, window: float, windows: int
) -> list[dict[str, Any]]:
    """Per window: latency percentiles per operation, ops/s, daemon RSS / CPU / fds."""
    merged: dict[str, list[list[float]]] = defaultdict(lambda: [[] for _ in range(windows)])
    for res in results:
        for op, per in res["latency"].items():
            for w, xs in enumerate(per):
                merged[op][w].extend(xs)
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for w in range(windows):
        lo, hi = t0 + w * window, t0 + (w + 1) * window
        ops: dict[str, Any] = {}
        for op in sorted(merged):
            xs = merged[op][w]
            if not xs:
                continue
            ops[op] = {
                "n": len(xs),
                "perSec": len(xs) / window,
                "p50Ms": pct(xs, 0.50) * 1e3,
                "p95Ms": pct(xs, 0.95) * 1e3,
                "p99Ms": pct(xs, 0.99) * 1e3,
                "maxMs": max(xs) * 1e3,
            }
        ss = [s for s in samples if lo <= s["t"] < hi]
        row: dict[str, Any] = {"window": w, "fromS": w * window, "toS": (w + 1) * window, "ops": ops}
        if ss:
            row["rssMiB"] = statistics.median(s["VmRSS"] for s in ss) / 1024
            row["rssMaxMiB"] = max(s["VmRSS"] for s in ss) / 1024
            row["fds"] = max(s["fds"] for s in ss)
            row["threads"] = max(s["Threads"] for s in ss)
            if len(ss) > 1:
                row["cpuPct"] = 100 * (ss[-1]["ticks"] - ss[0]["ticks"]) / tick / (ss[-1]["t"] - ss[0]["t"])
        appends = sum(v["n"] for k, v in ops.items() if k.startswith("append/"))
        row["appendsPerSec"] = appends / window
        out.append(row)
    return out


def rss_verdict(
    samples: list[dict[str, float]], t0: float, epoch: float, epochs: int, growth: float, slack_mib: float
) -> dict[str, Any]:
    """Flat: the median RSS of the last epoch within ``growth`` x + ``slack`` of the second epoch's.

    Whole epochs are compared because memory follows the sessions: it climbs while an epoch's
    sessions grow and is reused by the next epoch's, so two windows at different points of an
    epoch differ for no fault of the daemon. The first epoch is warm-up (imports done, caches,
    allocator arenas and the first sessions' peak). The slope over everything after warm-up is
    reported too (least squares, MiB per minute).
    """

    def median_of(k: int) -> float | None:
        lo, hi = t0 + k * epoch, t0 + (k + 1) * epoch
        xs = [s["VmRSS"] / 1024 for s in samples if lo <= s["t"] < hi]
        return statistics.median(xs) if xs else None

    if epochs < 3:
        return {"ok": False, "reason": "needs at least 3 epochs (warm-up, baseline, last)"}
    warm = median_of(1)
    last = median_of(epochs - 1)
    if warm is None or last is None:
        return {"ok": False, "reason": "too few RSS samples"}
    limit = warm * (1 + growth) + slack_mib
    after = [(s["t"] - t0, s["VmRSS"] / 1024) for s in samples if s["t"] >= t0 + epoch]
    slope = float("nan")
    if len(after) > 2:
        slope = statistics.linear_regression([t for t, _ in after], [r for _, r in after]).slope * 60
    return {
        "ok": last <= limit,
        "afterWarmupMiB": warm,
        "lastMiB": last,
        "limitMiB": limit,
        "growthPct": 100 * (last - warm) / warm,
        "peakMiB": max(s["VmRSS"] for s in samples) / 1024,
        "slopeMiBPerMin": slope,
        "rule": f"median of the last epoch <= median of the second epoch x {1 + growth:.2f}"
        f" + {slack_mib:g} MiB",
    }


def spawn(args: list[str], env: dict[str, str], payload: dict[str, Any]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        module_command(MODULE, *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        cwd=REPO,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload) + "\n")
    proc.stdin.flush()
    return proc


def expect_line(proc: subprocess.Popen[str], word: str, timeout: float) -> None:
    assert proc.stdout is not None
    result: list[str] = []
    t = threading.Thread(target=lambda: result.append(proc.stdout.readline() if proc.stdout else ""))
    t.daemon = True
    t.start()
    t.join(timeout)
    if not result or result[0].strip() != word:
        argv = cast("list[str]", proc.args)  # spawn() passes a list
        raise RuntimeError(f"child {argv[3:4]} said {result[:1]!r}, expected {word!r}")


def orchestrate(args: argparse.Namespace) -> dict[str, Any]:
    duration = float(args.duration)
    windows = args.windows
    window = duration / windows
    epoch = duration / args.epochs
    compact_every = args.compact_every or duration / 10
    run_id = f"{os.getpid():x}"
    OUT_DIR.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="soak-", dir=args.tmp or OUT_DIR))
    roles = assign_roles(args.clients, args.sessions)
    n_writers = sum(1 for _, r, _ in roles if r == "writer")
    n_readers = sum(1 for _, r, _ in roles if r == "reader")
    pi_path, first_id = write_pi_session(tmp / "pi")
    config = "[watch]\nown_poll_interval = 0.5\n[compaction]\nenabled = true\n"
    proc, sock, log, env = start_daemon(tmp, config)
    sampler = Sampler(proc, args.sample_every, live=not args.json)
    sampler.start()
    report: dict[str, Any] = {
        "config": {
            "duration": duration,
            "clients": args.clients,
            "procs": args.procs,
            "sessionsPerEpoch": args.sessions,
            "epochs": args.epochs,
            "epochS": epoch,
            "windowS": window,
            "compactEveryS": compact_every,
            "roles": dict(Counter(r for _, r, _ in roles)),
            "appendRateTarget": args.append_rate,
            "fsyncFraction": args.fsync_fraction,
            "externalRate": args.external_rate,
            "daemonPid": proc.pid,
            "scratch": str(tmp),
        }
    }
    workers: list[subprocess.Popen[str]] = []
    result_files: list[Path] = []
    external_result = tmp / "external.json"
    try:
        chunks: list[list[tuple[int, str, int]]] = [[] for _ in range(args.procs)]
        for i, c in enumerate(roles):
            chunks[i % args.procs].append(c)
        base = {
            "socket": str(sock),
            "run": run_id,
            "groups": args.sessions,
            "duration": duration,
            "window": window,
            "windows": windows,
            "epoch": epoch,
            "compact_every": compact_every,
            "seed": args.seed,
            "writer_rate": args.append_rate / n_writers,
            "reader_rate": args.read_rate / n_readers,
            "fsync_fraction": args.fsync_fraction,
            "keep_recent_tokens": args.keep_recent_tokens,
            "grace": 1.0,
            "external_result": str(external_result),
        }
        for w, chunk in enumerate(chunks):
            if not chunk and w:
                continue
            result_files.append(tmp / f"worker-{w}.json")
            payload = {
                **base,
                "clients": chunk,
                "result": str(result_files[-1]),
                "pinned": 1000 if w == 0 else None,
            }
            workers.append(spawn(["--worker"], env, payload))
        writer = spawn(
            ["--external-writer"],
            env,
            {
                "path": str(pi_path),
                "first_id": first_id,
                "seed": args.seed,
                "rate": args.external_rate,
                "duration": duration,
                "result": str(external_result),
            },
        )
        for p in [*workers, writer]:
            expect_line(p, "ready", 60)
        t0 = monotonic() + 0.5
        for p in [*workers, writer]:
            assert p.stdin is not None
            p.stdin.write(f"go {t0}\n")
            p.stdin.flush()
        report["startedAt"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        next_print = t0 + window
        died = False
        while True:
            running = [p for p in [*workers, writer] if p.poll() is None]
            if not running:
                break
            if proc.poll() is not None:
                died = True
                break
            now = monotonic()
            if not args.json and now >= next_print and sampler.samples:
                s = sampler.samples[-1]
                print(
                    f"  {now - t0:6.0f} s  daemon RSS {s['VmRSS'] / 1024:7.1f} MiB  fds {s['fds']:4d}",
                    file=sys.stderr,
                    flush=True,
                )
                next_print += window
            if now > t0 + duration + 120:
                raise RuntimeError("clients did not finish within 120 s of the end: a hang")
            time.sleep(0.2)
        report["daemonDied"] = died or proc.poll() is not None
        for p in [*workers, writer]:
            if p.poll() is None:
                p.kill()
            p.wait()
        report["childExitCodes"] = [p.returncode for p in [*workers, writer]]
        results = [json.loads(f.read_text()) for f in result_files if f.exists()]
        if len(results) != len(result_files):
            report["missingWorkerResults"] = len(result_files) - len(results)
        external_ids = json.loads(external_result.read_text())["ids"] if external_result.exists() else []
        if not report["daemonDied"]:
            expected_last = external_ids[-1] if external_ids else first_id
            report["daemonPiView"] = asyncio.run(
                daemon_view_of_pi(sock, expected_last, len(external_ids) + 1)
            )
        sampler.stopping.set()
        sampler.join()
        code, stop_s = stop_daemon(proc)
        report["daemonExit"] = {"code": code, "stopSeconds": stop_s}
        log_text = log.read_text(errors="replace")
        report["daemonLogTracebacks"] = log_text.count("Traceback")
        report["windows"] = window_stats(results, sampler.samples, t0, window, windows)
        report["rss"] = rss_verdict(sampler.samples, t0, epoch, args.epochs, args.rss_growth, args.rss_slack)
        fds = [r["fds"] for r in report["windows"] if "fds" in r]
        report["fds"] = {"afterWarmup": fds[1] if len(fds) > 1 else None, "last": fds[-1] if fds else None}
        report["totals"] = totals(results, duration)
        report["verify"] = verify_files(tmp / "store", pi_path, results, external_ids)
        report["verdicts"] = verdicts(report, results)
        report["ok"] = all(v["ok"] for v in report["verdicts"].values())
        if not report["ok"] or args.keep:
            report["config"]["kept"] = True
        return report
    finally:
        sampler.stopping.set()
        for p in workers:
            if p.poll() is None:
                p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not args.keep and report.get("ok"):
            shutil.rmtree(tmp, ignore_errors=True)


def totals(results: list[dict[str, Any]], duration: float) -> dict[str, Any]:
    """Whole-run latency per operation, outcome counts and errors by code."""
    per_op: dict[str, list[float]] = defaultdict(list)
    outcomes: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    examples: list[dict[str, Any]] = []
    for res in results:
        for op, per in res["latency"].items():
            for xs in per:
                per_op[op].extend(xs)
        outcomes.update(res["outcomes"])
        for e in res["errors"]:
            errors[f"{e['op']} {e['code']}"] += 1
            if len(examples) < 10:
                examples.append(e)
    ops = {
        op: {
            "n": len(xs),
            "perSec": len(xs) / duration,
            "p50Ms": pct(xs, 0.5) * 1e3,
            "p95Ms": pct(xs, 0.95) * 1e3,
            "p99Ms": pct(xs, 0.99) * 1e3,
            "maxMs": max(xs) * 1e3,
        }
        for op, xs in sorted(per_op.items())
    }
    return {"ops": ops, "outcomes": dict(outcomes), "errors": dict(errors), "errorExamples": examples}


def verdicts(report: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    v = report["verify"]
    exit_code = report["daemonExit"]["code"]
    pi_view = report.get("daemonPiView") or {}
    return {
        "daemon alive": {"ok": not report["daemonDied"]},
        "clean stop": {
            "ok": exit_code == 0 and report["daemonLogTracebacks"] == 0,
            "detail": f"exit {exit_code}, {report['daemonLogTracebacks']} tracebacks in the log",
        },
        "workers finished": {
            "ok": all(c == 0 for c in report["childExitCodes"]) and not report.get("missingWorkerResults"),
            "detail": f"exit codes {report['childExitCodes']}",
        },
        "no lost entries": {
            "ok": v["lost"] == 0 and v["mismatched"] == 0,
            "detail": f"{v['lost']} lost, {v['mismatched']} misattributed"
            f" of {v['ackedEntries']} acknowledged",
        },
        "no duplicated entries": {"ok": v["duplicated"] == 0, "detail": f"{v['duplicated']} duplicated"},
        "nothing refused or unacknowledged written": {
            "ok": v["refusedWritten"] == 0 and v["strayWritten"] == 0,
            "detail": f"{v['refusedWritten']} refused but written, {v['strayWritten']} written unasked"
            f" ({v['unackedWritten']} written after a failed/timed-out request)",
        },
        "files parse and load": {
            "ok": not any(
                "parse" in p or "loader" in p or "newline" in p or "header" in p for p in v["problems"]
            ),
            "detail": f"{v['files']} files, {v['lines']} lines",
        },
        "subscribers in file order": {
            "ok": v["subscriberOrderProblems"] == 0,
            "detail": f"{v['updatesSeen']} updates received",
        },
        "external writer visible": {
            "ok": v["externalInFile"] and v["externalAnnounced"] and bool(pi_view.get("ok")),
            "detail": f"{v['externalWritten']} lines; daemon reports {pi_view.get('entryCount')} entries",
        },
        "no unexpected errors": {
            "ok": not report["totals"]["errors"],
            "detail": ", ".join(f"{k}: {n}" for k, n in report["totals"]["errors"].items()) or "none",
        },
        "RSS flat": {
            "ok": bool(report["rss"].get("ok")),
            "detail": report["rss"].get("rule", report["rss"].get("reason", "")),
        },
    }


def print_report(report: dict[str, Any]) -> None:
    c = report["config"]
    roles = ", ".join(f"{n} {r}" + ("s" if n != 1 else "") for r, n in c["roles"].items())
    print(
        f"sessiond soak: {c['duration']:.0f} s, {c['clients']} clients in {c['procs']} processes "
        f"({roles}), {c['sessionsPerEpoch']} sessions "
        f"per epoch of {c['epochS']:.0f} s, compaction every {c['compactEveryS']:.0f} s, "
        f"external writer {c['externalRate']:g} lines/s; target {c['appendRateTarget']:g} appends/s, "
        f"{c['fsyncFraction']:.0%} fsync"
    )
    print("(2 shared cores: latency includes the client's event loop and every other process on the machine)")
    print()
    ops = sorted({op for r in report["windows"] for op in r["ops"]})
    head = f"{'window':>11} {'RSS MiB':>8} {'CPU%':>5} {'fds':>4} {'app/s':>6}"
    print(
        head
        + "".join(
            f"  {op + ' p50/p99/max ms':>32}"
            for op in ops
            if op.startswith(("append", "context/get", "compaction/run"))
        )
    )
    for r in report["windows"]:
        cells = ""
        for op in ops:
            if not op.startswith(("append", "context/get", "compaction/run")):
                continue
            s = r["ops"].get(op)
            cell = f"{s['p50Ms']:.1f}/{s['p99Ms']:.1f}/{s['maxMs']:.0f}" if s else "-"
            cells += f"  {cell:>32}"
        print(
            f"{r['fromS']:5.0f}-{r['toS']:<5.0f} {r.get('rssMiB', float('nan')):8.1f} "
            f"{r.get('cpuPct', float('nan')):5.0f} {r.get('fds', 0):4d} {r['appendsPerSec']:6.0f}{cells}"
        )
    print()
    print(f"{'operation':<22} {'n':>8} {'/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for op, s in report["totals"]["ops"].items():
        print(
            f"{op:<22} {s['n']:8d} {s['perSec']:7.1f} {s['p50Ms']:8.2f} {s['p95Ms']:8.2f} "
            f"{s['p99Ms']:8.2f} {s['maxMs']:8.1f}"
        )
    print()
    print("outcomes: " + ", ".join(f"{k} {n}" for k, n in sorted(report["totals"]["outcomes"].items())))
    rss = report["rss"]
    if "lastMiB" in rss:
        print(
            f"RSS (epoch medians): after warm-up {rss['afterWarmupMiB']:.1f} MiB, "
            f"last epoch {rss['lastMiB']:.1f} MiB "
            f"({rss['growthPct']:+.1f}%), peak {rss['peakMiB']:.1f} MiB, limit {rss['limitMiB']:.1f} MiB, "
            f"slope after warm-up {rss['slopeMiBPerMin']:+.2f} MiB/min"
        )
    print(f"fds: after warm-up {report['fds']['afterWarmup']}, last window {report['fds']['last']}")
    v = report["verify"]
    print(
        f"files: {v['files']} sessions, {v['lines']} lines; {v['ackedEntries']} acknowledged entries "
        f"({', '.join(f'{k} {n}' for k, n in v['ackedByDurability'].items())}); "
        f"{v['externalWritten']} external lines"
    )
    print()
    for name, verdict in report["verdicts"].items():
        detail = f"  ({verdict['detail']})" if verdict.get("detail") else ""
        print(f"  {'PASS' if verdict['ok'] else 'FAIL'}  {name}{detail}")
    for p in v["problems"][:30]:
        print(f"  ! {p}")
    for e in report["totals"]["errorExamples"]:
        print(f"  ! client {e['client']} {e['op']}: {e['error']}")
    print()
    print("SOAK OK" if report["ok"] else f"SOAK FAILED (scratch kept in {report['config']['scratch']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    ap.add_argument("--clients", type=int, default=32, help="logical clients / connections (default 32)")
    ap.add_argument("--procs", type=int, default=4, help="client processes (default 4)")
    ap.add_argument("--sessions", type=int, default=4, help="sessions per epoch (groups), default 4")
    ap.add_argument("--epochs", type=int, default=5, help="session/connection turnovers, default 5")
    ap.add_argument("--windows", type=int, default=10, help="report windows, default 10")
    ap.add_argument("--append-rate", type=float, default=300.0, help="target appends/s, all writers")
    ap.add_argument("--read-rate", type=float, default=20.0, help="target reads/s, all readers")
    ap.add_argument("--fsync-fraction", type=float, default=0.25)
    ap.add_argument("--external-rate", type=float, default=10.0, help="external lines/s (Pi root)")
    ap.add_argument("--compact-every", type=float, default=0.0, help="seconds; default duration/10")
    ap.add_argument("--keep-recent-tokens", type=int, default=2000)
    ap.add_argument("--rss-growth", type=float, default=0.15, help="allowed RSS growth fraction")
    ap.add_argument("--rss-slack", type=float, default=16.0, help="allowed RSS growth on top, MiB")
    ap.add_argument("--sample-every", type=float, default=0.5, help="daemon /proc sampling, seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tmp", type=Path, default=None, help="scratch parent (default benchmarks/out)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch store even on success")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--render", type=Path, default=None, help="print the report of a saved --json run")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--external-writer", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main()
        return 0
    if args.external_writer:
        external_main()
        return 0
    if args.render is not None:
        saved = json.loads(args.render.read_text())
        print_report(saved)
        return 0 if saved["ok"] else 1
    args.procs = max(1, min(args.procs, args.clients))
    report = orchestrate(args)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    else:
        print_report(report)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
