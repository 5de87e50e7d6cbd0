"""The JetStream store against the local one (docs/scale-out.md), on a 3-node loopback cluster.

1. **append** — ``Session.append_message`` latency p50/p99 and throughput (one writer, in
   process): the local store (buffered) as the reference, JetStream with 1 and 3 replicas.
2. **cross-daemon notification** — two real daemons on the cluster; a client appends through
   daemon A, a subscriber of daemon B times the ``entries_appended`` (append request sent ->
   B's notification received), p50/p99, against the same subscriber on daemon A.

Needs the ``nats`` extra. Run: ``.venv/bin/python -m benchmarks.jetstream [--n N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from sessiond.store.backend import LocalStore, StoreBackend
from sessiond.store.jetstream.settings import JetStreamSettings
from sessiond.store.jetstream.store import JetStreamStore
from sessiond.store.journal import Durability
from tests.harness.daemon import start_daemon
from tests.harness.nats_cluster import Cluster


def message(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {i} " + "x" * 200, "timestamp": i}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sessiond-bench-js-"))
    with Cluster.create(tmp / "nats") as cluster:
        rows = {"local (buffered)": bench_append(LocalStore(), tmp / "local", args.n)}
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
                rows[f"jetstream R{replicas}"] = bench_append(store, tmp / f"js{replicas}", args.n)
            finally:
                store.close()
        reference = rows["local (buffered)"]
        print(f"append, one writer, {args.n} appends")
        print(f"{'store':<18} {'p50 ms':>8} {'p99 ms':>8} {'appends/s':>10} {'x local p50':>12}")
        for name, r in rows.items():
            print(
                f"{name:<18} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['per_s']:10.0f}"
                f" {r['p50_ms'] / reference['p50_ms']:12.1f}"
            )
        notify = asyncio.run(bench_notify(cluster, tmp, min(args.n, 200)))
        print("\nnotification latency (append sent through daemon A -> entries_appended received), R3")
        for name, r in notify.items():
            print(f"{name:<18} p50 {r['p50_ms']:7.2f} ms   p99 {r['p99_ms']:7.2f} ms")


if __name__ == "__main__":
    main()
