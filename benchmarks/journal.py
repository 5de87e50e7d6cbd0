"""The store's write path and open path, against bare ``os.write`` / ``fdatasync`` on the same disk.

Sections (every ratio is against a reference measured in the same run):

1. **append, one writer** - ``Session.append_message`` latency p50/p99 and throughput in
   ``buffered`` and ``fsync`` mode, against a bare loop writing the *same line bytes* to an
   ``O_APPEND`` descriptor (``os.write``; ``os.write`` + ``os.fdatasync`` per line for fsync).
2. **fsync, concurrent writers** - 1, 8 and 32 threads appending to the *same* session in
   ``fsync`` mode (group commit: appends waiting together share one ``fdatasync``), against as
   many threads doing ``os.write`` + ``os.fdatasync`` each on one shared descriptor (no group
   commit). ``gain`` = session throughput / reference throughput.
3. **append vs file size** - append latency on a 1 MB and a 50 MB session (must be flat).
4. **open** - ``Session.open`` (the light index) vs ``load_session`` (every entry parsed and
   held), each in a fresh process: time, resident memory after open above the post-import
   baseline, per MB of file (goal: well under 1 MB per MB).
5. **context after one append** on the 50 MB session: ``context()`` right after an
   ``append_message`` (bodies cached) vs the first ``context()`` after open vs a full
   ``load_session`` + tree + projection of the same file.
6. **light index per entry** - what an open session keeps per entry, measured with
   ``tracemalloc`` (Python's allocations, after a collection) in a fresh process, on a session of
   25,000 short messages (the shape of the soak's watched Pi session, ~480 bytes a line),
   against ``load_session`` of the same file; and, untraced, what must not get slower with it:
   ``Session.open``, ``tree_view`` (``tree/get``), ``get`` of an entry by id, the branch, and an
   append. ``SESSIOND_INDEX_PYTHONPATH`` runs the child on another checkout (a before/after).

Run: ``.venv/bin/python -m benchmarks.journal [--quick] [--runs N] [--json]``. Scratch files go to
``benchmarks/out/journal-tmp/`` (same disk as the repo; removed at the end); the 1/10/50 MB
sessions are the cached ones of ``benchmarks.pi_sessions``. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Bench, Extract, Goal, Scratch, log, main, pct, summary, with_total
from benchmarks.pi_sessions import ensure_session
from sessiond.formats.pi import encode_line, load_session
from sessiond.model import entries as E
from sessiond.model.projection import project
from sessiond.model.tree import SessionTree
from sessiond.store import journal as journal_module
from sessiond.store.journal import Durability
from sessiond.store.session import Session

MB = 1 << 20
GENERATOR_SEED = 1


G_JOURNAL_FLAT = Goal(
    "journal-flat",
    3,
    "append latency at 1 MB vs 50 MB file size must be flat",
    "<=",
    1.5,
    "ratio",
    reading="run_all reads 'flat' as: p50 on the largest file ≤ 1.5x p50 on the smallest",
)
G_JOURNAL_RSS = Goal(
    "journal-rss",
    3,
    "memory after open well under the file size (50 MB session)",
    "<",
    0.5,
    unit="MB/MB",
    reading="'well under' as the journal benchmark judges it: < 0.5 MB of RSS per MB of file",
)
BENCH = Bench(
    "journal",
    "benchmarks.journal",
    "the store's append and open paths",
    "bare os.write / os.fdatasync loops on the same disk; load_session",
    {"smoke": ("--quick", "--sizes", "1,2", "--index-entries", "2500"), "quick": ("--quick",), "full": ()},
    (G_JOURNAL_FLAT, G_JOURNAL_RSS),
    quick="1 and 10 MB sessions, fewer appends, 1 run",
)


# --------------------------------------------------------------------------- workload


def _messages(n: int, seed: int) -> list[dict[str, Any]]:
    """Alternating user prompts (100-400 B) and assistant replies (0.5-3 KB), like a chat."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(500)]

    def text(lo: int, hi: int) -> str:
        size = rng.randint(lo, hi)
        out = " ".join(rng.choices(words, k=size // 5 + 1))
        return out[:size]

    msgs: list[dict[str, Any]] = []
    for i in range(n):
        if i % 2 == 0:
            msgs.append(
                {"role": "user", "content": [{"type": "text", "text": text(100, 400)}], "timestamp": i}
            )
        else:
            msgs.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text(500, 3000)}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": {
                        "input": 1000 + i,
                        "output": 200,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 1200 + i,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                    "stopReason": "stop",
                    "timestamp": i,
                }
            )
    return msgs


def _median_of_runs(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


# --------------------------------------------------------------------------- 1. one writer


def _session_appends(
    scratch: Scratch, msgs: list[dict[str, Any]], mode: Any
) -> tuple[dict[str, float], list[bytes]]:

    session = Session.create(scratch.new_dir("append"), "/bench", durability=mode)
    session.append_message(msgs[0])  # the first append creates the file: not timed
    samples: list[float] = []
    perf = time.perf_counter
    gc.collect()
    t0 = perf()
    for m in msgs[1:]:
        a = perf()
        session.append_message(m)
        samples.append(perf() - a)
    wall = perf() - t0
    path = session.path
    session.close()
    lines = path.read_bytes().splitlines(keepends=True)[2:]  # the bytes the timed appends wrote
    return summary(samples, wall), lines


def _bare_appends(scratch: Scratch, lines: list[bytes], sync: bool) -> dict[str, float]:
    path = scratch.new_dir("bare") / "bare.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    write, fdatasync, perf = os.write, os.fdatasync, time.perf_counter
    samples: list[float] = []
    try:
        write(fd, b'{"type":"session"}\n')
        gc.collect()
        t0 = perf()
        for line in lines:
            a = perf()
            write(fd, line)
            if sync:
                fdatasync(fd)
            samples.append(perf() - a)
        wall = perf() - t0
    finally:
        os.close(fd)
    return summary(samples, wall)


def bench_single(
    scratch: Scratch, args: argparse.Namespace, log: Callable[[str], None]
) -> list[dict[str, Any]]:

    rows = []
    for mode, n in ((Durability.BUFFERED, args.buffered_appends), (Durability.FSYNC, args.fsync_appends)):
        msgs = _messages(n + 1, 11)
        sess_runs, ref_runs = [], []
        line_bytes = 0
        for _ in range(args.runs):
            s, lines = _session_appends(scratch, msgs, mode)
            r = _bare_appends(scratch, lines, sync=mode is Durability.FSYNC)
            sess_runs.append(s)
            ref_runs.append(r)
            line_bytes = sum(len(x) for x in lines) // max(1, len(lines))
        s, r = _median_of_runs(sess_runs), _median_of_runs(ref_runs)
        rows.append({"mode": mode.value, "lineBytes": line_bytes, "session": s, "reference": r})
        log(f"  append {mode.value}: p50 {s['p50Us']:.0f} us vs {r['p50Us']:.0f} us bare")
    return rows


# --------------------------------------------------------------------------- 2. concurrent fsync


def _threads(n: int, work: Callable[[int], list[float]]) -> tuple[list[float], float]:
    barrier = threading.Barrier(n + 1)
    results: list[list[float]] = [[] for _ in range(n)]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return [x for r in results for x in r], wall


class _CountingOs:
    """Counts ``fdatasync`` calls of the journal (a separate, untimed pass)."""

    def __init__(self) -> None:
        self.syncs = 0

    def fdatasync(self, fd: int) -> None:
        self.syncs += 1
        os.fdatasync(fd)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def _concurrent_session(
    scratch: Scratch, writers: int, per_writer: int, msgs: list[dict[str, Any]], count: bool = False
) -> tuple[dict[str, float], int]:

    session = Session.create(scratch.new_dir(f"conc{writers}"), "/bench", durability=Durability.FSYNC)
    session.append_message(msgs[0])
    counter = _CountingOs()
    if count:
        setattr(journal_module, "os", counter)  # noqa: B010 (a module attribute, not typed as such)
    perf = time.perf_counter

    def work(i: int) -> list[float]:
        samples = []
        for k in range(per_writer):
            m = msgs[(i * per_writer + k) % len(msgs)]
            a = perf()
            session.append_message(m)
            samples.append(perf() - a)
        return samples

    try:
        samples, wall = _threads(writers, work)
    finally:
        setattr(journal_module, "os", os)  # noqa: B010
        session.close()
    return summary(samples, wall), counter.syncs


def _concurrent_session_own_sync(
    scratch: Scratch, writers: int, per_writer: int, msgs: list[dict[str, Any]]
) -> dict[str, float]:
    """The same session code without group commit: a buffered append, then its own ``fdatasync``."""

    session = Session.create(scratch.new_dir(f"own{writers}"), "/bench", durability=Durability.BUFFERED)
    session.append_message(msgs[0])
    fd = os.open(session.path, os.O_RDONLY | os.O_CLOEXEC)  # fdatasync flushes the inode, any fd
    perf = time.perf_counter

    def work(i: int) -> list[float]:
        samples = []
        for k in range(per_writer):
            m = msgs[(i * per_writer + k) % len(msgs)]
            a = perf()
            session.append_message(m)
            os.fdatasync(fd)
            samples.append(perf() - a)
        return samples

    try:
        samples, wall = _threads(writers, work)
    finally:
        os.close(fd)
        session.close()
    return summary(samples, wall)


def _concurrent_bare(scratch: Scratch, writers: int, per_writer: int, lines: list[bytes]) -> dict[str, float]:
    path = scratch.new_dir(f"bare{writers}") / "bare.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    os.write(fd, b'{"type":"session"}\n')
    os.fdatasync(fd)
    perf = time.perf_counter

    def work(i: int) -> list[float]:
        samples = []
        for k in range(per_writer):
            line = lines[(i * per_writer + k) % len(lines)]
            a = perf()
            os.write(fd, line)
            os.fdatasync(fd)
            samples.append(perf() - a)
        return samples

    try:
        samples, wall = _threads(writers, work)
    finally:
        os.close(fd)
    return summary(samples, wall)


def bench_concurrent(
    scratch: Scratch, args: argparse.Namespace, log: Callable[[str], None]
) -> list[dict[str, Any]]:

    total = args.concurrent_appends
    msgs = _messages(total + 1, 22)
    lines = [
        encode_line(E.new_message(f"{i:08x}", None, "2026-01-01T00:00:00.000Z", m))
        for i, m in enumerate(msgs)
    ]
    rows = []
    for writers in (1, 8, 32):
        per_writer = max(1, total // writers)
        sess_runs, own_runs, ref_runs = [], [], []
        for _ in range(args.runs):  # interleaved: drift hits all three alike
            sess_runs.append(_concurrent_session(scratch, writers, per_writer, msgs)[0])
            own_runs.append(_concurrent_session_own_sync(scratch, writers, per_writer, msgs))
            ref_runs.append(_concurrent_bare(scratch, writers, per_writer, lines))
        syncs = statistics.median(
            _concurrent_session(scratch, writers, per_writer, msgs, count=True)[1] for _ in range(args.runs)
        )
        s, o, r = _median_of_runs(sess_runs), _median_of_runs(own_runs), _median_of_runs(ref_runs)
        rows.append(
            {
                "writers": writers,
                "appends": per_writer * writers,
                "appendsPerSync": per_writer * writers / max(1, syncs),
                "session": s,
                "ownSync": o,
                "reference": r,
            }
        )
        log(
            f"  fsync x{writers}: {s['perSec']:.0f}/s, own sync {o['perSec']:.0f}/s, bare {r['perSec']:.0f}/s"
        )
    return rows


# --------------------------------------------------------------------------- 3. latency vs size


def bench_size(
    scratch: Scratch, args: argparse.Namespace, files: dict[float, Path], log: Callable[[str], None]
) -> list[dict[str, Any]]:

    small, large = min(files), max(files)
    rows = []
    for mode, n in (
        (Durability.BUFFERED, args.buffered_appends // 2),
        (Durability.FSYNC, args.fsync_appends // 2),
    ):
        msgs = _messages(n, 33)
        per_size: dict[float, list[dict[str, float]]] = {small: [], large: []}
        for _ in range(args.runs):
            for size in (small, large):
                copy = scratch.new_dir(f"size{size:g}") / files[size].name
                shutil.copyfile(files[size], copy)
                session = Session.open(copy, durability=mode)
                if mode is Durability.FSYNC:
                    os.sync()  # the copy itself must not be what the first fdatasync pays for
                perf = time.perf_counter
                samples = []
                gc.collect()
                t0 = perf()
                for m in msgs:
                    a = perf()
                    session.append_message(m)
                    samples.append(perf() - a)
                wall = perf() - t0
                session.close()
                copy.unlink()
                per_size[size].append(summary(samples, wall))
        row: dict[str, Any] = {"mode": mode.value, "smallMB": small, "largeMB": large}
        row["small"] = _median_of_runs(per_size[small])
        row["large"] = _median_of_runs(per_size[large])
        rows.append(row)
        small_p50, large_p50 = row["small"]["p50Us"], row["large"]["p50Us"]
        log(f"  {mode.value}: p50 {small_p50:.0f} us @ {small:g} MB, {large_p50:.0f} us @ {large:g} MB")
    return rows


# --------------------------------------------------------------------------- 4. open, RSS

# VmRSS is the current resident set (not a peak, so nothing is inherited from the parent);
# VmHWM is the peak of this process's address space, which execve() starts afresh (unlike
# ru_maxrss, see README). Baseline = after the imports and a gc.
OPEN_CHILD = r"""
import gc, json, sys, time
def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out
from sessiond.formats.pi import load_session
from sessiond.store.session import Session
method, path = sys.argv[1], sys.argv[2]
gc.collect()
base = status()
t0 = time.perf_counter()
if method == "session":
    held = Session.open(path)
    entries = held.entry_count
else:
    held = load_session(path)
    entries = len(held.entries)
t1 = time.perf_counter()
gc.collect()
after = status()
print(json.dumps({"openMs": (t1 - t0) * 1e3, "entries": entries, "baseKB": base["VmRSS"],
                  "rssKB": after["VmRSS"], "hwmKB": after["VmHWM"], "baseHwmKB": base["VmHWM"]}))
"""


def _open_child(method: str, path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", OPEN_CHILD, method, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"open child ({method}) failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench_open(
    args: argparse.Namespace, files: dict[float, Path], log: Callable[[str], None]
) -> list[dict[str, Any]]:
    rows = []
    for size, path in sorted(files.items()):
        path.read_bytes()  # warm the page cache: every method reads from memory
        file_mb = path.stat().st_size / MB
        row: dict[str, Any] = {"sizeMB": size, "fileMB": file_mb}
        runs: dict[str, list[dict[str, Any]]] = {"session": [], "load": []}
        for _ in range(args.runs):
            for method in ("session", "load"):  # interleaved: drift hits both alike
                runs[method].append(_open_child(method, path))
        for method, rs in runs.items():
            row[method] = {
                "openMs": min(r["openMs"] for r in rs),
                "rssMB": statistics.median((r["rssKB"] - r["baseKB"]) / 1024 for r in rs),
                "peakMB": statistics.median((max(r["hwmKB"], r["baseKB"]) - r["baseKB"]) / 1024 for r in rs),
                "entries": rs[0]["entries"],
            }
            row[method]["rssPerMB"] = row[method]["rssMB"] / file_mb
            row[method]["peakPerMB"] = row[method]["peakMB"] / file_mb
        rows.append(row)
        s, ld = row["session"], row["load"]
        log(
            f"  open {size:g} MB: Session.open {s['openMs']:.0f} ms / {s['rssMB']:.1f} MB, "
            f"load_session {ld['openMs']:.0f} ms / {ld['rssMB']:.1f} MB"
        )
    return rows


# --------------------------------------------------------------------------- 5. context


def bench_context(
    scratch: Scratch, args: argparse.Namespace, path: Path, size: float, log: Callable[[str], None]
) -> dict[str, Any]:

    perf = time.perf_counter
    cold, warm, full, contexts = [], [], [], 0
    msgs = _messages(2 * args.context_appends, 44)
    for run in range(args.runs):
        copy = scratch.new_dir("context") / path.name
        shutil.copyfile(path, copy)
        session = Session.open(copy)
        gc.collect()
        a = perf()
        ctx = session.context()
        cold.append(perf() - a)
        contexts = len(ctx.messages)
        for i in range(args.context_appends):
            session.append_message(msgs[(run + i) % len(msgs)])
            a = perf()
            session.context()
            warm.append(perf() - a)
        session.close()
        copy.unlink()
        gc.collect()
        a = perf()
        loaded = load_session(path)
        tree = SessionTree(loaded.entries)
        projection = project(tree.context_path())
        full.append(perf() - a)
        del loaded, tree
        assert len(projection.messages) == contexts, "the full loader sees another context"
    result = {
        "sizeMB": size,
        "contextMessages": contexts,
        "afterAppendMs": statistics.median(warm) * 1e3,
        "afterAppendP99Ms": pct(warm, 0.99) * 1e3,
        "coldMs": statistics.median(cold) * 1e3,
        "fullLoadMs": statistics.median(full) * 1e3,
    }
    warm_ms, cold_ms = result["afterAppendMs"], result["coldMs"]
    log(f"  context {size:g} MB: {warm_ms:.2f} ms after append, {cold_ms:.1f} ms cold")
    return result


# --------------------------------------------------------------------------- 6. light index

INDEX_ENTRIES = 25_000
INDEX_CHILD = r"""
import gc, json, sys, time, tracemalloc
from sessiond.formats.pi import load_session
from sessiond.model.tree import SessionTree
from sessiond.store.session import Session
path, copy = sys.argv[1], sys.argv[2]
perf = time.perf_counter
def traced(make):
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    held = make()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return held, size
session, index_bytes = traced(lambda: Session.open(path, read_only="bench"))
n = session.entry_count
ids = [e["id"] for e in session.tree.entries]
session.close()
del session
loaded, load_bytes = traced(lambda: load_session(path))
del loaded
def best(fn, runs=3):
    out = []
    for _ in range(runs):
        gc.collect()
        a = perf()
        fn()
        out.append(perf() - a)
    return min(out)
open_s = best(lambda: Session.open(path, read_only="bench"))
session = Session.open(path, read_only="bench")
tree_s = best(lambda: session.tree_view())
step = max(1, n // 1000)
get_s = best(lambda: [session.tree.get(i) for i in ids[::step]]) / len(ids[::step])
branch_s = best(lambda: session.branch_ids())
session = Session.open(copy)
msg = {"role": "user", "content": [{"type": "text", "text": "x" * 300}], "timestamp": 1}
samples = []
for _ in range(300):
    a = perf()
    session.append_message(msg)
    samples.append(perf() - a)
session.close()
samples.sort()
print(json.dumps({"entries": n, "indexBytes": index_bytes, "loadBytes": load_bytes,
                  "openMs": open_s * 1e3, "treeViewMs": tree_s * 1e3, "getUs": get_s * 1e6,
                  "branchMs": branch_s * 1e3, "appendP50Us": samples[len(samples) // 2] * 1e6}))
"""


def _index_session(path: Path, n: int) -> None:
    """``n`` Pi messages of the soak's watched session: one chain, user and assistant in turn."""
    rng = random.Random(7)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "that",
        "for",
        "it",
        "as",
        "with",
        "was",
        "on",
        "be",
        "at",
        "by",
        "this",
        "had",
        "not",
        "are",
        "but",
    ]
    header = {
        "type": "session",
        "version": 3,
        "id": "0192f000-0000-7000-8000-000000000025",
        "timestamp": "2026-12-03T00:00:00.000Z",
        "cwd": "/work/soak",
    }
    lines = [encode_line(header)]
    parent: str | None = None
    for i in range(1, n + 1):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(10, 50)))
        ts = 1_790_000_000_000 + i * 97
        message: dict[str, Any]
        if i % 2:
            message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
        else:
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 1200, "output": 80, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1280},
                "stopReason": "stop",
                "timestamp": ts,
            }
        eid = f"{rng.getrandbits(32):08x}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts / 1000)) + f".{ts % 1000:03d}Z"
        entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": message}
        lines.append(encode_line(entry))
        parent = eid
    path.write_bytes(b"".join(lines))


def bench_index(scratch: Scratch, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    directory = scratch.new_dir("index")
    path = directory / "watched.jsonl"
    _index_session(path, args.index_entries)
    env = dict(os.environ)
    other = os.environ.get("SESSIOND_INDEX_PYTHONPATH")
    env["PYTHONPATH"] = other if other else str(REPO)
    runs = []
    for run in range(args.runs):
        copy = directory / f"copy{run}.jsonl"
        shutil.copyfile(path, copy)
        proc = subprocess.run(
            [sys.executable, "-c", INDEX_CHILD, str(path), str(copy)],
            capture_output=True,
            text=True,
            cwd=other or REPO,
            env=env,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"index child failed:\n{proc.stderr[-2000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    n = runs[0]["entries"]
    res: dict[str, Any] = {"entries": n, "fileBytesPerEntry": path.stat().st_size / n, "checkout": other}
    for name in ("openMs", "treeViewMs", "getUs", "branchMs", "appendP50Us"):
        res[name] = min(r[name] for r in runs)
    res["indexBytesPerEntry"] = statistics.median(r["indexBytes"] for r in runs) / n
    res["loadBytesPerEntry"] = statistics.median(r["loadBytes"] for r in runs) / n
    log(
        f"  light index: {res['indexBytesPerEntry']:.0f} B/entry (load_session "
        f"{res['loadBytesPerEntry']:.0f}), open {res['openMs']:.0f} ms, tree_view {res['treeViewMs']:.0f} ms"
    )
    return res


# --------------------------------------------------------------------------- output


def _r(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def print_report(res: dict[str, Any]) -> None:
    p = print
    if "single" not in res:  # --index-only
        _print_index(p, res["index"])
        return
    p(f"\nsessiond journal benchmark - {res['runs']} run(s), median of runs; scratch on {res['disk']}")
    p("\n1. append, one writer (same line bytes as the reference)")
    p(
        f"{'mode':<10}{'line B':>8}{'p50 us':>9}{'p99 us':>9}{'appends/s':>11}{'ref p50':>9}{'ref p99':>9}"
        f"{'ref /s':>10}{'p50 x':>7}{'p99 x':>7}{'thru x':>8}"
    )
    for row in res["single"]:
        s, r = row["session"], row["reference"]
        p(
            f"{row['mode']:<10}{row['lineBytes']:>8}{s['p50Us']:>9.1f}{s['p99Us']:>9.1f}{s['perSec']:>11.0f}"
            f"{r['p50Us']:>9.1f}{r['p99Us']:>9.1f}{r['perSec']:>10.0f}{_r(s['p50Us'], r['p50Us']):>7}"
            f"{_r(s['p99Us'], r['p99Us']):>7}{_r(s['perSec'], r['perSec']):>8}"
        )
    p("   ref = bare os.write (buffered) / os.write + os.fdatasync (fsync) loop; x = session / ref")

    p("\n2. fsync, N writer threads on one session (group commit)")
    p(f"{'':>7}{'--- session, fsync mode ---':>38}{'- own fdatasync -':>27}{'--- bare ---':>27}")
    p(
        f"{'writers':>7}{'p50 us':>9}{'p99 us':>9}{'appends/s':>11}{'per sync':>9}{'p50 us':>9}{'p99 us':>9}"
        f"{'/s':>9}{'p50 us':>9}{'p99 us':>9}{'/s':>9}{'vs 1':>7}{'gain':>7}{'vs bare':>8}"
    )
    base = res["concurrent"][0]["session"]["perSec"] if res["concurrent"] else 0
    for row in res["concurrent"]:
        s, o, r = row["session"], row["ownSync"], row["reference"]
        p(
            f"{row['writers']:>7}{s['p50Us']:>9.0f}{s['p99Us']:>9.0f}{s['perSec']:>11.0f}{row['appendsPerSync']:>9.1f}"
            f"{o['p50Us']:>9.0f}{o['p99Us']:>9.0f}{o['perSec']:>9.0f}"
            f"{r['p50Us']:>9.0f}{r['p99Us']:>9.0f}{r['perSec']:>9.0f}{_r(s['perSec'], base):>7}"
            f"{_r(s['perSec'], o['perSec']):>7}{_r(s['perSec'], r['perSec']):>8}"
        )
    p("   per sync = appends acknowledged per fdatasync (separate counting passes); vs 1 = appends/s against")
    p("   one session writer; own fdatasync = the same session, buffered append + its own fdatasync per")
    p("   append (no group commit); gain = session / own fdatasync; bare = N threads os.write +")
    p("   os.fdatasync each on one shared fd (the kernel may batch concurrent syncs itself); vs bare =")
    p("   session / bare")

    p("\n3. append latency vs file size (must be flat)")
    p(
        f"{'mode':<10}{'small':>7}{'p50 us':>9}{'p99 us':>9}{'large':>7}{'p50 us':>9}{'p99 us':>9}"
        f"{'p50 x':>7}{'p99 x':>7}"
    )
    for row in res["size"]:
        s, lg = row["small"], row["large"]
        p(
            f"{row['mode']:<10}{row['smallMB']:>5g}MB{s['p50Us']:>9.1f}{s['p99Us']:>9.1f}{row['largeMB']:>5g}MB"
            f"{lg['p50Us']:>9.1f}{lg['p99Us']:>9.1f}"
            f"{_r(lg['p50Us'], s['p50Us']):>7}{_r(lg['p99Us'], s['p99Us']):>7}"
        )
    p("   x = large / small")

    p("\n4. open (fresh process each; RSS = VmRSS after open - after imports; per MB of file)")
    p(
        f"{'size':>6}{'entries':>9}{'open ms':>9}{'RSS MB':>8}{'RSS/MB':>8}{'peak/MB':>8}"
        f"{'load ms':>9}{'RSS MB':>8}{'RSS/MB':>8}{'peak/MB':>8}{'time x':>8}{'RSS x':>7}"
    )
    for row in res["open"]:
        s, ld = row["session"], row["load"]
        p(
            f"{row['sizeMB']:>4g}MB{s['entries']:>9}{s['openMs']:>9.0f}{s['rssMB']:>8.1f}{s['rssPerMB']:>8.2f}"
            f"{s['peakPerMB']:>8.2f}{ld['openMs']:>9.0f}{ld['rssMB']:>8.1f}{ld['rssPerMB']:>8.2f}{ld['peakPerMB']:>8.2f}"
            f"{_r(s['openMs'], ld['openMs']):>8}{_r(s['rssMB'], ld['rssMB']):>7}"
        )
    p("   left: Session.open (light index); right: load_session (every entry held);")
    p("   x = Session.open / load_session")
    big = res["open"][-1]["session"] if res["open"] else None
    if big is not None:
        verdict = "MET" if big["rssPerMB"] < 0.5 else "NOT MET"
        p(
            f"   goal: memory after open well under the file size (< 0.5 MB/MB) on the largest: "
            f"{big['rssPerMB']:.2f} MB/MB {verdict}"
        )

    c = res["context"]
    _print_context(p, c)
    if "index" in res:
        _print_index(p, res["index"])


def _print_index(p: Callable[[str], None], x: dict[str, Any]) -> None:
    where = f" (checkout {x['checkout']})" if x.get("checkout") else ""
    size = f"{x['entries']:,} entries of ~{x['fileBytesPerEntry']:.0f} B"
    p(f"\n6. light index of an open session, {size}{where}")
    p(
        f"{'held per entry (tracemalloc)':<34}{x['indexBytesPerEntry']:>9.0f} B    "
        f"load_session {x['loadBytesPerEntry']:.0f} B, "
        f"ratio {_r(x['indexBytesPerEntry'], x['loadBytesPerEntry'])}"
    )
    p(f"{'Session.open':<34}{x['openMs']:>9.1f} ms")
    p(f"{'tree_view (tree/get)':<34}{x['treeViewMs']:>9.1f} ms")
    p(f"{'tree.get(id)':<34}{x['getUs']:>9.2f} us")
    p(f"{'branch ids (whole chain)':<34}{x['branchMs']:>9.1f} ms")
    p(f"{'append p50 (buffered)':<34}{x['appendP50Us']:>9.1f} us")


def _print_context(p: Callable[[str], None], c: dict[str, Any]) -> None:
    p(f"\n5. context() on the {c['sizeMB']:g} MB session ({c['contextMessages']} context messages)")
    p(f"{'after one append':<34}{c['afterAppendMs']:>9.2f} ms   (p99 {c['afterAppendP99Ms']:.2f} ms)")
    p(
        f"{'first context() after open (cold)':<34}{c['coldMs']:>9.2f} ms   "
        f"after-append / cold = {_r(c['afterAppendMs'], c['coldMs'])}"
    )
    p(
        f"{'load_session + tree + projection':<34}{c['fullLoadMs']:>9.2f} ms   "
        f"after-append / full = {_r(c['afterAppendMs'], c['fullLoadMs'])}"
    )


# --------------------------------------------------------------------------- main


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--runs", type=int, default=None, help="repetitions per measurement (default 3, quick 1)")
    ap.add_argument("--index-only", action="store_true", help="only section 6, the light index per entry")
    ap.add_argument(
        "--index-entries",
        type=int,
        default=INDEX_ENTRIES,
        help=f"entries of section 6's session (default {INDEX_ENTRIES:,}; the smoke run's 2,500)",
    )
    ap.add_argument(
        "--sizes",
        help="session sizes in MB, comma-separated (default 1,10,50; quick 1,10); the smoke run's 1,2",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.runs is None:
        args.runs = 1 if args.quick else 3
    args.runs = max(1, args.runs)
    sizes = (
        [float(x) for x in args.sizes.split(",")]
        if args.sizes
        else [1.0, 10.0]
        if args.quick
        else [1.0, 10.0, 50.0]
    )
    args.buffered_appends = 1000 if args.quick else 10_000
    args.fsync_appends = 200 if args.quick else 2000
    args.concurrent_appends = 320 if args.quick else 3200
    args.context_appends = 10 if args.quick else 30

    scratch = Scratch(args.out / "journal-tmp")
    t0 = time.perf_counter()
    if getattr(args, "index_only", False):
        try:
            log("6. light index")
            res0: dict[str, Any] = {"runs": args.runs, "quick": args.quick, "disk": scratch.disk()}
            res0["index"] = bench_index(scratch, args, log)
        finally:
            scratch.cleanup()
        res0["totalSeconds"] = time.perf_counter() - t0
        return res0
    files = {s: ensure_session(args.out, s, GENERATOR_SEED, log)[0] for s in sizes}
    try:
        res: dict[str, Any] = {
            "runs": args.runs,
            "quick": args.quick,
            "disk": scratch.disk(),
        }
        log("1. append, one writer")
        res["single"] = bench_single(scratch, args, log)
        log("2. fsync, concurrent writers")
        res["concurrent"] = bench_concurrent(scratch, args, log)
        log("3. append vs file size")
        res["size"] = bench_size(
            scratch, args, {min(sizes): files[min(sizes)], max(sizes): files[max(sizes)]}, log
        )
        log("4. open")
        res["open"] = bench_open(args, files, log)
        log("5. context")
        res["context"] = bench_context(scratch, args, files[max(sizes)], max(sizes), log)
        log("6. light index")
        res["index"] = bench_index(scratch, args, log)
    finally:
        scratch.cleanup()
    res["totalSeconds"] = time.perf_counter() - t0
    return res


report = with_total(print_report)


def extract(d: dict[str, Any]) -> Extract:
    """Appends against bare os.write / fdatasync, open against load_session."""
    e = Extract(notes=[f"scratch on {d.get('disk', '?')}; median of {d['runs']} run(s)"])
    if "single" not in d:  # --index-only
        d = {**d, "single": [], "concurrent": [], "size": [], "open": [], "context": None}
    bare = {"buffered": "bare os.write", "fsync": "bare os.write + fdatasync"}
    for r in d["single"]:
        mode, s, ref = r["mode"], r["session"], r["reference"]
        e.add(f"append p50, {mode}", s["p50Us"], "us", bare[mode], ref["p50Us"])
        e.add(f"append p99, {mode}", s["p99Us"], "us", bare[mode], ref["p99Us"])
        e.add(f"appends/s, one writer, {mode}", s["perSec"], "/s", bare[mode], ref["perSec"])
    for r in d["concurrent"]:
        w, s = r["writers"], r["session"]
        e.add(
            f"fsync appends/s, {w} writer(s)",
            s["perSec"],
            "/s",
            f"{w} bare write+fdatasync thread(s)",
            r["reference"]["perSec"],
        )
        e.add(
            f"fsync appends/s, {w} writer(s)",
            s["perSec"],
            "/s",
            "own fdatasync per append (no group commit)",
            r["ownSync"]["perSec"],
        )
        e.add(f"appends per fdatasync, {w} writer(s)", r["appendsPerSync"], "appends")
    for r in d["size"]:
        mode = r["mode"]
        small, large = f"{r['smallMB']:g} MB", f"{r['largeMB']:g} MB"
        e.add(
            f"append p50 at {large}, {mode}",
            r["large"]["p50Us"],
            "us",
            f"append p50 at {small}",
            r["small"]["p50Us"],
            G_JOURNAL_FLAT,
        )
        e.add(
            f"append p99 at {large}, {mode}",
            r["large"]["p99Us"],
            "us",
            f"append p99 at {small}",
            r["small"]["p99Us"],
        )
    largest = max(d["open"], key=lambda r: r["sizeMB"]) if d["open"] else None
    for r in d["open"]:
        size, s, ld = f"{r['sizeMB']:g} MB", r["session"], r["load"]
        e.add(f"Session.open, {size}", s["openMs"], "ms", "load_session (every entry parsed)", ld["openMs"])
        goal = G_JOURNAL_RSS if r is largest else None
        e.add(
            f"RSS after open per MB of file, {size}",
            s["rssPerMB"],
            "MB/MB",
            "load_session",
            ld["rssPerMB"],
            goal,
        )
    c = d["context"]
    if c is not None:
        size = f"{c['sizeMB']:g} MB"
        e.add(
            f"context() after one append, {size}",
            c["afterAppendMs"],
            "ms",
            "first context() after open",
            c["coldMs"],
        )
        e.add(
            f"context() after one append, {size}",
            c["afterAppendMs"],
            "ms",
            "load_session + tree + project",
            c["fullLoadMs"],
        )
    x = d.get("index")
    if x is not None:
        e.add(
            f"light index per entry, {x['entries']:,} entries",
            x["indexBytesPerEntry"],
            "B",
            "load_session (every entry parsed)",
            x["loadBytesPerEntry"],
        )
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
