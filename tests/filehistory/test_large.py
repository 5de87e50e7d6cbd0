"""A 100 MB file is backed up and restored in 64 KiB pieces: memory stays flat."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from .helpers import Session

MB = 1024 * 1024
LIMIT = 10 * MB


def _generate(path: Path, size_mb: int) -> str:
    """Write a file of ``size_mb`` MiB, 1 MiB at a time (distinct chunks); returns its sha256."""
    digest = hashlib.sha256()
    base = os.urandom(MB)
    with open(path, "wb") as f:
        for i in range(size_mb):
            chunk = i.to_bytes(8, "big") + base[8:]
            digest.update(chunk)
            f.write(chunk)
    return digest.hexdigest()


def _sha(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(MB):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.slow
def test_a_100_mb_file_round_trips_in_little_memory(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    big = cwd / "big.bin"
    original = _generate(big, 100)
    s = Session(tmp_path / "store", cwd)
    s.checkpoint("p1")

    tracemalloc.start()
    try:
        data = s.track("big.bin")  # the backup: streamed into the blob store
        _, peak_put = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data["files"]["big.bin"]["size"] == 100 * MB
    assert data["files"]["big.bin"]["blob"] == original
    assert peak_put < LIMIT, peak_put

    with open(big, "r+b") as f:  # the agent's edit in the middle
        f.seek(50 * MB)
        f.write(b"edited by the agent")
    s.track("big.bin", phase="after")
    edited = _sha(big)

    tracemalloc.start()
    try:
        _, result = s.rewind("p1")  # plan (hash), undo (backup of the edit), execute (restore)
        _, peak_rewind = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(f.action, f.status) for f in result.files] == [("write", "ok")]
    assert _sha(big) == original
    assert peak_rewind < LIMIT, peak_rewind

    s.rewind(result.undo_id)
    assert _sha(big) == edited
    assert s.blobs.stats() == {"count": 2, "bytes": 200 * MB}
