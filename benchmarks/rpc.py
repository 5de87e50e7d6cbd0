"""The daemon's append path over JSON-RPC, against the in-process ``Session.append_message``.

Sections (every ratio is against a reference measured in the same run, on the same disk):

0. **floor** - ``Session.append_message`` in one fresh process, one thread, no RPC, the same
   ~300-byte messages and as many appends as one RPC row, ``buffered`` and ``fsync``: latency
   p50/p99/max and appends/s.
1. **append round trip** - the real daemon (``python -m sessiond serve``, a fresh process on a
   fresh store per run) and 1, 8 and 32 client *processes*, each with its own connection,
   all appending to ONE shared session (the multi-agent case): sequential ``session/append``
   requests of one message each, a fixed total split between the clients. Latency
   p50/p99/max (request sent -> response read, in the client), aggregate appends/s, the
   daemon's CPU (% of one core and CPU time per append), and ratios against the floor.
2. **a long session** - the same (floor, 1 and 8 clients, buffered) on a session that already
   holds ``--prefill`` entries: what an append costs as the session grows.
3. **RPC no-op** - the same clients sending ``session/unsubscribe`` (params validated, no
   store work): what a request costs the daemon before the store is involved.
4. **notification latency** - one subscriber connection (``session/subscribe``) and 1 or 8
   writers, ``buffered``: time from a writer sending ``session/append`` to the subscriber
   reading the matching ``entries_appended`` (joined on the entry id; both sides stamp
   ``CLOCK_MONOTONIC``, which every process shares).
5. ``--profile`` - the 8-client ``buffered`` row again with the daemon under cProfile (stopped
   with SIGTERM, which must write the profile): top functions by own and cumulative time, and
   own time grouped by component. The profile is kept as ``benchmarks/out/rpc-daemon.prof``.
   cProfile sees the main thread only (the event loop's): what the daemon's other threads
   spend per append (the search index's writer, the usage records) is the second figure of
   section 1's "loop / other threads" line.

6. ``--hops`` - one buffered append taken apart in a fresh process (``benchmarks/append_hops.py``):
   each hop (read + frame, parse, validate, the handler and its parts: store, compaction
   checks, publish; encode, socket write) called on its own, in CPU time, and the whole
   request through a ``Connection``; the difference is what only runs inside the connection
   (its checks, pygls' task, the event loop's wake-ups).

Every row also reports the CPU the rest of the machine used meanwhile (``other``): on a shared
2-core machine a busy neighbour shows up there rather than as an unexplained slowdown.

Goals (issue): buffered append p99 under 2 ms with 8 clients, and at least 5,000 appends/s in
aggregate (judged on the same 8-client buffered row). Printed as ``MET`` / ``NOT MET``.

Run: ``.venv/bin/python -m benchmarks.rpc [--quick] [--runs N] [--appends N] [--prefill N]
[--framing ndjson] [--client raw] [--profile] [--json]``. Scratch stores go to
``benchmarks/out/rpc-tmp/`` (same disk as the repo; removed at the end). See
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import math
import os
import random
import select
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CLK_TCK,
    REPO,
    Bench,
    Daemon,
    Extract,
    Goal,
    Scratch,
    log,
    main,
    module_command,
    summary,
)

CWD = "/bench/rpc"

GOAL_P99_MS = 2.0
GOAL_PER_SEC = 5000.0
GOAL_DAEMON_CPU_US = 100.0
GOAL_CLIENTS = 8


# --------------------------------------------------------------------------- workload


def make_messages(n: int, seed: int) -> list[dict[str, Any]]:
    """Alternating user prompts (~250 B of JSON) and assistant replies (~350 B, with usage).

    Mean message size ~300 bytes; the entry line the store writes adds id, parentId and a
    timestamp (~100 B more).
    """
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(300)]

    def text(size: int) -> str:
        out = " ".join(rng.choices(words, k=size // 4 + 2))
        return out[:size]

    msgs: list[dict[str, Any]] = []
    for i in range(n):
        ts = 1785315780000 + i
        if i % 2 == 0:
            msgs.append({"role": "user", "content": [{"type": "text", "text": text(170)}], "timestamp": ts})
        else:
            msgs.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text(40)}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": {
                        "input": 1000 + i,
                        "output": 20,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 1020 + i,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                    "stopReason": "stop",
                    "timestamp": ts,
                }
            )
    return msgs


def message_bytes() -> dict[str, float]:
    msgs = make_messages(64, 1)
    sizes = [len(json.dumps(m, separators=(",", ":"))) for m in msgs]
    return {
        "user": statistics.mean(sizes[0::2]),
        "assistant": statistics.mean(sizes[1::2]),
        "mean": statistics.mean(sizes),
    }


# --------------------------------------------------------------------------- statistics


def _median_of_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of every numeric field over the runs; ``max*`` fields: the max over the runs."""
    out: dict[str, Any] = {}
    for k in runs[0]:
        values = [r[k] for r in runs if isinstance(r.get(k), int | float)]
        if not values:
            continue
        out[k] = max(values) if k.startswith("max") else statistics.median(values)
    return out


# --------------------------------------------------------------------------- child: floor


def floor_child(cfg: dict[str, Any]) -> dict[str, Any]:
    """In-process ``Session.append_message`` (this is the fresh process), timed after imports."""
    import gc  # noqa: PLC0415

    from sessiond.store.journal import Durability  # noqa: PLC0415
    from sessiond.store.session import Session  # noqa: PLC0415

    msgs = make_messages(64, 1)
    session = Session.create(Path(cfg["dir"]), CWD, durability=Durability(cfg["mode"]))
    session.append_message(msgs[0])  # creates the file: not timed
    fill = make_messages(64, 7)
    for done in range(0, cfg["prefill"], 1000):  # the same prefill as the daemon's session gets
        batch = [
            {"type": "message", "message": fill[i % 64]}
            for i in range(done, min(cfg["prefill"], done + 1000))
        ]
        session.append_entries(batch)
    for i in range(cfg["warmup"]):
        session.append_message(msgs[(i + 1) % len(msgs)])
    perf = time.perf_counter
    samples: list[float] = []
    gc.collect()
    t0 = perf()
    for i in range(cfg["count"]):
        m = msgs[i % len(msgs)]
        a = perf()
        session.append_message(m)
        samples.append(perf() - a)
    wall = perf() - t0
    path = session.path
    session.close()
    lines = path.read_bytes().splitlines()[-cfg["count"] :]
    result = summary(samples, wall)
    result["lineBytes"] = sum(len(x) + 1 for x in lines) / max(1, len(lines))
    return result


# --------------------------------------------------------------------------- child: clients


class RawClient:
    """A blocking-socket JSON-RPC client: the cheapest possible client side (``--client raw``)."""

    def __init__(self, path: str, framing: str) -> None:
        import orjson  # noqa: PLC0415

        self._orjson = orjson
        self.framing = framing
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = bytearray()
        self._id = 0
        self.notifications: list[tuple[float, dict[str, Any]]] = []

    def send(self, message: dict[str, Any]) -> None:
        body = self._orjson.dumps(message)
        if self.framing == "ndjson":
            self.sock.sendall(body + b"\n")
        else:
            self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        self.buf += chunk

    def read(self) -> dict[str, Any]:
        buf = self.buf
        if self.framing == "ndjson":
            while (i := buf.find(b"\n")) < 0:
                self._fill()
            body = bytes(buf[:i])
            del buf[: i + 1]
        else:
            while (i := buf.find(b"\r\n\r\n")) < 0:
                self._fill()
            length = 0
            for line in bytes(buf[:i]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(buf) < i + 4 + length:
                self._fill()
            body = bytes(buf[i + 4 : i + 4 + length])
            del buf[: i + 4 + length]
        result: dict[str, Any] = self._orjson.loads(body)
        return result

    def request(self, method: str, params: Any) -> Any:
        self._id += 1
        rid = self._id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            if "method" in msg:
                self.notifications.append((time.monotonic(), msg))

    def initialize(self, name: str) -> None:
        self.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": name}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


def _wait_go() -> float:
    """Say ready, then wait for ``go <t0>`` (a ``CLOCK_MONOTONIC`` time shared by all clients)."""
    print("ready", flush=True)
    line = sys.stdin.readline().split()
    if not line or line[0] != "go":
        raise SystemExit("no go signal")
    return float(line[1])


def _stop_requested() -> bool:
    """The parent writes ``stop`` to a subscriber once every writer is done (+ a grace period)."""
    return bool(select.select([sys.stdin], [], [], 0)[0])


def _params(cfg: dict[str, Any], msgs: list[dict[str, Any]], i: int) -> tuple[str, dict[str, Any]]:
    sid = cfg["sessionId"]
    if cfg["method"] == "noop":
        return "session/unsubscribe", {"sessionId": sid}
    return "session/append", {
        "sessionId": sid,
        "entries": [{"type": "message", "message": msgs[i % len(msgs)]}],
    }


def _on_update(update: dict[str, Any], t: float, recv: list[Any], kinds: dict[str, int]) -> None:
    kind: str = update.get("sessionUpdate", "missing")  # counted by kind: every update names one
    kinds[kind] = kinds.get(kind, 0) + 1
    if kind == "entries_appended":
        recv.extend((eid, t) for eid in update["entryIds"])


def raw_client_child(cfg: dict[str, Any]) -> dict[str, Any]:
    client = RawClient(cfg["socket"], cfg["framing"])
    client.initialize(f"bench-{cfg['index']}")
    msgs = make_messages(64, 1000 + cfg["index"])
    mono = time.monotonic
    recv: list[tuple[str, float]] = []
    kinds: dict[str, int] = {}
    if cfg["role"] == "subscriber":
        client.request("session/subscribe", {"sessionId": cfg["sessionId"]})
        client.notifications.clear()
        _wait_go()
        client.sock.settimeout(0.02)
        cpu0 = time.process_time()
        while not _stop_requested():
            try:
                msg = client.read()
            except TimeoutError:
                continue
            t = mono()
            if msg.get("method") == "session/update":
                _on_update(msg["params"]["update"], t, recv, kinds)
        return {"recv": recv, "kinds": kinds, "cpu": time.process_time() - cpu0}
    for i in range(cfg["warmup"]):
        client.request(*_params(cfg, msgs, i))
    t0 = _wait_go()
    time.sleep(max(0.0, t0 - mono()))
    lat: list[float] = []
    sent: list[tuple[str, float]] = []
    record = cfg["recordIds"]
    cpu0 = time.process_time()
    for i in range(cfg["count"]):
        a = mono()
        result = client.request(*_params(cfg, msgs, i))
        lat.append(mono() - a)
        if record:
            sent.append((result["entryIds"][0], a))
    last = mono()
    return {"lat": lat, "sent": sent, "last": last, "cpu": time.process_time() - cpu0}


async def asyncio_client_child(cfg: dict[str, Any]) -> dict[str, Any]:
    """The project's asyncio client (``sessiond_client.Client``), one connection."""
    from sessiond_client import Client  # noqa: PLC0415

    client = await Client.connect_unix(cfg["socket"], framing=cfg["framing"])
    await client.initialize(f"bench-{cfg['index']}")
    loop = asyncio.get_running_loop()
    msgs = make_messages(64, 1000 + cfg["index"])
    mono = time.monotonic
    try:
        if cfg["role"] == "subscriber":
            await client.request("session/subscribe", {"sessionId": cfg["sessionId"]})
            client.drain_notifications()
            await loop.run_in_executor(None, _wait_go)
            stop = loop.run_in_executor(None, sys.stdin.readline)
            recv: list[tuple[str, float]] = []
            kinds: dict[str, int] = {}
            cpu0 = time.process_time()
            while not stop.done():
                try:
                    method, params = await client.notification(timeout=0.02)
                except TimeoutError:
                    continue
                t = mono()
                if method == "session/update":
                    _on_update(params["update"], t, recv, kinds)
            return {"recv": recv, "kinds": kinds, "cpu": time.process_time() - cpu0}
        for i in range(cfg["warmup"]):
            await client.request(*_params(cfg, msgs, i))
        t0 = await loop.run_in_executor(None, _wait_go)
        await asyncio.sleep(max(0.0, t0 - mono()))
        lat: list[float] = []
        sent: list[tuple[str, float]] = []
        record = cfg["recordIds"]
        cpu0 = time.process_time()
        for i in range(cfg["count"]):
            a = mono()
            result = await client.request(*_params(cfg, msgs, i))
            lat.append(mono() - a)
            if record:
                sent.append((result["entryIds"][0], a))
        last = mono()
        return {"lat": lat, "sent": sent, "last": last, "cpu": time.process_time() - cpu0}
    finally:
        await client.close()


def child(argv: list[str]) -> int:
    """A process of this benchmark: ``_client CFG`` (a writer or the subscriber) or ``_floor CFG``."""
    kind, cfg = argv[0], json.loads(argv[1])
    if kind == "_hops":
        from benchmarks.append_hops import hops  # noqa: PLC0415

        result = hops(cfg["n"])
    elif kind == "_floor":
        result = floor_child(cfg)
    elif cfg["client"] == "raw":
        result = raw_client_child(cfg)
    else:
        result = asyncio.run(asyncio_client_child(cfg))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------- the daemon


def _stat_times(stat_path: str) -> tuple[float, float]:
    """``utime`` and ``stime`` (seconds) of a ``/proc`` ``stat`` file: a process's (every
    thread) or one task's."""
    with open(stat_path, "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def _system_seconds(pid: int) -> float:
    """The kernel's part of a process's CPU seconds (``stime``, every thread): the daemon's
    system calls — socket reads and writes, ``epoll_wait``, the file's ``write`` and ``stat``s."""
    return _stat_times(f"/proc/{pid}/stat")[1]


def _loop_thread_seconds(pid: int) -> float:
    """CPU seconds of the daemon's main thread, the one running the event loop (its task id is
    the process id): every request is read, handled, written and answered there. The rest of
    the process's CPU is its other threads' — the search index's writer, the usage records'
    and anyio's workers — which index and record each append after it was answered (and which
    ``--profile``, cProfile of the main thread, does not see)."""
    return sum(_stat_times(f"/proc/{pid}/task/{pid}/stat"))


def _system_busy() -> tuple[float, float]:
    """Busy and steal CPU seconds of the whole machine (all CPUs), from ``/proc/stat``."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / CLK_TCK, steal / CLK_TCK


# --------------------------------------------------------------------------- one case


async def _spawn(kind: str, cfg: dict[str, Any], log_file: Any) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *module_command(BENCH.module, kind, json.dumps(cfg)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=log_file,
        cwd=REPO,
        limit=1 << 26,
    )


async def _result(proc: asyncio.subprocess.Process, what: str, log: Path) -> dict[str, Any]:
    assert proc.stdout is not None
    out = await asyncio.wait_for(proc.stdout.read(), 120)
    code = await proc.wait()
    if code != 0 or not out.strip():
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(f"{what} failed with exit code {code}:\n{tail}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


async def run_case(
    scratch: Scratch,
    args: argparse.Namespace,
    *,
    mode: str,
    writers: int,
    method: str = "append",
    subscriber: bool = False,
    prefill: int = 0,
    profile: Path | None = None,
) -> dict[str, Any]:
    """One fresh daemon, one session, ``writers`` client processes (+ a subscriber).

    ``total`` timed requests are split evenly between the writers (after ``warmup`` untimed ones
    each); ``prefill`` entries are appended to the session first.
    """
    total = args.buffered_appends if mode == "buffered" else args.fsync_appends
    if prefill:
        total = args.long_appends
    from sessiond_client import Client  # noqa: PLC0415

    base = scratch.new_dir(f"{method}-{mode}-{writers}{'-sub' if subscriber else ''}")
    daemon = Daemon(base, f'durability = "{mode}"\n', profile=profile).start()
    log_path = base / "clients.log"
    procs: list[asyncio.subprocess.Process] = []
    sub_proc: asyncio.subprocess.Process | None = None
    try:
        admin = await Client.connect_unix(daemon.socket, framing=args.framing)
        await admin.initialize("bench-admin")
        # The admin connection keeps the session open (a user of it) for the whole run.
        sid = (await admin.request("session/new", {"cwd": CWD}))["sessionId"]
        first = make_messages(1, 0)[0]
        await admin.request(
            "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": first}]}
        )
        msgs = make_messages(64, 7)
        for done in range(0, prefill, 1000):  # a session of this many entries before the clients start
            batch = [
                {"type": "message", "message": msgs[i % 64]} for i in range(done, min(prefill, done + 1000))
            ]
            await admin.request("session/append", {"sessionId": sid, "entries": batch}, timeout=120)
        common = {
            "socket": str(daemon.socket),
            "framing": args.framing,
            "client": args.client,
            "sessionId": sid,
            "method": method,
            "warmup": args.warmup,
            "count": max(1, total // writers),
            "recordIds": subscriber,
        }
        with open(log_path, "ab") as log_file:
            if subscriber:
                sub_proc = await _spawn("_client", {**common, "index": 0, "role": "subscriber"}, log_file)
            procs = [
                await _spawn("_client", {**common, "index": i + 1, "role": "writer"}, log_file)
                for i in range(writers)
            ]
            everyone = ([sub_proc] if sub_proc is not None else []) + procs
            for p in everyone:
                assert p.stdout is not None
                line = await asyncio.wait_for(p.stdout.readline(), 120)
                if line.strip() != b"ready":
                    await asyncio.sleep(0.2)
                    raise RuntimeError(
                        f"a client did not start: {line!r}\n{log_path.read_text(errors='replace')[-3000:]}"
                    )
            t0 = time.monotonic() + 0.1
            for p in everyone:
                assert p.stdin is not None
                p.stdin.write(f"go {t0!r}\n".encode())
                await p.stdin.drain()
            await asyncio.sleep(max(0.0, t0 - time.monotonic()))
            cpu0, c0, (busy0, steal0) = daemon.cpu(), time.monotonic(), _system_busy()
            sys0, loop0 = _system_seconds(daemon.pid), _loop_thread_seconds(daemon.pid)
            results = [await _result(p, "a writer client", log_path) for p in procs]
            cpu1, c1, (busy1, steal1) = daemon.cpu(), time.monotonic(), _system_busy()
            sys1, loop1 = _system_seconds(daemon.pid), _loop_thread_seconds(daemon.pid)
            sub = None
            if sub_proc is not None:
                await asyncio.sleep(0.5)  # notifications still on their way
                assert sub_proc.stdin is not None
                sub_proc.stdin.write(b"stop\n")
                await sub_proc.stdin.drain()
                sub = await _result(sub_proc, "the subscriber", log_path)
        await admin.close()
    finally:
        for p in [*procs, *([sub_proc] if sub_proc is not None else [])]:
            if p.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
        code = daemon.stop()
    if code != 0:
        raise RuntimeError(f"the daemon exited with {code} on SIGTERM:\n{daemon.log_text()[-3000:]}")

    lat = [x for r in results for x in r["lat"]]
    wall = max(r["last"] for r in results) - t0
    row: dict[str, Any] = summary(lat, wall)
    window = c1 - c0
    daemon_cpu = cpu1 - cpu0
    clients_cpu = sum(r["cpu"] for r in results)
    row["daemonCpuPct"] = 100 * daemon_cpu / window
    row["daemonCpuUsPerReq"] = 1e6 * daemon_cpu / max(1, len(lat))
    row["daemonSysUsPerReq"] = 1e6 * (sys1 - sys0) / max(1, len(lat))
    row["daemonLoopUsPerReq"] = 1e6 * (loop1 - loop0) / max(1, len(lat))
    row["daemonThreadsUsPerReq"] = row["daemonCpuUsPerReq"] - row["daemonLoopUsPerReq"]
    row["clientsCpuPct"] = 100 * clients_cpu / wall
    row["clientsCpuUsPerReq"] = 1e6 * clients_cpu / max(1, len(lat))
    row["entriesAtEnd"] = prefill + 1 + writers * (args.warmup + common["count"])
    ours = daemon_cpu + clients_cpu
    if sub is not None:
        recv = dict(sub["recv"])
        sent = [(eid, t) for r in results for eid, t in r["sent"]]
        notify = [recv[eid] - t for eid, t in sent if eid in recv]
        n = summary(notify, wall)
        row["notifyP50Us"], row["notifyP99Us"], row["notifyMaxUs"] = n["p50Us"], n["p99Us"], n["maxUs"]
        row["notifyMatched"] = len(notify) / max(1, len(sent))
        kinds = sub["kinds"]
        row["usageUpdatesPerAppend"] = kinds.get("usage_update", 0) / max(1, kinds.get("entries_appended", 0))
        ours += sub["cpu"]
    # Everything else the machine ran meanwhile (other processes, the kernel's own threads, steal).
    row["otherCpuPct"] = max(0.0, 100 * ((busy1 - busy0) - ours) / window)
    row["stealPct"] = 100 * (steal1 - steal0) / window
    if profile is not None:
        if not profile.exists() or profile.stat().st_size == 0:
            raise RuntimeError(
                f"cProfile wrote no profile to {profile} after SIGTERM:\n{daemon.log_text()[-3000:]}"
            )
        row["profileFile"] = str(profile)
    return row


def run_floor(scratch: Scratch, args: argparse.Namespace, mode: str, prefill: int = 0) -> dict[str, Any]:
    """The floor, in a fresh process: as many appends as one RPC case makes, on the same disk."""
    cfg = {
        "dir": str(scratch.new_dir(f"floor-{mode}")),
        "mode": mode,
        "count": args.long_appends
        if prefill
        else (args.buffered_appends if mode == "buffered" else args.fsync_appends),
        "warmup": args.warmup,
        "prefill": prefill,
    }
    import resource  # noqa: PLC0415

    ru0, (busy0, _), w0 = resource.getrusage(resource.RUSAGE_CHILDREN), _system_busy(), time.monotonic()
    proc = subprocess.run(
        module_command(BENCH.module, "_floor", json.dumps(cfg)),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    ru1, (busy1, _), w1 = resource.getrusage(resource.RUSAGE_CHILDREN), _system_busy(), time.monotonic()
    if proc.returncode != 0:
        raise RuntimeError(f"floor child ({mode}) failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    child = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    result["otherCpuPct"] = max(0.0, 100 * ((busy1 - busy0) - child) / (w1 - w0))
    return result


# --------------------------------------------------------------------------- profile


def _short_path(filename: str) -> str:
    if filename == "~":
        return ""
    for marker in ("site-packages/", "/lib/python3."):
        i = filename.find(marker)
        if i >= 0:
            rest = filename[i + len(marker) :]
            return rest if marker == "site-packages/" else rest.partition("/")[2]
    with contextlib.suppress(ValueError):
        return str(Path(filename).relative_to(REPO))
    return filename


def _func_label(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    path = _short_path(filename)
    return f"{path}:{line}({name})" if path else name


_SYSCALLS = ("_socket.socket", "posix.write", "posix.fdatasync", "posix.read", "posix.stat", "posix.fstat")

# Own time by component. A C function (file "~") with no component of its own is charged to the
# component of the caller that spent the most time in it (``dict.get`` from ``js.get`` is store work).
_CATEGORIES: list[tuple[str, Callable[[str, str], bool]]] = [
    (
        "startup, per-connection setup (imports, lsprotocol)",
        lambda f, n: (
            "<frozen" in f
            or "importlib" in f
            or any(x in f for x in ("/attr/", "/cattrs/", "/lsprotocol/"))
            or n in ("<built-in method marshal.loads>", "<built-in method builtins.compile>")
        ),
    ),
    ("pydantic validation", lambda f, n: "pydantic" in f or "pydantic_core" in n),
    ("pygls (JsonRPCProtocol)", lambda f, n: "/pygls/" in f),
    ("JSON (orjson, js_json)", lambda f, n: "orjson" in n or f.endswith("sessiond/model/js_json.py")),
    ("sessiond rpc (connection, framing, dispatch, engine, methods)", lambda f, n: "/sessiond/rpc/" in f),
    (
        "sessiond service (host, usage, hub)",
        lambda f, n: (
            "/sessiond/service/" in f or "/sessiond/model/tokens" in f or "/sessiond/model/projection" in f
        ),
    ),
    (
        "sessiond store (session, index, journal, specs)",
        lambda f, n: "/sessiond/store/" in f or "/sessiond/formats/" in f or "/sessiond/model/" in f,
    ),
    ("socket / file syscalls", lambda f, n: any(x in n for x in _SYSCALLS)),
    ("waiting in epoll (idle)", lambda f, n: "poll' of 'select" in n),
    (
        "asyncio / selectors / anyio",
        lambda f, n: "/asyncio/" in f or "selectors.py" in f or "_asyncio" in n or "anyio" in f,
    ),
]


def _category(func: tuple[str, int, str], raw: dict[Any, Any], depth: int = 0) -> str:
    name = next((c for c, test in _CATEGORIES if test(func[0], func[2])), None)
    if name is not None:
        return name
    callers = raw[func][4] if func in raw else {}
    if func[0] == "~" and callers and depth < 3:
        caller = max(callers, key=lambda c: callers[c][2])
        return _category(caller, raw, depth + 1)
    return "other"


# The path of one request through the daemon: (label, file suffix, function name, which time).
# Coroutines are counted by cProfile per resumption; their cumtime is the time they ran.
_REQUEST_PATH: list[tuple[str, str, str, str]] = [
    ("bytes to messages (MessageStream.data_received)", "sessiond/rpc/stream.py", "data_received", "tot"),
    ("  cut the messages (MessageSplitter.feed)", "sessiond/rpc/framing.py", "feed", "cum"),
    ("parse, checks, pygls dispatch (Connection._receive)", "sessiond/rpc/connection.py", "_receive", "cum"),
    ("  pygls dispatch (_handle_request)", "pygls/protocol/json_rpc.py", "_handle_request", "cum"),
    ("the request (dispatch.answer: validate, handler)", "sessiond/rpc/dispatch.py", "answer", "cum"),
    ("  pydantic model_validate (AppendParams)", "pydantic/main.py", "model_validate", "cum"),
    ("  Service.append", "sessiond/service/service.py", "append", "cum"),
    ("    Session.begin_append (the store)", "sessiond/store/session/writes.py", "begin_append", "cum"),
    ("      _stage_and_write: on-path id set", "sessiond/store/session/writes.py", "<setcomp>", "cum"),
    (
        "      _write_locked (encode line, write, index)",
        "sessiond/store/session/writes.py",
        "_write_locked",
        "cum",
    ),
    ("    SessionHost.complete (publish updates)", "sessiond/service/host.py", "complete", "cum"),
    (
        "pygls sends the result (_send_handler_result)",
        "pygls/protocol/json_rpc.py",
        "_send_handler_result",
        "cum",
    ),
    ("  pygls answer to dict (Engine._outgoing)", "sessiond/rpc/engine.py", "_outgoing", "cum"),
    ("  encode, frame, queue (Connection.send)", "sessiond/rpc/connection.py", "send", "cum"),
    ("socket writes (Connection._write_loop)", "sessiond/rpc/connection.py", "_write_loop", "cum"),
    ("event loop, own time (_run_once)", "asyncio/base_events.py", "_run_once", "tot"),
    ("waiting in epoll (idle)", "~", "<method 'poll' of 'select.epoll' objects>", "tot"),
]


def profile_report(path: Path, requests: int, top: int) -> dict[str, Any]:
    import pstats  # noqa: PLC0415

    stats = pstats.Stats(str(path), stream=io.StringIO())
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # not in typeshed's pstats
    total = sum(v[2] for v in raw.values())
    rows = []
    for func, (cc, nc, tt, ct, _callers) in raw.items():
        rows.append(
            {
                "function": _func_label(func),
                "ncalls": nc,
                "primitiveCalls": cc,
                "tottime": tt,
                "cumtime": ct,
                "totUsPerReq": 1e6 * tt / max(1, requests),
                "cumUsPerReq": 1e6 * ct / max(1, requests),
                "_cat": _category(func, raw),
            }
        )
    cats: dict[str, float] = {}
    for r in rows:
        cats[r["_cat"]] = cats.get(r["_cat"], 0.0) + r["tottime"]
    path_rows = []
    for label, suffix, name, which in _REQUEST_PATH:
        found = [
            (v[3] if which == "cum" else v[2], v[1])
            for f, v in raw.items()
            if f[0].endswith(suffix) and f[2] == name
        ]
        if found:
            seconds, calls = max(found)
            path_rows.append(
                {
                    "step": label,
                    "time": which,
                    "seconds": seconds,
                    "calls": calls,
                    "usPerReq": 1e6 * seconds / max(1, requests),
                }
            )
    by_tot = sorted(rows, key=lambda r: r["tottime"], reverse=True)[:top]
    by_cum = sorted(rows, key=lambda r: r["cumtime"], reverse=True)[:top]
    for r in rows:
        r["category"] = r.pop("_cat")
    return {
        "file": str(path),
        "totalTottime": total,
        "requests": requests,
        "categories": sorted(
            (
                {
                    "category": k,
                    "tottime": v,
                    "pct": 100 * v / total if total else 0.0,
                    "usPerReq": 1e6 * v / max(1, requests),
                }
                for k, v in cats.items()
            ),
            key=lambda c: c["tottime"],
            reverse=True,
        ),
        "requestPath": path_rows,
        "byTottime": by_tot,
        "byCumtime": by_cum,
    }


# --------------------------------------------------------------------------- output


def _r(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def _ms(us: float) -> str:
    return f"{us / 1000:.2f}"


def verdicts(res: dict[str, Any]) -> dict[str, Any]:
    row = next((r for r in res["append"] if r["mode"] == "buffered" and r["clients"] == GOAL_CLIENTS), None)
    if row is None:
        return {}
    p99_ms = row["p99Us"] / 1000
    per_sec = row["perSec"]
    best = max((r for r in res["append"] if r["mode"] == "buffered"), key=lambda r: r["perSec"])
    return {
        "p99": {"goalMs": GOAL_P99_MS, "valueMs": p99_ms, "met": p99_ms < GOAL_P99_MS},
        "throughput": {
            "goalPerSec": GOAL_PER_SEC,
            "valuePerSec": per_sec,
            "met": per_sec >= GOAL_PER_SEC,
            "bestPerSec": best["perSec"],
            "bestClients": best["clients"],
        },
    }


def print_profile(prof: dict[str, Any], top: int) -> None:
    p = print
    run = prof["run"]
    p(
        f"\n5. profile: daemon under cProfile, {GOAL_CLIENTS} clients, buffered"
        f"{' + 1 subscriber' if prof.get('subscriber') else ''} "
        f"(slowed by the profiler: {run['perSec']:.0f} appends/s, p50 {_ms(run['p50Us'])} ms, "
        f"p99 {_ms(run['p99Us'])} ms, {prof['requests']} requests)"
    )
    p(f"   profile written on SIGTERM: {prof['file']}")
    p(f"\n   own time by component (whole daemon process, incl. startup; {prof['totalTottime']:.2f} s)")
    p(f"   {'component':<56}{'s':>8}{'%':>7}{'us/req':>9}")
    for c in prof["categories"]:
        p(f"   {c['category']:<56}{c['tottime']:>8.2f}{c['pct']:>7.1f}{c['usPerReq']:>9.1f}")
    p("\n   one request, step by step (cumulative time unless marked own; us per append)")
    p(f"   {'step':<56}{'calls':>8}{'s':>8}{'us/req':>9}")
    for r in prof["requestPath"]:
        mark = "" if r["time"] == "cum" else " (own)"
        p(f"   {r['step'] + mark:<56}{r['calls']:>8}{r['seconds']:>8.3f}{r['usPerReq']:>9.1f}")
    for title, key_name, rows in (
        ("own time (tottime)", "tottime", prof["byTottime"]),
        ("cumulative time (cumtime)", "cumtime", prof["byCumtime"]),
    ):
        p(f"\n   top {top} by {title}")
        p(f"   {'ncalls':>9}{'tottime':>9}{'cumtime':>9}{'us/req':>8}  function")
        for r in rows:
            per = r["totUsPerReq"] if key_name == "tottime" else r["cumUsPerReq"]
            calls = (
                f"{r['ncalls']}"
                if r["ncalls"] == r["primitiveCalls"]
                else f"{r['ncalls']}/{r['primitiveCalls']}"
            )
            p(f"   {calls:>9}{r['tottime']:>9.3f}{r['cumtime']:>9.3f}{per:>8.1f}  {r['function']}")
    p("   us/req = seconds / appends answered in the profiled window (the profile covers the whole")
    p("   process: imports, start-up, warm-up and shutdown are included)")


def print_report(res: dict[str, Any]) -> None:
    p = print
    mb = res["messageBytes"]
    p(
        f"\nsessiond RPC benchmark - {res['runs']} run(s) per row, median of runs (max: max of runs); "
        f"{res['bufferedAppends']} timed appends per buffered row, {res['fsyncAppends']} per fsync row "
        f"(split between the clients, after {res['warmup']} untimed each);\n"
        f"framing {res['framing']}, client {res['client']}; {res['cpus']} CPUs;\n"
        f"scratch on {res['disk']}; "
        f"load average {res['loadavgStart']:.2f} at start, {res['loadavgEnd']:.2f} at end"
    )
    p(
        f"messages: user {mb['user']:.0f} B / assistant {mb['assistant']:.0f} B of JSON "
        f"(mean {mb['mean']:.0f} B), one per request; session line {res['floor'][0]['lineBytes']:.0f} B"
    )

    p("\n0. floor: in-process Session.append_message, one thread, fresh process, fresh session")
    p(f"{'mode':<10}{'p50 us':>9}{'p99 us':>9}{'max us':>9}{'appends/s':>11}{'other CPU':>10}")
    floors = {f["mode"]: f for f in res["floor"]}
    for f in res["floor"]:
        p(
            f"{f['mode']:<10}{f['p50Us']:>9.1f}{f['p99Us']:>9.1f}{f['maxUs']:>9.0f}{f['perSec']:>11.0f}"
            f"{f['otherCpuPct']:>9.0f}%"
        )

    p("\n1. session/append round trip: N client processes, one connection each, one shared fresh session")
    p(
        f"   (the session grows from 1 to ~{res['bufferedAppends'] + 1:,} entries in a buffered row; "
        "an append's cost grows with it, see 2)"
    )
    p(
        f"{'mode':<10}{'clients':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'appends/s':>11}"
        f"{'daemon CPU':>11}{'us/req':>8}{'clients CPU':>12}{'us/req':>8}{'other':>7}{'p50 x':>7}"
        f"{'p99 x':>7}{'thru x':>7}"
    )
    for r in res["append"]:
        f = floors[r["mode"]]
        p(
            f"{r['mode']:<10}{r['clients']:>7}{_ms(r['p50Us']):>8}{_ms(r['p99Us']):>8}{_ms(r['maxUs']):>8}"
            f"{r['perSec']:>11.0f}{r['daemonCpuPct']:>10.0f}%{r['daemonCpuUsPerReq']:>8.0f}{r['clientsCpuPct']:>11.0f}%"
            f"{r.get('clientsCpuUsPerReq', math.nan):>8.0f}"
            f"{r['otherCpuPct']:>6.0f}%{_r(r['p50Us'], f['p50Us']):>7}{_r(r['p99Us'], f['p99Us']):>7}"
            f"{_r(r['perSec'], f['perSec']):>7}"
        )
    kernel = [
        f"{r['mode']} x{r['clients']} {r['daemonSysUsPerReq']:.0f}"
        for r in res["append"]
        if "daemonSysUsPerReq" in r
    ]
    if kernel:
        p(f"   daemon us/req spent in the kernel (system time): {', '.join(kernel)}")
    threads = [
        f"{r['mode']} x{r['clients']} {r['daemonLoopUsPerReq']:.0f} / {r['daemonThreadsUsPerReq']:.0f}"
        for r in res["append"]
        if "daemonLoopUsPerReq" in r
    ]
    if threads:
        p(
            "   daemon us/req on the event loop's thread / in its other threads (search index writer,"
            f" usage records, workers): {', '.join(threads)}"
        )
    p("   x = RPC / floor of the same mode (p50 x, p99 x: the RPC overhead factor; thru x: aggregate")
    p("   appends/s over the floor's one-thread appends/s). daemon CPU = % of one core over the timed")
    p("   window (user + system, all threads); us/req = daemon CPU time per request; clients CPU = the")
    p("   client processes together, % of one core, and their CPU per request (the second us/req: what")
    p("   the clients cost the same 2 cores); other = CPU the rest of the machine used meanwhile")
    p("   (other processes, kernel threads, steal), % of one core: high values mean a noisy run")

    if res.get("long"):
        lf = res["longFloor"]
        p(
            f"\n2. a long session: {lf['prefill']:,} entries in the session before the "
            f"{res['longAppends']} timed appends (buffered)"
        )
        p(
            f"{'':<10}{'clients':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'appends/s':>11}"
            f"{'daemon CPU':>11}{'us/req':>8}{'other':>7}{'p50 x':>7}{'vs fresh':>9}"
        )
        p(
            f"{'floor':<10}{'-':>7}{_ms(lf['p50Us']):>8}{_ms(lf['p99Us']):>8}{_ms(lf['maxUs']):>8}"
            f"{lf['perSec']:>11.0f}{'':>11}{'':>8}{lf['otherCpuPct']:>6.0f}%{'':>7}"
            f"{_r(lf['p50Us'], floors['buffered']['p50Us']):>9}"
        )
        for r in res["long"]:
            fresh = next(
                (a for a in res["append"] if a["mode"] == "buffered" and a["clients"] == r["clients"]), None
            )
            p(
                f"{'rpc':<10}{r['clients']:>7}{_ms(r['p50Us']):>8}{_ms(r['p99Us']):>8}{_ms(r['maxUs']):>8}"
                f"{r['perSec']:>11.0f}{r['daemonCpuPct']:>10.0f}%{r['daemonCpuUsPerReq']:>8.0f}"
                f"{r['otherCpuPct']:>6.0f}%{_r(r['p50Us'], lf['p50Us']):>7}"
                f"{_r(r['p50Us'], fresh['p50Us']) if fresh else '-':>9}"
            )
        p("   p50 x = RPC / this floor; vs fresh = p50 here / p50 on the fresh session (section 0 or 1)")

    if res.get("noop"):
        p("\n3. RPC no-op: session/unsubscribe (params validated, no store work), buffered daemon")
        p(
            f"{'clients':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'req/s':>9}{'daemon CPU':>11}"
            f"{'us/req':>8}{'append us/req':>15}{'other':>7}"
        )
        for r in res["noop"]:
            ap = next(
                (a for a in res["append"] if a["mode"] == "buffered" and a["clients"] == r["clients"]), None
            )
            ap_us = f"{ap['daemonCpuUsPerReq']:.0f}" if ap else "-"
            p(
                f"{r['clients']:>7}{_ms(r['p50Us']):>8}{_ms(r['p99Us']):>8}{_ms(r['maxUs']):>8}{r['perSec']:>9.0f}"
                f"{r['daemonCpuPct']:>10.0f}%{r['daemonCpuUsPerReq']:>8.0f}{ap_us:>15}{r['otherCpuPct']:>6.0f}%"
            )
        p("   append us/req = the daemon's CPU per buffered append with as many clients (section 1)")

    if res.get("notify"):
        p(
            "\n4. notification latency: writer sends session/append -> subscriber reads entries_appended"
            " (buffered)"
        )
        p(
            f"{'writers':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'matched':>9}{'append p50':>11}{'p99':>8}"
            f"{'appends/s':>11}{'daemon CPU':>11}{'us/req':>8}{'usage/append':>13}{'other':>7}"
        )
        for r in res["notify"]:
            p(
                f"{r['clients']:>7}{_ms(r['notifyP50Us']):>8}{_ms(r['notifyP99Us']):>8}{_ms(r['notifyMaxUs']):>8}"
                f"{100 * r['notifyMatched']:>8.1f}%{_ms(r['p50Us']):>11}{_ms(r['p99Us']):>8}"
                f"{r['perSec']:>11.0f}"
                f"{r['daemonCpuPct']:>10.0f}%{r['daemonCpuUsPerReq']:>8.0f}{r['usageUpdatesPerAppend']:>13.2f}"
                f"{r['otherCpuPct']:>6.0f}%"
            )
        p("   append p50/p99 (ms) and appends/s of the writers during that run: with a subscriber the daemon")
        p("   also publishes entries_appended + usage_update (usage/append = usage_update per append)")

    g = res.get("goals") or {}
    if g:
        p99, thr = g["p99"], g["throughput"]
        p(f"\ngoals ({GOAL_CLIENTS} clients, buffered, {res['cpus']} CPUs):")
        p(
            f"  append p99 < {GOAL_P99_MS:g} ms:        {p99['valueMs']:.2f} ms  "
            f"{'MET' if p99['met'] else 'NOT MET'}"
        )
        p(
            f"  aggregate >= {GOAL_PER_SEC:,.0f} appends/s: {thr['valuePerSec']:,.0f}/s  "
            f"{'MET' if thr['met'] else 'NOT MET'}  (best buffered: {thr['bestPerSec']:,.0f}/s with "
            f"{thr['bestClients']} clients)"
        )
        if not (p99["met"] and thr["met"]) and not res.get("profile"):
            p("  run with --profile to see where the daemon spends its time")

    if res.get("profile"):
        print_profile(res["profile"], res["profileTop"])

    if res.get("hops"):
        from benchmarks.append_hops import print_hops  # noqa: PLC0415

        print_hops(res["hops"])


# --------------------------------------------------------------------------- main


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--runs", type=int, default=None, help="runs per case (default 3; quick 1)")
    ap.add_argument(
        "--appends", type=int, default=None, help="timed appends per buffered case (default 6000; quick 1500)"
    )
    ap.add_argument(
        "--fsync-appends",
        type=int,
        default=None,
        help="timed appends per fsync case (default 2000; quick 400)",
    )
    ap.add_argument(
        "--prefill",
        type=int,
        default=None,
        help="entries already in the session for the long-session rows (default 10000; quick 3000; 0: skip)",
    )
    ap.add_argument("--clients", default="1,8,32", help="client counts (default 1,8,32)")
    ap.add_argument("--framing", choices=("content-length", "ndjson"), default="content-length")
    ap.add_argument(
        "--client",
        choices=("asyncio", "raw"),
        default="asyncio",
        help="asyncio: sessiond_client.Client (default); raw: a blocking-socket client (cheapest client)",
    )
    ap.add_argument("--no-noop", action="store_true", help="skip the session/unsubscribe no-op rows")
    ap.add_argument("--no-notify", action="store_true", help="skip the notification latency rows")
    ap.add_argument(
        "--modes",
        type=lambda v: [m for m in v.split(",") if m],
        default=["buffered", "fsync"],
        help="durability modes of the floor and round-trip rows (default buffered,fsync)",
    )
    ap.add_argument("--profile", action="store_true", help="also profile the daemon (8 clients, buffered)")
    ap.add_argument(
        "--profile-subscriber",
        action="store_true",
        help="with --profile: profile the run with a subscriber (section 4, 8 writers) instead",
    )
    ap.add_argument("--profile-top", type=int, default=25, help="functions listed per profile table")
    ap.add_argument(
        "--hops",
        action="store_true",
        help="also time each hop of one buffered append in a fresh process (benchmarks/append_hops.py)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.runs is None:
        args.runs = 1 if args.quick else 3
    args.runs = max(1, args.runs)
    clients = [int(x) for x in args.clients.split(",") if x.strip()]
    args.warmup = 20
    args.buffered_appends = args.appends or (1500 if args.quick else 6000)
    args.fsync_appends = args.fsync_appends or (400 if args.quick else 2000)
    if args.prefill is None:
        args.prefill = 3000 if args.quick else 10_000
    args.long_appends = max(GOAL_CLIENTS, args.buffered_appends // 3)

    scratch = Scratch(args.out / "rpc-tmp")
    t_start = time.perf_counter()
    try:
        res: dict[str, Any] = {
            "runs": args.runs,
            "bufferedAppends": args.buffered_appends,
            "fsyncAppends": args.fsync_appends,
            "warmup": args.warmup,
            "prefill": args.prefill,
            "longAppends": args.long_appends,
            "quick": args.quick,
            "framing": args.framing,
            "client": args.client,
            "cpus": os.cpu_count(),
            "disk": scratch.disk(),
            "messageBytes": message_bytes(),
            "loadavgStart": os.getloadavg()[0],
        }

        log("0. floor")
        res["floor"] = []
        for mode in args.modes:
            runs = [run_floor(scratch, args, mode) for _ in range(args.runs)]
            row = {"mode": mode, **_median_of_runs(runs)}
            res["floor"].append(row)
            log(f"  {mode}: p50 {row['p50Us']:.0f} us, {row['perSec']:.0f}/s")

        def case(label: str, **kw: Any) -> dict[str, Any]:
            runs = [asyncio.run(run_case(scratch, args, **kw)) for _ in range(args.runs)]
            row = _median_of_runs(runs)
            log(
                f"  {label}: p50 {row['p50Us'] / 1000:.2f} ms, p99 {row['p99Us'] / 1000:.2f} ms, "
                f"{row['perSec']:.0f}/s, daemon {row['daemonCpuPct']:.0f}% CPU"
            )
            return row

        log("1. append round trip")
        res["append"] = []
        for mode in args.modes:
            for n in clients:
                row = case(f"{mode} x{n}", mode=mode, writers=n)
                res["append"].append({"mode": mode, "clients": n, **row})

        res["long"] = []
        if args.prefill > 0:
            log(f"2. a long session ({args.prefill} entries before the run), buffered")
            runs = [run_floor(scratch, args, "buffered", args.prefill) for _ in range(args.runs)]
            res["longFloor"] = {"mode": "buffered", "prefill": args.prefill, **_median_of_runs(runs)}
            log(f"  floor: p50 {res['longFloor']['p50Us']:.0f} us, {res['longFloor']['perSec']:.0f}/s")
            for n in [c for c in clients if c in (1, GOAL_CLIENTS)]:
                row = case(f"long x{n}", mode="buffered", writers=n, prefill=args.prefill)
                res["long"].append({"mode": "buffered", "clients": n, "prefill": args.prefill, **row})

        res["noop"] = []
        if not args.no_noop:
            log("3. RPC no-op (session/unsubscribe)")
            for n in [c for c in clients if c in (1, GOAL_CLIENTS)]:
                row = case(f"no-op x{n}", mode="buffered", writers=n, method="noop")
                res["noop"].append({"clients": n, **row})

        res["notify"] = []
        if not args.no_notify:
            log("4. notification latency")
        for n in () if args.no_notify else (1, 8):
            row = case(f"notify, {n} writer(s)", mode="buffered", writers=n, subscriber=True)
            res["notify"].append({"clients": n, **row})

        res["goals"] = verdicts(res)

        if args.hops:
            log("6. hops of one append, in process")
            proc = subprocess.run(
                module_command(BENCH.module, "_hops", json.dumps({"n": 1000 if args.quick else 2000})),
                capture_output=True,
                text=True,
                cwd=REPO,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"the hops child failed:\n{proc.stderr[-3000:]}")
            res["hops"] = json.loads(proc.stdout.strip().splitlines()[-1])

        if args.profile:
            sub = args.profile_subscriber
            log(f"5. profile (daemon under cProfile, 8 clients, buffered{', a subscriber' if sub else ''})")
            prof_path = scratch.root / "daemon.prof"
            run = asyncio.run(
                run_case(
                    scratch, args, mode="buffered", writers=GOAL_CLIENTS, subscriber=sub, profile=prof_path
                )
            )
            keep = args.out / "rpc-daemon.prof"
            shutil.copyfile(prof_path, keep)
            # us/req: per append the profiled daemon answered (timed ones + warm-up + the admin's)
            prof = profile_report(keep, int(run["n"]) + GOAL_CLIENTS * args.warmup + 1, args.profile_top)
            prof["run"] = {k: v for k, v in run.items() if k != "profileFile"}
            prof["subscriber"] = sub
            res["profile"] = prof
            res["profileTop"] = args.profile_top
    finally:
        scratch.cleanup()
    res["totalSeconds"] = time.perf_counter() - t_start
    res["loadavgEnd"] = os.getloadavg()[0]
    return res


def report(res: dict[str, Any]) -> None:
    print_report(res)
    print(f"\n(total {res['totalSeconds']:.0f} s)")


G_RPC_P99 = Goal("rpc-p99", 4, "buffered append p99 under 2 ms with 8 clients", "<", GOAL_P99_MS, unit="ms")
G_RPC_THROUGHPUT = Goal(
    "rpc-throughput", 4, "aggregate at least 5,000 appends/s (8 clients)", ">=", GOAL_PER_SEC, unit="/s"
)
G_RPC_DAEMON_CPU = Goal(
    "rpc-daemon-cpu",
    16,
    "daemon CPU per buffered append ≤ 100 µs",
    "<=",
    GOAL_DAEMON_CPU_US,
    unit="us",
    reading="daemon CPU per append: the daemon's utime + stime (/proc) over the 8-client run / its appends",
)
BENCH = Bench(
    "rpc",
    "benchmarks.rpc",
    "session/append through the daemon (JSON-RPC over a Unix socket)",
    "the in-process Session.append_message",
    {
        "smoke": (
            "--runs",
            "1",
            "--appends",
            "100",
            "--fsync-appends",
            "20",
            "--prefill",
            "0",
            "--clients",
            "1",
            "--no-noop",
        ),
        "quick": ("--quick",),
        "full": (),
    },
    (G_RPC_P99, G_RPC_THROUGHPUT, G_RPC_DAEMON_CPU),
    quick="1 run per case, fewer appends, a smaller prefill",
)


def extract(d: dict[str, Any]) -> Extract:
    """Round trips through the daemon against the in-process append (the floor)."""
    e = Extract(
        notes=[
            f"{d['client']} client, {d['framing']} framing, median of {d['runs']} run(s); "
            f"load average {d.get('loadavgStart', math.nan):.2f} at start, "
            f"{d.get('loadavgEnd', math.nan):.2f} at end",
        ]
    )
    floor = {r["mode"]: r for r in d["floor"]}
    ref = "in-process Session.append_message"
    for r in d["append"]:
        mode, n, f = r["mode"], r["clients"], floor.get(r["mode"], {})
        goal_row = mode == "buffered" and n == 8
        e.add(f"round trip p50, {n} client(s), {mode}", r["p50Us"] / 1e3, "ms", ref, _in_ms(f.get("p50Us")))
        e.add(
            f"round trip p99, {n} client(s), {mode}",
            r["p99Us"] / 1e3,
            "ms",
            ref,
            _in_ms(f.get("p99Us")),
            G_RPC_P99 if goal_row else None,
        )
        e.add(
            f"appends/s, {n} client(s), {mode}",
            r["perSec"],
            "/s",
            f"{ref} (one thread)",
            f.get("perSec"),
            G_RPC_THROUGHPUT if goal_row else None,
        )
        e.add(
            f"daemon CPU per append, {n} client(s), {mode}",
            r["daemonCpuUsPerReq"],
            "us",
            goal=G_RPC_DAEMON_CPU if goal_row else None,
        )
        if "clientsCpuUsPerReq" in r:
            e.add(f"clients' CPU per append, {n} client(s), {mode}", r["clientsCpuUsPerReq"], "us")
    long_floor = d.get("longFloor")
    for r in d.get("long", []):
        e.add(
            f"round trip p50 on a {r['prefill']:,}-entry session, {r['clients']} client(s)",
            r["p50Us"] / 1e3,
            "ms",
            f"{ref}, same session",
            _in_ms(long_floor["p50Us"]) if long_floor else None,
        )
    cpu = {(r["mode"], r["clients"]): r["daemonCpuUsPerReq"] for r in d["append"]}
    for r in d.get("noop", []):
        e.add(
            f"no-op request daemon CPU, {r['clients']} client(s)",
            r["daemonCpuUsPerReq"],
            "us",
            "daemon CPU per buffered append",
            cpu.get(("buffered", r["clients"])),
        )
    for r in d.get("notify", []):
        e.add(
            f"append → entries_appended p50, {r['clients']} writer(s)",
            r["notifyP50Us"] / 1e3,
            "ms",
            "the writer's own round trip p50",
            r["p50Us"] / 1e3,
        )
    other = [
        r.get("otherCpuPct", 0.0) for k in ("floor", "append", "long", "noop", "notify") for r in d.get(k, [])
    ]
    if other:
        e.notes.append(f"CPU used by other processes during the rows: up to {max(other):.0f}% of a core")
    if not any(r["mode"] == "buffered" and r["clients"] == 8 for r in d["append"]):
        for g in (G_RPC_P99, G_RPC_THROUGHPUT, G_RPC_DAEMON_CPU):
            e.unmeasured[g.key] = "no 8-client buffered row in this mode"
    return e


def _in_ms(us: float | None) -> float | None:
    return None if us is None else us / 1e3


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
