"""The file watcher (``sessiond.service.watcher``): latency, idle cost, bursts; inotify vs polling.

Sections (every ratio is against a reference measured in the same run):

1. **latency** - one external append (``os.write`` to an ``O_APPEND`` descriptor) to the
   ``on_events`` callback, p50/p99/max over a few hundred appends made one at a time with a
   random gap, in inotify mode and in polling mode (default 0.25 s interval), against watchfiles'
   bare ``awatch`` loop with the same settings (``debounce=50, step=5, rust_timeout=1000``,
   ``watch_filter=None``) seeing the same kind of append. Goal: inotify p99 < 50 ms.
2. **idle CPU** - process CPU seconds per wall second (``time.process_time``: every thread,
   the Rust one included) while 1,000 tracked files in 10 directories sit unchanged, inotify vs
   polling, against the same process sleeping with no watcher. Also the cost of one full
   polling scan (stat every file, list every directory).
3. **burst** - 20 files appended concurrently (one thread each), 50 appends per file: events
   and batches delivered, time from the last write until the watcher reported every final size,
   and whether anything was lost (last reported size != final size, or a gap between one
   event's size and the next one's ``previous_size``).
4. **through the daemon** - ``python -m sessiond serve`` on a scratch store (``CLAUDE_CONFIG_DIR``
   and ``PI_CODING_AGENT_DIR`` in the scratch dir too, an empty config file). A Pi session made
   with ``session/new {subscribe: true}`` + one ``session/append``, then this process appends
   Pi v3 message lines to its file (``open(path, "ab")`` + ``write``, each line's ``parentId`` the
   previous one) at ~20 lines/s; and Claude Code transcripts in the Claude root (the first lines
   of a real one, ``session/load {subscribe: true}``, then the rest line by line). Timed from the
   ``write()`` to the client reading the ``entries_appended`` (``external: true``) that names the
   line's id (Claude: only chain entries produce entries): p50/p99/max against the watcher alone
   (section 1); goal p99 < 50 ms. Also the daemon's CPU per line written (``/proc/<pid>/stat``
   utime + stime over the run) and the same net of its idle CPU (schedstat). Then synthetic
   Claude Code transcripts (``ClaudeSynth``, real 2.1.x record shapes) of 0.3, 10 and 50 MiB
   (``--follow-sizes``; quick 0.3 and 10): all but the last 150 lines (quick 40) loaded, then
   those followed. Goals (issue 16): at 50 MiB, daemon CPU per line (net) <= 2 ms and within
   1.5x of the 0.3 MiB figure, p99 < 50 ms.
5. **idle daemon** - two daemons at once, each with 1,000 (then 10,000) session files (header +
   2 messages) in 10 cwd directories of its store, one with ``[watch] enabled = false`` (the
   reference), once their start-up work is done: daemon CPU ms and wake-ups (threads put on a
   CPU) per wall second over ~10 s (``/proc/<pid>/task/*/schedstat``). Goal (issue 30): watching
   on, <= 1 ms/s and <= 2 wake-ups/s at both sizes.
6. **cold load of Claude Code transcripts** - the 2.6 MiB fixture (one compaction) and a
   synthetic transcript (``ClaudeSynth``, seeded; 50 MiB, ``--quick`` 10 MiB), each method in a
   fresh process: time and RSS peak / kept (``VmHWM``/``VmRSS`` minus the RSS before) of a bare
   orjson line scan (the reference), ``load_transcript`` + ``reconstruct``, ``ClaudeSession.open``.

Run: ``.venv/bin/python -m benchmarks.watch [--quick] [--json] [--sections 1,...,6]``. Scratch
files go to ``benchmarks/out/watch-tmp/`` (same disk as the repo; removed at the end, daemons
stopped even on errors).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import functools
import json
import os
import random
import string
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

from benchmarks.harness import (
    FIXTURES,
    REPO,
    Bench,
    Daemon,
    Extract,
    Goal,
    Scratch,
    log,
    main,
    module_command,
    pct,
    process_cpu_seconds,
    ratio,
    summary_ms,
    with_total,
)
from sessiond.service.config import WatchConfig
from sessiond.service.watcher import FileEvent, Watcher
from sessiond_client import Client

awatch: Any = None
try:
    from watchfiles import awatch as _awatch

    awatch = _awatch
except ImportError:  # the watcher then polls; the bare-awatch reference is skipped
    pass

MB = 1 << 20
CLAUDE_FIXTURES = FIXTURES / "claude-code"
CLAUDE_SAMPLE = CLAUDE_FIXTURES / "ccl-2.1.114" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
CLAUDE_COMPACTED = CLAUDE_FIXTURES / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
LINE = b'{"type":"message","id":"0123abcd","message":{"role":"user","content":"hello"}}\n'
GOAL_P99_MS = 50.0
GOAL_FOLLOW_CPU_MS = 2.0
"""Issue 16: daemon CPU per followed Claude Code line at 50 MB."""
GOAL_FOLLOW_FLAT = 1.5
"""Issue 16: ... and within this factor of the 0.3 MB figure (cost independent of the file's size)."""

Log = Callable[[str], None]


async def _started(w: Watcher) -> None:
    with anyio.fail_after(10):
        while w.batches == 0:
            await anyio.sleep(0.005)


# --------------------------------------------------------------------------- 1. latency


def _gaps(n: int, lo: float, hi: float, seed: int = 7) -> list[float]:
    """Gaps between appends: random in [lo, hi) for inotify; for polling the phases relative to
    the tick are spread evenly (golden-ratio sequence) so that n small still samples them all."""
    if lo == 0.0:
        return [hi * ((i * 0.6180339887) % 1.0) for i in range(n)]
    rng = random.Random(seed)
    return [rng.uniform(lo, hi) for _ in range(n)]


async def _latency_watcher(directory: Path, n: int, gap: tuple[float, float], poll: float | None) -> Any:
    path = directory / "s.jsonl"
    path.write_bytes(LINE)
    seen = anyio.Event()
    stamp = [0.0]

    def on_events(events: list[FileEvent]) -> None:
        stamp[0] = time.perf_counter()
        seen.set()

    w = Watcher(on_events, poll_interval=poll)
    w.watch_dir(directory)
    samples: list[float] = []
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(w.run)
            await _started(w)
            for g in _gaps(n, *gap):
                await anyio.sleep(g)
                seen = anyio.Event()
                t0 = time.perf_counter()
                os.write(fd, LINE)
                with anyio.fail_after(10):
                    await seen.wait()
                samples.append(stamp[0] - t0)
            w.stop()
    finally:
        os.close(fd)
    return summary_ms(samples), w.mode


async def _latency_awatch(directory: Path, n: int, gap: tuple[float, float]) -> dict[str, float] | None:
    if awatch is None:
        return None
    path = directory / "s.jsonl"
    path.write_bytes(LINE)
    stop = anyio.Event()
    seen = anyio.Event()
    stamp = [0.0]
    ready = anyio.Event()

    async def consume() -> None:
        ready.set()
        async for _ in awatch(
            directory, stop_event=stop, debounce=50, step=5, rust_timeout=1000, watch_filter=None
        ):
            stamp[0] = time.perf_counter()
            seen.set()

    samples: list[float] = []
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await ready.wait()
            await anyio.sleep(0.1)  # awatch creates its watches lazily: give it time
            for g in _gaps(n, *gap):
                await anyio.sleep(g)
                seen = anyio.Event()
                t0 = time.perf_counter()
                os.write(fd, LINE)
                with anyio.fail_after(10):
                    await seen.wait()
                samples.append(stamp[0] - t0)
            stop.set()
    finally:
        os.close(fd)
    return summary_ms(samples)


def bench_latency(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    res: dict[str, Any] = {"appends": args.appends, "pollAppends": args.poll_appends}
    gap = (0.002, 0.010)
    res["awatch"] = anyio.run(_latency_awatch, scratch.new_dir("awatch"), args.appends, gap)
    if res["awatch"]:
        log(f"  awatch (bare): p50 {res['awatch']['p50Ms']:.1f} ms p99 {res['awatch']['p99Ms']:.1f} ms")
    lat, mode = anyio.run(_latency_watcher, scratch.new_dir("inotify"), args.appends, gap, None)
    res["inotify"] = lat if mode == "inotify" else None
    log(f"  watcher ({mode}): p50 {lat['p50Ms']:.1f} ms p99 {lat['p99Ms']:.1f} ms")
    interval = args.poll_interval
    lat, _ = anyio.run(
        _latency_watcher, scratch.new_dir("poll"), args.poll_appends, (0.0, interval), interval
    )
    res["poll"] = lat
    res["pollInterval"] = interval
    log(f"  watcher (poll {interval} s): p50 {lat['p50Ms']:.1f} ms p99 {lat['p99Ms']:.1f} ms")
    return res


# --------------------------------------------------------------------------- 2. idle CPU


def _make_store(root: Path, dirs: int, files: int) -> list[Path]:
    paths = []
    for d in range(dirs):
        sub = root / f"--project-{d:02d}--"
        sub.mkdir()
        for i in range(files // dirs):
            p = sub / f"2026-01-01T00-00-00-000Z_{d:02d}{i:04d}.jsonl"
            p.write_bytes(LINE * 3)
            paths.append(p)
    return paths


async def _idle_awatch(root: Path, seconds: float) -> dict[str, float]:
    assert awatch is not None
    stop = anyio.Event()
    batches = 0

    async def consume() -> None:
        nonlocal batches
        async for _ in awatch(
            root, stop_event=stop, debounce=50, step=5, rust_timeout=1000, watch_filter=None
        ):
            batches += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.sleep(0.3)
        c0, t0 = time.process_time(), time.perf_counter()
        await anyio.sleep(seconds)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        stop.set()
    return {"cpuPerSec": cpu / wall, "cpuMsPerSec": cpu / wall * 1e3, "wall": wall, "batches": batches}


async def _idle(root: Path, paths: list[Path], seconds: float, mode: str | None) -> dict[str, float]:
    w = None
    if mode is not None:
        w = Watcher(lambda evs: None, poll_interval=0.25 if mode == "poll" else None)
        w.watch_dir(root, recursive=True)
        for p in paths:
            w.track(p)
    async with anyio.create_task_group() as tg:
        if w is not None:
            tg.start_soon(w.run)
            await _started(w)
        await anyio.sleep(0.3)  # settle
        batches0 = w.batches if w is not None else 0
        c0, t0 = time.process_time(), time.perf_counter()
        await anyio.sleep(seconds)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        batches = (w.batches - batches0) if w is not None else 0
        if w is not None:
            w.stop()
    return {"cpuPerSec": cpu / wall, "cpuMsPerSec": cpu / wall * 1e3, "wall": wall, "batches": batches}


def _scan_cost(root: Path, paths: list[Path], runs: int) -> float:
    """Milliseconds for one full polling scan of the store (median of ``runs``)."""
    w = Watcher(lambda evs: None, poll_interval=0.25)
    w.watch_dir(root, recursive=True)
    for p in paths:
        w.track(p)

    async def scan() -> list[float]:
        w._lock = anyio.Lock()  # the scan outside run(): what one polling tick does
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            await w._process(None)
            out.append(time.perf_counter() - t0)
        return out

    return pct(anyio.run(scan), 0.5) * 1e3


def _scan_floor(root: Path, paths: list[Path], runs: int) -> float:
    """Milliseconds for the syscalls alone: ``os.stat`` every file, ``os.scandir`` every directory."""
    names = [str(p) for p in paths]
    dirs = sorted({os.path.dirname(n) for n in names})
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        with os.scandir(root) as it:
            for e in it:
                e.is_dir()
        for d in dirs:
            with os.scandir(d) as it:
                for e in it:
                    e.is_file()
        for n in names:
            os.stat(n)
        out.append(time.perf_counter() - t0)
    return pct(out, 0.5) * 1e3


def bench_idle(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    root = scratch.new_dir("idle")
    paths = _make_store(root, 10, 1000)
    res: dict[str, Any] = {"files": len(paths), "dirs": 10, "seconds": args.idle_seconds}
    for mode in (None, "awatch", "inotify", "poll"):
        seconds = args.idle_seconds if mode in ("inotify", "poll") else min(3.0, args.idle_seconds)
        if mode == "awatch":
            if awatch is None:
                res["awatch"] = None
                continue
            r = anyio.run(_idle_awatch, root, seconds)
        else:
            r = anyio.run(_idle, root, paths, seconds, mode)
        res[mode or "none"] = r
        log(f"  idle {mode or 'no watcher'}: {r['cpuMsPerSec']:.2f} ms CPU per s")
    res["scanMs"] = _scan_cost(root, paths, 20)
    res["scanFloorMs"] = _scan_floor(root, paths, 20)
    log(
        f"  one full scan of {len(paths)} files: {res['scanMs']:.2f} ms "
        f"(syscalls alone {res['scanFloorMs']:.2f})"
    )
    return res


# --------------------------------------------------------------------------- 3. burst


async def _burst(directory: Path, files: int, appends: int, poll: float | None) -> dict[str, Any]:
    paths = [directory / f"s{i:02d}.jsonl" for i in range(files)]
    for p in paths:
        p.write_bytes(LINE)
    last: dict[Path, FileEvent] = {}
    gaps = 0
    counts = {"events": 0, "batches": 0}
    done = anyio.Event()
    final: dict[Path, int] = {}

    def on_events(events: list[FileEvent]) -> None:
        nonlocal gaps
        counts["batches"] += 1
        counts["events"] += len(events)
        for e in events:
            before = last.get(e.path)
            if e.kind != "grown" or (before is not None and e.previous_size != before.size):
                gaps += 1
            last[e.path] = e
        if final and all(last.get(p) is not None and last[p].size == s for p, s in final.items()):
            done.set()

    w = Watcher(on_events, poll_interval=poll)
    w.watch_dir(directory)

    def writer(path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            for _ in range(appends):
                os.write(fd, LINE)
                time.sleep(0.001)
        finally:
            os.close(fd)

    async with anyio.create_task_group() as tg:
        tg.start_soon(w.run)
        await _started(w)
        t0 = time.perf_counter()
        threads = [threading.Thread(target=writer, args=(p,)) for p in paths]
        for t in threads:
            t.start()

        def join_all() -> None:
            for t in threads:
                t.join()

        await anyio.to_thread.run_sync(join_all)
        t_last = time.perf_counter()
        final.update({p: p.stat().st_size for p in paths})
        on_events([])  # re-check: everything may already have been reported
        with anyio.move_on_after(5):
            await done.wait()
        settle = time.perf_counter() - t_last
        w.stop()
    lost = sum(1 for p, s in final.items() if p not in last or last[p].size != s)
    return {
        "mode": w.mode,
        "files": files,
        "appendsPerFile": appends,
        "writeSeconds": t_last - t0,
        "settleMs": settle * 1e3,
        "events": counts["events"],
        "batches": counts["batches"] - 1,
        "lostFiles": lost,
        "gaps": gaps,
    }


def bench_burst(scratch: Scratch, args: argparse.Namespace, log: Log) -> list[dict[str, Any]]:
    rows = []
    for poll in (None, 0.25):
        r = anyio.run(_burst, scratch.new_dir("burst"), 20, 50, poll)
        rows.append(r)
        log(
            f"  burst {r['mode']}: {r['events']} events, lost {r['lostFiles']}, settle {r['settleMs']:.0f} ms"
        )
    return rows


# --------------------------------------------------------------------------- 4./5. the daemon


def _task_cpu(pid: int) -> dict[str, int]:
    """Nanoseconds on CPU per live thread (``/proc/<pid>/task/*/schedstat``): finer than clock ticks."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                out[tid] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def _comm(pid: int, tid: str) -> str:
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            name = f.read().strip()
    except OSError:
        return "?"
    return "worker" if name.startswith("python") else name


def _task_delta(before: dict[str, int], after: dict[str, int]) -> float:
    """CPU seconds between two ``_task_cpu`` readings (threads that ended in between are missed)."""
    return sum(v - before.get(tid, 0) for tid, v in after.items()) / 1e9


def _iso(ms: float) -> str:
    d = _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def _pi_user(text: str, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def _pi_assistant(text: str, ts: int, total: int) -> dict[str, Any]:
    cost = {"input": 0.0003, "output": 0.0015, "cacheRead": 0.0006, "cacheWrite": 0.0, "total": 0.0024}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 100,
            "output": 100,
            "cacheRead": total - 200,
            "cacheWrite": 0,
            "totalTokens": total,
            "cost": cost,
        },
        "stopReason": "stop",
        "timestamp": ts,
    }


def _pi_line(entry_id: str, parent: str | None, message: dict[str, Any], ts: int) -> bytes:
    """One Pi v3 message entry, as ``tests/rpc/test_watching.py``'s ``line()`` writes it."""
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": _iso(ts), "message": message}
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


async def _timed_follow(
    client: Any,
    pid: int,
    sid: str,
    path: Path,
    items: list[tuple[str | None, bytes]],
    rate: float,
    idle_window: float = 1.0,
) -> dict[str, Any]:
    """Append ``items`` (expected entry id or None, line) to ``path`` at ``rate`` lines/s (gaps random
    in [0.5, 1.5] / rate); stamp each ``entries_appended`` (``external``) when the client reads it."""
    rng = random.Random(11)
    written: dict[str, float] = {}
    arrived: dict[str, float] = {}
    expected = {i for i, _ in items if i is not None}
    counts = {"updates": 0, "appended": 0, "notExternal": 0, "unknownIds": 0, "other": 0}
    writer_done = asyncio.Event()

    async def reader() -> None:
        deadline: float | None = None
        while len(arrived) < len(expected):
            if writer_done.is_set() and deadline is None:
                deadline = time.perf_counter() + 3.0
            timeout = 0.25 if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                method, params = await client.notification(timeout)
            except TimeoutError:
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                continue
            now = time.perf_counter()
            if method != "session/update" or params.get("sessionId") != sid:
                continue
            update = params["update"]
            counts["updates"] += 1
            if update["sessionUpdate"] != "entries_appended":
                counts["other"] += 1
                continue
            counts["appended"] += 1
            if not update.get("external"):
                counts["notExternal"] += 1
            for eid in update["entryIds"]:
                if eid in written:
                    arrived.setdefault(eid, now)
                else:
                    counts["unknownIds"] += 1

    async def writer() -> None:
        with open(path, "ab", buffering=0) as f:
            nxt = time.perf_counter()
            for eid, data in items:
                nxt += rng.uniform(0.5, 1.5) / rate
                delay = nxt - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                t0 = time.perf_counter()
                f.write(data)
                if eid is not None:
                    written[eid] = t0
        writer_done.set()

    idle0, idle_t0 = _task_cpu(pid), time.perf_counter()
    await asyncio.sleep(idle_window)  # the daemon's own idle cost, with this session open and subscribed
    idle = _task_delta(idle0, _task_cpu(pid)) / (time.perf_counter() - idle_t0)
    client.drain_notifications()
    cpu0, tasks0, wall0 = process_cpu_seconds(pid), _task_cpu(pid), time.perf_counter()
    read_task = asyncio.ensure_future(reader())
    await writer()
    await read_task
    await asyncio.sleep(0.2)  # the usage_update that follows the last entries
    cpu, tasks, wall = (
        process_cpu_seconds(pid) - cpu0,
        _task_delta(tasks0, _task_cpu(pid)),
        time.perf_counter() - wall0,
    )
    samples = [arrived[i] - written[i] for i in arrived]
    return {
        **summary_ms(samples),
        "lines": len(items),
        "expected": len(expected),
        "missing": len(expected) - len(arrived),
        **counts,
        "wall": wall,
        "rate": len(items) / wall,
        "cpuSeconds": cpu,
        "cpuTaskSeconds": tasks,
        "cpuMsPerLine": cpu / len(items) * 1e3,
        "cpuTaskMsPerLine": tasks / len(items) * 1e3,
        "cpuPercent": cpu / wall * 100,
        "idleMsPerSec": idle * 1e3,
        "netMsPerLine": (tasks - idle * wall) / len(items) * 1e3,
    }


async def _follow_pi(d: Daemon, n: int, rate: float, where: str, idle: float) -> dict[str, Any]:
    """``where``: ``store`` = a session made by ``session/new`` in the daemon's own store;
    ``pi`` = a Pi session file in Pi's root (header + one message), ``session/load``-ed."""
    client = await Client.connect_unix(d.socket)
    try:
        await client.initialize("bench-watch")
        ts = int(time.time() * 1000)
        if where == "store":
            created = await client.request("session/new", {"cwd": "/bench/follow", "subscribe": True})
            sid, path = created["sessionId"], Path(created["path"])
            first = [{"type": "message", "message": _pi_user("hello", ts)}]
            leaf = (await client.request("session/append", {"sessionId": sid, "entries": first}))["leafId"]
        else:
            sid, leaf = "0199bbbb-0000-7000-8000-00000000f011", "a0000001"
            header = {"type": "session", "version": 3, "id": sid, "timestamp": _iso(ts), "cwd": "/bench/pi"}
            path = (
                d.pi_sessions / "--bench-pi--" / f"{_iso(ts).replace(':', '-').replace('.', '-')}_{sid}.jsonl"
            )
            path.parent.mkdir(exist_ok=True)
            head = json.dumps(header, separators=(",", ":")).encode() + b"\n"
            path.write_bytes(head + _pi_line(leaf, None, _pi_user("hello", ts), ts))
            await client.request("session/load", {"sessionId": sid, "subscribe": True})
        items: list[tuple[str | None, bytes]] = []
        rng = random.Random(5)
        words = [f"w{rng.getrandbits(20):05x}" for _ in range(400)]
        for i in range(n):
            eid = f"{0xE0000000 + i:08x}"
            text = " ".join(rng.choices(words, k=rng.randint(10, 80)))
            msg = _pi_user(text, ts + i) if i % 2 == 0 else _pi_assistant(text, ts + i, 2000 + 50 * i)
            items.append((eid, _pi_line(eid, leaf, msg, ts + i)))
            leaf = eid
        res = await _timed_follow(client, d.pid, sid, path, items, rate, idle)
        res["bytes"] = sum(len(b) for _, b in items)
        res["fileBytes"] = path.stat().st_size
        await client.request("session/close", {"sessionId": sid})
        return res
    finally:
        await client.close()


async def _follow_claude(
    d: Daemon, source: Path, head: int, limit: int | None, rate: float, idle: float
) -> dict[str, Any]:
    """``source``'s first ``head`` lines are in the Claude root already; append the next ``limit``."""
    target = d.claude_projects / "-bench" / source.name
    lines = source.read_bytes().splitlines(keepends=True)
    rest = lines[head:] if limit is None else lines[head : head + limit]
    items: list[tuple[str | None, bytes]] = []
    for raw in rest:
        rec = json.loads(raw)
        chain = rec.get("type") in ("user", "assistant", "system", "attachment")  # progress: bridged
        items.append((rec["uuid"] if chain and isinstance(rec.get("uuid"), str) else None, raw))
    client = await Client.connect_unix(d.socket)
    try:
        await client.initialize("bench-watch")
        loaded = await client.request("session/load", {"sessionId": source.stem, "subscribe": True})
        res = await _timed_follow(client, d.pid, source.stem, target, items, rate, idle)
        res["source"] = source.name
        res["headLines"] = head
        res["bytes"] = sum(len(b) for _, b in items)
        res["startBytes"] = sum(len(b) for b in lines[:head])
        res["fileBytes"] = target.stat().st_size
        res["format"] = loaded.get("format")
        await client.request("session/close", {"sessionId": source.stem})
        return res
    finally:
        await client.close()


def bench_follow(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    d = Daemon(scratch.new_dir("follow"))
    project = d.claude_projects / "-bench"
    project.mkdir()
    small = CLAUDE_SAMPLE.read_bytes().splitlines(keepends=True)
    (project / CLAUDE_SAMPLE.name).write_bytes(b"".join(small[: args.claude_head]))
    big = CLAUDE_COMPACTED.read_bytes().splitlines(keepends=True)
    big_head = len(big) - args.claude_big_lines
    (project / CLAUDE_COMPACTED.name).write_bytes(b"".join(big[:big_head]))
    own_poll = getattr(WatchConfig(), "own_poll_interval", None)
    res: dict[str, Any] = {"rate": args.follow_rate, "storePollInterval": own_poll}
    rate, idle = args.follow_rate, args.follow_idle
    cases: list[tuple[str, str, Callable[[], Any]]] = [
        ("piRoot", "Pi session, Pi's root", lambda: _follow_pi(d, args.follow_appends, rate, "pi", idle)),
        ("pi", "Pi session, store", lambda: _follow_pi(d, args.store_appends, rate, "store", idle)),
        (
            "claude",
            "Claude transcript",
            lambda: _follow_claude(d, CLAUDE_SAMPLE, args.claude_head, args.claude_lines, rate, idle),
        ),
        (
            "claudeBig",
            "Claude transcript, 2.6 MiB",
            lambda: _follow_claude(d, CLAUDE_COMPACTED, big_head, None, rate, idle),
        ),
    ]
    for mb in args.follow_mb:
        source = _synthetic_source(scratch, args.seed, mb)
        lines = source.read_bytes().splitlines(keepends=True)
        head = max(1, len(lines) - args.synth_lines)
        (project / source.name).write_bytes(b"".join(lines[:head]))
        key = _synth_key(mb)
        res.setdefault("synthetic", {})[key] = {"mb": mb, "bytes": source.stat().st_size}
        cases.append(
            (
                key,
                f"synthetic Claude transcript, {mb:g} MiB",
                functools.partial(_follow_claude, d, source, head, None, rate, idle),
            )
        )
    with d:
        d.start()
        # The transcripts above are read (searched, counted) at start; latency and CPU per line
        # are figures of following, measured once that first read is over (the first full run
        # measured the build: p99 149 ms and a negative CPU net of idle in the first case).
        res["indexedAfterSeconds"] = d.wait_indexed()
        log(f"  first indexing done after {res['indexedAfterSeconds']:.1f} s")
        for key, name, case in cases:
            r = res[key] = asyncio.run(case())
            log(
                f"  {name}: p50 {r['p50Ms']:.1f} ms p99 {r['p99Ms']:.1f} ms, "
                f"{r['cpuMsPerLine']:.2f} ms CPU/line"
            )
    return res


def _synth_key(mb: float) -> str:
    return f"claudeSynth{mb:g}".replace(".", "_")


def _synthetic_source(scratch: Scratch, seed: int, mb: float) -> Path:
    """A synthetic transcript of about ``mb`` MiB (``ClaudeSynth``), named for its own session id
    (the daemon serves a Claude Code file under its stem, which must be the records' ``sessionId``)."""
    synth = ClaudeSynth(seed)
    synth.SESSION = f"5e55b3a1-0000-4000-8000-{int(mb * 1000):012d}"
    path = scratch.new_dir(f"synth-{mb:g}") / f"{synth.SESSION}.jsonl"
    synth.write(path, int(mb * MB))
    return path


def _make_daemon_store(sessions: Path, dirs: int, files: int) -> int:
    """``files`` Pi v3 sessions (header + user + assistant) in ``dirs`` cwd directories; total bytes."""
    total = 0
    ts = 1767225600000
    for d in range(dirs):
        sub = sessions / f"--bench-{d}--"
        sub.mkdir()
        for i in range(files // dirs):
            sid = f"0199{d:04x}-{i:04x}-7000-8000-{d * 1000 + i:012x}"
            header = {"type": "session", "version": 3, "id": sid, "timestamp": _iso(ts), "cwd": f"/bench/{d}"}
            a, b = f"{d:02x}{i:06x}", f"{d + 128:02x}{i:06x}"
            data = (
                json.dumps(header, separators=(",", ":")).encode()
                + b"\n"
                + _pi_line(a, None, _pi_user(f"question {i}", ts), ts)
                + _pi_line(b, a, _pi_assistant(f"answer {i}", ts + 1, 1200), ts + 1)
            )
            (sub / f"{_iso(ts).replace(':', '-').replace('.', '-')}_{sid}.jsonl").write_bytes(data)
            total += len(data)
    return total


IDLE_SIZES = (1000, 10000)
"""Stored sessions of the idle daemon rows (issue 30: a Claude Code user has thousands)."""


def _task_runs(pid: int) -> dict[str, int]:
    """Times each live thread was put on a CPU (``schedstat``'s third field): its wake-ups."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                out[tid] = int(f.read().split()[2])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def _settle(daemons: list[Daemon], limit: float) -> None:
    """Until every daemon used under 2 ms of CPU in a 0.5 s window (its start-up work done:
    first scans, indexes), at most ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = [_task_cpu(d.pid) for d in daemons]
        time.sleep(0.5)
        if all(_task_delta(b, _task_cpu(d.pid)) < 0.002 for b, d in zip(before, daemons, strict=True)):
            return


def _idle_row(scratch: Scratch, args: argparse.Namespace, files: int, log: Log) -> dict[str, Any]:
    on = Daemon(scratch.new_dir(f"idle-on-{files}"))
    off = Daemon(scratch.new_dir(f"idle-off-{files}"), config="[watch]\nenabled = false\n")
    size = 0
    for d in (on, off):
        size = _make_daemon_store(d.store / "sessions", 10, files)
    res: dict[str, Any] = {"files": files, "dirs": 10, "bytes": size, "seconds": args.daemon_idle_seconds}
    res["storePollInterval"] = getattr(WatchConfig(), "own_poll_interval", None)
    with on, off:
        on.start()
        off.start()
        _settle([on, off], 60.0)  # watches set, first scan and indexes of the store done
        before = {
            k: (process_cpu_seconds(d.pid), _task_cpu(d.pid), _task_runs(d.pid))
            for k, d in (("on", on), ("off", off))
        }
        t0 = time.perf_counter()
        time.sleep(args.daemon_idle_seconds)
        wall = time.perf_counter() - t0
        for key, d in (("on", on), ("off", off)):
            stat0, tasks0, runs0 = before[key]
            tasks, runs = _task_cpu(d.pid), _task_runs(d.pid)
            cpu = _task_delta(tasks0, tasks)
            threads: dict[str, float] = {}
            wakes: dict[str, float] = {}
            for tid, ns in tasks.items():
                name = "main" if tid == str(d.pid) else _comm(d.pid, tid)
                threads[name] = threads.get(name, 0.0) + (ns - tasks0.get(tid, 0)) / 1e6 / wall
                wakes[name] = wakes.get(name, 0.0) + (runs.get(tid, 0) - runs0.get(tid, 0)) / wall
            res[key] = {
                "threadMsPerSec": threads,
                "threadWakeupsPerSec": wakes,
                "wakeupsPerSec": sum(wakes.values()),
                "wall": wall,
                "cpuSeconds": cpu,
                "cpuMsPerSec": cpu / wall * 1e3,
                "statSeconds": process_cpu_seconds(d.pid) - stat0,
                "threads": len(os.listdir(f"/proc/{d.pid}/task")),
            }
            log(
                f"  {files} sessions, watch {key}: {res[key]['cpuMsPerSec']:.2f} ms CPU per s, "
                f"{res[key]['wakeupsPerSec']:.1f} wake-ups per s"
            )
    return res


def bench_daemon_idle(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    """Idle daemons with 1,000 and 10,000 stored sessions, watching on and off, side by side."""
    return {"rows": [_idle_row(scratch, args, files, log) for files in IDLE_SIZES]}


# --------------------------------------------------------------------------- 6. cold load


class ClaudeSynth:
    """A deterministic Claude Code transcript of realistic turns (format of 2.1.x, as in the fixtures).

    Per turn: a ``file-history-snapshot``, the user prompt, 2-8 assistant steps (each a
    ``message.id`` streamed as pieces: thinking / text / ``tool_use``, with ``hook_progress``
    records after a call and one ``tool_result`` user per call, parented on the piece holding
    the call, with ``sourceToolAssistantUUID``; two calls in one step leave the first result
    off the resume chain, as Claude Code writes parallel calls), a final text answer, sometimes
    ``stop_hook_summary`` + ``turn_duration``. Halfway: a ``compact_boundary`` and its
    ``isCompactSummary`` user.
    """

    SESSION = "5e55b3a1-0000-4000-8000-00000000be4c"
    CWD = "/home/dev/projects/webapp"

    def __init__(self, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        vocab = [
            "".join(rng.choices("abcdefghijklmnopqrstuvwxyz_", k=rng.randint(2, 11))) for _ in range(3000)
        ]
        parts = []
        for _ in range(400_000):
            parts.append(rng.choice(vocab))
            if rng.random() < 0.06:
                parts.append(rng.choice(("\n", "\n\n", "();\n", " = ", "{\n  ", "}\n")))
        self.corpus = " ".join(parts)
        self.ms = 1_771_000_000_000.0
        self.leaf: str | None = None
        self.out: list[bytes] = []
        self.tokens = 18_000

    def text(self, n: int) -> str:
        o = self.rng.randrange(len(self.corpus) - n - 1)
        return self.corpus[o : o + n]

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _id(self, prefix: str) -> str:
        return prefix + "".join(self.rng.choices(string.ascii_letters + string.digits, k=22))

    def tick(self, lo: int, hi: int) -> str:
        self.ms += self.rng.randint(lo, hi)
        return _iso(self.ms)

    def emit(self, rec: dict[str, Any]) -> None:
        self.out.append(orjson.dumps(rec) + b"\n")

    def chain(self, type_: str, parent: str | None, **fields: Any) -> str:
        u = self.uuid()
        rec = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.CWD,
            "sessionId": self.SESSION,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": type_,
            **fields,
            "uuid": u,
            "timestamp": self.tick(5, 400),
        }
        self.emit(rec)
        return u

    def progress(self, tool_id: str, n: int) -> None:
        for k in range(n):
            data = {
                "type": "hook_progress",
                "hookEvent": "PostToolUse" if k % 2 else "PreToolUse",
                "hookName": "PreToolUse:Bash",
                "command": "/home/dev/.claude/hooks/audit.sh",
            }
            self.leaf = self.chain(
                "progress", self.leaf, data=data, parentToolUseID=tool_id, toolUseID=tool_id
            )

    def assistant(self, mid: str, block: dict[str, Any], stop: str | None) -> str:
        r = self.rng
        usage = {
            "input_tokens": r.randint(1, 8),
            "cache_creation_input_tokens": r.randint(0, 3000),
            "cache_read_input_tokens": self.tokens,
            "output_tokens": r.randint(5, 900),
            "service_tier": "standard",
        }
        message = {
            "model": "claude-opus-4-6",
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        u = self.chain("assistant", self.leaf, message=message, requestId=self._id("req_011C"))
        self.leaf = u
        return u

    def tool_call(self) -> tuple[dict[str, Any], str, dict[str, Any]]:
        r = self.rng
        tid = self._id("toolu_01")
        k = r.random()
        out = self.text(r.randint(200, 8000))
        use: dict[str, Any]
        result: dict[str, Any]
        if k < 0.45:
            path = f"{self.CWD}/src/{self.text(12).strip().replace(' ', '_') or 'x'}.ts"
            use = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}
            lines = out.count("\n") + 1
            result = {"type": "text", "file": {"filePath": path, "content": out, "numLines": lines}}
        elif k < 0.7:
            cmd = r.choice(("npm test", "git diff --stat", "rg -n foo src", "ls -la"))
            use = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": cmd}}
            result = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        else:
            old = self.text(r.randint(40, 600))
            path = f"{self.CWD}/src/app.ts"
            edit = {"file_path": path, "old_string": old, "new_string": old[::-1]}
            use = {"type": "tool_use", "id": tid, "name": "Edit", "input": edit}
            out = f"The file {path} has been updated successfully."
            result = {"filePath": path, "oldString": old, "newString": old[::-1], "structuredPatch": []}
        block = {"tool_use_id": tid, "type": "tool_result", "content": out, "is_error": False}
        return use, tid, {"block": block, "toolUseResult": result}

    def turn(self) -> None:
        r = self.rng
        snap_id = self.uuid()
        snapshot = {"messageId": snap_id, "trackedFileBackups": {}, "timestamp": self.tick(20_000, 300_000)}
        self.emit(
            {
                "type": "file-history-snapshot",
                "messageId": snap_id,
                "snapshot": snapshot,
                "isSnapshotUpdate": False,
            }
        )
        content: Any = self.text(r.randint(40, 900))
        self.leaf = self.chain(
            "user", self.leaf, message={"role": "user", "content": content}, permissionMode="default"
        )
        steps = r.randint(2, 8)
        for step in range(steps):
            mid = self._id("msg_01")
            self.tokens = min(180_000, self.tokens + r.randint(300, 4000))
            if r.random() < 0.3:
                block = {
                    "type": "thinking",
                    "thinking": self.text(r.randint(100, 1500)),
                    "signature": self._id("Eu"),
                }
                self.assistant(mid, block, None)
            if step == steps - 1:
                self.assistant(mid, {"type": "text", "text": self.text(r.randint(200, 2500))}, "end_turn")
                break
            if r.random() < 0.6:
                self.assistant(mid, {"type": "text", "text": self.text(r.randint(30, 400))}, None)
            calls = []
            for _ in range(r.choices((1, 2, 3), (75, 20, 5))[0]):
                use, tid, result = self.tool_call()
                calls.append((self.assistant(mid, use, "tool_use"), result))
                self.progress(tid, r.choice((0, 2, 2, 4)))
            for holder, result in calls:
                self.leaf = self.chain(
                    "user",
                    holder,
                    message={"role": "user", "content": [result["block"]]},
                    toolUseResult=result["toolUseResult"],
                    sourceToolAssistantUUID=holder,
                )
        if r.random() < 0.3:
            hooks = {
                "hookCount": 1,
                "hookInfos": [{"command": "/home/dev/.claude/hooks/stop.sh"}],
                "hookErrors": [],
            }
            self.leaf = self.chain(
                "system", self.leaf, subtype="stop_hook_summary", **hooks, level="suggestion"
            )
            self.leaf = self.chain(
                "system", self.leaf, subtype="turn_duration", durationMs=r.randint(5000, 900_000)
            )

    def compact(self) -> None:
        boundary = self.chain(
            "system",
            None,
            logicalParentUuid=self.leaf,
            subtype="compact_boundary",
            content="Conversation compacted",
            level="info",
            compactMetadata={"trigger": "auto", "preTokens": self.tokens},
        )
        summary = "This session is being continued from a previous conversation that ran out of context. "
        self.leaf = self.chain(
            "user",
            boundary,
            message={"role": "user", "content": summary + self.text(6000)},
            isVisibleInTranscriptOnly=True,
            isCompactSummary=True,
        )
        self.tokens = 25_000

    def write(self, path: Path, target: int) -> dict[str, Any]:
        size = 0
        compacted = False
        with open(path, "wb") as f:
            while size < target:
                self.turn()
                if not compacted and size >= target // 2:
                    self.compact()
                    compacted = True
                data = b"".join(self.out)
                self.out.clear()
                f.write(data)
                size += len(data)
        return {"bytes": size, "compacted": compacted}


LOAD_METHODS = ("orjson", "load", "open")
LOAD_NAMES = {
    "orjson": "orjson line scan (reference)",
    "load": "load_transcript + reconstruct",
    "open": "ClaudeSession.open",
}


def _vm(field: str) -> int:
    """``Vm*`` of /proc/self/status, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def load_child(cfg: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process (every module imported first): time one load and its RSS cost."""
    import gc  # noqa: PLC0415

    from sessiond.formats.claude_code import reconstruct  # noqa: PLC0415
    from sessiond.store.claude import ClaudeSession  # noqa: PLC0415
    from sessiond.store.claude_files import load_transcript  # noqa: PLC0415

    path, method = cfg["path"], cfg["method"]
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM (the peak) to the current RSS
        reset = True
    except OSError:
        reset = False
    base = _vm("VmRSS")
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if method == "orjson":
        with open(path, "rb") as f:
            data = f.read()
        gc.disable()
        records = [orjson.loads(line) for line in data.split(b"\n") if line]
        gc.enable()
        elapsed = time.perf_counter() - t0
        del data
        out["records"] = len(records)
        keep: Any = records
    elif method == "load":
        t = load_transcript(path)
        rec = reconstruct(t)
        elapsed = time.perf_counter() - t0
        out.update(records=len(t.records), chain=len(t.chain), messages=len(rec.messages))
        keep = (t, rec)
    else:
        s = ClaudeSession.open(Path(path))
        elapsed = time.perf_counter() - t0
        out.update(
            records=sum(s.transcript.diagnostics.type_counts.values()),
            chain=len(s.transcript.chain),
            messages=len(s.reconstruction.messages),
            entries=s.entry_count,
        )
        keep = s
    retained = _vm("VmRSS") - base
    peak = _vm("VmHWM") - base if reset else float("nan")
    del keep
    return {**out, "method": method, "seconds": elapsed, "peakBytes": peak, "retainedBytes": retained}


def _run_child(cfg: dict[str, Any]) -> dict[str, Any]:
    cmd = module_command(BENCH.module, "_load", json.dumps(cfg))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"load child {cfg} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench_load(scratch: Scratch, args: argparse.Namespace, log: Log) -> list[dict[str, Any]]:
    base = scratch.new_dir("load")
    synth = base / f"claude-synthetic-{args.synthetic_mb}mb.jsonl"
    t0 = time.perf_counter()
    meta = ClaudeSynth(args.seed).write(synth, args.synthetic_mb * MB)
    log(f"  generated {synth.name}: {meta['bytes'] / MB:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    rows = []
    for name, path, runs in (
        ("spotter sample", CLAUDE_COMPACTED, args.load_runs_small),
        ("synthetic", synth, args.load_runs_large),
    ):
        path.read_bytes()  # warm the page cache: every method reads the same cached bytes
        results: dict[str, list[dict[str, Any]]] = {m: [] for m in LOAD_METHODS}
        for _ in range(runs):  # interleaved: drift hits every method alike
            for m in LOAD_METHODS:
                results[m].append(_run_child({"path": str(path), "method": m}))
        row: dict[str, Any] = {"name": name, "file": path.name, "bytes": path.stat().st_size, "runs": runs}
        for m in LOAD_METHODS:
            rs = results[m]
            best = min(rs, key=lambda r: r["seconds"])
            row[m] = {
                **best,
                "seconds": best["seconds"],
                "peakBytes": max(r["peakBytes"] for r in rs),
                "retainedBytes": max(r["retainedBytes"] for r in rs),
            }
        if name == "synthetic":
            row["generated"] = meta
        rows.append(row)
        log(
            f"  {name} ({row['bytes'] / MB:.1f} MiB): "
            + ", ".join(f"{m} {row[m]['seconds'] * 1e3:.0f} ms" for m in LOAD_METHODS)
        )
    return rows


# --------------------------------------------------------------------------- report


def print_report(res: dict[str, Any]) -> None:
    p = print
    p(f"\nsessiond watcher benchmark; scratch on {res['disk']}")

    if "latency" in res:
        _print_latency(res["latency"])
    if "idle" in res:
        _print_idle(res["idle"])
    if "burst" in res:
        _print_burst(res["burst"])
    if "follow" in res:
        _print_follow(res["follow"], res.get("latency"))
    if "daemonIdle" in res:
        _print_daemon_idle(res["daemonIdle"], res.get("idle"))
    if "load" in res:
        _print_load(res["load"])


def _print_latency(lat: dict[str, Any]) -> None:
    p = print
    p(f"\n1. external append -> on_events latency ({lat['appends']} appends; poll: {lat['pollAppends']})")
    p(f"{'':<28}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'n':>6}{'p50 x':>7}{'p99 x':>7}")
    ref = lat["awatch"]
    rows = [("awatch, bare (reference)", ref), ("watcher, inotify", lat["inotify"])]
    rows.append((f"watcher, poll {lat['pollInterval']:g} s", lat["poll"]))
    for name, r in rows:
        if r is None:
            p(f"{name:<28}{'(unavailable)':>9}")
            continue
        x50 = ratio(r["p50Ms"], ref["p50Ms"]) if ref else "-"
        x99 = ratio(r["p99Ms"], ref["p99Ms"]) if ref else "-"
        p(f"{name:<28}{r['p50Ms']:>9.1f}{r['p99Ms']:>9.1f}{r['maxMs']:>9.1f}{r['n']:>6}{x50:>7}{x99:>7}")
    p("   x = row / bare awatch (same debounce=50, step=5, rust_timeout=1000); polling: an append waits")
    p(
        f"   for the next tick, so p50 ~ interval/2 and p99 ~ interval "
        f"({lat['pollInterval'] * 1e3:g} ms) by design"
    )
    ino = lat["inotify"]
    if ino is not None:
        verdict = "MET" if ino["p99Ms"] < GOAL_P99_MS else "NOT MET"
        p(f"   goal: inotify p99 < {GOAL_P99_MS:g} ms: {ino['p99Ms']:.1f} ms {verdict}")


def _print_idle(idle: dict[str, Any]) -> None:
    p = print
    p(
        f"\n2. idle CPU, {idle['files']} tracked files in {idle['dirs']} directories "
        "(CPU ms per wall s, all threads)"
    )
    p(f"{'':<22}{'CPU ms/s':>10}{'% core':>8}{'seconds':>9}{'batches':>9}{'vs inotify':>12}")
    base = idle["inotify"]["cpuMsPerSec"]
    for key, name in (
        ("none", "no watcher"),
        ("awatch", "awatch, bare (1 root)"),
        ("inotify", "watcher, inotify"),
        ("poll", "watcher, poll 0.25 s"),
    ):
        r = idle[key]
        if r is None:
            continue
        p(
            f"{name:<22}{r['cpuMsPerSec']:>10.2f}{r['cpuMsPerSec'] / 10:>8.2f}{r['wall']:>9.1f}"
            f"{r['batches']:>9}{ratio(r['cpuMsPerSec'], base):>12}"
        )
    p(
        f"   one full polling scan (stat {idle['files']} files, list {idle['dirs']} dirs): "
        f"{idle['scanMs']:.2f} ms; the same syscalls alone {idle['scanFloorMs']:.2f} ms "
        f"(x {ratio(idle['scanMs'], idle['scanFloorMs'])})"
    )


def _print_burst(rows: list[dict[str, Any]]) -> None:
    p = print
    p("\n3. burst: 20 files x 50 appends, one writer thread per file (1 ms apart)")
    p(f"{'mode':<10}{'write s':>9}{'events':>8}{'batches':>9}{'settle ms':>11}{'lost':>6}{'gaps':>6}")
    for r in rows:
        p(
            f"{r['mode']:<10}{r['writeSeconds']:>9.2f}{r['events']:>8}{r['batches']:>9}{r['settleMs']:>11.1f}"
            f"{r['lostFiles']:>6}{r['gaps']:>6}"
        )
    p("   settle = last write -> every final size reported; lost = files whose last reported size is")
    p("   not the final one; gaps = events whose previous_size is not the previous event's size")


def _print_follow(f: dict[str, Any], lat: dict[str, Any] | None) -> None:
    p = print
    p(
        f"\n4. through the daemon: an external append -> the session/update entries_appended "
        f"(external) for it, ~{f['rate']:g} lines/s"
    )
    p(
        f"{'':<30}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'n':>5}{'miss':>5}{'p50 x':>7}{'p99 x':>7}"
        f"{'CPU/line':>9}{'net':>7}{'idle':>6}"
    )
    ref = lat["inotify"] if lat else None
    if ref is not None:
        p(
            f"{'watcher alone, inotify (ref)':<30}{ref['p50Ms']:>8.1f}{ref['p99Ms']:>8.1f}"
            f"{ref['maxMs']:>8.1f}{ref['n']:>5}"
        )
    poll = f.get("storePollInterval")
    rows = [
        ("piRoot", "Pi session in Pi's root"),
        ("pi", "Pi session in sessiond's store" if not poll else f"Pi session, store (poll {poll:g} s)"),
        ("claude", "Claude transcript, 0.3 MiB"),
        ("claudeBig", "Claude transcript, 2.6 MiB"),
    ]
    rows += [(k, f"synthetic Claude, {v['mb']:g} MiB") for k, v in f.get("synthetic", {}).items()]
    for key, name in rows:
        r = f[key]
        x50 = ratio(r["p50Ms"], ref["p50Ms"]) if ref else "-"
        x99 = ratio(r["p99Ms"], ref["p99Ms"]) if ref else "-"
        p(
            f"{name:<30}{r['p50Ms']:>8.1f}{r['p99Ms']:>8.1f}{r['maxMs']:>8.1f}{r['n']:>5}{r['missing']:>5}"
            f"{x50:>7}{x99:>7}{r['cpuMsPerLine']:>9.2f}{r['netMsPerLine']:>7.2f}{r['idleMsPerSec']:>6.1f}"
        )
    pi, root, cc, big = f["pi"], f["piRoot"], f["claude"], f["claudeBig"]
    p(
        f"   Pi: {root['lines']} message lines ({root['bytes'] / 1024:.0f} KiB) appended to a session file "
        "in Pi's root (session/load),"
    )
    p(f"     {pi['lines']} ({pi['bytes'] / 1024:.0f} KiB) to one made by session/new in the daemon's store")
    if poll:
        p(
            f"   the daemon polls its own store every {poll:g} s ([watch] own_poll_interval, by design): "
            "p99 ~ interval;"
        )
        p("     the goal applies to the roots other agents write (inotify)")
    for r in (cc, big, *(f[k] for k in f.get("synthetic", {}))):
        p(
            f"   Claude: {r['source']}: the first {r['headLines']} lines ({r['startBytes'] / 1024:.0f} KiB) "
            f"loaded, then {r['lines']} more"
        )
        p(
            f"     ({r['bytes'] / 1024:.0f} KiB; {r['expected']} are chain entries and timed, the rest "
            "metadata or progress)"
        )
    p("   x = row / the watcher alone (section 1); CPU/line = daemon utime+stime (/proc/<pid>/stat) over")
    p("   the run / lines written, ms (the usage_update after each append included); net = the same from")
    p("   schedstat minus the daemon's idle CPU (idle, ms/s, measured just before); miss = chain entries")
    p("   never announced")
    for key, name in rows:
        r = f[key]
        if key == "pi" and poll:
            continue
        verdict = "MET" if r["p99Ms"] < GOAL_P99_MS else "NOT MET"
        extra = ""
        if r["notExternal"] or r["unknownIds"]:
            extra = f" (entries_appended not external: {r['notExternal']}, unknown ids: {r['unknownIds']})"
        p(f"   goal: {name}: p99 < {GOAL_P99_MS:g} ms: {r['p99Ms']:.1f} ms {verdict}{extra}")
    synth = f.get("synthetic", {})
    small, large = synth.get(_synth_key(0.3)), synth.get(_synth_key(50))
    if small is not None and large is not None:
        cpu, ref = f[_synth_key(50)]["netMsPerLine"], f[_synth_key(0.3)]["netMsPerLine"]
        verdict = "MET" if cpu <= GOAL_FOLLOW_CPU_MS and cpu <= GOAL_FOLLOW_FLAT * ref else "NOT MET"
        p(
            f"   goal: synthetic 50 MiB: daemon CPU per line <= {GOAL_FOLLOW_CPU_MS:g} ms and <= "
            f"{GOAL_FOLLOW_FLAT:g}x the 0.3 MiB figure: {cpu:.2f} ms ({ratio(cpu, ref)}x) {verdict}"
        )


def _print_daemon_idle(di: dict[str, Any], idle: dict[str, Any] | None) -> None:
    p = print
    for d in di["rows"]:
        p(
            f"\n5. idle daemon: {d['files']:,} session files ({d['bytes'] / MB:.1f} MiB) in {d['dirs']} cwd "
            f"dirs of its store, {d['on']['wall']:.1f} s, both daemons at once"
        )
        p(f"{'':<30}{'CPU ms/s':>10}{'% core':>8}{'wake/s':>8}{'threads':>9}{'x':>7}{'+ms/s':>8}")
        base = d["off"]["cpuMsPerSec"]
        for key, name in (("off", "[watch] enabled = false (ref)"), ("on", "watch enabled (defaults)")):
            r = d[key]
            p(
                f"{name:<30}{r['cpuMsPerSec']:>10.2f}{r['cpuMsPerSec'] / 10:>8.2f}{r['wakeupsPerSec']:>8.1f}"
                f"{r['threads']:>9}{ratio(r['cpuMsPerSec'], base):>7}{r['cpuMsPerSec'] - base:>8.2f}"
            )
        extra = ""
        if idle and idle.get("inotify"):
            extra = (
                f"; the watcher alone in this process (section 2): {idle['inotify']['cpuMsPerSec']:.2f} ms/s"
            )
        p(f"   x = row / the reference ('-' when it is 0), +ms/s = row - reference{extra}")
        if d.get("storePollInterval"):
            p(
                f"   defaults: the store is stat-polled every {d['storePollInterval']:g} s "
                "(own_poll_interval), Pi's and Claude's roots use inotify"
            )
        p("   CPU from /proc/<pid>/task/*/schedstat (ns resolution; /proc/<pid>/stat counts 10 ms ticks);")
        p("   wake/s = times the daemon's threads were put on a CPU (schedstat's run count)")
        parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(d["on"]["threadMsPerSec"].items()))
        p(f"   watch enabled, by thread (ms/s): {parts}")
        parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(d["on"]["threadWakeupsPerSec"].items()))
        p(f"   watch enabled, by thread (wake-ups/s): {parts}")


def _print_load(rows: list[dict[str, Any]]) -> None:
    p = print
    p("\n6. cold load of Claude Code transcripts: a fresh process per measurement (imports done first)")
    p(
        f"{'file / method':<34}{'time ms':>9}{'x':>7}{'peak MiB':>10}{'x':>7}{'kept MiB':>10}"
        f"{'peak/MiB':>10}{'records':>9}{'msgs':>7}"
    )
    for row in rows:
        p(f"{row['name']} {row['file']} ({row['bytes'] / MB:.1f} MiB, best of {row['runs']})")
        ref = row["orjson"]
        for m in LOAD_METHODS:
            r = row[m]
            msgs = str(r.get("messages", "-"))
            p(
                f"  {LOAD_NAMES[m]:<32}{r['seconds'] * 1e3:>9.0f}{ratio(r['seconds'], ref['seconds']):>7}"
                f"{r['peakBytes'] / MB:>10.1f}{ratio(r['peakBytes'], ref['peakBytes']):>7}"
                f"{r['retainedBytes'] / MB:>10.1f}{r['peakBytes'] / row['bytes']:>10.2f}"
                f"{r['records']:>9}{msgs:>7}"
            )
    p("   x = row / the orjson scan (read, split, orjson.loads every line, GC paused, all records kept);")
    p("   peak = VmHWM - VmRSS before the load (the peak reset through /proc/self/clear_refs); kept = RSS")
    p("   still held with the result alive; peak/MiB = peak MiB per MiB of transcript")


# --------------------------------------------------------------------------- main


def child(argv: list[str]) -> int:
    """A process of this benchmark: ``_load CFG`` (one cold load, measured in a fresh process)."""
    print(json.dumps(load_child(json.loads(argv[1]))))
    return 0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sections", default="1,2,3,4,5,6", help="which sections to run (default all)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the synthetic Claude transcript")
    ap.add_argument(
        "--follow-sizes",
        default=None,
        help="section 4: MiB of the synthetic Claude transcripts followed (default 0.3,10,50; quick 0.3,10)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    sections = {int(x) for x in args.sections.split(",") if x.strip()}
    args.appends = 100 if args.quick else 300
    args.poll_appends = 12 if args.quick else 48
    args.poll_interval = 0.25
    args.idle_seconds = 1.5 if args.quick else 10.0
    args.follow_appends = 40 if args.quick else 300
    args.store_appends = 20 if args.quick else 100
    args.follow_rate = 20.0
    args.claude_head = 12
    args.claude_lines = 40 if args.quick else None  # None: every remaining line
    args.claude_big_lines = 30 if args.quick else 100  # the last lines of the 2.6 MiB sample
    args.follow_idle = 0.5 if args.quick else 1.0  # daemon idle CPU measured before each case
    args.daemon_idle_seconds = 1.5 if args.quick else 10.0
    args.synthetic_mb = 10 if args.quick else 50
    args.follow_mb = [
        float(x) for x in (args.follow_sizes or ("0.3,10" if args.quick else "0.3,10,50")).split(",")
    ]
    args.synth_lines = 40 if args.quick else 150  # the last lines of each synthetic transcript, followed
    args.load_runs_small = 1 if args.quick else 3
    args.load_runs_large = 1

    scratch = Scratch(args.out / "watch-tmp")
    t0 = time.perf_counter()
    try:
        res: dict[str, Any] = {"quick": args.quick, "disk": scratch.disk()}
        if 1 in sections:
            log("1. latency")
            res["latency"] = bench_latency(scratch, args, log)
        if 2 in sections:
            log("2. idle CPU")
            res["idle"] = bench_idle(scratch, args, log)
        if 3 in sections:
            log("3. burst")
            res["burst"] = bench_burst(scratch, args, log)
        if 4 in sections:
            log("4. through the daemon")
            res["follow"] = bench_follow(scratch, args, log)
        if 5 in sections:
            log("5. idle daemon")
            res["daemonIdle"] = bench_daemon_idle(scratch, args, log)
        if 6 in sections:
            log("6. cold load")
            res["load"] = bench_load(scratch, args, log)
    finally:
        scratch.cleanup()
    res["totalSeconds"] = time.perf_counter() - t0
    return res


report = with_total(print_report)


G_WATCH_P99 = Goal(
    "watch-p99", 6, "external append → notification p99 under 50 ms", "<", GOAL_P99_MS, unit="ms"
)
G_FOLLOW_CPU = Goal(
    "follow-cpu-50mb",
    16,
    "daemon CPU per followed Claude Code line at 50 MB ≤ 2 ms",
    "<=",
    GOAL_FOLLOW_CPU_MS,
    unit="ms",
)
G_FOLLOW_FLAT = Goal(
    "follow-cpu-flat",
    16,
    "daemon CPU per followed line at 50 MB within 1.5× of the 0.3 MB figure",
    "<=",
    GOAL_FOLLOW_FLAT,
    on="ratio",
)
G_FOLLOW_P99 = Goal(
    "follow-p99-50mb",
    16,
    "external append → notification p99 < 50 ms at 50 MB",
    "<",
    GOAL_P99_MS,
    unit="ms",
)
BENCH = Bench(
    "watch",
    "benchmarks.watch",
    "watching files and following other writers",
    "bare watchfiles awatch; the watcher alone; a bare orjson line scan",
    {"smoke": ("--quick", "--sections", "6"), "quick": ("--quick",), "full": ()},
    (G_WATCH_P99, G_FOLLOW_CPU, G_FOLLOW_FLAT, G_FOLLOW_P99),
    quick="fewer appends, shorter idle windows, synthetic transcripts of 0.3 and 10 MiB (< 1 min)",
)
FOLLOW_CASES = {
    "piRoot": "Pi session in Pi's root",
    "pi": "session in the daemon's own store",
    "claude": "Claude Code transcript, 0.3 MiB",
    "claudeBig": "Claude Code transcript, 2.6 MiB",
}


def extract(d: dict[str, Any]) -> Extract:
    """The watcher against bare awatch, the daemon's following against the watcher alone."""
    e = Extract(notes=[f"scratch on {d.get('disk', '?')}"])
    lat = d.get("latency")
    if lat:
        e.add(
            "watcher: append → callback p50, inotify",
            lat["inotify"]["p50Ms"],
            "ms",
            "bare watchfiles awatch",
            lat["awatch"]["p50Ms"],
        )
        e.add(
            "watcher: append → callback p99, inotify",
            lat["inotify"]["p99Ms"],
            "ms",
            "bare watchfiles awatch",
            lat["awatch"]["p99Ms"],
        )
        e.add(
            "watcher: append → callback p50, polling",
            lat["poll"]["p50Ms"],
            "ms",
            "half the poll interval",
            lat["pollInterval"] * 500,
        )
    idle = d.get("idle")
    if idle:
        files = f"{idle['files']:,} files"
        e.add(
            f"idle CPU, {files}, inotify",
            idle["inotify"]["cpuMsPerSec"],
            "ms/s",
            "bare awatch",
            idle["awatch"]["cpuMsPerSec"],
        )
        e.add(
            f"idle CPU, {files}, polling",
            idle["poll"]["cpuMsPerSec"],
            "ms/s",
            "bare awatch",
            idle["awatch"]["cpuMsPerSec"],
        )
        e.add(
            f"one polling scan, {files}",
            idle["scanMs"],
            "ms",
            "the scan's syscalls alone",
            idle["scanFloorMs"],
        )
    for b in d.get("burst", []):
        e.add(
            f"burst settle time, {b['mode']} ({b['files']} files x {b['appendsPerFile']} appends)",
            b["settleMs"],
            "ms",
        )
        if b.get("lostFiles") or b.get("gaps"):
            e.mismatches.append(f"burst {b['mode']}: {b['lostFiles']} lost file sizes, {b['gaps']} gaps")
    follow = d.get("follow")
    if follow:
        for key, label in FOLLOW_CASES.items():
            c = follow.get(key)
            if not c:
                continue
            goal = None if key == "pi" and follow.get("storePollInterval") else G_WATCH_P99
            ref = "the watcher alone (inotify)" if lat else None
            e.add(
                f"external append → session/update p50, {label}",
                c["p50Ms"],
                "ms",
                ref,
                lat["inotify"]["p50Ms"] if lat else None,
            )
            e.add(
                f"external append → session/update p99, {label}",
                c["p99Ms"],
                "ms",
                ref,
                lat["inotify"]["p99Ms"] if lat else None,
                goal,
            )
            e.add(f"daemon CPU per followed line (net of idle), {label}", c["netMsPerLine"], "ms")
            if c.get("missing"):
                e.mismatches.append(f"{label}: {c['missing']} of {c['expected']} lines never notified")
        synth = follow.get("synthetic", {})
        small = follow.get(_synth_key(0.3))
        for key, meta in synth.items():
            c = follow[key]
            label = f"synthetic Claude Code transcript, {meta['mb']:g} MiB"
            big = meta["mb"] >= 50
            e.add(
                f"external append → session/update p99, {label}",
                c["p99Ms"],
                "ms",
                "the watcher alone (inotify)" if lat else None,
                lat["inotify"]["p99Ms"] if lat else None,
                G_FOLLOW_P99 if big else None,
            )
            e.add(
                f"daemon CPU per followed line (net of idle), {label}",
                c["netMsPerLine"],
                "ms",
                goal=(G_FOLLOW_CPU if big else None),
            )
            if big and small is not None:
                e.add(
                    f"daemon CPU per followed line, {label}, against 0.3 MiB",
                    c["netMsPerLine"],
                    "ms",
                    "the same, synthetic 0.3 MiB",
                    small["netMsPerLine"],
                    G_FOLLOW_FLAT,
                )
            if c.get("missing"):
                e.mismatches.append(f"{label}: {c['missing']} of {c['expected']} lines never notified")
        if _synth_key(50) not in synth:
            for goal in (G_FOLLOW_CPU, G_FOLLOW_FLAT, G_FOLLOW_P99):
                e.unmeasured[goal.key] = "the 50 MiB synthetic transcript is followed only in the full run"
        if follow.get("storePollInterval"):
            e.notes.append(
                f"the store row is polled every {follow['storePollInterval']} s (own_poll_interval); "
                "the 50 ms goal applies to the other rows"
            )
    else:
        for goal in (G_WATCH_P99, G_FOLLOW_CPU, G_FOLLOW_FLAT, G_FOLLOW_P99):
            e.unmeasured[goal.key] = "section 4 (through the daemon) not run in this mode"
    for di in (d.get("daemonIdle") or {}).get("rows", []):
        e.add(
            f"idle daemon CPU, {di['files']:,} stored sessions",
            di["on"]["cpuMsPerSec"],
            "ms/s",
            "[watch] enabled = false",
            di["off"]["cpuMsPerSec"],
        )
        e.add(
            f"idle daemon wake-ups, {di['files']:,} stored sessions",
            di["on"]["wakeupsPerSec"],
            "/s",
            "[watch] enabled = false",
            di["off"]["wakeupsPerSec"],
        )
    for r in d.get("load", []):
        name = f"{r['name']} ({r['bytes'] / MB:.1f} MiB)"
        o = r["orjson"]
        e.add(
            f"load_transcript + reconstruct, {name}",
            r["load"]["seconds"] * 1e3,
            "ms",
            "bare orjson line scan",
            o["seconds"] * 1e3,
        )
        e.add(
            f"ClaudeSession.open, {name}",
            r["open"]["seconds"] * 1e3,
            "ms",
            "bare orjson line scan",
            o["seconds"] * 1e3,
        )
        e.add(
            f"peak memory of ClaudeSession.open, {name}",
            r["open"]["peakBytes"] / MB,
            "MiB",
            "bare orjson line scan",
            o["peakBytes"] / MB,
        )
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
