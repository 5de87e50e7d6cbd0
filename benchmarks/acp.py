"""``sessiond acp``: the latency and CPU the proxy adds to each relayed ACP message.

An editor in this process and a minimal ACP agent (this module's ``_agent`` worker: it answers
``initialize`` and ``session/new``, and each ``session/prompt`` with one
``agent_message_chunk`` update and the answer). Prompt round trips (three relayed messages:
the request, the update, the answer; two on the critical path), p50/p99 over ``--samples``,
straight to the agent (the reference, a direct pipe) and through ``sessiond acp`` relaying
only (``--no-record``) and recording through a daemon, interleaved round trip by round trip so
all see the same load. The added latency per relayed message is (through the proxy - direct) / 2; the
CPU per message is the proxy process's CPU time over the messages it relayed. Measuring starts
once the recording proxy's session is in the daemon (its connection is open, the client
imported) and after a warm-up of :data:`WARM_UP` round trips per path: the figures are the
steady state, not the proxy's start.

Run: ``.venv/bin/python -m benchmarks.acp [--quick] [--json] [--samples N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    OUT_DIR,
    Bench,
    Daemon,
    Extract,
    Goal,
    Scratch,
    log,
    main,
    pct,
    process_cpu_seconds,
)

BENCH = Bench(
    "acp",
    "benchmarks.acp",
    "sessiond acp: latency and CPU added per relayed ACP message",
    "the same round trips straight to the agent (a direct pipe)",
    {"smoke": ("--samples", "50"), "quick": ("--quick",), "full": ()},
    goals=(
        Goal(
            "added p99 per message (relay only)",
            31,
            "added latency per relayed message ≤ 1 ms p99",
            "<=",
            1.0,
            unit="ms",
        ),
        Goal(
            "added p99 per message (recording)",
            31,
            "added latency per relayed message ≤ 1 ms p99, recording through the daemon",
            "<=",
            1.0,
            unit="ms",
        ),
    ),
    quick="500 round trips per path",
)
AGENT = [sys.executable, "-m", "benchmarks.acp", "_agent"]
WARM_UP = 100
"""Round trips per path before measuring."""
RECORDED_TIMEOUT = 60.0
"""At most this long to wait for the recording proxy's session to reach the daemon."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--samples", type=int, default=0, help="round trips per path (default 3000, quick 500)"
    )


def child(argv: list[str]) -> int:
    """The scripted agent: NDJSON on stdio, as little work per message as possible."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None or method is None:
            continue
        result: dict[str, Any] = {}
        if method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {},
                "agentInfo": {"name": "bench-agent", "version": "1"},
            }
        elif method == "session/new":
            result = {"sessionId": "bench-acp-session"}
        elif method == "session/prompt":
            sid = msg["params"]["sessionId"]
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok " * 20}}
            note = {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": sid, "update": update},
            }
            out.write(json.dumps(note).encode() + b"\n")
            result = {"stopReason": "end_turn"}
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
        out.flush()
    return 0


class Path_:
    """One way to the agent: its process, the editor's pipes, the next request id."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ids = iter(range(1, 1 << 30))
        self.relayed = 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        rid = next(self.ids)
        self.proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"
        )
        await self.proc.stdin.drain()
        self.relayed += 1
        while True:
            msg = json.loads(await self.proc.stdout.readline())
            self.relayed += 1
            if msg.get("id") == rid and "method" not in msg:
                return msg  # type: ignore[no-any-return]

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


async def _open(argv: list[str], env: dict[str, str] | None) -> tuple[Path_, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 24
    )
    path = Path_(proc)
    await path.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = await path.call("session/new", {"cwd": "/bench/acp", "mcpServers": []})
    return path, new["result"]["sessionId"]


async def _recorded(daemon: Daemon, sid: str) -> None:
    """Until the daemon has the session the recording proxy started (bounded)."""
    from sessiond_client import Client, RpcError  # noqa: PLC0415

    client = await Client.connect_unix(daemon.socket)
    try:
        await client.initialize("benchmarks.acp")
        deadline = time.monotonic() + RECORDED_TIMEOUT
        while time.monotonic() < deadline:
            try:
                await client.request("session/entries", {"sessionId": sid, "limit": 1})
                return
            except RpcError:  # not there yet
                await asyncio.sleep(0.05)
        raise RuntimeError(f"the recording proxy's session {sid} did not reach the daemon")
    finally:
        await client.close()


async def _prompts_recorded(daemon: Daemon, sid: str, want: int) -> int:
    """How many prompts of the session the daemon holds, once it holds ``want`` (or after
    :data:`RECORDED_TIMEOUT`)."""
    from sessiond_client import Client  # noqa: PLC0415

    client = await Client.connect_unix(daemon.socket)
    try:
        await client.initialize("benchmarks.acp")
        deadline = time.monotonic() + RECORDED_TIMEOUT
        while True:
            count, offset = 0, 0
            while True:
                page = await client.request(
                    "session/entries", {"sessionId": sid, "offset": offset, "limit": 1000}
                )
                count += sum(1 for e in page["entries"] if e.get("customType") == "acp.prompt")
                if not page["entries"] or not isinstance(page.get("nextOffset"), int):
                    break
                offset = page["nextOffset"]
            if count >= want or time.monotonic() > deadline:
                return count
            await asyncio.sleep(0.2)
    finally:
        await client.close()


async def _measure(daemon: Daemon, samples: int) -> dict[str, Any]:
    proxy = [sys.executable, "-m", "sessiond", "acp", "--socket", str(daemon.socket), "--no-start"]
    env = {k: v for k, v in daemon.env.items() if isinstance(v, str)}
    paths = {
        "direct": await _open(AGENT, env),
        "relay": await _open([*proxy, "--no-record", "--", *AGENT], env),
        "recording": await _open([*proxy, "--", *AGENT], env),
    }
    await _recorded(daemon, paths["recording"][1])
    prompt = [{"type": "text", "text": "go"}]
    for p, sid in paths.values():
        for _ in range(WARM_UP):
            await p.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    times: dict[str, list[float]] = {name: [] for name in paths}
    cpu_before = {name: process_cpu_seconds(p.proc.pid) for name, (p, _) in paths.items()}
    relayed_before = {name: p.relayed for name, (p, _) in paths.items()}
    for _ in range(samples):  # one round trip per path in turn: all three see the same load
        for name, (p, sid) in paths.items():
            start = time.perf_counter()
            await p.call("session/prompt", {"sessionId": sid, "prompt": prompt})
            times[name].append((time.perf_counter() - start) * 1000)
    # The recording is complete (every prompt in the daemon) before the proxy's CPU is read: a
    # faster proxy that dropped or postponed records would not count.
    sent = WARM_UP + samples
    recorded = await _prompts_recorded(daemon, paths["recording"][1], sent)
    if recorded != sent:
        raise RuntimeError(f"the recording proxy recorded {recorded} of {sent} prompts")
    results: dict[str, Any] = {"paths": {}, "promptsRecorded": recorded}
    for name, (p, _) in paths.items():
        cpu = process_cpu_seconds(p.proc.pid) - cpu_before[name]
        messages = p.relayed - relayed_before[name]
        results["paths"][name] = {
            "p50": pct(times[name], 0.5),
            "p99": pct(times[name], 0.99),
            "n": len(times[name]),
            "cpuUsPerMessage": cpu / messages * 1e6 if name != "direct" else None,
        }
        await p.close()
    direct = results["paths"]["direct"]
    for name in ("relay", "recording"):
        r = results["paths"][name]
        r["addedP50PerMessage"] = (r["p50"] - direct["p50"]) / 2
        r["addedP99PerMessage"] = (r["p99"] - direct["p99"]) / 2
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    samples = args.samples or (500 if args.quick else 3000)
    scratch = Scratch(Path(args.out or OUT_DIR) / "acp-tmp")
    try:
        daemon = Daemon(scratch.new_dir("daemon"))
        with daemon.start():
            log(f"{samples} prompt round trips per path")
            results = asyncio.run(_measure(daemon, samples))
    finally:
        scratch.cleanup()
    results["samples"] = samples
    return results


def report(results: dict[str, Any]) -> None:
    print(f"{results['samples']} prompt round trips per path (3 relayed messages each)")
    print(f"{'path':<10} {'p50':>8} {'p99':>8} {'added/msg p50':>14} {'added/msg p99':>14} {'CPU/msg':>10}")
    for name, r in results["paths"].items():
        added50 = f"{r['addedP50PerMessage']:.3f}ms" if "addedP50PerMessage" in r else "—"
        added99 = f"{r['addedP99PerMessage']:.3f}ms" if "addedP99PerMessage" in r else "—"
        cpu = f"{r['cpuUsPerMessage']:.0f}µs" if r["cpuUsPerMessage"] is not None else "—"
        print(f"{name:<10} {r['p50']:>6.3f}ms {r['p99']:>6.3f}ms {added50:>14} {added99:>14} {cpu:>10}")


def extract(results: dict[str, Any]) -> Extract:
    out = Extract()
    direct = results["paths"]["direct"]
    for name, label in (("relay", "relay only"), ("recording", "recording")):
        r = results["paths"][name]
        out.add(
            f"added p50 per message ({label})",
            r["addedP50PerMessage"],
            "ms",
            "direct pipe round trip p50",
            direct["p50"],
        )
        goal = BENCH.goals[0] if name == "relay" else BENCH.goals[1]
        out.add(
            f"added p99 per message ({label})",
            r["addedP99PerMessage"],
            "ms",
            "direct pipe round trip p99",
            direct["p99"],
            goal=goal,
        )
        out.add(f"CPU per message ({label})", r["cpuUsPerMessage"], "µs")
    return out


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
