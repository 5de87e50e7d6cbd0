"""File history (docs/file-history.md): what tracking costs an agent per edit, rewinds, big backups.

Sections (every ratio is against a reference measured in the same run):

1. **tracking overhead per edit, through the daemon** - ``python -m sessiond serve`` on a scratch
   store; one session (``session/new``, its cwd a scratch workspace of 5 files: 1 KB, 12 KB,
   100 KB, 1 MB and a 20 MB binary; ``--quick``: 4 MB) runs N prompts (default 50, quick 10).
   Per prompt: ``session/append`` of the user message, ``fileHistory/checkpoint`` on it, then for
   each file edited in this prompt (1 KB every prompt, 12 KB every 2nd, 100 KB every 3rd, 1 MB
   every 5th, the big one every 10th: most files are unchanged between prompts)
   ``fileHistory/track`` (before), the edit (the whole file rewritten with a 16-byte change, as
   an agent's Write tool does: ``open(path, "wb")`` + ``write``), ``fileHistory/track`` with
   ``phase: "after"``; then the assistant's answer (``session/append`` with durability fsync: the
   floor of a track call, which appends its snapshot entry so). Timed in the client
   (request written -> response read). Per size: the two track calls (p50/p99) against the
   write itself and against ``shutil.copyfile`` of the edited file (the reference: a plain
   backup, no hash, no fsync); MB/s of the before-track (which backs the file up). The
   checkpoint per prompt against copying every tracked file once. The dedup ratio: bytes named
   by all snapshot entries (the session file's ``sessiond.fileSnapshot`` entries) / bytes held
   in the session's blob directory. The session file's growth: snapshot entries against the
   conversation's own entries. The reference copies are made between prompts (then
   ``os.sync()``, as before every timed phase), so the agent's calls run back to back.
2. **rewind of 1,000 files** (``--quick``: 200) - through the daemon: a prompt with its
   checkpoint, every file tracked before + rewritten + tracked after (per-call latency
   reported), then ``fileHistory/rewind`` to that prompt with ``dryRun``, for real, and the
   undo (a rewind to the returned ``undoId``); against a plain ``shutil.copyfile`` of the same
   files back from a directory, and copyfile + ``fsync`` per file. Then the same in-process
   (``FileHistory.track``/``plan``/``undo_data``/``execute``, no daemon): the difference is the
   RPC + persistence cost.
3. **backing up one 100 MB file** (``--quick``: 20 MB) - ``BlobStore.put_file`` (read, hash,
   write, fsync, rename) against ``shutil.copyfile`` (copy_file_range, no hash, no fsync) and
   copyfile + fsync; also SHA-256 alone, ``put_file`` of content already stored (dedup: still
   copied to a temporary file, then dropped) and ``Workspace.apply`` (the restore: re-hash while
   copying, fsync, rename). Best of 3 (quick 2); tracemalloc peak of one ``put_file``.

Run: ``.venv/bin/python -m benchmarks.filehistory [--quick] [--json] [--sections 1,2,3]
[--profile]``. Scratch files go to ``benchmarks/out/filehistory-tmp/`` (same disk as the
repo; removed at the end, daemons stopped even on errors). ``--profile`` also runs the agent of
section 1 and the rewind of section 2 in-process under cProfile (the daemon does its file work in
worker threads, which a ``python -m cProfile`` daemon would not show) and prints their top
functions; the measured rows are not profiled.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import Bench, Daemon, Extract, Scratch, log, main, pct, ratio, summary_ms, with_total
from sessiond.filehistory import BlobStore, FileHistory, FileState, Workspace, hash_fd
from sessiond_client import Client

KB = 1 << 10
MB = 1 << 20
SNAPSHOT = "sessiond.fileSnapshot"

Log = Callable[[str], None]


# --------------------------------------------------------------------------- helpers


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _best(fn: Callable[[], Any], repeat: int, between: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if between is not None:
            between()
    return min(times)


def _tree_bytes(root: Path) -> tuple[int, int]:
    """(files, bytes) under ``root``, temporaries included."""
    files = total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            files += 1
            total += os.stat(os.path.join(dirpath, name), follow_symlinks=False).st_size
    return files, total


def blob_dir(d: Daemon, session_id: str) -> Path:
    """Where the daemon keeps a session's file-history blobs."""
    return d.store / "file-history" / session_id


class Timed:
    """A client whose requests are timed (request written -> response read)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def __call__(self, method: str, params: dict[str, Any]) -> tuple[Any, float]:
        t = time.perf_counter()
        result = await self.client.request(method, params)
        return result, time.perf_counter() - t


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": int(time.time() * 1000)}


def _assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 1200,
            "output": 80,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 1280,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": int(time.time() * 1000),
    }


def _message(msg: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "message": msg}


def _text_content(size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = [f"name{rng.getrandbits(16):04x}" for _ in range(64)]
    lines = []
    total = 0
    i = 0
    while total < size:
        line = f"    value_{i} = compute({', '.join(rng.choices(words, k=4))})  # {i}\n".encode()
        lines.append(line)
        total += len(line)
        i += 1
    return b"".join(lines)[:size]


def _profile_top(prof: cProfile.Profile, path: Path, n: int) -> dict[str, list[dict[str, Any]]]:
    prof.dump_stats(str(path))
    stats = pstats.Stats(str(path), stream=io.StringIO())
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _) in stats.stats.items():  # type: ignore[attr-defined]  # not in typeshed's pstats
        where = file
        for marker in ("/sessiond/", "/site-packages/", "/lib/python"):
            if marker in file:
                where = file.split(marker, 1)[1]
                break
        rows.append({"func": f"{where}:{line}({func})", "calls": nc, "tottime": tt, "cumtime": ct})
    return {
        "byTottime": sorted(rows, key=lambda r: -r["tottime"])[:n],
        "byCumtime": sorted(rows, key=lambda r: -r["cumtime"])[:n],
    }


# --------------------------------------------------------------------------- 1. tracking per edit


def _files(big_mb: int) -> list[dict[str, Any]]:
    """The workspace of section 1: name, size, edit period (prompts), text or binary."""
    out = [
        {"path": "src/app.py", "size": 1 * KB, "every": 1},
        {"path": "src/models.py", "size": 12 * KB, "every": 2},
        {"path": "docs/guide.md", "size": 100 * KB, "every": 3},
        {"path": "data/fixtures.json", "size": 1 * MB, "every": 5},
    ]
    if big_mb > 0:
        out.append({"path": "assets/model.bin", "size": big_mb * MB, "every": 10, "binary": True})
    return out


def _label(size: int) -> str:
    return f"{size // MB} MB" if size >= MB else f"{size // KB} KB"


async def _tracking(d: Daemon, ws: Path, ref: Path, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    files = _files(args.big_mb)
    contents: dict[str, bytearray] = {}
    for i, f in enumerate(files):
        p = ws / f["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(f["size"]) if f.get("binary") else _text_content(f["size"], i)
        p.write_bytes(data)
        contents[f["path"]] = bytearray(data)
    client = await Client.connect_unix(d.socket)
    rpc = Timed(client)
    rng = random.Random(3)
    per: dict[str, dict[str, list[float]]] = {
        f["path"]: {"before": [], "after": [], "both": [], "write": [], "copy": []} for f in files
    }
    checkpoints: list[float] = []
    checkpoint_copy: list[float] = []
    checkpoint_bytes: list[int] = []
    appends: list[float] = []
    answers: list[float] = []
    try:
        await client.initialize("bench-filehistory")
        created = await client.request("session/new", {"cwd": str(ws)})
        sid, session_path = created["sessionId"], Path(created["path"])
        start_bytes = session_path.stat().st_size if session_path.exists() else 0  # written lazily
        t_run = time.perf_counter()
        for prompt in range(args.prompts):
            # The references first, untimed by the RPC rows, then a sync: the agent's steps below
            # run back to back, and no fsync of theirs pays for the references' dirty pages.
            tracked = [f for f in files if per[f["path"]]["before"]]
            if tracked:
                checkpoint_bytes.append(sum(len(contents[f["path"]]) for f in tracked))
                t = time.perf_counter()
                for f in tracked:
                    shutil.copyfile(ws / f["path"], ref / f["path"].replace("/", "_"))
                checkpoint_copy.append(time.perf_counter() - t)
            os.sync()
            appended, t = await rpc(
                "session/append",
                {"sessionId": sid, "entries": [_message(_user(f"prompt {prompt}: change things"))]},
            )
            appends.append(t)
            cp, t = await rpc("fileHistory/checkpoint", {"sessionId": sid, "messageId": appended["leafId"]})
            if cp["files"] != len(tracked):
                raise RuntimeError(f"checkpoint of {cp['files']} files, {len(tracked)} tracked")
            if tracked:
                checkpoints.append(t)
            edited = [f for f in files if prompt % f["every"] == 0]
            for f in edited:
                rel, path, rec = f["path"], ws / f["path"], per[f["path"]]
                _, t_before = await rpc("fileHistory/track", {"sessionId": sid, "path": rel})
                buf = contents[rel]
                off = rng.randrange(0, max(1, len(buf) - 16))
                buf[off : off + 16] = f"<edit {prompt:04d}....>".encode()[:16]
                t = time.perf_counter()
                with open(path, "wb") as out:
                    out.write(buf)
                t_write = time.perf_counter() - t
                _, t_after = await rpc("fileHistory/track", {"sessionId": sid, "path": rel, "phase": "after"})
                rec["before"].append(t_before)
                rec["after"].append(t_after)
                rec["both"].append(t_before + t_after)
                rec["write"].append(t_write)
            _, t = await rpc(
                "session/append",
                {"sessionId": sid, "entries": [_message(_assistant("done"))], "durability": "fsync"},
            )
            answers.append(t)
            os.sync()
            for f in edited:  # each file is edited at most once per prompt: this is the edited content
                t = time.perf_counter()
                shutil.copyfile(ws / f["path"], ref / f["path"].replace("/", "_"))
                per[f["path"]]["copy"].append(time.perf_counter() - t)
        wall = time.perf_counter() - t_run
        listed = await client.request("fileHistory/list", {"sessionId": sid})
        await client.request("session/close", {"sessionId": sid})
    finally:
        await client.close()
    # what the snapshots name, what the blob directory holds, what the session file gained
    named = 0
    snap_entries = snap_bytes = conv_entries = conv_bytes = 0
    kinds: dict[str, int] = {}
    for line in session_path.read_bytes().splitlines(keepends=True):
        entry = json.loads(line)
        if entry.get("type") == "custom" and entry.get("customType") == SNAPSHOT:
            data = entry["data"]
            named += sum(s.get("size") or 0 for s in data.get("files", {}).values())
            snap_entries += 1
            snap_bytes += len(line)
            kinds[data["kind"]] = kinds.get(data["kind"], 0) + 1
        elif entry.get("type") != "session":
            conv_entries += 1
            conv_bytes += len(line)
    stats = BlobStore(blob_dir(d, sid)).stats()
    dir_files, dir_bytes = _tree_bytes(blob_dir(d, sid))
    rows = []
    for f in files:
        rec = per[f["path"]]
        before_bytes = f["size"] * len(rec["before"])
        rows.append(
            {
                "path": f["path"],
                "size": f["size"],
                "edits": len(rec["before"]),
                "before": summary_ms(rec["before"]),
                "after": summary_ms(rec["after"]),
                "both": summary_ms(rec["both"]),
                "write": summary_ms(rec["write"]),
                "copy": summary_ms(rec["copy"]),
                "beforeMBps": before_bytes / MB / sum(rec["before"]) if rec["before"] else float("nan"),
                "copyMBps": before_bytes / MB / sum(rec["copy"]) if rec["copy"] else float("nan"),
            }
        )
        log(
            f"  {_label(f['size']):>6}: {len(rec['before'])} edits, track before+after p50 "
            f"{pct(rec['both'], 0.5) * 1e3:.2f} ms, write {pct(rec['write'], 0.5) * 1e3:.2f} ms, "
            f"copyfile {pct(rec['copy'], 0.5) * 1e3:.2f} ms"
        )
    every = {
        k: [t for rec in per.values() for t in rec[k]] for k in ("before", "after", "both", "write", "copy")
    }
    all_before_bytes = sum(f["size"] * len(per[f["path"]]["before"]) for f in files)
    res = {
        "prompts": args.prompts,
        "files": [{k: f[k] for k in ("path", "size", "every")} for f in files],
        "rows": rows,
        "all": {k: summary_ms(v) for k, v in every.items()},
        "allBeforeMBps": all_before_bytes / MB / sum(every["before"]),
        "allCopyMBps": all_before_bytes / MB / sum(every["copy"]),
        "edits": len(every["both"]),
        "checkpoint": summary_ms(checkpoints),
        "checkpointCopy": summary_ms(checkpoint_copy),
        "checkpointMBps": sum(checkpoint_bytes) / MB / sum(checkpoints) if checkpoints else float("nan"),
        "checkpointCopyMBps": sum(checkpoint_bytes) / MB / sum(checkpoint_copy)
        if checkpoints
        else float("nan"),
        "checkpointFiles": len(files),
        "append": summary_ms(appends),
        "answerFsync": summary_ms(answers),
        "namedBytes": named,
        "storedBytes": stats["bytes"],
        "blobs": stats["count"],
        "blobDirFiles": dir_files,
        "blobDirBytes": dir_bytes,
        "dedupRatio": named / stats["bytes"] if stats["bytes"] else float("nan"),
        "workspaceBytes": sum(f["size"] for f in files),
        "snapshotEntries": snap_entries,
        "snapshotKinds": kinds,
        "snapshotBytes": snap_bytes,
        "conversationEntries": conv_entries,
        "conversationBytes": conv_bytes,
        "sessionStartBytes": start_bytes,
        "sessionBytes": session_path.stat().st_size,
        "listedCheckpoints": len(listed["checkpoints"]),
        "wallSeconds": wall,
    }
    log(
        f"  checkpoint p50 {res['checkpoint']['p50Ms']:.1f} ms; dedup {res['dedupRatio']:.1f}x "
        f"({named / MB:.0f} MB named, {stats['bytes'] / MB:.0f} MB stored); snapshots "
        f"{snap_bytes / KB:.0f} KiB of the session file"
    )
    return res


def bench_tracking(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    base = scratch.new_dir("tracking")
    ws, ref = base / "ws", base / "ref"
    ws.mkdir()
    ref.mkdir()
    with Daemon(base) as d:
        d.start()
        res = asyncio.run(_tracking(d, ws, ref, args, log))
    if args.profile:
        prof = cProfile.Profile()
        _library_tracking(base, args, prof)
        res["libraryProfile"] = _profile_top(prof, base / "library.prof", args.profile_top)
    return res


def _library_tracking(base: Path, args: argparse.Namespace, prof: cProfile.Profile) -> None:
    """Section 1's agent in-process (``FileHistory.checkpoint`` / ``track``, nothing persisted) under
    ``prof`` (the setup is not): the daemon does this in worker threads, which cProfile would miss."""
    ws = base / "ws-library"
    files = _files(args.big_mb)
    contents = {}
    for i, f in enumerate(files):
        p = ws / f["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        contents[f["path"]] = bytearray(
            os.urandom(f["size"]) if f.get("binary") else _text_content(f["size"], i)
        )
        p.write_bytes(contents[f["path"]])
    history = FileHistory(BlobStore(base / "library-store"), Workspace(ws))
    prof.enable()
    for prompt in range(args.prompts):
        history.checkpoint(f"p{prompt}")
        for f in files:
            if prompt % f["every"]:
                continue
            history.track(f["path"], f"p{prompt}")
            buf = contents[f["path"]]
            buf[:16] = f"<edit {prompt:04d}....>".encode()[:16]
            (ws / f["path"]).write_bytes(buf)
            history.track(f["path"], f"p{prompt}", "after")
    prof.disable()


# --------------------------------------------------------------------------- 2. rewind


def _make_files(count: int, roots: list[Path]) -> list[str]:
    rels = [f"pkg{i % 10}/mod{i}.py" for i in range(count)]
    for i, rel in enumerate(rels):
        content = f"# module {i}\n".encode() + b"x = 1\n" * (i % 50 + 10)
        for root in roots:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content)
    return rels


def _edited(rel: str) -> bytes:
    return f"# edited {rel}\n".encode()


async def _rewind_rpc(d: Daemon, cwd: Path, rels: list[str], log: Log) -> dict[str, Any]:
    client = await Client.connect_unix(d.socket)
    rpc = Timed(client)
    before: list[float] = []
    after: list[float] = []
    try:
        await client.initialize("bench-filehistory")
        sid = (await client.request("session/new", {"cwd": str(cwd)}))["sessionId"]
        appended = await client.request(
            "session/append", {"sessionId": sid, "entries": [_message(_user("edit every module"))]}
        )
        p1 = appended["leafId"]
        await client.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": p1})
        for rel in rels:
            _, t = await rpc("fileHistory/track", {"sessionId": sid, "path": rel})
            before.append(t)
            (cwd / rel).write_bytes(_edited(rel))
            _, t = await rpc("fileHistory/track", {"sessionId": sid, "path": rel, "phase": "after"})
            after.append(t)
        os.sync()  # every timed phase starts with nothing dirty (fsync on ext4 may flush others' data)
        dry, t_dry = await rpc("fileHistory/rewind", {"sessionId": sid, "messageId": p1, "dryRun": True})
        done, t_real = await rpc("fileHistory/rewind", {"sessionId": sid, "messageId": p1})
        count = len(rels)
        if dry["written"] != count or done["written"] != count or done["conflicts"]:
            raise RuntimeError(
                f"rewind: dry run {dry['written']}, real {done['written']}/{done['conflicts']}"
            )
        os.sync()
        undo, t_undo = await rpc("fileHistory/rewind", {"sessionId": sid, "messageId": done["undoId"]})
        if undo["written"] != count:
            raise RuntimeError(f"undo wrote {undo['written']} of {count}")
        for rel in rels[:: max(1, count // 50)]:
            if (cwd / rel).read_bytes() != _edited(rel):
                raise RuntimeError(f"{rel}: not the edited content after the undo")
        await client.request("session/close", {"sessionId": sid})
    finally:
        await client.close()
    log(f"  daemon: dry run {t_dry * 1e3:.0f} ms, rewind {t_real * 1e3:.0f} ms, undo {t_undo * 1e3:.0f} ms")
    return {
        "trackBefore": summary_ms(before),
        "trackAfter": summary_ms(after),
        "trackBeforeTotal": sum(before),
        "trackAfterTotal": sum(after),
        "dryRunMs": t_dry * 1e3,
        "rewindMs": t_real * 1e3,
        "undoMs": t_undo * 1e3,
        "responseBytes": len(json.dumps(done)),
    }


def _rewind_library(tmp: Path, count: int, prof: cProfile.Profile | None = None) -> dict[str, Any]:
    """The rewind of the former tests/filehistory/bench_filehistory.py, in-process: no daemon, no
    persistence (FileHistory.track, then plan / undo_data / execute timed apart); under ``prof``
    if given (the setup is not)."""
    cwd = tmp / "proj"
    rels = _make_files(count, [cwd])
    history = FileHistory(BlobStore(tmp / "store"), Workspace(cwd))
    history.checkpoint("p1")
    os.sync()
    if prof is not None:
        prof.enable()
    t = time.perf_counter()
    for rel in rels:
        history.track(rel, "p1")
    track_t = time.perf_counter() - t
    for rel in rels:
        (cwd / rel).write_bytes(_edited(rel))
        history.track(rel, "p1", "after")
    os.sync()
    t0 = time.perf_counter()
    plan = history.plan("p1")
    t1 = time.perf_counter()
    history.undo_data(plan, "u1")
    t2 = time.perf_counter()
    result, _ = history.execute(plan)
    t3 = time.perf_counter()
    if prof is not None:
        prof.disable()
    changes = result.as_json()["totals"]["changes"]
    if changes != count:
        raise RuntimeError(f"library rewind changed {changes} of {count}")
    return {
        "trackBeforeMs": track_t * 1e3,
        "planMs": (t1 - t0) * 1e3,
        "undoDataMs": (t2 - t1) * 1e3,
        "executeMs": (t3 - t2) * 1e3,
        "totalMs": (t3 - t0) * 1e3,
    }


def bench_rewind(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    count = args.rewind_files
    base = scratch.new_dir("rewind")
    cwd, backup = base / "ws", base / "plain-backup"
    rels = _make_files(count, [cwd, backup])
    with Daemon(base) as d:
        d.start()
        res: dict[str, Any] = {"files": count, **asyncio.run(_rewind_rpc(d, cwd, rels, log))}

    def plain() -> None:
        for rel in rels:
            shutil.copyfile(backup / rel, cwd / rel)

    def plain_fsync() -> None:
        for rel in rels:
            shutil.copyfile(backup / rel, cwd / rel)
            _fsync_path(cwd / rel)

    def edit_again() -> None:
        for rel in rels:
            (cwd / rel).write_bytes(_edited(rel))
        os.sync()

    os.sync()
    res["copyfileMs"] = _best(plain, 1, edit_again) * 1e3
    res["copyfileFsyncMs"] = _best(plain_fsync, 1, os.sync) * 1e3
    lib_dir = scratch.new_dir("rewind-library")
    res["library"] = _rewind_library(lib_dir, count)
    if args.profile:
        shutil.rmtree(lib_dir)
        lib_dir.mkdir()
        prof = cProfile.Profile()
        _rewind_library(lib_dir, count, prof)
        res["libraryProfile"] = _profile_top(prof, base / "library.prof", args.profile_top)
    shutil.rmtree(lib_dir, ignore_errors=True)
    lib = res["library"]
    log(
        f"  library: plan {lib['planMs']:.0f} + undo {lib['undoDataMs']:.0f} + execute "
        f"{lib['executeMs']:.0f} ms; copyfile {res['copyfileMs']:.0f} ms, "
        f"+fsync {res['copyfileFsyncMs']:.0f} ms"
    )
    return res


# --------------------------------------------------------------------------- 3. one big file


def bench_put(scratch: Scratch, args: argparse.Namespace, log: Log) -> dict[str, Any]:
    tmp = scratch.new_dir("put")
    size_mb = args.put_mb
    src = tmp / "big.bin"
    base = os.urandom(MB)
    with open(src, "wb") as f:
        for i in range(size_mb):
            f.write(i.to_bytes(8, "big") + base[8:])
    n = [0]
    junk: list[Path] = []

    def clean() -> None:  # untimed: keep the disk and the page cache from filling up
        while junk:
            p = junk.pop()
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
        os.sync()

    def put() -> None:
        n[0] += 1
        junk.append(tmp / f"store{n[0]}")
        BlobStore(tmp / f"store{n[0]}").put_file(src)

    def copy() -> None:
        n[0] += 1
        junk.append(tmp / f"copy{n[0]}")
        shutil.copyfile(src, tmp / f"copy{n[0]}")

    def copy_fsync() -> None:
        n[0] += 1
        dst = tmp / f"copy{n[0]}"
        junk.append(dst)
        shutil.copyfile(src, dst)
        _fsync_path(dst)

    def hash_only() -> None:
        fd = os.open(src, os.O_RDONLY)
        try:
            hash_fd(fd)
        finally:
            os.close(fd)

    tracemalloc.start()
    store = BlobStore(tmp / "store-mem")
    sha, size = store.put_file(src)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    def put_again() -> None:  # content already stored: copied to a temp file, then dropped
        store.put_file(src)

    work = tmp / "work"
    work.mkdir()
    workspace = Workspace(work)
    state = FileState.file(sha, 0o644, size)

    def restore() -> None:  # Workspace.apply: re-hash the blob while copying, fsync, rename
        n[0] += 1
        junk.append(work / f"restored{n[0]}.bin")
        workspace.apply(f"restored{n[0]}.bin", state, store)

    os.sync()
    runs = [
        ("copyfile", "copyfile (reference)", copy),
        ("copyfileFsync", "copyfile + fsync", copy_fsync),
        ("hashOnly", "sha256 only", hash_only),
        ("putFile", "put_file", put),
        ("putFileDedup", "put_file, already stored", put_again),
        ("apply", "apply (restore)", restore),
    ]
    res: dict[str, Any] = {"mb": size_mb, "repeat": args.put_repeat, "peakTracedBytes": peak, "rows": {}}
    for key, name, fn in runs:
        t = _best(fn, args.put_repeat, clean)
        res["rows"][key] = {"name": name, "ms": t * 1e3, "MBps": size_mb / t}
        log(f"  {name:26s} {t * 1e3:7.1f} ms  {size_mb / t:7.0f} MB/s")
    clean()
    return res


# --------------------------------------------------------------------------- report


def _mbps(v: float) -> str:
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def print_report(res: dict[str, Any]) -> None:
    print(f"\nsessiond file-history benchmark; scratch on {res['disk']}{' (QUICK)' if res['quick'] else ''}")
    if "tracking" in res:
        _print_tracking(res["tracking"])
    if "rewind" in res:
        _print_rewind(res["rewind"])
    if "put" in res:
        _print_put(res["put"])


def _print_tracking(t: dict[str, Any]) -> None:
    p = print
    p(
        f"\n1. tracking per edit through the daemon: {t['prompts']} prompts, {t['edits']} edits of "
        f"{len(t['files'])} files ({_label(t['workspaceBytes'])} in all)"
    )
    p(
        f"{'file':<9}{'edits':>6}{'before':>9}{'after':>9}{'both':>9}{'both':>9}{'write':>9}"
        f"{'copyfile':>10}{'both/':>7}{'both/':>7}{'before':>9}{'copyfile':>10}"
    )
    p(
        f"{'':<9}{'':>6}{'p50 ms':>9}{'p50 ms':>9}{'p50 ms':>9}{'p99 ms':>9}{'p50 ms':>9}"
        f"{'p50 ms':>10}{'write':>7}{'copy':>7}{'MB/s':>9}{'MB/s':>10}"
    )
    rows = [(_label(r["size"]), r) for r in t["rows"]]
    rows.append(
        (
            "all",
            {**t["all"], "edits": t["edits"], "beforeMBps": t["allBeforeMBps"], "copyMBps": t["allCopyMBps"]},
        )
    )
    for name, r in rows:
        both, write, copy = r["both"], r["write"], r["copy"]
        p(
            f"{name:<9}{r['edits']:>6}{r['before']['p50Ms']:>9.2f}{r['after']['p50Ms']:>9.2f}"
            f"{both['p50Ms']:>9.2f}{both['p99Ms']:>9.2f}{write['p50Ms']:>9.2f}{copy['p50Ms']:>10.2f}"
            f"{ratio(both['p50Ms'], write['p50Ms']):>7}{ratio(both['p50Ms'], copy['p50Ms']):>7}"
            f"{_mbps(r['beforeMBps']):>9}{_mbps(r['copyMBps']):>10}"
        )
    p("   before/after: the fileHistory/track round trips (before backs the file up; after hashes it);")
    p("   both = before + after, per edit; write = the agent's own open('wb') + write of the whole file;")
    p("   copyfile = shutil.copyfile of the edited file (the reference: a backup without hash or fsync);")
    p("   MB/s = file bytes / time of the before-track (of the copyfile)")
    c, cc, ans = t["checkpoint"], t["checkpointCopy"], t["answerFsync"]
    p(
        f"   checkpoint per prompt, {t['checkpointFiles']} tracked files ({_label(t['workspaceBytes'])}): "
        f"p50 {c['p50Ms']:.1f} ms, p99 {c['p99Ms']:.1f} ms, {t['checkpointMBps']:.0f} MB/s\n"
        f"     copyfile of the same files: p50 {cc['p50Ms']:.1f} ms, {t['checkpointCopyMBps']:.0f} MB/s; "
        f"checkpoint / copyfile x {ratio(c['p50Ms'], cc['p50Ms'])}"
    )
    p(
        f"   floor of a track call (it appends its snapshot entry with fsync): session/append of the\n"
        f"     answer with durability fsync, right after the last track: p50 {ans['p50Ms']:.2f} ms, "
        f"p99 {ans['p99Ms']:.2f} ms\n"
        f"     (the prompt's buffered append, first request after an untimed sync: p50 "
        f"{t['append']['p50Ms']:.2f} ms)"
    )
    p(
        f"   dedup: the snapshots name {t['namedBytes'] / MB:.1f} MB, the blob directory holds "
        f"{t['storedBytes'] / MB:.1f} MB in {t['blobs']} blobs: {t['dedupRatio']:.1f}x\n"
        f"     (everything in the directory: {t['blobDirFiles']} files, {t['blobDirBytes'] / MB:.1f} MB)"
    )
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(t["snapshotKinds"].items()))
    growth = t["sessionBytes"] - t["sessionStartBytes"]
    p(
        f"   session file: +{growth / KB:.0f} KiB, of which {t['snapshotEntries']} snapshot entries "
        f"({kinds}) {t['snapshotBytes'] / KB:.0f} KiB\n"
        f"     = {t['snapshotBytes'] / t['prompts'] / KB:.1f} KiB per prompt, "
        f"{ratio(t['snapshotBytes'], t['conversationBytes'])}x the {t['conversationEntries']} (short, "
        f"synthetic) conversation entries ({t['conversationBytes'] / KB:.0f} KiB)"
    )
    if "libraryProfile" in t:
        _print_profile("section 1's agent in-process (checkpoint + track)", t["libraryProfile"])


def _print_rewind(r: dict[str, Any]) -> None:
    p = print
    n = r["files"]
    lib = r["library"]
    p(f"\n2. rewind of {n:,} small files")
    tb, ta = r["trackBefore"], r["trackAfter"]
    p(
        f"   tracking them through the daemon: before p50 {tb['p50Ms']:.2f} ms, p99 {tb['p99Ms']:.2f} ms "
        f"({r['trackBeforeTotal']:.1f} s in all); after p50 {ta['p50Ms']:.2f} ms, p99 {ta['p99Ms']:.2f} ms\n"
        f"     in-process FileHistory.track (before): {lib['trackBeforeMs'] / n:.2f} ms per file"
    )
    p(f"{'':<40}{'ms':>9}{'us/file':>9}{'x copy':>8}{'x +fsync':>9}")
    ref, ref_sync = r["copyfileMs"], r["copyfileFsyncMs"]
    rows = [
        ("copyfile from a directory (reference)", ref),
        ("copyfile + fsync per file", ref_sync),
        ("daemon: rewind, dry run", r["dryRunMs"]),
        ("daemon: rewind", r["rewindMs"]),
        ("daemon: rewind to the undo id", r["undoMs"]),
        ("in-process: plan (= dry run)", lib["planMs"]),
        ("in-process: undo_data", lib["undoDataMs"]),
        ("in-process: execute", lib["executeMs"]),
        ("in-process: plan + undo_data + execute", lib["totalMs"]),
    ]
    for name, ms in rows:
        p(f"{name:<40}{ms:>9.0f}{ms / n * 1e3:>9.0f}{ratio(ms, ref):>8}{ratio(ms, ref_sync):>9}")
    p(
        f"   RPC + persistence share of the rewind: {r['rewindMs'] - lib['totalMs']:.0f} ms "
        f"(daemon / in-process x {ratio(r['rewindMs'], lib['totalMs'])}); dry run / plan x "
        f"{ratio(r['dryRunMs'], lib['planMs'])}\n"
        f"     the rewind's response: {r['responseBytes'] / KB:.0f} KiB of JSON; the rewind to the undo "
        f"id backs up content already stored: no new blob to fsync"
    )
    if "libraryProfile" in r:
        _print_profile(
            "in-process rewind of section 2 (track + plan + undo_data + execute)", r["libraryProfile"]
        )


def _print_put(r: dict[str, Any]) -> None:
    p = print
    p(f"\n3. backing up one {r['mb']} MB file (best of {r['repeat']})")
    p(f"{'':<28}{'ms':>9}{'MB/s':>8}{'x copy':>8}{'x +fsync':>9}")
    rows = r["rows"]
    ref, ref_sync = rows["copyfile"]["ms"], rows["copyfileFsync"]["ms"]
    for row in rows.values():
        p(
            f"{row['name']:<28}{row['ms']:>9.1f}{row['MBps']:>8.0f}{ratio(row['ms'], ref):>8}"
            f"{ratio(row['ms'], ref_sync):>9}"
        )
    p(f"   put_file peak traced memory (tracemalloc): {r['peakTracedBytes'] / KB:.0f} KiB")


def _print_profile(what: str, prof: dict[str, list[dict[str, Any]]]) -> None:
    p = print
    for title, key in (("own time", "tottime"), ("cumulative", "cumtime")):
        rows = prof["byTottime" if key == "tottime" else "byCumtime"]
        p(f"   profile of the {what}, top by {title}:")
        for row in rows:
            p(f"     {row[key]:>8.3f} s {row['calls']:>8} {row['func']}")


# --------------------------------------------------------------------------- main


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sections", default="1,2,3", help="which sections to run (default all)")
    ap.add_argument("--prompts", type=int, help="section 1: prompts (default 50; quick 10)")
    ap.add_argument("--big-mb", type=int, help="section 1: the big file in MB (default 20; quick 4; 0: none)")
    ap.add_argument("--rewind-files", type=int, help="section 2: files (default 1000; quick 200)")
    ap.add_argument("--put-mb", type=int, help="section 3: file size in MB (default 100; quick 20)")
    ap.add_argument("--profile", action="store_true", help="cProfile the in-process equivalents of 1 and 2")
    ap.add_argument("--profile-top", type=int, default=15, help="functions per profile table")


def run(args: argparse.Namespace) -> dict[str, Any]:
    sections = {int(x) for x in args.sections.split(",") if x.strip()}
    q = args.quick
    args.prompts = args.prompts or (10 if q else 50)
    args.big_mb = args.big_mb if args.big_mb is not None else (4 if q else 20)
    args.rewind_files = args.rewind_files or (200 if q else 1000)
    args.put_mb = args.put_mb or (20 if q else 100)
    args.put_repeat = 2 if q else 3

    scratch = Scratch(args.out / "filehistory-tmp")
    t0 = time.perf_counter()
    try:
        res: dict[str, Any] = {
            "quick": q,
            "disk": scratch.disk(),
        }
        if 1 in sections:
            log(f"1. tracking per edit ({args.prompts} prompts)")
            res["tracking"] = bench_tracking(scratch, args, log)
        if 2 in sections:
            log(f"2. rewind of {args.rewind_files} files")
            res["rewind"] = bench_rewind(scratch, args, log)
        if 3 in sections:
            log(f"3. backing up {args.put_mb} MB")
            res["put"] = bench_put(scratch, args, log)
    finally:
        scratch.cleanup()
    res["totalSeconds"] = time.perf_counter() - t0
    return res


report = with_total(print_report)


BENCH = Bench(
    "filehistory",
    "benchmarks.filehistory",
    "file history: tracking, checkpoints, rewind, backups",
    "the edit's own write; shutil.copyfile (+ fsync); the in-process FileHistory",
    {
        "smoke": ("--prompts", "2", "--big-mb", "0", "--rewind-files", "10", "--put-mb", "1"),
        "quick": ("--quick",),
        "full": (),
    },
    quick="10 prompts, 200 files, 20 MB (< 30 s)",
)


def _size(n: int) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n / 1024:g} KB"


def extract(d: dict[str, Any]) -> Extract:
    """Tracking, rewind and backups against the write itself and plain copies."""
    e = Extract(notes=[f"scratch on {d.get('disk', '?')}"])
    t = d.get("tracking")
    if t:
        for r in t["rows"]:
            what = f"{_size(r['size'])} file ({r['edits']} edits)"
            e.add(
                f"track before + after p50, {what}",
                r["both"]["p50Ms"],
                "ms",
                "the edit's own write",
                r["write"]["p50Ms"],
            )
            e.add(
                f"track before + after p50, {what}",
                r["both"]["p50Ms"],
                "ms",
                "shutil.copyfile",
                r["copy"]["p50Ms"],
            )
        a = t["all"]
        e.add(
            f"track before + after p50, all {t['edits']} edits",
            a["both"]["p50Ms"],
            "ms",
            "shutil.copyfile",
            a["copy"]["p50Ms"],
        )
        e.add(
            "before-track throughput, all edits",
            t["allBeforeMBps"],
            "MB/s",
            "shutil.copyfile",
            t["allCopyMBps"],
        )
        e.add(
            "track after p50, all edits",
            a["after"]["p50Ms"],
            "ms",
            "fsync'd session/append",
            t["answerFsync"]["p50Ms"],
        )
        e.add(
            f"checkpoint p50 ({t['checkpointFiles']} files)",
            t["checkpoint"]["p50Ms"],
            "ms",
            "copyfile of the tracked files",
            t["checkpointCopy"]["p50Ms"],
        )
        e.add("dedup ratio (bytes named / bytes stored)", t["dedupRatio"], "x")
    rw = d.get("rewind")
    if rw:
        n = f"{rw['files']:,} files"
        e.add(f"rewind dry run, {n}", rw["dryRunMs"], "ms", "copyfile of the same files", rw["copyfileMs"])
        e.add(f"rewind, {n}", rw["rewindMs"], "ms", "copyfile of the same files", rw["copyfileMs"])
        e.add(f"rewind, {n}", rw["rewindMs"], "ms", "copyfile + fsync per file", rw["copyfileFsyncMs"])
        e.add(
            f"rewind, {n}",
            rw["rewindMs"],
            "ms",
            "in-process plan + undo_data + execute",
            rw["library"]["totalMs"],
        )
        e.add(
            f"undo of the rewind, {n}", rw["undoMs"], "ms", "copyfile + fsync per file", rw["copyfileFsyncMs"]
        )
    put = d.get("put")
    if put:
        rows, what = put["rows"], f"{put['mb']} MB file"
        for key, label in (
            ("putFile", "BlobStore.put_file"),
            ("putFileDedup", "put_file, content already stored"),
        ):
            e.add(f"{label}, {what}", rows[key]["ms"], "ms", "shutil.copyfile", rows["copyfile"]["ms"])
            e.add(f"{label}, {what}", rows[key]["ms"], "ms", "copyfile + fsync", rows["copyfileFsync"]["ms"])
        e.add(
            f"Workspace.apply (restore), {what}",
            rows["apply"]["ms"],
            "ms",
            "copyfile + fsync",
            rows["copyfileFsync"]["ms"],
        )
        e.add(
            f"SHA-256 alone, {what}", rows["hashOnly"]["ms"], "ms", "shutil.copyfile", rows["copyfile"]["ms"]
        )
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
