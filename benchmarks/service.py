#!/usr/bin/env python3
"""The service layer's own cost on the append path, in-process, against the store in the same run.

``benchmarks/rpc.py`` measures an append end to end through a daemon; on a shared machine its
per-append CPU swings by a third between identical runs, more than anything the service adds.
This measures the service alone, with no socket and no daemon, in interleaved rounds so that a
busy neighbour slows the reference and the measured run alike:

1. **append** - ``Service.append`` of one ~300-byte message (a fake peer; the result made into
   the JSON object sent and encoded, as the RPC layer does) against ``Session.append_message``
   of the same message on a session of the same size: CPU per append (``time.process_time``),
   p50/p99 latency, and ``overhead`` = what the service adds per append (host lookup, publishing,
   the after-append compaction checks, the typed result). ``subscribed`` repeats it with one
   subscriber (``entries_appended`` and ``usage_update`` published on every append).
2. **result** - the typed ``AppendResult`` (``model_construct``) and ``wire()`` against the plain
   dict the service answered with before results were typed, per call.

Run: ``.venv/bin/python -m benchmarks.service [--quick] [--rounds N] [--appends N] [--json]``.
Scratch stores go to ``benchmarks/out/service-tmp/`` (``--out``; removed at the end).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import timeit
from pathlib import Path
from typing import Any

from benchmarks.harness import Bench, Extract, Scratch, main, pct
from sessiond.model.js_json import dumps
from sessiond.service.config import load_config
from sessiond.service.results import wire
from sessiond.service.service import Service
from sessiond.store.session import Session
from sessiond_protocol import methods as M

BENCH = Bench(
    "service",
    "benchmarks.service",
    "the service layer's own cost per append, in-process",
    "Session.append_message in the same rounds; the plain dict an append used to answer with",
    {"smoke": ("--rounds", "1", "--appends", "200"), "quick": ("--quick",), "full": ()},
    quick="3 rounds of 1,000 appends",
)
CWD = "/bench/service"


class Peer:
    """The fake connection: it takes updates and drops them (a socket's work is not measured)."""

    def __init__(self, ident: int) -> None:
        self.id = ident
        self.summarizer = False
        self.updates = 0

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.updates += 1

    def log_message(self, level: int, message: str) -> None:
        pass

    async def request_client(self, method: str, params: Any) -> Any:
        raise ConnectionError("not a summarizer")


def messages(n: int) -> list[dict[str, Any]]:
    """Alternating user / assistant messages of ~300 bytes of JSON, as rpc.py sends them."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i % 2 == 0:
            out.append(
                {"role": "user", "content": [{"type": "text", "text": f"question {i} " * 12}], "timestamp": i}
            )
        else:
            out.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"answer {i} " * 12}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30},
                    "stopReason": "stop",
                    "timestamp": i,
                }
            )
    return out


def reference_round(base: Path, batch: list[dict[str, Any]]) -> tuple[float, list[float]]:
    """``Session.append_message`` of the batch: CPU seconds and per-append latencies."""
    session = Session.create(base / "ref", CWD)
    latencies = []
    cpu = time.process_time()
    for m in batch:
        t = time.perf_counter()
        session.append_message(m)
        latencies.append(time.perf_counter() - t)
    cpu = time.process_time() - cpu
    session.close()
    return cpu, latencies


async def service_round(
    base: Path, batch: list[dict[str, Any]], subscribed: bool
) -> tuple[float, list[float]]:
    """``Service.append`` of the batch, each result sent as the RPC layer sends it."""
    service = Service(load_config({}, root=base / "store", socket=base / "s.sock"))
    writer = Peer(1)
    session_id = (await service.new_session(writer, CWD)).sessionId
    if subscribed:
        await service.load(Peer(2), session_id, subscribe=True)
    latencies = []
    cpu = time.process_time()
    for n, m in enumerate(batch):
        t = time.perf_counter()
        result = await service.append(writer, session_id, [{"type": "message", "message": m}])
        dumps({"jsonrpc": "2.0", "id": n, "result": wire(result)})
        latencies.append(time.perf_counter() - t)
    cpu = time.process_time() - cpu
    service.close_all()
    return cpu, latencies


def append_rows(scratch: Scratch, rounds: int, appends: int) -> dict[str, Any]:
    batch = messages(appends)
    cpu: dict[str, list[float]] = {"reference": [], "service": [], "subscribed": []}
    lat: dict[str, list[float]] = {k: [] for k in cpu}
    for _ in range(rounds):  # interleaved: a busy neighbour slows all three alike
        c, ls = reference_round(scratch.new_dir("ref"), batch)
        cpu["reference"].append(c / appends)
        lat["reference"] += ls
        for name, subscribed in (("service", False), ("subscribed", True)):
            c, ls = asyncio.run(service_round(scratch.new_dir(name), batch, subscribed))
            cpu[name].append(c / appends)
            lat[name] += ls
    rows = {}
    ref_cpu = statistics.median(cpu["reference"])
    for name, per_round in cpu.items():
        mine = statistics.median(per_round)
        rows[name] = {
            "cpuUs": mine * 1e6,
            "p50Us": pct(lat[name], 0.5) * 1e6,
            "p99Us": pct(lat[name], 0.99) * 1e6,
            "overheadUs": (mine - ref_cpu) * 1e6,
            "ratio": mine / ref_cpu if ref_cpu else float("nan"),
        }
    return rows


def result_rows(number: int) -> dict[str, Any]:
    ids = ["0f3e9a1c"]
    as_dict = min(timeit.repeat(lambda: {"entryIds": ids, "leafId": ids[-1]}, number=number, repeat=5))
    typed = min(
        timeit.repeat(
            lambda: M.AppendResult.model_construct(entryIds=ids, leafId=ids[-1]), number=number, repeat=5
        )
    )
    made = M.AppendResult.model_construct(entryIds=ids, leafId=ids[-1])
    sent = min(timeit.repeat(lambda: wire(made), number=number, repeat=5))
    return {
        "dictUs": as_dict / number * 1e6,
        "modelConstructUs": typed / number * 1e6,
        "wireUs": sent / number * 1e6,
        "addedUs": (typed + sent - as_dict) / number * 1e6,
    }


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7; quick 3)")
    ap.add_argument("--appends", type=int, default=None, help="appends per round (default 3000; quick 1000)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    rounds = args.rounds or (3 if args.quick else 7)
    appends = args.appends or (1000 if args.quick else 3000)
    scratch = Scratch(Path(args.out) / "service-tmp")
    try:
        return {
            "rounds": rounds,
            "appends": appends,
            "loadAverage": os.getloadavg()[0],
            "append": append_rows(scratch, rounds, appends),
            "result": result_rows(20_000 if args.quick else 100_000),
        }
    finally:
        scratch.cleanup()


def report(res: dict[str, Any]) -> None:
    rounds, appends, load = res["rounds"], res["appends"], res["loadAverage"]
    print(f"service benchmark: {rounds} interleaved rounds of {appends} appends, load average {load:.1f}")
    print("\n1. append: CPU per append (median of rounds) and latency, against Session.append_message")
    print(f"{'':12} {'cpu us':>8} {'p50 us':>8} {'p99 us':>8} {'overhead us':>12} {'x ref':>6}")
    for name, row in res["append"].items():
        print(
            f"{name:12} {row['cpuUs']:8.1f} {row['p50Us']:8.1f} {row['p99Us']:8.1f} "
            f"{row['overheadUs']:12.1f} {row['ratio']:6.2f}"
        )
    r = res["result"]
    print("\n2. result: AppendResult per call (best of 5)")
    print(
        f"   dict {r['dictUs']:.2f} us; model_construct {r['modelConstructUs']:.2f} us"
        f" + wire {r['wireUs']:.2f} us = {r['addedUs']:.2f} us more than the dict"
    )


def extract(d: dict[str, Any]) -> Extract:
    """Service.append against the store's append; the typed result against the dict."""
    e = Extract(notes=[f"{d['rounds']} interleaved rounds of {d['appends']} appends, in-process"])
    ref = d["append"]["reference"]["cpuUs"]
    labels = (("service", "Service.append, CPU per append"), ("subscribed", "... with a subscriber"))
    for name, label in labels:
        e.add(label, d["append"][name]["cpuUs"], "us", "Session.append_message", ref)
    r = d["result"]
    typed = r["modelConstructUs"] + r["wireUs"]
    e.add("AppendResult: model_construct + wire", typed, "us", "a dict", r["dictUs"])
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
