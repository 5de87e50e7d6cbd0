"""File-history throughput. Not collected by pytest; run
``.venv/bin/python -m tests.filehistory.bench_filehistory [directory]``.

1. Backing up a 100 MB file (``BlobStore.put_file``: read, hash, write, fsync, rename) against a
   plain ``shutil.copyfile`` of the same file (copy_file_range/sendfile, no hash, no fsync) and
   against copyfile + fsync.
2. Rewinding 1,000 small files (plan + undo snapshot + execute) against copying the same
   1,000 files back from a directory with ``shutil.copyfile`` (and with an fsync per file).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from sessiond.filehistory import BlobStore, FileHistory, FileState, Workspace, hash_fd

MB = 1024 * 1024


def best(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_put(tmp: Path) -> None:
    src = tmp / "big.bin"
    base = os.urandom(MB)
    with open(src, "wb") as f:
        for i in range(100):
            f.write(i.to_bytes(8, "big") + base[8:])
    n = [0]

    def put() -> None:
        n[0] += 1
        BlobStore(tmp / f"store{n[0]}").put_file(src)

    def copy() -> None:
        n[0] += 1
        shutil.copyfile(src, tmp / f"copy{n[0]}")

    def copy_fsync() -> None:
        n[0] += 1
        dst = tmp / f"copy{n[0]}"
        shutil.copyfile(src, dst)
        fd = os.open(dst, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    def hash_only() -> None:
        fd = os.open(src, os.O_RDONLY)
        hash_fd(fd)
        os.close(fd)

    tracemalloc.start()
    store = BlobStore(tmp / "store-mem")
    sha, size = store.put_file(src)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    work = tmp / "work"
    work.mkdir()
    workspace = Workspace(work)
    state = FileState.file(sha, 0o644, size)

    def restore() -> None:  # Workspace.apply: re-hash the blob while copying, fsync, rename
        n[0] += 1
        workspace.apply(f"restored{n[0]}.bin", state, store)

    runs = [
        ("put_file", put),
        ("copyfile", copy),
        ("copyfile+fsync", copy_fsync),
        ("sha256 only", hash_only),
        ("apply (restore)", restore),
    ]
    for name, fn in runs:
        t = best(fn)
        print(f"  {name:16s} {t * 1000:7.1f} ms  {100 / t:7.0f} MB/s")
    print(f"  put_file peak traced memory: {peak / 1024:.0f} KiB")


def bench_rewind(tmp: Path, count: int = 1000) -> None:
    cwd = tmp / "proj"
    backup = tmp / "plain-backup"
    for i in range(count):
        rel = f"pkg{i % 10}/mod{i}.py"
        for root in (cwd, backup):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(f"# module {i}\n".encode() + b"x = 1\n" * (i % 50 + 10))
    history = FileHistory(BlobStore(tmp / "store"), Workspace(cwd))
    history.checkpoint("p1")
    rels = [f"pkg{i % 10}/mod{i}.py" for i in range(count)]
    t = time.perf_counter()
    for rel in rels:
        history.track(rel, "p1")
    track_t = time.perf_counter() - t
    for rel in rels:
        (cwd / rel).write_bytes(b"edited\n")
        history.track(rel, "p1", "after")
    t0 = time.perf_counter()
    plan = history.plan("p1")
    t1 = time.perf_counter()
    history.undo_data(plan, "u1")
    t2 = time.perf_counter()
    result, _ = history.execute(plan)
    t3 = time.perf_counter()
    assert result.as_json()["totals"]["changes"] == count, result.as_json()["totals"]
    for rel in rels:  # edit again, for the plain copies
        (cwd / rel).write_bytes(b"edited\n")

    def plain() -> None:
        for rel in rels:
            shutil.copyfile(backup / rel, cwd / rel)

    def plain_fsync() -> None:
        for rel in rels:
            shutil.copyfile(backup / rel, cwd / rel)
            fd = os.open(cwd / rel, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

    plain_t = best(plain, 1)
    plain_fsync_t = best(plain_fsync, 1)
    total = t3 - t0
    print(f"  track before x{count}: {track_t * 1000:.0f} ms (hash + blob + fsync each)")
    print(
        f"  rewind x{count}: {total * 1000:.0f} ms = plan {(t1 - t0) * 1000:.0f}"
        f" + undo {(t2 - t1) * 1000:.0f} + execute {(t3 - t2) * 1000:.0f} ms"
        f" ({total / count * 1e6:.0f} us/file)"
    )
    print(f"  plain copyfile x{count}: {plain_t * 1000:.0f} ms; with fsync: {plain_fsync_t * 1000:.0f} ms")


def main() -> None:
    base = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        print("put 100 MB:")
        bench_put(Path(tmp))
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        print("rewind 1,000 small files:")
        bench_rewind(Path(tmp))


if __name__ == "__main__":
    main()
