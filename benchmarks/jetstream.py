"""The JetStream store against the local one (docs/scale-out.md), on a 3-node loopback cluster.

1. **append** — ``Session.append_message`` latency p50/p99 and throughput (one writer, in
   process): the local store (buffered) as the reference, JetStream with 1 and 3 replicas.
2. **cross-daemon notification** — two real daemons on the cluster; a client appends through
   daemon A, a subscriber of daemon B times the ``entries_appended`` (append request sent ->
   B's notification received), p50/p99, against the same subscriber on daemon A.
3. **file-history blobs** — back up a workspace (``FileHistory.track`` of every file: many
   small files and one big one), change every file, then rewind them all (plan, undo
   snapshot, execute) through a second history with an empty blob cache, as another daemon
   does; the local store (one directory: the rewind runs where the backups are) against the
   JetStream object store (R3: uploads, then downloads into the second cache).

4. **blob gc** — ``sessiond gc``'s plan on a stream of many sessions (a tenth of the messages
   snapshot lines naming blobs) and an object store holding referenced and unreferenced
   blobs: seconds, messages/s and MiB/s of the scan, against an ordered consumer reading the
   same stream without looking into the messages (runs alternated, medians).

Needs the ``nats`` extra (``scripts/bootstrap dev`` installs it). Run:
``.venv/bin/python -m benchmarks.jetstream [--quick] [--n N]``; ``run_all`` runs it like every
other benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import Bench, Extract, Scratch, main, pct
from sessiond.filehistory import INITIAL, Blobs, BlobStore, FileHistory, Workspace
from sessiond.store.backend import LocalStore, StoreBackend
from sessiond.store.jetstream.settings import JetStreamSettings
from sessiond.store.jetstream.store import JetStreamStore
from sessiond.store.journal import Durability
from tests.harness.daemon import start_daemon
from tests.harness.nats_cluster import Cluster


def message(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {i} " + "x" * 200, "timestamp": i}


BENCH = Bench(
    "jetstream",
    "benchmarks.jetstream",
    "the JetStream store on a 3-node loopback cluster",
    "the local store's append in the same process; a subscriber of the daemon the append went to",
    {"smoke": ("--n", "30"), "quick": ("--quick",), "full": ()},
    quick="150 appends per store, 100 notifications",
)


def bench_append(store: StoreBackend, directory: Path, n: int) -> dict[str, float]:
    session = store.create(
        directory, "/tmp/bench", session_id=None, parent_session=None, durability=Durability.BUFFERED
    )
    session.append_message(message(-1))  # the first flush
    times = []
    start = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        session.append_message(message(i))
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    session.close()
    return {"p50_ms": pct(times, 0.5) * 1e3, "p99_ms": pct(times, 0.99) * 1e3, "per_s": n / total}


async def bench_notify(cluster: Cluster, tmp: Path, n: int) -> dict[str, dict[str, float]]:
    def cfg(stream: str) -> str:
        urls = ", ".join(f'"{u}"' for u in cluster.urls)
        return (
            f'[store]\nbackend = "jetstream"\n[store.jetstream]\nservers = [{urls}]\n'
            f'stream = "{stream}"\nsubject_prefix = "b.{stream}"\nkv_bucket = "kv-{stream}"\n'
        )

    a = start_daemon(tmp / "a", config=cfg("NOTIFY"))
    b = start_daemon(tmp / "b", config=cfg("NOTIFY"))
    try:
        writer, sub_a, sub_b = await a.client(), await a.client(), await b.client()
        sid = (await writer.request("session/new", {"cwd": "/tmp/bench"}))["sessionId"]
        entry = {"type": "message", "message": message(0)}
        await writer.request("session/append", {"sessionId": sid, "entries": [entry]})
        for c in (sub_a, sub_b):
            await c.request("session/load", {"sessionId": sid, "subscribe": True})
        out: dict[str, list[float]] = {"same daemon": [], "other daemon": []}

        async def wait_for(client: Any, ids: list[str]) -> float:
            while True:
                method, params = await client.notification(timeout=30)
                if method == "session/update" and params["update"].get("entryIds") == ids:
                    return time.perf_counter()

        for _ in range(n):
            t0 = time.perf_counter()
            result = await writer.request("session/append", {"sessionId": sid, "entries": [entry]})
            ids = result["entryIds"]
            ta, tb = await asyncio.gather(wait_for(sub_a, ids), wait_for(sub_b, ids))
            out["same daemon"].append(ta - t0)
            out["other daemon"].append(tb - t0)
        return {k: {"p50_ms": pct(v, 0.5) * 1e3, "p99_ms": pct(v, 0.99) * 1e3} for k, v in out.items()}
    finally:
        a.stop()
        b.stop()


def workspace(root: Path, small: int, big_mb: int) -> list[str]:
    root.mkdir(parents=True)
    names = []
    for i in range(small):
        (root / f"f{i:03}.txt").write_bytes(os.urandom(8 * 1024).hex().encode())  # 16 KiB of text
        names.append(f"f{i:03}.txt")
    (root / "big.bin").write_bytes(os.urandom(big_mb << 20))
    return [*names, "big.bin"]


def bench_blobs(make: Callable[[str], Blobs], root: Path, small: int, big_mb: int) -> dict[str, float]:
    """Seconds to back up every file, and to rewind them all through a fresh history."""
    ws = root / "ws"
    names = workspace(ws, small, big_mb)
    size = sum((ws / n).stat().st_size for n in names)
    history = FileHistory(make("a"), Workspace(ws))
    t = time.perf_counter()
    snapshots = [history.track(n) for n in names]
    backup = time.perf_counter() - t
    for n in names:
        (ws / n).write_bytes(b"changed\n")
        snapshots.append(history.track(n, phase="after"))  # the agent's own write: no conflict
    other = FileHistory(make("b"), Workspace(ws))
    for data in snapshots:
        other.replay(data)
    t = time.perf_counter()
    plan = other.plan(INITIAL)
    other.undo_data(plan, "undo-bench")
    result, _ = other.execute(plan)
    rewind = time.perf_counter() - t
    assert all(f.status == "ok" for f in result.files), "the rewind did not restore every file"
    assert (ws / "big.bin").stat().st_size == big_mb << 20
    mb = size / (1 << 20)
    return {"files": len(names), "mb": mb, "backup_s": backup, "rewind_s": rewind}


def snapshot_line(i: int, shas: list[str]) -> bytes:
    files = {f"f{j}.txt": {"kind": "file", "blob": sha, "mode": 420, "size": 1} for j, sha in enumerate(shas)}
    entry = {
        "type": "custom",
        "customType": "sessiond.fileSnapshot",
        "id": f"{i:08x}",
        "data": {"messageId": "m", "kind": "update", "files": files},
    }
    return json.dumps(entry).encode() + b"\n"


def bench_gc(cluster: Cluster, sessions: int, per: int, objects: int) -> dict[str, float]:
    """The collector's plan (scan + object listing) against a bare read of the same stream."""
    from sessiond.store.jetstream import collect  # noqa: PLC0415
    from sessiond.store.jetstream.link import Link  # noqa: PLC0415

    settings = JetStreamSettings(
        servers=tuple(cluster.urls),
        stream="GCBENCH",
        subject_prefix="gcbench",
        kv_bucket="gcbench",
        object_bucket="gcbench",
        replicas=1,
    )
    Link(settings).close()  # the stream and buckets exist before the collector's link
    link = Link(settings)
    try:
        contents = [f"blob {i}".encode() for i in range(objects)]
        shas = [hashlib.sha256(c).hexdigest() for c in contents]
        named = shas[: objects // 2]
        plain = json.dumps({"type": "message", "id": "x", "message": {"role": "user", "content": "y" * 300}})

        async def fill() -> int:
            total = 0
            for s in range(sessions):
                acks = []
                for i in range(per):
                    if i % 10 == 9:
                        data = snapshot_line(i, named[(s * 3 + i) % len(named) :][:3])
                    else:
                        data = plain.encode() + b"\n"
                    total += len(data)
                    acks.append(await link.js.publish_async(f"gcbench.s{s}", data))
                await asyncio.gather(*acks)
            for content, sha in zip(contents, shas, strict=True):
                await link.objects.put(sha, content)
            return total

        size = link.call(fill(), None)

        async def bare() -> int:
            info = await link.js.stream_info("GCBENCH")
            sub = await link.js.subscribe("gcbench.>", ordered_consumer=True)
            read = 0
            try:
                while read < (info.state.messages or 0):
                    await sub.next_msg(timeout=30)
                    read += 1
            finally:
                await sub.unsubscribe()
            return read

        plans, reads = [], []
        for _ in range(3):
            t = time.perf_counter()
            plan = collect.plan(link, now=time.time() + collect.DEFAULT_GRACE + 60)
            plans.append(time.perf_counter() - t)
            t = time.perf_counter()
            assert link.call(bare(), None) == sessions * per
            reads.append(time.perf_counter() - t)
        assert plan.messages == sessions * per and len(plan.candidates) == objects - len(named)
        plans.sort()
        reads.sort()
        return {
            "messages": sessions * per,
            "sessions": sessions,
            "objects": objects,
            "mb": size / (1 << 20),
            "plan_s": plans[1],
            "plan_min_s": plans[0],
            "plan_max_s": plans[2],
            "read_s": reads[1],
            "read_min_s": reads[0],
            "read_max_s": reads[2],
        }
    finally:
        link.close()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--n", type=int, default=0, help="appends per store (default 500; quick 150)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = args.n or (150 if args.quick else 500)
    scratch = Scratch(Path(args.out) / "jetstream-tmp")
    try:
        tmp = scratch.root
        with Cluster.create(tmp / "nats") as cluster:
            rows = {"local (buffered)": bench_append(LocalStore(), tmp / "local", n)}
            for replicas in (1, 3):
                settings = JetStreamSettings(
                    servers=tuple(cluster.urls),
                    stream=f"BENCH{replicas}",
                    subject_prefix=f"bench{replicas}",
                    kv_bucket=f"bench{replicas}",
                    replicas=replicas,
                )
                store = JetStreamStore(settings, tmp / f"js{replicas}")
                try:
                    rows[f"jetstream R{replicas}"] = bench_append(store, tmp / f"js{replicas}", n)
                finally:
                    store.close()
            notify = asyncio.run(bench_notify(cluster, tmp, min(n, 200)))
            small, big_mb = (50, 8) if args.quick or n < 100 else (200, 32)
            local_blobs = tmp / "blobs-local"
            blobs = {"local": bench_blobs(lambda _: BlobStore(local_blobs), tmp / "bl", small, big_mb)}
            settings = JetStreamSettings(
                servers=tuple(cluster.urls), stream="BLOBS", subject_prefix="blobs", kv_bucket="blobs"
            )
            store = JetStreamStore(settings, tmp / "jsb")
            try:
                blobs["jetstream R3"] = bench_blobs(
                    lambda daemon: store.blobs(tmp / f"cache-{daemon}" / "s"), tmp / "bj", small, big_mb
                )
            finally:
                store.close()
            sessions, per = (20, 50) if n < 100 else (100, 100) if args.quick else (200, 250)
            gc = bench_gc(cluster, sessions, per, objects=200)
    finally:
        scratch.cleanup()
    return {
        "appends": n,
        "notifications": min(n, 200),
        "append": rows,
        "notify": notify,
        "blobs": blobs,
        "gc": gc,
    }


def report(res: dict[str, Any]) -> None:
    rows = res["append"]
    reference = rows["local (buffered)"]
    print(f"append, one writer, {res['appends']} appends")
    print(f"{'store':<18} {'p50 ms':>8} {'p99 ms':>8} {'appends/s':>10} {'x local p50':>12}")
    for name, r in rows.items():
        print(
            f"{name:<18} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['per_s']:10.0f}"
            f" {r['p50_ms'] / reference['p50_ms']:12.1f}"
        )
    print("\nnotification latency (append sent through daemon A -> entries_appended received), R3")
    for name, r in res["notify"].items():
        print(f"{name:<18} p50 {r['p50_ms']:7.2f} ms   p99 {r['p99_ms']:7.2f} ms")
    blobs = res.get("blobs")
    if blobs:
        first = next(iter(blobs.values()))
        print(
            f"\nfile history: back up {first['files']} files ({first['mb']:.1f} MiB), then rewind them all "
            "through a second history (JetStream: another daemon's empty cache)"
        )
        for name, r in blobs.items():
            print(
                f"{name:<18} backup {r['backup_s']:6.2f} s ({r['mb'] / r['backup_s']:6.1f} MiB/s)"
                f"   rewind {r['rewind_s']:6.2f} s ({r['mb'] / r['rewind_s']:6.1f} MiB/s)"
            )

    gc = res.get("gc")
    if gc:
        print(
            f"\nblob gc plan: {gc['messages']} messages of {gc['sessions']} sessions ({gc['mb']:.1f} MiB), "
            f"{gc['objects']} objects (median of 3, alternated with a bare read of the stream)"
        )
        print(
            f"{'plan':<18} {gc['plan_s']:6.2f} s ({gc['plan_min_s']:.2f}-{gc['plan_max_s']:.2f})"
            f"  {gc['messages'] / gc['plan_s']:8.0f} messages/s  {gc['mb'] / gc['plan_s']:6.1f} MiB/s"
        )
        print(
            f"{'bare read':<18} {gc['read_s']:6.2f} s ({gc['read_min_s']:.2f}-{gc['read_max_s']:.2f})"
            f"  {gc['messages'] / gc['read_s']:8.0f} messages/s"
            f"   x{gc['plan_s'] / gc['read_s']:.2f} for the plan"
        )


def extract(d: dict[str, Any]) -> Extract:
    """JetStream appends against the local store's; the other daemon's subscriber against the
    one on the daemon the append went to."""
    e = Extract(notes=[f"{d['appends']} appends per store, one writer, in process; R3 for notifications"])
    local = d["append"]["local (buffered)"]
    for name in ("jetstream R1", "jetstream R3"):
        row = d["append"][name]
        e.add(f"{name}: append p50", row["p50_ms"], "ms", "local store p50", local["p50_ms"])
        e.add(f"{name}: append p99", row["p99_ms"], "ms", "local store p99", local["p99_ms"])
        e.add(f"{name}: appends/s", row["per_s"], "/s", "local store", local["per_s"])
    same, other = d["notify"]["same daemon"], d["notify"]["other daemon"]
    e.add("append -> other daemon's subscriber p50", other["p50_ms"], "ms", "same daemon's", same["p50_ms"])
    e.add("append -> other daemon's subscriber p99", other["p99_ms"], "ms", "same daemon's", same["p99_ms"])
    blobs = d.get("blobs")
    if blobs:
        local, shared = blobs["local"], blobs["jetstream R3"]
        e.add("file history R3: backup", shared["backup_s"], "s", "local store", local["backup_s"])
        e.add(
            "file history R3: rewind on another daemon",
            shared["rewind_s"],
            "s",
            "local store",
            local["rewind_s"],
        )
        e.notes.append(f"file history: {local['files']} files, {local['mb']:.1f} MiB")
    gc = d.get("gc")
    if gc:
        e.add("blob gc plan", gc["plan_s"], "s", "a bare read of the stream", gc["read_s"])
        e.notes.append(
            f"blob gc: {gc['messages']} messages, {gc['sessions']} sessions, {gc['objects']} objects"
        )
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
