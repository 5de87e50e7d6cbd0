"""``sessiond mcp``: what an agent waits for a tool, against the daemon request under it.

A daemon (``python -m sessiond serve``) on a scratch store of generated Pi sessions (``--sessions``,
each ``--turns`` user/assistant turns with tool calls and results), then ``sessiond mcp`` spawned
by the MCP SDK's own stdio client, exactly as an agent spawns it. For each tool, round trips
p50/p99 over ``--samples`` calls, beside the reference measured in the same run: the daemon
request the tool is built on, sent straight to the daemon's socket by a client in this process
(``context/get`` for ``read_session``, ``search/query`` for ``search_sessions``, ``session/list``
for ``list_sessions``). The ratio is the price of the MCP layer: the SDK's framing and
validation, the second process hop, and rendering the text within the budget.

Run: ``.venv/bin/python -m benchmarks.mcp [--quick] [--json] [--samples N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import OUT_DIR, Bench, Daemon, Extract, Scratch, log, main, pct
from tests.builders import Ledger

BENCH = Bench(
    "mcp",
    "benchmarks.mcp",
    "sessiond mcp: tool round trips through the MCP SDK's stdio client",
    "the daemon request each tool is built on, sent straight to the socket",
    {"smoke": ("--samples", "10", "--quick"), "quick": ("--quick",), "full": ()},
    quick="50 sessions, 60 calls per tool",
)
WORDS = [
    *("parser", "refactor", "cookie", "session", "token", "compaction", "budget", "schema"),
    *("migrate", "index", "retry", "socket", "watcher", "branch", "summary", "checkpoint"),
    *("rewind", "diff", "handler", "config", "deploy", "cache"),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sessions", type=int, default=0, help="sessions in the store (default 300, quick 50)"
    )
    parser.add_argument("--turns", type=int, default=40, help="turns per session")
    parser.add_argument("--samples", type=int, default=0, help="calls per tool (default 200, quick 60)")


def _store(daemon: Daemon, sessions: int, turns: int) -> None:
    directory = daemon.store / "sessions" / "--bench-mcp--"
    directory.mkdir(parents=True, exist_ok=True)
    for s in range(sessions):
        ledger = Ledger(f"bench-mcp-{s:04d}", "/bench/mcp")
        for t in range(turns):
            word = WORDS[(s * 7 + t) % len(WORDS)]
            ledger.user(f"turn {t}: please look at the {word} code in module_{s}_{t}.py and fix it")
            ledger.assistant(
                f"The {word} handling in module_{s}_{t}.py had an off-by-one; fixed and tested. " * 3
            )
        (directory / f"2026-01-01T00-00-00-000Z_bench-mcp-{s:04d}.jsonl").write_bytes(ledger.jsonl())


async def _timed(call: Callable[[], Awaitable[Any]], samples: int) -> list[float]:
    out: list[float] = []
    for _ in range(samples):
        start = time.perf_counter()
        await call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _ms(samples: list[float]) -> dict[str, float] | None:
    if not samples:
        return None
    return {"p50": pct(samples, 0.5), "p99": pct(samples, 0.99), "n": len(samples)}


async def _measure(daemon: Daemon, samples: int, sessions: int) -> dict[str, Any]:
    from mcp import Client as McpClient  # noqa: PLC0415
    from mcp.client.stdio import StdioServerParameters  # noqa: PLC0415

    from sessiond_client import Client, RpcError  # noqa: PLC0415

    sessiond = Path(sys.executable).parent / "sessiond"
    params = StdioServerParameters(
        command=str(sessiond),
        args=["mcp", "--store", str(daemon.store), "--socket", str(daemon.socket), "--no-start"],
        env={k: v for k, v in daemon.env.items() if isinstance(v, str)},
    )
    direct = await Client.connect_unix(daemon.socket)
    await direct.initialize("bench-mcp")
    ids = [f"bench-mcp-{i:04d}" for i in range(sessions)]
    turn = iter(range(1 << 30))

    def sid() -> str:
        return ids[next(turn) % len(ids)]

    has_search = True
    try:
        await direct.request("search/query", {"query": "cookie", "limit": 10})
    except RpcError:
        has_search = False
    results: dict[str, Any] = {"tools": {}}
    async with McpClient(params) as mcp:

        async def tool(name: str, args: dict[str, Any]) -> None:
            result = await mcp.call_tool(name, args)
            if result.is_error:
                raise SystemExit(f"{name} failed: {result.content}")

        cases: list[tuple[str, Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]] = [
            (
                "read_session",
                lambda: tool("read_session", {"id": sid(), "budget": 4000}),
                lambda: direct.request("context/get", {"sessionId": sid()}),
            ),
            (
                "list_sessions",
                lambda: tool("list_sessions", {"all_projects": True, "limit": 20}),
                lambda: direct.request("session/list", {"limit": 50}),
            ),
        ]
        if has_search:
            cases.append(
                (
                    "search_sessions",
                    lambda: tool("search_sessions", {"query": WORDS[next(turn) % len(WORDS)], "limit": 10}),
                    lambda: direct.request(
                        "search/query", {"query": WORDS[next(turn) % len(WORDS)], "limit": 10}
                    ),
                )
            )
        for name, through_mcp, straight in cases:
            log(f"{name}: {samples} calls through MCP, {samples} straight to the daemon")
            await through_mcp()  # warm: first open of the sessions, the SDK's first call
            await straight()
            mcp_ms: list[float] = []
            ref_ms: list[float] = []
            for _ in range(samples // 10 or 1):  # interleaved rounds: the same load on both
                mcp_ms += await _timed(through_mcp, 10)
                ref_ms += await _timed(straight, 10)
            results["tools"][name] = {"mcp": _ms(mcp_ms), "reference": _ms(ref_ms)}
        if not has_search:
            results["notes"] = ["search_sessions not measured: this daemon has no search/query"]
    await direct.close()
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    sessions = args.sessions or (50 if args.quick else 300)
    samples = args.samples or (60 if args.quick else 200)
    scratch = Scratch(Path(args.out or OUT_DIR) / "mcp-tmp")
    try:
        daemon = Daemon(scratch.new_dir("daemon"))
        log(f"generating {sessions} sessions of {args.turns} turns")
        _store(daemon, sessions, args.turns)
        with daemon.start():
            results = asyncio.run(_measure(daemon, samples, sessions))
    finally:
        scratch.cleanup()
    results["sessions"] = sessions
    results["turns"] = args.turns
    return results


def report(results: dict[str, Any]) -> None:
    print(f"{results['sessions']} sessions of {results['turns']} turns")
    print(f"{'tool':<18} {'MCP p50':>9} {'MCP p99':>9} {'daemon p50':>11} {'daemon p99':>11} {'× p50':>6}")
    for name, r in results["tools"].items():
        m, ref = r["mcp"], r["reference"]
        print(
            f"{name:<18} {m['p50']:>7.2f}ms {m['p99']:>7.2f}ms {ref['p50']:>9.2f}ms {ref['p99']:>9.2f}ms "
            f"{m['p50'] / ref['p50']:>6.2f}"
        )
    for note in results.get("notes", []):
        print(note)


def extract(results: dict[str, Any]) -> Extract:
    out = Extract()
    for name, r in results["tools"].items():
        for q in ("p50", "p99"):
            out.add(
                f"{name} {q} through MCP", r["mcp"][q], "ms", f"the daemon request {q}", r["reference"][q]
            )
    out.notes += results.get("notes", [])
    return out


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
