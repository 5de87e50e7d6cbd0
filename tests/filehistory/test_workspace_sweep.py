"""Temporary copies left by a killed rewind are removed; anything else that looks alike is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sessiond.filehistory.workspace import sweep_stale_temporaries


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_copies_of_dead_processes_are_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale = f".sessiond-{dead}-{'a' * 16}.tmp"
    live = f".sessiond-{os.getppid()}-{'b' * 16}.tmp"  # a running process: maybe mid-rewind
    own = f".sessiond-{os.getpid()}-{'c' * 16}.tmp"
    lookalikes = [f".sessiond-{dead}-short.tmp", f"sessiond-{dead}-{'d' * 16}.tmp", "notes.tmp"]
    for name in [stale, live, own, *lookalikes]:
        (tmp_path / name).write_text("x")
    (tmp_path / f".sessiond-{dead}-{'e' * 16}.tmp.d").mkdir()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sweep_stale_temporaries(fd) == [stale]
    finally:
        os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live, own, *lookalikes, f".sessiond-{dead}-{'e' * 16}.tmp.d"]
    )
