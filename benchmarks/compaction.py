"""Compaction: preparing a checkpoint on long branches against Pi, and a full compaction through the daemon.

Sections:

1. **prepare vs Pi** - on generated Pi v3 sessions of 1k, 10k and 50k entries (``--quick``: 1k
   and 10k) whose branch already holds one compaction halfway (so there is a previous summary
   and a kept range): ``Session.prepare_compaction(CompactionSettings(True, 16384, 20000))``
   in a fresh Python process, after ``Session.open`` (untimed, reported as ``open``), repeated
   (median of N runs; ``cached``: the same on a session opened with a body cache that holds the
   whole context, the default being 16 MiB), then ``prep.serialized_history()`` (the
   conversation text a summarizer gets) and ``describe_preparation(prep, None, 13107)`` (what
   ``compaction/prepare`` adds on top of the preparation: serialization, prompts, file lists).
   Pi 1.6.0 runs the same file in a fresh ``node`` (``benchmarks/pi_prepare_timing.mjs``):
   ``SessionManager.open`` (untimed), ``getBranch()``, then
   ``prepareCompaction(branch, settings)`` and
   ``serializeConversation(convertToLlm(prep.messagesToSummarize))``, the same number of times
   (median). Ratios are Pi / sessiond (> 1: sessiond faster). Check: both must pick the same
   ``firstKeptEntryId`` and ``tokensBefore`` (``MISMATCH`` otherwise). Pi's load + context
   (``SessionManager.open`` + ``buildSessionContext``) is the reference of ``Session.open``, and
   ``Session.open`` + the first prepare is shown beside Pi's open + first prepare.
2. **threshold -> checkpoint through the daemon** - ``python -m sessiond serve`` on a scratch
   store; a client that cannot summarise (so the built-in extractive summarizer is used).
   Per size (1k and 10k entries; ``--quick``: 1k) and repetition, on a fresh session
   (``session/new`` with ``subscribe``): the turns are appended in batches of <= 1000 entries,
   ``compaction/settings`` sets ``contextWindow`` 200000 / ``reserveTokens`` 16384 (every
   answer so far reported <= 150k tokens: below the threshold), then one more turn is
   appended whose answer reports 190k tokens (after a ``search/query`` that answers once the
   search index took the fill in: a real 10k-entry session is indexed as it grows, not in the
   second this one was filled). Timed from sending that ``session/append`` to:
   its response, the ``compaction_update`` ``in_progress`` and the ``completed`` one (the
   checkpoint is written). Also ``compaction/run`` (manual, ``summarizer: "extractive"``) on
   fresh sessions of the same sizes: request latency and summary length.

Why: compaction runs on the longest sessions, at the moment the agent is waiting; preparing it
must not cost more than Pi's own code, and the built-in path from threshold to checkpoint must
stay well under a model call.

Run: ``.venv/bin/python -m benchmarks.compaction [--quick] [--runs N] [--reps N] [--profile]
[--json]``. Scratch files (generated sessions, the daemon's store) go to
``benchmarks/out/compaction-tmp/`` (same disk as the repo; removed at the end).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import datetime as _dt
import gc
import io
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from benchmarks.harness import (
    BENCH_DIR,
    REPO,
    Bench,
    Daemon,
    Extract,
    Goal,
    Scratch,
    find_oracle,
    log,
    main,
    module_command,
    priced_usage,
)
from benchmarks.pi_sessions import Corpus
from sessiond.compaction.prepare import CompactionPreparation, CompactionSettings, NoCompaction
from sessiond.compaction.summary import describe_preparation
from sessiond.store.session import Session
from sessiond_client import Client

MB = 1 << 20
CWD = "/home/dev/projects/webapp"

KEEP_RECENT = 20000
RESERVE = 16384
MAX_TOKENS = 13107  # floor(0.8 * RESERVE): the summary budget compaction/prepare describes with
WINDOW = 200_000
USAGE_CAP = 150_000  # every generated answer reports at most this: below WINDOW - RESERVE
TRIGGER_TOTAL = 190_000  # the final answer of section 2: above WINDOW - RESERVE, input under WINDOW
BATCH = 1000  # entries per session/append (the daemon's max_entries_per_append)

PREPARE_RUNS = {1000: 30, 10_000: 20, 50_000: 7}

GOAL_SIZES = (1000, 10_000, 50_000)
G_STEADY = {
    n: Goal(
        f"compaction-prepare-steady-{n}",
        30,
        f"`prepare` steady ≤ 1.0x Pi ({n:,} entries)",
        "<=",
        1.0,
        "ratio",
    )
    for n in GOAL_SIZES
}
G_FIRST = {
    n: Goal(
        f"compaction-prepare-first-{n}",
        30,
        f"`prepare` first-after-open ≤ 2x Pi ({n:,} entries)",
        "<=",
        2.0,
        "ratio",
    )
    for n in GOAL_SIZES
}
G_THRESHOLD = Goal(
    "compaction-threshold-10k",
    30,
    "threshold append → committed checkpoint ≤ 100 ms at 10k entries with the extractive summarizer",
    "<=",
    100.0,
    unit="ms",
)
G_OPEN = Goal("compaction-open-50mb", 30, "`Session.open` of 50 MB ≤ Pi's load + context", "<=", 1.0, "ratio")
GOALS = (*G_STEADY.values(), *G_FIRST.values(), G_THRESHOLD, G_OPEN)
PREPARE_RUNS_QUICK = {1000: 15, 10_000: 8}


# --------------------------------------------------------------------------- workload


class Workload:
    """Agent turns: a request, a tool call (read/edit/bash) and its result, a final answer.

    Text comes from ``benchmarks.pi_sessions``' code-like corpus. Every assistant message carries a full
    ``usage`` whose context size grows with the conversation (capped at ``USAGE_CAP``).
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.corpus = Corpus(self.rng)
        self.ctx_chars = 20_000  # system prompt and tools
        self.call_n = 0

    def _usage(self, output: int, total: int | None = None) -> dict[str, Any]:
        r = self.rng
        if total is None:
            total = min(USAGE_CAP, self.ctx_chars // 4 + output)
        cache_write = r.randint(0, min(3000, total // 4))
        cache_read = int((total - output - cache_write) * r.uniform(0.8, 0.97))
        inp = total - output - cache_write - cache_read
        return priced_usage(inp, output, cache_read, cache_write)  # totalTokens: the sum, = total

    def _assistant(
        self, content: list[dict[str, Any]], stop: str, ts: int, total: int | None = None
    ) -> dict[str, Any]:
        output = sum(len(b.get("text", "")) + len(json.dumps(b.get("arguments", ""))) for b in content) // 4
        return {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": self._usage(output + 20, total),
            "stopReason": stop,
            "timestamp": ts,
        }

    def _tool(self) -> tuple[dict[str, Any], str]:
        r, c = self.rng, self.corpus
        self.call_n += 1
        call_id = f"toolu_01{self.call_n:06d}{r.getrandbits(40):010x}"
        k = r.random()
        if k < 0.5:
            path, text, first = c.file_slice(r.randint(300, 4000))
            args: dict[str, Any] = {"path": path}
            if r.random() < 0.3:
                args.update(offset=first, limit=text.count("\n") + 1)
            name = "read"
        elif k < 0.75:
            path, old, _ = c.file_slice(r.randint(40, 600))
            new = old.replace(r.choice(old.split() or ["x"]), c.ident(), 1)
            args = {"path": path, "edits": [{"oldText": old, "newText": new}]}
            text = f"Successfully replaced 1 block(s) in {path}."
            name = "edit"
        else:
            args = {"command": r.choice(["npm test", "git diff --stat", f"rg -n '{c.ident()}' src"])}
            text = c.grep_output(r.randint(200, 3000))
            name = "bash"
        return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}, text

    def turn(self, ts: int, final_total: int | None = None) -> list[dict[str, Any]]:
        """The messages of one turn (4 or 6), stamped ``ts`` ms and later."""
        r, c = self.rng, self.corpus
        out: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": [{"type": "text", "text": c.prose(r.randint(80, 600))}],
                "timestamp": ts,
            }
        ]
        for _ in range(r.choice((1, 1, 1, 2))):
            call, result = self._tool()
            blocks: list[dict[str, Any]] = []
            if r.random() < 0.6:
                blocks.append({"type": "text", "text": c.prose(r.randint(40, 200))})
            blocks.append(call)
            ts += r.randint(2000, 20000)
            out.append(self._assistant(blocks, "toolUse", ts))
            ts += r.randint(50, 3000)
            out.append(
                {
                    "role": "toolResult",
                    "toolCallId": call["id"],
                    "toolName": call["name"],
                    "content": [{"type": "text", "text": result}],
                    "isError": False,
                    "timestamp": ts,
                }
            )
        ts += r.randint(2000, 30000)
        answer = {"type": "text", "text": c.prose(r.randint(200, 1500))}
        out.append(self._assistant([answer], "stop", ts, final_total))
        self.ctx_chars += sum(len(json.dumps(m["content"])) for m in out)
        return out

    def summary_text(self) -> str:
        c, r = self.corpus, self.rng
        text: str = (
            "## Goal\n"
            + c.prose(400)
            + "\n\n## Progress\n### Done\n"
            + c.prose(r.randint(1500, 4000))
            + "\n\n## Next Steps\n"
            + c.prose(500)
        )
        return text


def _iso(ms: int) -> str:
    d = _dt.datetime.fromtimestamp(ms // 1000, _dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def write_session(path: Path, entries: int, seed: int) -> dict[str, Any]:
    """A Pi v3 session file of ``entries`` entries (+ the header) on one branch.

    model_change, thinking_level_change, then turns; once half the entries are written, a
    ``compaction`` whose ``firstKeptEntryId`` is the request of the turn 8 turns earlier.
    """
    w = Workload(seed)
    rng = w.rng
    ids: set[str] = set()
    now = 1772442000000 + rng.randrange(86_400_000)

    def new_id() -> str:
        while True:
            i = f"{rng.getrandbits(32):08x}"
            if i not in ids:
                ids.add(i)
                return i

    lines: list[str] = []
    leaf: str | None = None

    def emit(entry: dict[str, Any]) -> str:
        nonlocal leaf
        lines.append(json.dumps(entry, separators=(",", ":"), ensure_ascii=False))
        leaf = entry["id"]
        return leaf

    def base(type_: str, ts: int) -> dict[str, Any]:
        return {"type": type_, "id": new_id(), "parentId": leaf, "timestamp": _iso(ts)}

    h = f"{now:012x}7{rng.getrandbits(12):03x}{8 | rng.getrandbits(2):x}{rng.getrandbits(60):015x}"
    sid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": _iso(now), "cwd": CWD}
    lines.append(json.dumps(header, separators=(",", ":")))
    emit({**base("model_change", now), "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    emit({**base("thinking_level_change", now), "thinkingLevel": "medium"})
    turn_starts: list[str] = []
    compacted = False
    first_kept = ""
    count = 2
    while count < entries:
        if not compacted and count >= entries // 2 and len(turn_starts) > 8:
            now += 30_000
            first_kept = turn_starts[-8]
            e = base("compaction", now)
            e["summary"] = w.summary_text()
            e["firstKeptEntryId"] = first_kept
            e["tokensBefore"] = min(USAGE_CAP, w.ctx_chars // 4)
            files = sorted({p for p, _ in rng.sample(w.corpus.files, 12)})
            e["details"] = {"readFiles": files[:8], "modifiedFiles": files[8:]}
            emit(e)
            w.ctx_chars = 20_000 + 8 * 6000
            compacted = True
            count += 1
            continue
        now += rng.randint(5000, 120_000)
        msgs = w.turn(now)
        if count + len(msgs) > entries:
            msgs = msgs[:1] + msgs[-3:] if len(msgs) > 4 else msgs
            msgs = msgs[: entries - count]
        for k, m in enumerate(msgs):
            now = max(now, m["timestamp"])
            e = base("message", m["timestamp"] + 300)
            e["message"] = m
            eid = emit(e)
            if k == 0:
                turn_starts.append(eid)
        count += len(msgs)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"entries": count, "bytes": path.stat().st_size, "compactionFirstKept": first_kept}


# --------------------------------------------------------------------------- 1. prepare vs Pi


def prepare_child(cfg: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: open the file, then time prepare / serialize / describe."""
    perf = time.perf_counter
    runs = cfg["runs"]
    t0 = perf()
    session = Session.open(Path(cfg["path"]))
    open_ms = (perf() - t0) * 1e3
    settings = CompactionSettings(True, cfg["reserve"], cfg["keep"])
    prep_runs, ser_runs, desc_runs = [], [], []
    prep: Any = None
    first_serialize_ms: float | None = None
    for i in range(runs):
        gc.collect()
        a = perf()
        prep = session.prepare_compaction(settings)
        prep_runs.append((perf() - a) * 1e3)
        if i == 0 and not isinstance(prep, NoCompaction):
            # What a summarizer needs next: the first preparation reads and parses the messages
            # it summarises only now (sessiond.compaction.lazy), Pi had them from its load.
            a = perf()
            prep.serialized_history()
            first_serialize_ms = (perf() - a) * 1e3
    out: dict[str, Any] = {"openMs": open_ms, "entries": session.entry_count, "prepareRuns": prep_runs}
    out["firstMs"] = prep_runs[0]  # reads the entries the decision looks at (lazy: light entries at open)
    out["openFirstMs"] = open_ms + prep_runs[0]
    if first_serialize_ms is not None:
        out["firstSerializeMs"] = first_serialize_ms
        out["openFirstSerializeMs"] = open_ms + prep_runs[0] + first_serialize_ms
    out["prepareMs"] = statistics.median(prep_runs)
    if isinstance(prep, NoCompaction):
        out.update(prepared=False, reason=prep.reason)
        session.close()
        return out
    # The same with a body cache large enough for the whole context (the default is 16 MiB).
    big = Session.open(Path(cfg["path"]), cache_bytes=1 << 31)
    big.prepare_compaction(settings)  # fills the cache: untimed
    cached_runs = []
    for _ in range(runs):
        gc.collect()
        a = perf()
        big.prepare_compaction(settings)
        cached_runs.append((perf() - a) * 1e3)
    big.close()
    del big
    gc.collect()
    out.update(cachedMs=statistics.median(cached_runs), cachedRuns=cached_runs)
    conversation = ""
    for _ in range(runs):
        gc.collect()
        a = perf()
        conversation = prep.serialized_history()
        ser_runs.append((perf() - a) * 1e3)
    described: dict[str, Any] = {}
    for _ in range(runs):
        gc.collect()
        a = perf()
        described = describe_preparation(prep, None, cfg["maxTokens"])
        desc_runs.append((perf() - a) * 1e3)
    out.update(
        prepared=True,
        serializeMs=statistics.median(ser_runs),
        serializeRuns=ser_runs,
        describeMs=statistics.median(desc_runs),
        describeRuns=desc_runs,
        firstKeptEntryId=prep.first_kept_entry_id,
        tokensBefore=described["tokensBefore"],
        isSplitTurn=prep.is_split_turn,
        messagesToSummarize=len(prep.messages_to_summarize),
        turnPrefixMessages=len(prep.turn_prefix_messages),
        conversationChars=len(conversation.encode("utf-16-le")) // 2,  # JS string length
        previousSummary=described["previousSummary"] is not None,
    )
    if cfg.get("profile"):

        def work() -> None:
            for _ in range(cfg["profile"]):
                p = session.prepare_compaction(settings)
                describe_preparation(cast(CompactionPreparation, p), None, cfg["maxTokens"])  # prepared above

        prof = cProfile.Profile()
        prof.runcall(work)
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf).strip_dirs()
        buf.write("== by own time ==\n")
        stats.sort_stats("tottime").print_stats(15)
        buf.write("== by cumulative time ==\n")
        stats.sort_stats("cumulative").print_stats(15)
        out["profile"] = buf.getvalue()
    session.close()
    return out


def _run_json(cmd: list[str], what: str) -> dict[str, Any]:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench_prepare(
    scratch: Scratch,
    args: argparse.Namespace,
    pi_pkg: Path | None,
    node: str | None,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    rows = []
    directory = scratch.new_dir("prepare")
    for n in args.sizes:
        path = directory / f"pi-v3-{n}-entries.jsonl"
        t0 = time.perf_counter()
        meta = write_session(path, n, args.seed + n)
        log(f"  {n} entries: generated {meta['bytes'] / MB:.1f} MB in {time.perf_counter() - t0:.1f} s")
        runs = args.runs or (PREPARE_RUNS_QUICK if args.quick else PREPARE_RUNS).get(n, 5)
        cfg = {
            "path": str(path),
            "runs": runs,
            "keep": KEEP_RECENT,
            "reserve": RESERVE,
            "maxTokens": MAX_TOKENS,
            "profile": 3 if args.profile and n == max(args.sizes) else 0,
        }
        path.read_bytes()  # warm the page cache: both sides read from memory
        sd = _run_json(module_command(BENCH.module, "_prepare", json.dumps(cfg)), "sessiond prepare child")
        pi = None
        if pi_pkg is not None and node is not None:
            pi = _run_json(
                [
                    node,
                    str(BENCH_DIR / "pi_prepare_timing.mjs"),
                    str(pi_pkg),
                    str(path),
                    str(runs),
                    str(KEEP_RECENT),
                    str(RESERVE),
                ],
                "pi_prepare_timing.mjs",
            )
        checks = []
        if pi is not None:
            if sd.get("firstKeptEntryId") != pi.get("firstKeptEntryId"):
                checks.append(
                    f"firstKeptEntryId {sd.get('firstKeptEntryId')!r} != Pi {pi.get('firstKeptEntryId')!r}"
                )
            pi_tokens = pi.get("tokensBefore")
            if sd.get("tokensBefore") != (
                int(pi_tokens) if isinstance(pi_tokens, int | float) else pi_tokens
            ):
                checks.append(f"tokensBefore {sd.get('tokensBefore')!r} != Pi {pi_tokens!r}")
            if sd.get("messagesToSummarize") != pi.get("messagesToSummarize"):
                sd_n, pi_n = sd.get("messagesToSummarize"), pi.get("messagesToSummarize")
                checks.append(f"messagesToSummarize {sd_n} != Pi {pi_n}")
            if sd.get("conversationChars") != pi.get("conversationChars"):
                checks.append(
                    f"conversation chars {sd.get('conversationChars')} != Pi {pi.get('conversationChars')}"
                )
        row = {"entries": meta["entries"], "nominal": n, "fileMB": meta["bytes"] / MB, "runs": runs}
        row.update(sessiond=sd, pi=pi, checks=checks)
        rows.append(row)
        msg = f"  {n} entries: sessiond prepare {sd['prepareMs']:.1f} ms"
        if pi is not None:
            msg += f", Pi {pi['prepareMs']:.1f} ms"
        log(msg + ("" if not checks else f"  MISMATCH: {'; '.join(checks)}"))
        path.unlink()
    return rows


# --------------------------------------------------------------------------- 2. through the daemon


def _entries(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "message", "message": m} for m in msgs]


async def _filled_session(client: Any, n: int, seed: int) -> tuple[str, Workload, float]:
    """A fresh subscribed session holding about ``n`` message entries (whole turns)."""
    w = Workload(seed)
    turns: list[list[dict[str, Any]]] = []
    count = 0
    ts = int(time.time() * 1000) - 1000
    while count < n - 6:  # room for the final turn of the threshold case
        t = w.turn(ts)
        turns.append(t)
        count += len(t)
    created = await client.request("session/new", {"cwd": CWD, "subscribe": True})
    sid = created["sessionId"]
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for t in turns:
        if len(batch) + len(t) > BATCH:
            await client.request(
                "session/append", {"sessionId": sid, "entries": _entries(batch)}, timeout=120
            )
            batch = []
        batch.extend(t)
    if batch:
        await client.request("session/append", {"sessionId": sid, "entries": _entries(batch)}, timeout=120)
    fill = time.perf_counter() - t0
    # A session reaches 10k entries over hours, its search index current all along; this one got
    # them in a second. A search/query answers once the index has taken in everything before it:
    # the figures below time the compaction, not the fill's indexing backlog (which added ~100 ms
    # of daemon CPU to the 10k threshold path when the threshold append came 50 ms after the fill).
    with contextlib.suppress(Exception):  # a daemon without search: nothing to wait for
        await client.request("search/query", {"query": "settled", "sessionId": sid, "limit": 1}, timeout=120)
    return sid, w, fill


async def _threshold_once(client: Any, n: int, seed: int) -> dict[str, Any]:
    sid, w, fill_s = await _filled_session(client, n, seed)
    await client.request(
        "compaction/settings", {"sessionId": sid, "set": {"contextWindow": WINDOW, "reserveTokens": RESERVE}}
    )
    await asyncio.sleep(0.05)  # let the fill's notifications arrive, then forget them
    early = [
        p["update"]
        for method, p in client.drain_notifications()
        if method == "session/update" and p["update"]["sessionUpdate"] == "compaction_update"
    ]
    final = _entries(w.turn(int(time.time() * 1000), final_total=TRIGGER_TOTAL))
    perf = time.perf_counter
    stamps: dict[str, float] = {}
    done: dict[str, Any] = {}

    async def watch() -> None:
        async for update in client.updates(sid, timeout=120):
            if update["sessionUpdate"] != "compaction_update":
                continue
            stamps.setdefault(update["status"], perf())
            if update["status"] in ("completed", "failed", "cancelled"):
                done.update(update)
                return

    watcher = asyncio.ensure_future(watch())
    await asyncio.sleep(0)
    t0 = perf()
    await client.request("session/append", {"sessionId": sid, "entries": final}, timeout=120)
    t_resp = perf()
    await watcher
    if done.get("status") != "completed" or not done.get("entryId"):
        # "completed" is published once the checkpoint's line is written (host.commit): its id
        raise RuntimeError(f"threshold compaction did not complete: {done}")
    await client.request("session/close", {"sessionId": sid})
    return {
        "entries": n,
        "fillSeconds": fill_s,
        "appendMs": (t_resp - t0) * 1e3,
        "inProgressMs": (stamps["in_progress"] - t0) * 1e3 if "in_progress" in stamps else float("nan"),
        "completedMs": (stamps["completed"] - t0) * 1e3,
        "summaryChars": len(done.get("summary") or ""),
        "tokensBefore": done.get("tokensBefore"),
        "tokensAfter": done.get("tokensAfter"),
        "reason": done.get("reason"),
        "earlyCompactions": len(early),
    }


async def _manual_once(client: Any, n: int, seed: int) -> dict[str, Any]:
    sid, _, fill_s = await _filled_session(client, n, seed)
    await asyncio.sleep(0.05)
    client.drain_notifications()
    t0 = time.perf_counter()
    result = await client.request(
        "compaction/run", {"sessionId": sid, "summarizer": "extractive"}, timeout=120
    )
    ms = (time.perf_counter() - t0) * 1e3
    await client.request("session/close", {"sessionId": sid})
    client.drain_notifications()
    return {
        "entries": n,
        "fillSeconds": fill_s,
        "runMs": ms,
        "summaryChars": len(result["summary"]),
        "summarizer": result.get("summarizer"),
        "tokensBefore": result["tokensBefore"],
        "tokensAfter": result["tokensAfter"],
    }


def _median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in runs[0].items():
        if isinstance(v, int | float) and not isinstance(v, bool) and all(r.get(k) is not None for r in runs):
            out[k] = statistics.median(r[k] for r in runs)
        else:
            out[k] = v
    return out


async def _daemon_cases(socket: Path, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    client = await Client.connect_unix(socket)
    await client.initialize("bench")
    out: dict[str, Any] = {"threshold": [], "manual": []}
    try:
        for n in args.daemon_sizes:
            runs = []
            for rep in range(args.reps):
                runs.append(await _threshold_once(client, n, args.seed + 100 * rep + n))
            row = {**_median_of(runs), "reps": len(runs), "runs": runs}
            out["threshold"].append(row)
            log(
                f"  threshold, {n} entries: append {row['appendMs']:.1f} ms, in_progress "
                f"{row['inProgressMs']:.1f} ms, completed {row['completedMs']:.0f} ms"
            )
            runs = []
            for rep in range(args.reps):
                runs.append(await _manual_once(client, n, args.seed + 100 * rep + n + 7))
            row = {**_median_of(runs), "reps": len(runs), "runs": runs}
            out["manual"].append(row)
            log(f"  compaction/run, {n} entries: {row['runMs']:.0f} ms, summary {row['summaryChars']:.0f} ch")
    finally:
        await client.close()
    return out


def bench_daemon(scratch: Scratch, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    daemon = Daemon(scratch.new_dir("daemon")).start()
    try:
        result = asyncio.run(_daemon_cases(daemon.socket, args, log))
    finally:
        code = daemon.stop()
    if code != 0 or "Traceback" in daemon.log_text():
        log(f"  daemon exited {code}:\n{daemon.log_text()[-2000:]}")
    return result


# --------------------------------------------------------------------------- output


def _f(v: Any, spec: str = ".1f") -> str:
    return "-" if v is None or v != v else format(v, spec)


def _ratio(pi: Any, sd: Any) -> str:
    return f"{pi / sd:.2f}" if isinstance(pi, int | float) and isinstance(sd, int | float) and sd else "-"


def print_report(res: dict[str, Any]) -> None:
    p = print
    p(f"\nsessiond compaction benchmark; {res['pi']}")
    p(
        f"\n1. prepare (keepRecentTokens {KEEP_RECENT}, reserveTokens {RESERVE}), median of N runs in one "
        "process; ratio = Pi / sessiond (> 1: sessiond faster)"
    )
    p(
        f"{'entries':>8}{'MB':>6}{'N':>4}{'open sd':>9}{'open Pi':>9}{'1st sd':>8}{'prepare sd':>11}"
        f"{'cached':>8}{'Pi':>8}"
        f"{'Pi/sd':>7}{'serialize sd':>13}{'Pi':>8}{'Pi/sd':>7}{'describe':>10}{'summarized':>11}"
        f"{'conv KB':>9}  check"
    )
    for row in res["prepare"]:
        sd, pi = row["sessiond"], row["pi"] or {}
        check = (
            "ok"
            if row["pi"] is not None and not row["checks"]
            else ("-" if row["pi"] is None else "MISMATCH")
        )
        p(
            f"{row['entries']:>8}{row['fileMB']:>6.1f}{row['runs']:>4}{_f(sd['openMs'], '.0f'):>9}"
            f"{_f(pi.get('openMs'), '.0f'):>9}{_f(sd.get('firstMs')):>8}{_f(sd['prepareMs']):>11}"
            f"{_f(sd.get('cachedMs')):>8}"
            f"{_f(pi.get('prepareMs')):>8}{_ratio(pi.get('prepareMs'), sd['prepareMs']):>7}"
            f"{_f(sd.get('serializeMs')):>13}{_f(pi.get('serializeMs')):>8}"
            f"{_ratio(pi.get('serializeMs'), sd.get('serializeMs')):>7}{_f(sd.get('describeMs')):>10}"
            f"{sd.get('messagesToSummarize', '-'):>11}{_f(sd.get('conversationChars', 0) / 1024, '.0f'):>9}"
            f"  {check}"
        )
        for c in row["checks"]:
            p(f"   MISMATCH at {row['entries']} entries: {c}")
    p("   ms; open = Session.open / SessionManager.open, untimed in the other columns; 1st sd = the first")
    p("   prepare after open (builds the context's projection, which the daemon keeps current on appends);")
    p("   prepare = Session.prepare_compaction / prepareCompaction(getBranch()); cached = the same on a")
    p("   session opened with a body cache holding the whole context (default: 16 MiB, bodies beyond it are")
    p("   re-read and")
    p("   parsed); serialize = serialized_history() /")
    p("   serializeConversation(convertToLlm(messagesToSummarize)); describe = describe_preparation (what")
    p("   compaction/prepare answers: serialization, prompts, file lists);")
    p("   summarized = messages to summarize; conv KB = serialized conversation (UTF-16 units / 1024);")
    p("   check = same firstKeptEntryId, tokensBefore, message count and serialized length as Pi")
    if not res["piAvailable"]:
        p("   (Pi columns empty: no pi-oracle / node)")
    for row in res["prepare"]:
        sd, pi = row["sessiond"], row["pi"]
        if pi is None or "loadContextMs" not in pi:
            continue
        p(
            f"   {row['entries']:,} entries: Session.open {sd['openMs']:.0f} ms vs Pi load + context "
            f"{pi['loadContextMs']:.0f} ms (open {pi['openMs']:.0f} + context {pi['contextMs']:.0f}); "
            f"open + first prepare {sd['openFirstMs']:.0f} ms vs Pi open + first prepare "
            f"{pi['openMs'] + pi['prepareRuns'][0]:.0f} ms"
            + (
                f"; + first serialize {sd['openFirstSerializeMs']:.0f} ms vs Pi "
                f"{pi['openMs'] + pi['prepareRuns'][0] + pi['serializeRuns'][0]:.0f} ms"
                if sd.get("openFirstSerializeMs") is not None and pi.get("serializeRuns")
                else ""
            )
        )

    d = res["daemon"]
    p(
        f"\n2. through the daemon (extractive summarizer), median of {res['reps']} fresh session(s); "
        f"threshold = window {WINDOW} - reserve {RESERVE}"
    )
    p(
        f"{'entries':>8}{'append ms':>11}{'in_progress':>13}{'completed':>11}{'summary ch':>12}"
        f"{'tokens before':>15}{'after':>8}{'run ms':>9}{'summary ch':>12}{'fill s':>8}"
    )
    for th, man in zip(d["threshold"], d["manual"], strict=True):
        p(
            f"{th['entries']:>8}{th['appendMs']:>11.1f}{th['inProgressMs']:>13.1f}{th['completedMs']:>11.0f}"
            f"{th['summaryChars']:>12.0f}{_f(th['tokensBefore'], '.0f'):>15}{_f(th['tokensAfter'], '.0f'):>8}"
            f"{man['runMs']:>9.0f}{man['summaryChars']:>12.0f}{th['fillSeconds']:>8.2f}"
        )
        if th.get("earlyCompactions"):
            p(f"   WARNING: {th['earlyCompactions']} compaction(s) started before the final turn")
    p("   append/in_progress/completed = from sending the turn whose answer crosses the threshold to its")
    p("   response / compaction_update in_progress / completed (checkpoint written); run ms =")
    p("   compaction/run {summarizer: extractive} on a fresh session of the same size; fill s = appending")
    p(f"   the session before the measurement ({BATCH} entries per session/append)")

    prof = next((r["sessiond"].get("profile") for r in res["prepare"] if r["sessiond"].get("profile")), None)
    if prof:
        largest = max(r["entries"] for r in res["prepare"])
        p(f"\ncProfile of prepare + describe on the {largest}-entry session:")
        p(prof)


def headline(res: dict[str, Any]) -> str:
    big = res["prepare"][-1]
    sd, pi = big["sessiond"], big["pi"]
    parts = [f"prepare on {big['entries']} entries: sessiond {sd['prepareMs']:.1f} ms"]
    if pi is not None:
        parts[-1] += (
            f" vs Pi {pi['prepareMs']:.1f} ms (Pi/sessiond {_ratio(pi['prepareMs'], sd['prepareMs'])})"
        )
    th, man = res["daemon"]["threshold"][-1], res["daemon"]["manual"][-1]
    parts.append(f"threshold -> checkpoint on {th['entries']} entries: {th['completedMs']:.0f} ms")
    parts.append(f"compaction/run extractive: {man['runMs']:.0f} ms")
    return "headline: " + "; ".join(parts)


# --------------------------------------------------------------------------- main


def child(argv: list[str]) -> int:
    """A process of this benchmark: ``_prepare CFG`` (sessiond's prepare, timed in a fresh process)."""
    print(json.dumps(prepare_child(json.loads(argv[1]))))
    return 0


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", default=None, help="prepare sizes in entries (default 1000,10000,50000)")
    ap.add_argument("--daemon-sizes", default=None, help="daemon sizes in entries (default 1000,10000)")
    ap.add_argument(
        "--runs", type=int, default=None, help="prepare repetitions (default 30/20/7 by size; quick 15/8)"
    )
    ap.add_argument(
        "--reps", type=int, default=None, help="fresh sessions per daemon case (default 5, quick 3)"
    )
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument("--profile", action="store_true", help="cProfile sessiond's prepare on the largest size")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.sizes is None:
        args.sizes = "1000,10000" if args.quick else "1000,10000,50000"
    if args.daemon_sizes is None:
        args.daemon_sizes = "1000" if args.quick else "1000,10000"
    args.sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    args.daemon_sizes = [int(x) for x in args.daemon_sizes.split(",") if x.strip()]
    if args.reps is None:
        args.reps = 3 if args.quick else 5
    args.reps = max(1, args.reps)

    pi_pkg, pi_note = find_oracle(args.oracle)
    node = shutil.which("node")
    if pi_pkg is not None and node is None:
        pi_pkg, pi_note = None, "node not found on PATH: sessiond numbers only"
    elif pi_pkg is None:
        pi_note += ": sessiond numbers only"
    log(pi_note)

    scratch = Scratch(args.out / "compaction-tmp")
    t0 = time.perf_counter()
    try:
        res: dict[str, Any] = {
            "quick": args.quick,
            "seed": args.seed,
            "reps": args.reps,
            "pi": pi_note,
            "piAvailable": pi_pkg is not None,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
        }
        log("1. prepare vs Pi")
        res["prepare"] = bench_prepare(scratch, args, pi_pkg, node, log)
        log("2. threshold -> checkpoint through the daemon")
        res["daemon"] = bench_daemon(scratch, args, log)
    finally:
        scratch.cleanup()
    res["totalSeconds"] = time.perf_counter() - t0
    res["headline"] = headline(res)
    return res


def report(res: dict[str, Any]) -> None:
    print_report(res)
    print(f"\n{res['headline']}")
    print(f"(total {res['totalSeconds']:.0f} s)")


BENCH = Bench(
    "compaction",
    "benchmarks.compaction",
    "compaction preparation and the daemon's compaction",
    "Pi's own prepareCompaction + serializeConversation (pi-oracle); in-process prepare",
    {
        "smoke": ("--sizes", "1000", "--daemon-sizes", "1000", "--runs", "1", "--reps", "1"),
        "quick": ("--quick",),
        "full": (),
    },
    takes_oracle=True,
    goals=GOALS,
    quick="1k/10k for prepare, 1k through the daemon, 3 reps",
)


def extract(d: dict[str, Any]) -> Extract:
    """Prepare against Pi's prepareCompaction; the daemon against in-process prepare."""
    e = Extract(notes=[d["pi"]])
    prep_ms: dict[int, float] = {}
    for r in d["prepare"]:
        n, sd, pi = r["entries"], r["sessiond"], r.get("pi")
        prep_ms[n] = sd["prepareMs"]
        what = f"{n:,} entries"
        pi_prep = pi.get("prepareMs") if pi else None
        pi_ser = pi.get("serializeMs") if pi else None
        pi_ref = "Pi prepareCompaction" if pi else None
        nominal = r.get("nominal", n)
        e.add(f"prepare (steady), {what}", sd["prepareMs"], "ms", pi_ref, pi_prep, G_STEADY.get(nominal))
        e.add(
            f"prepare (first after open), {what}", sd["firstMs"], "ms", pi_ref, pi_prep, G_FIRST.get(nominal)
        )
        if pi is not None:
            e.add(
                f"Session.open + first prepare, {what}",
                sd.get("openFirstMs"),
                "ms",
                "Pi SessionManager.open + first prepareCompaction",
                pi["openMs"] + pi["prepareRuns"][0],
            )
            if sd.get("openFirstSerializeMs") is not None and pi.get("serializeRuns"):
                e.add(
                    f"Session.open + first prepare + serialize, {what}",
                    sd["openFirstSerializeMs"],
                    "ms",
                    "Pi open + first prepareCompaction + serializeConversation",
                    pi["openMs"] + pi["prepareRuns"][0] + pi["serializeRuns"][0],
                )
            if "loadContextMs" in pi:
                e.add(
                    f"Session.open, {what} ({r['fileMB']:.0f} MiB)",
                    sd["openMs"],
                    "ms",
                    "Pi SessionManager.open + buildSessionContext",
                    pi["loadContextMs"],
                    G_OPEN if nominal == 50_000 else None,
                )
        e.add(f"prepare (whole-context cache), {what}", sd.get("cachedMs"), "ms", pi_ref, pi_prep)
        e.add(
            f"serialize conversation, {what}",
            sd["serializeMs"],
            "ms",
            "Pi serializeConversation" if pi else None,
            pi_ser,
        )
        e.mismatches += [f"{what}: {c}" for c in r.get("checks", [])]
    ref = "in-process prepare (steady), same size"
    for r in d.get("daemon", {}).get("threshold", []):
        n = r["entries"]
        e.add(
            f"threshold append → committed checkpoint, {n:,} entries",
            r["completedMs"],
            "ms",
            ref,
            prep_ms.get(n),
            G_THRESHOLD if n == 10_000 else None,
        )
    for r in d.get("daemon", {}).get("manual", []):
        n = r["entries"]
        e.add(f"compaction/run, {n:,} entries", r["runMs"], "ms", ref, prep_ms.get(n))
    judged = {row.goal.key for row in e.rows if row.goal is not None}
    for goal in GOALS:
        if goal.key in judged:
            continue
        if goal is G_THRESHOLD:
            e.unmeasured[goal.key] = "10,000 entries not run through the daemon in this mode"
        elif not d.get("piAvailable"):
            e.unmeasured[goal.key] = f"needs Pi ({d['pi']})"
        else:
            e.unmeasured[goal.key] = "size not run in this mode"
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
