"""Codex rollouts and OpenCode sessions: cold load against a bare JSON scan, follow latency.

    .venv/bin/python benchmarks/agents.py                  # 50 MiB rollout, best of 3; 100 follows each
    .venv/bin/python benchmarks/agents.py --quick          # 10 MiB, 1 run; 30 follows each
    .venv/bin/python benchmarks/agents.py --json

Rows:

* ``codex load`` — a rollout of ``--size-mb`` MiB, built by repeating the turns of the real
  compacted fixture (``tests/fixtures/codex/localpush-0.104``, call ids made unique), opened
  the way the daemon opens it: ``CodexSession.open`` (parse, replay, tree) + the context +
  its usage. The reference is the ``orjson floor``: read the bytes, split lines,
  ``orjson.loads`` each. Each is timed in a fresh process (imports excluded), interleaved, the
  best of ``--runs``; the ratio is ``load / floor``.
* ``codex follow`` — through a real daemon: one line appended to a watched rollout until the
  subscribed client receives its ``entries_appended`` (p50/p99 over ``--follows``).
* ``opencode follow`` — through a real daemon: one reply (a message and its part, one
  transaction, at a random moment) committed into a WAL ``opencode.db`` until
  ``entries_appended`` arrives; the daemon looks at the database every 0.25 s, so about
  125 ms on average is the poll itself.
"""

from __future__ import annotations

import os
import sys

# The sibling ``inspect.py`` is named like the stdlib module: keep this directory off sys.path
# (before anything imports ``inspect``; asyncio does).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
SOURCE = next((FIXTURES / "codex" / "localpush-0.104").glob("*12-54-34*.jsonl"))
OPENCODE_DB = FIXTURES / "opencode" / "real-v1.16" / "opencode.db"
OUT = REPO / "benchmarks" / "out"

CHILD = """
import json, sys, time
kind, path = sys.argv[1], sys.argv[2]
import orjson
from sessiond.store.codex import CodexSession
t0 = time.perf_counter()
if kind == "floor":
    with open(path, "rb") as f:
        data = f.read()
    objs = [orjson.loads(line) for line in data.split(b"\\n") if line]
    detail = {"lines": len(objs)}
else:
    s = CodexSession.open(path)
    ctx = s.context()
    usage = s.context_usage()
    detail = {"entries": s.entry_count, "contextMessages": len(ctx.messages), "tokens": usage.tokens}
print(json.dumps({"seconds": time.perf_counter() - t0, **detail}))
"""


def make_rollout(size_mb: int) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"codex-rollout-{size_mb}mb.jsonl"
    if target.exists() and target.stat().st_size >= size_mb * 1024 * 1024:
        return target
    lines = SOURCE.read_bytes().splitlines(keepends=True)
    head, body = lines[0], lines[1:]
    want = size_mb * 1024 * 1024
    with open(target, "wb") as out:
        out.write(head)
        written, copy = len(head), 0
        call = re.compile(rb'"call_([A-Za-z0-9]+)"')
        while written < want:
            copy += 1
            for line in body:
                line = call.sub(lambda m, c=copy: b'"call_%s_%d"' % (m.group(1), c), line)
                out.write(line)
                written += len(line)
                if written >= want:
                    break
    return target


def timed(kind: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)], capture_output=True, text=True, check=True, env=env
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def bench_load(size_mb: int, runs: int) -> dict[str, Any]:
    path = make_rollout(size_mb)
    path.read_bytes()  # warm the page cache for every method alike
    floor, load = [], []
    detail: dict[str, Any] = {}
    for _ in range(runs):
        floor.append(timed("floor", path)["seconds"])
        result = timed("load", path)
        load.append(result["seconds"])
        detail = result
    return {
        "bytes": path.stat().st_size,
        "floorSeconds": min(floor),
        "loadSeconds": min(load),
        "ratio": min(load) / min(floor),
        "entries": detail.get("entries"),
        "contextMessages": detail.get("contextMessages"),
    }


# --------------------------------------------------------------------------- follow latency


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50Ms": statistics.median(ordered) * 1000,
        "p99Ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "maxMs": ordered[-1] * 1000,
        "n": len(ordered),
    }


async def _wait_for(client: Any, sid: str, entry_id: str, timeout: float = 10) -> None:
    async for update in client.updates(sid, timeout=timeout):
        if update.get("sessionUpdate") == "entries_appended" and entry_id in update.get("entryIds", []):
            return


def _line(kind: str, payload: dict[str, Any]) -> bytes:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}).encode() + b"\n"


async def follow_codex(client: Any, codex_home: Path, n: int) -> dict[str, float]:
    sid = "019d0000-0000-7000-8000-0000000bench"
    directory = codex_home / "sessions" / "2026" / "01" / "01"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
    path.write_bytes(_line("session_meta", {"id": sid, "cwd": "/bench", "cli_version": "0.104.0"}))
    await client.request("session/load", {"sessionId": sid, "subscribe": True})
    samples = []
    with open(path, "ab", buffering=0) as out:
        for i in range(n):
            line = _line(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"prompt {i}"}],
                },
            )
            start = time.perf_counter()
            out.write(line)
            await _wait_for(client, sid, f"L{i + 2}")
            samples.append(time.perf_counter() - start)
            await asyncio.sleep(0.02)
    return _percentiles(samples)


async def follow_opencode(client: Any, data_dir: Path, n: int) -> dict[str, float]:
    data_dir.mkdir(parents=True, exist_ok=True)
    db = data_dir / "opencode.db"
    src = sqlite3.connect(f"file:{OPENCODE_DB}?mode=ro&immutable=1", uri=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    for (sql,) in src.execute(
        "SELECT sql FROM sqlite_master WHERE type='table' AND name IN ('project','session','message','part')"
    ):
        conn.execute(sql)
    for table in ("project", "session"):
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
    src.close()
    sid = conn.execute("SELECT id FROM session").fetchone()[0]
    await client.request("session/load", {"sessionId": sid, "subscribe": True})
    samples = []
    rng = random.Random(1)
    base = 1_900_000_000_000
    for i in range(n):
        t = base + i * 1000
        user = json.dumps({"role": "user", "time": {"created": t}, "agent": "build"})
        reply = json.dumps(
            {
                "role": "assistant",
                "parentID": f"msg_b{i:06d}u",
                "time": {"created": t + 1, "completed": t + 2},
                "modelID": "m",
                "providerID": "p",
                "finish": "stop",
                "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            }
        )
        start = time.perf_counter()
        conn.execute("BEGIN")
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)", (f"msg_b{i:06d}u", sid, t, t, user))
        conn.execute(
            "INSERT INTO part VALUES (?,?,?,?,?,?)",
            (f"prt_b{i:06d}u", f"msg_b{i:06d}u", sid, t, t, json.dumps({"type": "text", "text": f"q{i}"})),
        )
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)", (f"msg_b{i:06d}v", sid, t + 1, t + 2, reply))
        conn.execute(
            "INSERT INTO part VALUES (?,?,?,?,?,?)",
            (
                f"prt_b{i:06d}v",
                f"msg_b{i:06d}v",
                sid,
                t + 1,
                t + 2,
                json.dumps({"type": "text", "text": f"a{i}"}),
            ),
        )
        conn.execute("COMMIT")
        await _wait_for(client, sid, f"msg_b{i:06d}v")
        samples.append(time.perf_counter() - start)
        await asyncio.sleep(rng.uniform(0, 0.3))  # commits at any phase of the daemon's poll
    conn.close()
    return _percentiles(samples)


async def bench_follow(n: int) -> dict[str, Any]:
    from sessiond_client import Client  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="sessiond-agents-bench-") as tmp:
        base = Path(tmp)
        env = {
            **os.environ,
            "SESSIOND_HOME": str(base / "store"),
            "CODEX_HOME": str(base / "codex"),
            "XDG_DATA_HOME": str(base / "data"),
            "CLAUDE_CONFIG_DIR": str(base / "claude"),
            "PI_CODING_AGENT_DIR": str(base / "pi"),
        }
        env.pop("SESSIOND_CONFIG", None)
        (base / "codex" / "sessions").mkdir(parents=True)
        (base / "data" / "opencode").mkdir(parents=True)
        socket = base / "sessiond.sock"
        proc = subprocess.Popen(
            [sys.executable, "-m", "sessiond", "serve", "--socket", str(socket)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 20
            while not socket.exists():
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the daemon did not start")
                await asyncio.sleep(0.05)
            reader, writer = await asyncio.open_unix_connection(str(socket), limit=2**26)
            client = Client(reader, writer)
            await client.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench"}})
            await client.notify("initialized", {})
            await asyncio.sleep(0.5)  # the watches are in place
            codex = await follow_codex(client, base / "codex", n)
            opencode = await follow_opencode(client, base / "data" / "opencode", n)
            await client.close()
        finally:
            proc.terminate()
            proc.wait(10)
    return {"codex": codex, "opencode": opencode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--follows", type=int, default=100)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.size_mb, args.runs, args.follows = 10, 1, 30
    load = bench_load(args.size_mb, args.runs)
    follow = asyncio.run(bench_follow(args.follows))
    result = {"load": load, "follow": follow, "loadavg": os.getloadavg(), "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    mib = load["bytes"] / 2**20
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(
        f"codex load   {mib:6.1f} MiB  {load['entries']:>8,} entries  {load['contextMessages']:>6,} messages"
    )
    print(f"  orjson floor      {load['floorSeconds']:7.3f} s")
    print(f"  CodexSession      {load['loadSeconds']:7.3f} s   ({load['ratio']:.2f}x the floor)")
    for name, lat in follow.items():
        print(
            f"{name:<8} follow  p50 {lat['p50Ms']:7.1f} ms   p99 {lat['p99Ms']:7.1f} ms"
            f"   max {lat['maxMs']:7.1f} ms  (n={lat['n']})"
        )


if __name__ == "__main__":
    main()
