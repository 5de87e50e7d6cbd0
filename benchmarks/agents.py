"""Codex rollouts and OpenCode sessions: cold load against a bare JSON scan, follow latency.

Rows:

* ``codex load`` - a rollout of ``--size-mb`` MiB (``benchmarks/out/codex-rollout-<N>mb.jsonl``,
  cached), built by repeating the turns of the real compacted fixture
  (``tests/fixtures/codex/localpush-0.104``, call ids made unique), opened the way the daemon
  opens it: ``CodexSession.open`` (parse, replay, tree) + the context + its usage. The reference
  is the ``orjson floor``: read the bytes, split lines, ``orjson.loads`` each. Each is timed in a
  fresh process after its imports, interleaved, best of ``--runs``.
* ``codex read`` - the Codex part of ``benchmarks/search.py``'s corpus: copies of the same real
  fixture, each a rollout of its own with a fresh thread id (``benchmarks/out/codex-files-<N>mb/``,
  cached, ``--size-mb`` MiB in all), read the way the search index's first build reads them
  (``read_codex``: parse the records, replay the thread into the served entries). CPU seconds
  per 64 MiB; the reference is the same bare orjson scan of the same files, in the same process,
  interleaved, best of ``--runs``.
* ``codex follow`` - through a real daemon: one line appended to a watched rollout until the
  subscribed client receives its ``entries_appended`` (p50/p99 over ``--follows``).
* ``opencode follow`` - through a real daemon: one reply (messages and parts, one transaction,
  committed at a random moment) into a WAL ``opencode.db`` until ``entries_appended`` arrives;
  the daemon looks at the database every 0.25 s, so about 125 ms on average is the poll itself.

Run: ``.venv/bin/python -m benchmarks.agents [--size-mb 50] [--runs 3] [--follows 100] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import FIXTURES, MIB, REPO, Bench, Daemon, Extract, log, main, module_command, pct

BENCH = Bench(
    "agents",
    "benchmarks.agents",
    "Codex and OpenCode sessions: cold load, follow latency",
    "a bare orjson line scan of the same rollout (load); the write itself (follow latency)",
    {
        "smoke": ("--size-mb", "2", "--runs", "1", "--follows", "5"),
        "quick": ("--quick",),
        "full": (),
    },
    quick="a 10 MiB rollout, 1 run, 30 follows each",
)
SOURCE = next((FIXTURES / "codex" / "localpush-0.104").glob("*12-54-34*.jsonl"))
OPENCODE_DB = FIXTURES / "opencode" / "real-v1.16" / "opencode.db"


# --------------------------------------------------------------------------- cold load


def make_rollout(out: Path, size_mb: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"codex-rollout-{size_mb}mb.jsonl"
    if target.exists() and target.stat().st_size >= size_mb * MIB:
        return target
    lines = SOURCE.read_bytes().splitlines(keepends=True)
    head, body = lines[0], lines[1:]
    call = re.compile(rb'"call_([A-Za-z0-9]+)"')
    with open(target, "wb") as f:
        f.write(head)
        written, copy = len(head), 0
        while written < size_mb * MIB:
            copy += 1

            def renumber(m: re.Match[bytes], c: int = copy) -> bytes:
                return b'"call_%s_%d"' % (m.group(1), c)

            for line in body:
                line = call.sub(renumber, line)
                f.write(line)
                written += len(line)
                if written >= size_mb * MIB:
                    break
    return target


def make_files(out: Path, size_mb: int) -> Path:
    """Rollouts of about 1 MiB each (the fixture with a fresh thread id), ``size_mb`` MiB in all."""
    target = out / f"codex-files-{size_mb}mb"
    done = target / ".complete"
    if done.exists():
        return target
    data = SOURCE.read_bytes()
    old = SOURCE.stem[-36:].encode()
    written, n = 0, 0
    while written < size_mb * MIB:
        n += 1
        sid = f"019c8a59-0000-7000-8000-{n:012d}"
        path = (
            target
            / "sessions"
            / "2026"
            / "02"
            / f"{n % 28 + 1:02d}"
            / f"rollout-2026-02-23T12-54-34-{sid}.jsonl"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.replace(old, sid.encode()))
        written += len(data)
    done.write_text(str(written))
    return target


def _read_files(directory: Path, runs: int) -> dict[str, Any]:
    """``read_codex`` over every file against a bare orjson scan of them: CPU seconds, best of
    ``runs``, interleaved in this process."""
    import orjson  # noqa: PLC0415

    from sessiond.search.codex_file import read_codex  # noqa: PLC0415

    files = sorted(directory.rglob("*.jsonl"))

    def scan() -> None:
        for path in files:
            for line in path.read_bytes().split(b"\n"):
                if line:
                    orjson.loads(line)

    def read() -> None:
        for path in files:
            read_codex(path).close()

    best = {"floor": math.inf, "read": math.inf}
    for _ in range(runs):
        for name, fn in (("floor", scan), ("read", read)):
            start = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - start)
    return {
        "bytes": sum(p.stat().st_size for p in files),
        "files": len(files),
        "floorSeconds": best["floor"],
        "readSeconds": best["read"],
    }


def child(argv: list[str]) -> int:
    """A process of this benchmark: ``_floor PATH``, ``_load PATH`` or ``_read DIR RUNS``, timed
    after its imports."""
    import orjson  # noqa: PLC0415

    from sessiond.store.codex import CodexSession  # noqa: PLC0415

    kind, path = argv[0], argv[1]
    if kind == "_read":
        print(json.dumps(_read_files(Path(path), int(argv[2]))))
        return 0
    start = time.perf_counter()
    if kind == "_floor":
        with open(path, "rb") as f:
            data = f.read()
        objects = [orjson.loads(line) for line in data.split(b"\n") if line]
        detail: dict[str, Any] = {"lines": len(objects)}
    else:
        session = CodexSession.open(Path(path))
        context = session.context()
        usage = session.context_usage()
        detail = {
            "entries": session.entry_count,
            "contextMessages": len(context.messages),
            "tokens": usage.tokens,
        }
    print(json.dumps({"seconds": time.perf_counter() - start, **detail}))
    return 0


def _timed(kind: str, path: Path, *more: str) -> dict[str, Any]:
    proc = subprocess.run(
        module_command(BENCH.module, kind, str(path), *more),
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def bench_load(out: Path, size_mb: int, runs: int) -> dict[str, Any]:
    path = make_rollout(out, size_mb)
    path.read_bytes()  # a warm page cache for every method alike
    floor, load = [], []
    detail: dict[str, Any] = {}
    for _ in range(runs):
        floor.append(_timed("_floor", path)["seconds"])
        detail = _timed("_load", path)
        load.append(detail["seconds"])
    return {
        "bytes": path.stat().st_size,
        "floorSeconds": min(floor),
        "loadSeconds": min(load),
        "entries": detail.get("entries"),
        "contextMessages": detail.get("contextMessages"),
    }


# --------------------------------------------------------------------------- follow latency


def _latency(samples: list[float]) -> dict[str, float]:
    ms = [s * 1e3 for s in samples]
    return {"p50Ms": pct(ms, 0.5), "p99Ms": pct(ms, 0.99), "maxMs": max(ms), "n": len(ms)}


async def _wait_for(client: Any, sid: str, entry_id: str, timeout: float = 15) -> None:
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
    rng = random.Random(1)
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
            await asyncio.sleep(rng.uniform(0, 0.05))
    return _latency(samples)


async def follow_opencode(client: Any, data_dir: Path, n: int) -> dict[str, float]:
    db = data_dir / "opencode.db"
    src = sqlite3.connect(f"file:{OPENCODE_DB}?mode=ro&immutable=1", uri=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    tables = (
        "SELECT sql FROM sqlite_master WHERE type='table' AND name IN ('project','session','message','part')"
    )
    for (sql,) in src.execute(tables):
        conn.execute(sql)
    for table in ("project", "session"):
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
    src.close()
    sid = conn.execute("SELECT id FROM session").fetchone()[0]
    await client.request("session/load", {"sessionId": sid, "subscribe": True})
    rng = random.Random(1)
    samples = []
    base = 1_900_000_000_000
    usage = {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    for i in range(n):
        t = base + i * 1000
        user_id, reply_id = f"msg_b{i:06d}u", f"msg_b{i:06d}v"
        user = json.dumps({"role": "user", "time": {"created": t}, "agent": "build"})
        reply = json.dumps(
            {
                "role": "assistant",
                "parentID": user_id,
                "time": {"created": t + 1, "completed": t + 2},
                "modelID": "m",
                "providerID": "p",
                "finish": "stop",
                "tokens": usage,
            }
        )
        start = time.perf_counter()
        conn.execute("BEGIN")
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)", (user_id, sid, t, t, user))
        conn.execute(
            "INSERT INTO part VALUES (?,?,?,?,?,?)",
            (f"prt_b{i:06d}u", user_id, sid, t, t, json.dumps({"type": "text", "text": f"q{i}"})),
        )
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)", (reply_id, sid, t + 1, t + 2, reply))
        conn.execute(
            "INSERT INTO part VALUES (?,?,?,?,?,?)",
            (f"prt_b{i:06d}v", reply_id, sid, t + 1, t + 2, json.dumps({"type": "text", "text": f"a{i}"})),
        )
        conn.execute("COMMIT")
        await _wait_for(client, sid, reply_id)
        samples.append(time.perf_counter() - start)
        await asyncio.sleep(rng.uniform(0, 0.3))  # commits at any phase of the daemon's poll
    conn.close()
    return _latency(samples)


async def _follow(base: Path, n: int) -> dict[str, Any]:
    from sessiond_client import Client  # noqa: PLC0415

    codex_home, data = base / "codex", base / "data"
    (codex_home / "sessions").mkdir(parents=True)
    (data / "opencode").mkdir(parents=True)
    with Daemon(base, env={"CODEX_HOME": str(codex_home), "XDG_DATA_HOME": str(data)}).start() as daemon:
        client = await Client.connect_unix(daemon.socket)
        try:
            await client.initialize("bench-agents")
            codex = await follow_codex(client, codex_home, n)
            opencode = await follow_opencode(client, data / "opencode", n)
        finally:
            await client.close()
    return {"codex": codex, "opencode": opencode}


# --------------------------------------------------------------------------- the module


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--size-mb", type=int, default=50, help="rollout size in MiB (default 50)")
    ap.add_argument("--runs", type=int, default=3, help="load runs, best kept (default 3)")
    ap.add_argument("--follows", type=int, default=100, help="follow samples per agent (default 100)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.quick:
        args.size_mb, args.runs, args.follows = 10, 1, 30
    log(f"agents: loading a {args.size_mb} MiB rollout ({args.runs} runs)")
    load = bench_load(args.out, args.size_mb, args.runs)
    log(f"agents: reading {args.size_mb} MiB of Codex rollouts as the index does ({args.runs} runs)")
    read = _timed("_read", make_files(args.out, args.size_mb), str(max(args.runs, 3)))
    log(f"agents: {args.follows} follows each through the daemon")
    with tempfile.TemporaryDirectory(prefix="bench-agents-", dir=args.out) as tmp:
        follow = asyncio.run(_follow(Path(tmp), args.follows))
    return {"load": load, "read": read, "follow": follow}


def report(res: dict[str, Any]) -> None:
    load, follow = res["load"], res["follow"]
    ratio = load["loadSeconds"] / load["floorSeconds"]
    mib = load["bytes"] / MIB
    print(f"codex load   {mib:6.1f} MiB  {load['entries']:,} entries  {load['contextMessages']:,} messages")
    print(f"  orjson floor      {load['floorSeconds']:7.3f} s")
    print(f"  CodexSession      {load['loadSeconds']:7.3f} s   ({ratio:.2f}x the floor)")
    read = res.get("read")
    if read is not None:
        per = 64 * MIB / read["bytes"]
        ratio = read["readSeconds"] / read["floorSeconds"]
        print(f"codex read   {read['bytes'] / MIB:6.1f} MiB in {read['files']} rollouts (CPU per 64 MiB)")
        print(f"  orjson floor      {read['floorSeconds'] * per:7.3f} s")
        print(f"  read_codex        {read['readSeconds'] * per:7.3f} s   ({ratio:.2f}x the floor)")
    for name, lat in follow.items():
        p50, p99, top = lat["p50Ms"], lat["p99Ms"], lat["maxMs"]
        print(f"{name:<8} follow  p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   max {top:7.1f} ms  (n={lat['n']})")


def extract(d: dict[str, Any]) -> Extract:
    load, follow = d["load"], d["follow"]
    size = f"{load['bytes'] / MIB:.0f} MiB"
    e = Extract()
    e.add(
        f"Codex rollout load + context + usage, {size}",
        load["loadSeconds"] * 1e3,
        "ms",
        "bare orjson line scan",
        load["floorSeconds"] * 1e3,
    )
    read = d.get("read")
    if read is not None:
        per = 64 * MIB / read["bytes"]
        e.add(
            f"Codex rollouts read as the index reads them, {read['files']} files: CPU per 64 MiB",
            read["readSeconds"] * per,
            "s",
            "bare orjson line scan",
            read["floorSeconds"] * per,
        )
    e.add("Codex follow: appended line -> entries_appended, p50", follow["codex"]["p50Ms"], "ms")
    e.add("Codex follow, p99", follow["codex"]["p99Ms"], "ms")
    e.add(
        "OpenCode follow: committed reply -> entries_appended, p50 (0.25 s poll)",
        follow["opencode"]["p50Ms"],
        "ms",
    )
    e.add("OpenCode follow, p99", follow["opencode"]["p99Ms"], "ms")
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
