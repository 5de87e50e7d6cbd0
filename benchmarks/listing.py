"""Listing a store of 1,000 Pi sessions: sessiond cold / cached / incremental vs. Pi's ``listAll()``.

The store (``benchmarks/out/listing-store-...``, gitignored, reused between runs) holds
``--count`` sessions (default 1,000) of 2 KB - 2 MB (log-uniform) in a few ``--<cwd>--``
directories. Every row runs in a fresh process (best of ``--runs``), timed inside the process
after its imports:

* ``cold`` - ``list_sessions(layout)`` without a cache: every file read in full.
* ``warm (memory)`` - the same process lists again with an in-memory ``ListingCache`` filled
  by a first listing; nothing changed: ``stat`` only.
* ``incremental (memory)`` - then 10 sessions get a user + assistant message appended
  (untimed) and the store is listed again: only the appended bytes are read.
* ``persisted cold`` - a fresh process with ``ListingCache(path)`` and no cache file:
  full listing + writing the cache file.
* ``persisted warm`` - a fresh process loads that cache file and lists (nothing changed).
* ``persisted incremental`` - the same after appending to 10 sessions.
* ``Pi listAll (node)`` - Pi 1.6.0's own ``SessionManager.listAll()`` in a fresh ``node``
  (``PI_CODING_AGENT_DIR`` = the store root), from a pi-oracle install; skipped without one.

Appended bytes are truncated away after each run (the store is reused), so every run sees the
same files. The page cache is warmed before measuring ("cold" = no sessiond cache, new process).

Run: ``.venv/bin/python -m benchmarks.listing [--count 1000] [--runs 3] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Bench, Extract, find_oracle, log, main

BENCH = Bench(
    "listing",
    "benchmarks.listing",
    "listing a store of generated sessions",
    "Pi's own SessionManager.listAll() (pi-oracle); sessiond's cold listing",
    {"smoke": ("--count", "30", "--runs", "1"), "quick": ("--quick",), "full": ()},
    takes_oracle=True,
    quick="1 run",
)
GEN_VERSION = 1
"""Bump when the generator changes: the store directory is named with it."""
APPENDS = 10
CWDS = (
    "/home/dev/projects/webapp",
    "/home/dev/projects/api",
    "/srv/infra",
    "/home/dev/notes",
    "/tmp/scratch",
)

# --------------------------------------------------------------------------- child programs
# ``python -c CODE ARGS...`` in a fresh interpreter (cwd = repo root), one JSON line on stdout.

_APPEND_HELPERS = r"""
def append(paths, stamp):
    added = {}
    for i, p in enumerate(paths):
        with open(p, "ab") as f:
            size = f.tell()
            for role in ("user", "assistant"):
                stamp += 1000
                msg = {"role": role, "content": [{"type": "text", "text": "appended " + "x" * 900}],
                       "timestamp": stamp}
                e = {"type": "message", "id": "app%05d%s" % (i, role[0]), "parentId": None,
                     "timestamp": "2027-01-01T00:00:00.000Z", "message": msg}
                f.write(orjson.dumps(e) + b"\n")
        added[p] = size
    return added

def restore(added):
    for p, size in added.items():
        os.truncate(p, size)
"""

MEMORY_CHILD = (
    r"""
import sys, time, os, json
from pathlib import Path
t0 = time.perf_counter()
import orjson
from sessiond.store.layout import StoreLayout
from sessiond.store.listing import ListingCache, list_sessions
t1 = time.perf_counter()
"""
    + _APPEND_HELPERS
    + r"""
root, appends = sys.argv[1], json.loads(sys.argv[2])
layout = StoreLayout(Path(root))
out = {"importMs": (t1 - t0) * 1e3}
t = time.perf_counter(); infos = list_sessions(layout); out["coldMs"] = (time.perf_counter() - t) * 1e3
out["sessions"] = len(infos)
cache = ListingCache()
t = time.perf_counter(); list_sessions(layout, cache=cache); out["fillMs"] = (time.perf_counter() - t) * 1e3
cache.reset_stats()
t = time.perf_counter(); list_sessions(layout, cache=cache); out["warmMs"] = (time.perf_counter() - t) * 1e3
out["warmBytes"] = cache.stats.bytes_read
added = append(appends, 1_900_000_000_000)
try:
    cache.reset_stats()
    t = time.perf_counter(); infos = list_sessions(layout, cache=cache)
    out["incrementalMs"] = (time.perf_counter() - t) * 1e3
    out["incrementalBytes"] = cache.stats.bytes_read
    out["incrementalFiles"] = cache.stats.incremental
    out["appendedBytes"] = sum(os.path.getsize(p) - s for p, s in added.items())
    out["newestIsAppended"] = infos[0].path in added
finally:
    restore(added)
sys.stdout.write(json.dumps(out) + "\n")
"""
)

PERSIST_CHILD = (
    r"""
import sys, time, os, json
from pathlib import Path
t0 = time.perf_counter()
import orjson
from sessiond.store.layout import StoreLayout
from sessiond.store.listing import ListingCache, list_sessions
t1 = time.perf_counter()
"""
    + _APPEND_HELPERS
    + r"""
root, cache_path, appends = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
layout = StoreLayout(Path(root))
added = append(appends, 1_900_000_000_000) if appends else {}
try:
    t = time.perf_counter()
    cache = ListingCache(cache_path)
    t_load = time.perf_counter()
    infos = list_sessions(layout, cache=cache)  # saves the cache file when something changed
    t2 = time.perf_counter()
finally:
    restore(added)
s = cache.stats
sys.stdout.write(json.dumps({
    "importMs": (t1 - t0) * 1e3, "coreMs": (t2 - t) * 1e3, "loadMs": (t_load - t) * 1e3,
    "sessions": len(infos), "hits": s.hits, "incremental": s.incremental, "full": s.full,
    "bytesRead": s.bytes_read, "cacheFileBytes": os.path.getsize(cache_path),
}) + "\n")
"""
)

PI_CHILD = r"""
import { pathToFileURL } from "node:url";
import { join } from "node:path";
const pkg = process.argv[1];
process.env.PI_OFFLINE = "1";
const t0 = performance.now();
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);
const t1 = performance.now();
const infos = await SessionManager.listAll();
const t2 = performance.now();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, coreMs: t2 - t1, sessions: infos.length }) + "\n");
"""

# --------------------------------------------------------------------------- generator
# Deterministic, stdlib only. Pi v3 lines (key order of Pi 1.6.0), written like JSON.stringify.

_WORDS = (  # noqa: SIM905
    "session entry branch leaf parent context model token usage compaction summary tree label "
    "cursor buffer stream reader writer index offset payload handler request response error "
    "config option value result state cache queue worker timer client server socket message "
    "the a this that we it should could will then now first next also because so but if when "
    "render widget theme color border layout panel editor footer header selector provider → ✓ é"
).split()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class _Text:
    """A pool of prose/code-like text; ``take(n)`` is a random slice of about ``n`` chars."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        lines = []
        for _ in range(20000):
            k = rng.random()
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14)))
            if k < 0.3:
                lines.append(
                    f"\tconst {rng.choice(_WORDS)}_{rng.randint(0, 99)} = await {words.replace(' ', '.')}();"
                )
            elif k < 0.4:
                lines.append("")
            else:
                lines.append(words.capitalize() + ".")
        self.pool = "\n".join(lines)

    def take(self, n: int) -> str:
        start = self.rng.randrange(max(1, len(self.pool) - n))
        return self.pool[start : start + n]


class _Session:
    def __init__(self, rng: random.Random, text: _Text, index: int) -> None:
        self.rng, self.text, self.index = rng, text, index
        self.now = 1_772_442_000_000 + index * 3_600_000 + rng.randrange(3_600_000)
        self.leaf: str | None = None
        self.size = 0
        self.out: list[str] = []

    def iso(self) -> str:
        d = _dt.datetime.fromtimestamp(self.now // 1000, _dt.UTC)
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now % 1000:03d}Z"

    def emit(self, entry: dict[str, Any]) -> None:
        line = _dumps(entry) + "\n"
        self.out.append(line)
        self.size += len(line.encode())
        if entry["type"] != "session":
            self.leaf = entry["id"]

    def base(self, etype: str) -> dict[str, Any]:
        self.now += self.rng.randint(200, 20000)
        eid = f"{self.rng.getrandbits(32):08x}"
        return {"type": etype, "id": eid, "parentId": self.leaf, "timestamp": self.iso()}

    def message(self, msg: dict[str, Any]) -> None:
        e = self.base("message")
        msg["timestamp"] = self.now
        e["message"] = msg
        self.emit(e)

    def sized(self, lo: int, hi: int) -> int:
        return int(math.exp(self.rng.uniform(math.log(lo), math.log(hi))))

    def build(self, target: int) -> tuple[str, str]:
        r = self.rng
        h = f"{self.now:012x}7{r.getrandbits(12):03x}{8 | r.getrandbits(2):x}{r.getrandbits(60):015x}"
        sid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        ts = self.iso()
        self.emit(
            {"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": CWDS[self.index % len(CWDS)]}
        )
        e = self.base("model_change")
        self.emit({**e, "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
        e = self.base("thinking_level_change")
        self.emit({**e, "thinkingLevel": "medium"})
        while self.size < target:
            self.message(
                {"role": "user", "content": [{"type": "text", "text": self.text.take(self.sized(20, 2000))}]}
            )
            for _ in range(r.choice((0, 1, 1, 2, 3))):
                call = f"toolu_01{r.getrandbits(64):016x}"
                content: list[dict[str, Any]] = [
                    {
                        "type": "thinking",
                        "thinking": self.text.take(self.sized(50, 2000)),
                        "thinkingSignature": "sig",
                    },
                    {
                        "type": "toolCall",
                        "id": call,
                        "name": "read",
                        "arguments": {"path": f"src/{r.choice(_WORDS)}.ts"},
                    },
                ]
                self.message(self._assistant(content, "toolUse"))
                result = [{"type": "text", "text": self.text.take(self.sized(200, 20000))}]
                self.message(
                    {
                        "role": "toolResult",
                        "toolCallId": call,
                        "toolName": "read",
                        "content": result,
                        "isError": False,
                    }
                )
            text = [{"type": "text", "text": self.text.take(self.sized(50, 1500))}]
            self.message(self._assistant(text, "stop"))
            if r.random() < 0.04:
                self.emit({**self.base("session_info"), "name": self.text.take(30).strip() or "named"})
            if r.random() < 0.02:
                self.emit({**self.base("label"), "targetId": self.leaf, "label": "checkpoint"})
        name = f"{ts.replace(':', '-').replace('.', '-')}_{sid}.jsonl"
        return name, "".join(self.out)

    def _assistant(self, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        inp, out = self.rng.randint(100, 50000), self.rng.randint(10, 4000)
        return {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out},
            "stopReason": stop,
        }


def _encode_cwd(cwd: str) -> str:
    return "--" + cwd.lstrip("/").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def ensure_store(
    out_dir: Path, count: int, seed: int, log: Callable[[str], None]
) -> tuple[Path, dict[str, Any]]:
    """Generate (or reuse, repairing appended tails) the store of ``count`` sessions."""
    root = out_dir / f"listing-store-{count}-seed{seed}-g{GEN_VERSION}"
    meta_path = root / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        ok = True
        for rel, size in meta["files"].items():
            p = root / rel
            try:
                actual = p.stat().st_size
            except OSError:
                ok = False
                break
            if actual > size:  # an interrupted run left appended bytes
                os.truncate(p, size)
            elif actual < size:
                ok = False
                break
        if ok:
            return root, meta
        shutil.rmtree(root)
    log(f"generating {count} sessions into {root} ...")
    t0 = time.perf_counter()
    rng = random.Random(seed)
    text = _Text(rng)
    files: dict[str, int] = {}
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for i in range(count):
        srng = random.Random(seed * 1_000_003 + i)
        target = int(math.exp(srng.uniform(math.log(2_000), math.log(2_000_000))))
        text.rng = srng
        name, body = _Session(srng, text, i).build(target)
        rel = f"sessions/{_encode_cwd(CWDS[i % len(CWDS)])}/{name}"
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = body.encode()
        p.write_bytes(data)
        files[rel] = len(data)
    meta = {
        "count": count,
        "seed": seed,
        "generator": GEN_VERSION,
        "bytes": sum(files.values()),
        "files": files,
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=0) + "\n")
    os.replace(tmp, root)
    log(f"  {meta['bytes'] / (1 << 20):.0f} MiB in {time.perf_counter() - t0:.1f} s")
    return root, meta


# --------------------------------------------------------------------------- running


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    wall = (time.perf_counter() - t0) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wallMs"] = wall
    return result


ROWS = (
    ("cold", "cold (no cache)"),
    ("warm", "warm (memory)"),
    ("incremental", f"incremental (memory, {APPENDS} appended)"),
    ("pcold", "persisted cold (+ save)"),
    ("pwarm", "persisted warm (fresh process)"),
    ("pincremental", f"persisted incremental ({APPENDS} appended)"),
    ("pi", "Pi listAll (node)"),
)


def measure(
    root: Path, meta: dict[str, Any], runs: int, pi_pkg: Path | None, log: Callable[[str], None]
) -> dict[str, Any]:
    py = sys.executable
    rng = random.Random(42)
    appends = [str(root / rel) for rel in rng.sample(sorted(meta["files"]), APPENDS)]
    for rel in meta["files"]:  # warm the page cache for every method alike
        with open(root / rel, "rb") as f:
            while f.read(1 << 20):
                pass
    node = shutil.which("node")
    samples: dict[str, list[dict[str, Any]]] = {k: [] for k, _ in ROWS}
    with tempfile.TemporaryDirectory(prefix="sessiond-listing-bench-") as tmp:
        cache_path = os.path.join(tmp, "listing.json")
        for i in range(runs):
            mem = run_child([py, "-c", MEMORY_CHILD, str(root), json.dumps(appends)])
            samples["cold"].append(
                {"timeMs": mem["coldMs"], "sessions": mem["sessions"], "wallMs": mem["wallMs"]}
            )
            samples["warm"].append({"timeMs": mem["warmMs"], "bytesRead": mem["warmBytes"]})
            samples["incremental"].append(
                {
                    "timeMs": mem["incrementalMs"],
                    "bytesRead": mem["incrementalBytes"],
                    "files": mem["incrementalFiles"],
                    "appendedBytes": mem["appendedBytes"],
                }
            )
            if os.path.exists(cache_path):
                os.unlink(cache_path)
            for key, extra in (("pcold", []), ("pwarm", []), ("pincremental", appends)):
                r = run_child([py, "-c", PERSIST_CHILD, str(root), cache_path, json.dumps(extra)])
                samples[key].append({"timeMs": r["coreMs"], **r})
            if pi_pkg and node:
                env = {**os.environ, "PI_CODING_AGENT_DIR": str(root)}
                r = run_child([node, "--input-type=module", "-e", PI_CHILD, str(pi_pkg)], env=env)
                samples["pi"].append({"timeMs": r["coreMs"], **r})
            done = ", ".join(f"{k} {v[-1]['timeMs']:.0f} ms" for k, v in samples.items() if v)
            log(f"  run {i + 1}/{runs}: {done}")
    best = {k: min(v, key=lambda r: r["timeMs"]) for k, v in samples.items() if v}
    return {"best": best, "runs": samples}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--count", type=int, default=1000, help="sessions in the store (default 1000)")
    ap.add_argument(
        "--runs", type=int, default=3, help="fresh-process runs per row; best is kept (default 3)"
    )
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument("--generate-only", action="store_true", help="only generate the store")


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    runs = 1 if args.quick else max(1, args.runs)
    root, meta = ensure_store(Path(args.out), args.count, args.seed, log)
    mib = meta["bytes"] / (1 << 20)
    if args.generate_only:
        print(f"{root}  {meta['count']} sessions  {mib:.0f} MiB")
        return None
    pi_pkg, pi_note = find_oracle(args.oracle)
    if pi_pkg and not shutil.which("node"):
        pi_pkg, pi_note = None, "node not found on PATH: Pi row skipped"
    elif not pi_pkg:
        pi_note += ": Pi row skipped"
    log(pi_note)
    res = measure(root, meta, runs, pi_pkg, log)
    best = res["best"]
    checks = []
    if "pi" in best and best["pi"]["sessions"] != best["cold"]["sessions"]:
        checks.append(f"sessions: sessiond {best['cold']['sessions']} != Pi {best['pi']['sessions']}")
    return {
        "python": sys.version.split()[0],
        "runs": runs,
        "store": str(root),
        "mib": mib,
        "count": meta["count"],
        "pi": pi_note,
        "checks": checks,
        **res,
    }


def report(out: dict[str, Any]) -> None:
    best, pi_note = out["best"], out["pi"]
    runs = len(out["runs"]["cold"]) if isinstance(out["runs"], dict) else out["runs"]  # the runs themselves
    pi_ms = best["pi"]["timeMs"] if "pi" in best else None
    print(
        f"\nsessiond listing benchmark: {out['count']} sessions, {out['mib']:.0f} MiB "
        f"in {len(CWDS)} cwd dirs; best of {runs} (time measured inside a fresh process, "
        f"after imports); {pi_note}"
    )
    print(f"  {'method':<40} {'time ms':>9} {'/Pi':>7} {'/cold':>7}   detail")
    for key, label in ROWS:
        d = best.get(key)
        if d is None:
            print(f"  {label:<40} {'(skipped)':>9}")
            continue
        t = d["timeMs"]
        over_pi = f"{t / pi_ms:.3f}" if pi_ms else "-"
        over_cold = f"{t / best['cold']['timeMs']:.3f}"
        if key == "cold":
            detail = f"{d['sessions']} sessions listed"
        elif key == "warm":
            detail = f"{d['bytesRead']} bytes read"
        elif key == "incremental":
            detail = (
                f"{d['files']} files extended, {d['bytesRead']} bytes read ({d['appendedBytes']} appended)"
            )
        elif key == "pi":
            detail = f"{d['sessions']} sessions; import {d['importMs']:.0f} ms (not in time)"
        else:
            detail = (
                f"load {d['loadMs']:.1f} ms; hits {d['hits']}, incremental {d['incremental']}, "
                f"full {d['full']}; {d['bytesRead']} bytes read; "
                f"cache file {d['cacheFileBytes'] / 1024:.0f} KiB"
            )
        print(f"  {label:<40} {t:>9.1f} {over_pi:>7} {over_cold:>7}   {detail}")
    for c in out["checks"]:
        print(f"  MISMATCH {c}")


LISTING_LABELS = {
    "cold": "cold listing (no cache)",
    "warm": "warm listing (in-memory cache)",
    "incremental": "in-memory cache, 10 sessions appended",
    "pcold": "persisted cache: cold + save",
    "pwarm": "persisted cache: fresh process",
    "pincremental": "persisted cache, 10 sessions appended",
}


def extract(d: dict[str, Any]) -> Extract:
    """Cold listings against Pi's listAll, cached listings against the cold one."""
    best = d["best"]
    runs = len(d["runs"]["cold"]) if isinstance(d.get("runs"), dict) else "?"
    e = Extract(notes=[d["pi"], f"{d['count']:,} sessions, {d['mib']:.0f} MiB, best of {runs} run(s)"])
    pi = best.get("pi")
    cold = best["cold"]["timeMs"]
    for key, label in LISTING_LABELS.items():
        if key not in best:
            continue
        t = best[key]["timeMs"]
        if key in ("cold", "pcold", "pwarm") and pi:
            e.add(label, t, "ms", "Pi SessionManager.listAll()", pi["timeMs"])
        if key != "cold":
            e.add(label, t, "ms", "sessiond cold listing", cold)
    e.mismatches += list(d.get("checks", []))
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
