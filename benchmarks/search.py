"""Full-text search (issue 26): index build, index size, queries — against ripgrep on the same files.

Rows:

* ``build`` - the first build of the index over a generated corpus of ``--size-mb`` MiB
  (``benchmarks/out/search-corpus-<N>mb/``, cached): Claude Code transcripts, Codex rollouts and
  Pi sessions copied from the real fixtures (``tests/fixtures``) with fresh session ids and, in
  each line, a word drawn from a Zipf-distributed vocabulary of 50,000 made-up words (so common
  and rare words exist, as in real text). Built by the daemon's own engine and source
  (``SearchEngine`` over ``CatalogSource``) in a fresh process: MB/s of raw files, the process's
  peak RSS, the index's size against the raw size and against the text it indexes.
* ``query`` - p50/p99 over ``--queries`` runs of each kind, in-process on the built index (the
  first query of a kind is a warm-up): a common word, a rare word, a phrase, a substring
  (trigram), a common word with the cwd and since filters. The reference is ripgrep over the
  same raw files (``rg -i -F`` / ``-w``, counted), best of 3: what people run today.
* ``incremental`` - CPU (the whole process: the hook on the caller's side and the writer thread)
  per appended line, 200 lines appended to an indexed file one at a time.
* ``append path`` - ``Service.append`` of one message (as ``benchmarks/service.py`` measures it)
  with the search engine running against the same without, in interleaved rounds: the event
  loop's latency per append (p50/p99: what a client waits) and the process's CPU per append
  (the writer thread's indexing included).

Run: ``.venv/bin/python -m benchmarks.search [--size-mb 20] [--queries 50] [--quick] [--json]``
(the issue's run is ``--size-mb 1024``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.harness import FIXTURES, MIB, REPO, Bench, Extract, Goal, log, main, module_command, pct

BENCH = Bench(
    "search",
    "benchmarks.search",
    "Full-text search: index build, size, query latency",
    "ripgrep over the same raw session files (queries)",
    {
        "smoke": ("--size-mb", "4", "--queries", "10"),
        "quick": ("--quick",),
        "full": ("--size-mb", "1024"),
    },
    goals=(
        Goal("search.p50", 26, "query p50 <= 10 ms on 1 GB", "<=", 10.0, unit="ms"),
        Goal("search.p99", 26, "query p99 <= 50 ms on 1 GB", "<=", 50.0, unit="ms"),
        Goal("search.build", 26, "build >= 30 MB/s", ">=", 30.0, unit="MB/s"),
        Goal("search.size", 26, "index <= 0.5x the text", "<=", 0.5, unit="x"),
        Goal("search.rss", 26, "RSS while building < 300 MB", "<", 300.0, unit="MB"),
        Goal("search.incremental", 26, "one appended line <= 1 ms CPU", "<=", 1.0, unit="ms"),
    ),
    quick="a 20 MiB corpus, 20 queries of each kind",
)
VOCABULARY = 50_000
CLAUDE = FIXTURES / "claude-code" / "ccl-2.1.114" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
CODEX = next((FIXTURES / "codex" / "localpush-0.104").glob("*12-54-34*.jsonl"))
PI = FIXTURES / "pi" / "large-session.v1.jsonl"
_THE = re.compile(rb"( the )")


def word(i: int) -> str:
    """The made-up word of rank ``i`` (0 = the most common)."""
    return f"zq{i:05d}x"


def _inject(lines: list[bytes], rng: random.Random, weights: list[float]) -> list[bytes]:
    out = []
    ranks = rng.choices(range(VOCABULARY), weights, k=len(lines))
    for line, rank in zip(lines, ranks, strict=True):
        out.append(_THE.sub(b" the " + word(rank).encode() + b" ", line, count=1))
    return out


def make_corpus(out: Path, size_mb: int) -> Path:
    """Claude Code, Codex and Pi files (a third of the bytes each), cached by size."""
    corpus = out / f"search-corpus-{size_mb}mb"
    done = corpus / ".complete"
    if done.exists():
        return corpus
    shutil.rmtree(corpus, ignore_errors=True)
    rng = random.Random(26)
    weights = [1.0 / (r + 1) for r in range(VOCABULARY)]
    templates = {
        name: path.read_bytes().splitlines() for name, path in (("claude", CLAUDE), ("codex", CODEX))
    }
    templates["pi"] = _pi_v3_lines()
    budget = size_mb * MIB
    written = 0
    n = 0
    while written < budget:
        for name, lines in templates.items():
            n += 1
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            old = {"claude": CLAUDE.stem, "codex": "019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "pi": None}[name]
            body = _inject(lines, rng, weights)
            if name == "claude":
                path = corpus / "claude" / "projects" / f"-work-p{n % 40}" / f"{sid}.jsonl"
                data = b"\n".join(body).replace(old.encode(), sid.encode()) if old else b"\n".join(body)
            elif name == "codex":
                path = (
                    corpus
                    / "codex"
                    / "sessions"
                    / "2026"
                    / "02"
                    / f"{n % 28 + 1:02d}"
                    / f"rollout-2026-02-23T12-54-34-{sid}.jsonl"
                )
                data = b"\n".join(body).replace(str(old).encode(), sid.encode())
            else:
                header = json.loads(body[0])
                header["id"] = sid
                header["cwd"] = f"/work/p{n % 40}"
                path = (
                    corpus
                    / "pi"
                    / "sessions"
                    / f"--work-p{n % 40}--"
                    / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
                )
                data = b"\n".join([json.dumps(header).encode(), *body[1:]])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data + b"\n")
            written += len(data) + 1
    done.write_text(str(written))
    return corpus


def _pi_v3_lines() -> list[bytes]:
    """The Pi fixture (a v1 file) as Pi 3 writes it today: migrated, ids assigned."""
    from sessiond.store.session import Session  # noqa: PLC0415

    session = Session.open(PI, read_only="benchmark")
    try:
        header = {**session.header, "version": 3}
        return [json.dumps(header).encode()] + [json.dumps(e).encode() for e in session.entries()]
    finally:
        session.close()


def rare_word(corpus: Path) -> str:
    """A word of the corpus found in a handful of lines (the rarest rank that occurs)."""
    result = subprocess.run(
        ["grep", "-rhoE", "zq[0-9]{5}x", str(corpus)], capture_output=True, text=True, check=False
    )
    counts: dict[str, int] = {}
    for w in result.stdout.split():
        counts[w] = counts.get(w, 0) + 1
    few = sorted((w for w, c in counts.items() if 1 <= c <= 5), reverse=True)
    return few[0] if few else word(VOCABULARY - 1)


def _roots(corpus: Path) -> Any:
    from sessiond.service.catalog import Catalog  # noqa: PLC0415
    from sessiond.service.roots import build_roots  # noqa: PLC0415
    from sessiond.store.listing import ListingCache  # noqa: PLC0415

    roots = build_roots(
        corpus / "store",
        {
            "pi": {"path": str(corpus / "pi" / "sessions")},
            "claude": {"path": str(corpus / "claude" / "projects")},
            "codex": {"path": str(corpus / "codex")},
            "opencode": {"enabled": False},
        },
        {},
    )
    return Catalog(roots, ListingCache(corpus / ".listing.json"))


def _engine(corpus: Path, index: Path) -> Any:
    from sessiond.search.engine import SearchEngine  # noqa: PLC0415
    from sessiond.service.searching import CatalogSource  # noqa: PLC0415

    return SearchEngine(index, CatalogSource(_roots(corpus)))


def _wait_built(engine: Any) -> None:
    engine.flush()
    while engine.progress is not None:
        time.sleep(0.05)
    engine.flush()


def child(argv: list[str]) -> int:
    """``_build CORPUS INDEX``: build in this process; print seconds (wall and CPU, all threads)
    and peak RSS."""
    if argv[0] != "_build":
        return 2
    corpus, index = Path(argv[1]), Path(argv[2])
    engine = _engine(corpus, index)
    started, cpu = time.monotonic(), time.process_time()
    engine.start()
    _wait_built(engine)
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    engine.close()
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the build's reading processes
    from sessiond.search.producer import WORKERS  # noqa: PLC0415

    workers = WORKERS if children.ru_maxrss else 0  # the largest one's peak, times how many ran
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpuSeconds": cpu + children.ru_utime + children.ru_stime,
                "workerCpuSeconds": children.ru_utime + children.ru_stime,
                "rssMb": (own.ru_maxrss + workers * children.ru_maxrss) / 1024,
                "workerRssMb": children.ru_maxrss / 1024,
                "workers": workers,
            }
        )
    )
    return 0


def _raw_bytes(corpus: Path) -> int:
    return sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))


def _timed_queries(engine: Any, runs: int, rare: str) -> dict[str, Any]:
    from sessiond.search.index import Filters  # noqa: PLC0415
    from sessiond.search.query import parse_time, words_match  # noqa: PLC0415

    common = word(0)
    kinds: dict[str, dict[str, Any]] = {
        "common word": {"match": words_match(common)},
        "rare word": {"match": words_match(rare)},
        "phrase": {"match": words_match(f'"the {word(1)}"')},
        "substring": {"needle": rare[1:]},
        "substring, 100 words hold it": {"needle": "q001"},
        "substring, common piece": {"needle": "the"},
        "common word + cwd, since": {
            "match": words_match(common),
            "filters": Filters(cwd="/work/p3", since_ms=parse_time("2025-01-01", "since", end=False)),
        },
    }
    out: dict[str, Any] = {}
    for name, spec in kinds.items():
        samples = []
        total = 0
        for i in range(runs + 1):
            started = time.perf_counter()
            page = engine.search(
                match=spec.get("match"),
                needle=spec.get("needle"),
                filters=spec.get("filters", Filters()),
                offset=0,
                limit=20,
            )
            if i:
                samples.append(time.perf_counter() - started)
            total = page.total
        out[name] = {"p50Ms": pct(samples, 0.5) * 1e3, "p99Ms": pct(samples, 0.99) * 1e3, "total": total}
    rg = {
        "common word": ["-i", "-w", common],
        "rare word": ["-i", "-w", rare],
        "phrase": ["-i", "-F", f"the {word(1)}"],
        "substring": ["-i", "-F", rare[1:]],
        "substring, 100 words hold it": ["-i", "-F", "q001"],
        "substring, common piece": ["-i", "-F", "the"],
        "common word + cwd, since": ["-i", "-w", common],
    }
    return {"sessiond": out, "rg": rg}


def _ripgrep(corpus: Path, args: list[str], runs: int = 3) -> float | None:
    if shutil.which("rg") is None:
        return None
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["rg", "-c", "--no-messages", *args, str(corpus)], capture_output=True, check=False)
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def _incremental(engine: Any, corpus: Path) -> float:
    from sessiond.search.engine import stat_signature  # noqa: PLC0415

    path = next((corpus / "pi" / "sessions").rglob("*.jsonl"))
    lines = path.read_bytes().splitlines()
    parent = json.loads(lines[-1]).get("id")
    cpu_before = time.process_time()
    for i in range(200):
        entry = {
            "type": "message",
            "id": f"bench{i:04d}",
            "parentId": parent,
            "timestamp": "2026-03-01T00:00:00.000Z",
            "message": {
                "role": "user",
                "content": f"an appended line about {word(i)} number {i}",
                "timestamp": 1,
            },
        }
        parent = entry["id"]
        with open(path, "ab") as f:
            f.write(json.dumps(entry).encode() + b"\n")
        sig = stat_signature(str(path))
        engine.appended(str(path), [entry], parent, None, sig.size if sig else None)
        engine.flush()
    return (time.process_time() - cpu_before) / 200 * 1e3


async def _append_round(base: Path, batch: list[dict[str, Any]], indexed: bool) -> tuple[float, list[float]]:
    from benchmarks.service import CWD, Peer  # noqa: PLC0415
    from sessiond.service.config import load_config  # noqa: PLC0415
    from sessiond.service.service import Service  # noqa: PLC0415

    service = Service(load_config({}, root=base / "store", socket=base / "s.sock"))
    if indexed:
        service.search.start()
        service.search.engine.flush()
    writer = Peer(1)
    session_id = (await service.new_session(writer, CWD)).sessionId
    latencies = []
    cpu = time.process_time()
    for m in batch:
        t = time.perf_counter()
        await service.append(writer, session_id, [{"type": "message", "message": m}])
        latencies.append(time.perf_counter() - t)
    if indexed:
        service.search.engine.flush()  # the writer thread's work is counted too
    cpu = time.process_time() - cpu
    service.close_all()
    return cpu, latencies


def append_path(out: Path, rounds: int = 5, appends: int = 400) -> dict[str, Any]:
    import asyncio  # noqa: PLC0415
    import statistics  # noqa: PLC0415

    from benchmarks.service import messages  # noqa: PLC0415

    batch = messages(appends)
    cpu: dict[str, list[float]] = {"plain": [], "indexed": []}
    lat: dict[str, list[float]] = {"plain": [], "indexed": []}
    with tempfile.TemporaryDirectory(prefix="bench-search-append-", dir=out) as tmp:
        for r in range(rounds):
            for name in ("plain", "indexed"):
                c, ls = asyncio.run(_append_round(Path(tmp) / f"{name}{r}", batch, name == "indexed"))
                cpu[name].append(c / appends)
                lat[name] += ls
    return {
        name: {
            "cpuUs": statistics.median(cpu[name]) * 1e6,
            "p50Us": pct(lat[name], 0.5) * 1e6,
            "p99Us": pct(lat[name], 0.99) * 1e6,
        }
        for name in cpu
    }


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--size-mb", type=int, default=20, help="corpus size in MiB (default 20; the issue's run: 1024)"
    )
    ap.add_argument("--queries", type=int, default=50, help="runs of each query kind (default 50)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.quick:
        args.size_mb, args.queries = 20, 20
    args.out.mkdir(parents=True, exist_ok=True)
    log(f"search: generating a {args.size_mb} MiB corpus")
    corpus = make_corpus(args.out, args.size_mb)
    raw = _raw_bytes(corpus)
    with tempfile.TemporaryDirectory(prefix="bench-search-", dir=args.out) as tmp:
        index = Path(tmp) / "search" / "index.sqlite3"
        log("search: building the index (a fresh process)")
        proc = subprocess.run(
            module_command(BENCH.module, "_build", str(corpus), str(index)),
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        build = json.loads(proc.stdout.strip().splitlines()[-1])
        from sessiond.search.database import connect  # noqa: PLC0415

        db = connect(index)  # the texts are read through sd_text, registered on its connections
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        text_sql = "SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM texts"
        text_bytes = db.execute(text_sql).fetchone()[0]
        docs = db.execute("SELECT count(*) FROM docs").fetchone()[0]
        parts = _size_parts(db)
        db.close()
        index_bytes = sum(os.path.getsize(p) for p in index.parent.iterdir())
        log("search: queries")
        engine = _engine(corpus, index)
        engine.start()
        _wait_built(engine)  # a restart: nothing changed, nothing read again
        timed = _timed_queries(engine, args.queries, rare_word(corpus))
        log("search: ripgrep")
        rg = {name: _ripgrep(corpus, a) for name, a in timed["rg"].items()}
        log("search: incremental")
        incremental = _incremental(engine, corpus)
        engine.close()
    log("search: the append path with and without the index")
    appends = append_path(args.out)
    return {
        "rawBytes": raw,
        "textBytes": text_bytes,
        "docs": docs,
        "indexBytes": index_bytes,
        "indexParts": parts,
        "buildSeconds": build["seconds"],
        "buildCpuSeconds": build["cpuSeconds"],
        "buildWorkerCpuSeconds": build.get("workerCpuSeconds", 0.0),
        "buildRssMb": build["rssMb"],
        "queries": timed["sessiond"],
        "ripgrepMs": rg,
        "incrementalCpuMs": incremental,
        "appendPath": appends,
    }


def _size_parts(db: Any) -> dict[str, int]:
    """Bytes of each table and index of the index file (SQLite's ``dbstat``; ``{}`` when this
    SQLite has none), largest first: where the size goes."""
    try:
        rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.OperationalError:  # a SQLite built without dbstat: the total is still measured
        return {}
    return {str(name): int(size) for name, size in rows}


def report(res: dict[str, Any]) -> None:
    raw = res["rawBytes"] / MIB
    print(
        f"corpus {raw:.1f} MiB raw, {res['textBytes'] / MIB:.1f} MiB of indexed text in {res['docs']:,} texts"
    )
    print(
        f"build  {res['buildSeconds']:.1f} s = {raw / res['buildSeconds']:.1f} MiB/s "
        f"({res['buildCpuSeconds']:.1f} s of CPU = {raw / res['buildCpuSeconds']:.1f} MiB/s, "
        f"{res.get('buildWorkerCpuSeconds', 0.0):.1f} s of it in reading processes), "
        f"peak RSS {res['buildRssMb']:.0f} MiB"
    )
    print(
        f"index  {res['indexBytes'] / MIB:.1f} MiB = "
        f"{res['indexBytes'] / res['rawBytes']:.2f}x the raw files, "
        f"{res['indexBytes'] / max(1, res['textBytes']):.2f}x the text"
    )
    parts = [(n, b) for n, b in res.get("indexParts", {}).items() if b * 100 >= res["indexBytes"]]
    if parts:
        text = max(1, res["textBytes"])
        print("       " + ", ".join(f"{n} {b / text:.3f}x" for n, b in parts) + " (x the text; >= 1% shown)")
    for name, q in res["queries"].items():
        rg = res["ripgrepMs"].get(name)
        vs = f"   rg {rg:8.1f} ms ({rg / q['p50Ms']:.0f}x)" if rg else ""
        print(f"{name:<26} p50 {q['p50Ms']:7.2f} ms  p99 {q['p99Ms']:7.2f} ms  ({q['total']} hits){vs}")
    print(f"incremental: {res['incrementalCpuMs']:.3f} ms CPU per appended line")
    for name, a in res["appendPath"].items():
        print(
            f"Service.append, {name:<8} CPU {a['cpuUs']:7.1f} us   "
            f"p50 {a['p50Us']:7.1f} us   p99 {a['p99Us']:7.1f} us"
        )


def extract(d: dict[str, Any]) -> Extract:
    e = Extract()
    goals = {g.key: g for g in BENCH.goals}
    raw_mb = d["rawBytes"] / 1e6
    size = f"{d['rawBytes'] / MIB:.0f} MiB"
    e.add(f"index build, {size} corpus", raw_mb / d["buildSeconds"], "MB/s", goal=goals["search.build"])
    e.add("peak RSS while building", d["buildRssMb"], "MB", goal=goals["search.rss"])
    e.add(
        "index size / indexed text", d["indexBytes"] / max(1, d["textBytes"]), "x", goal=goals["search.size"]
    )
    e.add("index size / raw files", d["indexBytes"] / d["rawBytes"], "x")
    worst50 = max(q["p50Ms"] for q in d["queries"].values())
    worst99 = max(q["p99Ms"] for q in d["queries"].values())
    for name, q in d["queries"].items():
        e.add(f"query p50: {name}", q["p50Ms"], "ms", "ripgrep, best of 3", d["ripgrepMs"].get(name))
    e.add("query p50, worst kind", worst50, "ms", goal=goals["search.p50"])
    e.add("query p99, worst kind", worst99, "ms", goal=goals["search.p99"])
    e.add(
        "incremental update, CPU per appended line",
        d["incrementalCpuMs"],
        "ms",
        goal=goals["search.incremental"],
    )
    plain, indexed = d["appendPath"]["plain"], d["appendPath"]["indexed"]
    e.add("Service.append with the index: CPU per append", indexed["cpuUs"], "us", "without", plain["cpuUs"])
    e.add("Service.append with the index: p50", indexed["p50Us"], "us", "without", plain["p50Us"])
    if d["rawBytes"] < 1000 * MIB:
        e.notes.append(f"run on {size}, not the issue's 1 GB")
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
