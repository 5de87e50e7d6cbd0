"""inotify read from the event loop (``sessiond.service.inotify``): what a read reports, and
``Nearby``, the wait for a database's commits or a root directory's appearance that replaced
timers (issue 30: an idle daemon must not wake)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio
import pytest

from sessiond.service import inotify
from sessiond.service.inotify import Inotify, Nearby

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not inotify.available(), reason="no inotify here"),
]
WAIT = 3.0


async def woken(waiter: Nearby, timeout: float = WAIT) -> bool:
    """Whether ``wait`` returned before ``timeout`` (it returns quietly on its timeout too)."""
    t0 = anyio.current_time()
    await waiter.wait(timeout)
    return anyio.current_time() - t0 < timeout * 0.9


def test_a_read_names_the_changed_files_and_new_subdirectories(tmp_path: Path) -> None:
    notify = Inotify([str(tmp_path)], True)
    try:
        assert notify.read().paths == set()  # nothing queued: no block, nothing
        (tmp_path / "a.jsonl").write_bytes(b"{}\n")
        sub = tmp_path / "sub"
        sub.mkdir()
        changes = notify.read()
        assert changes.paths == {str(tmp_path / "a.jsonl"), str(sub)} and not changes.rescan
        (sub / "b.jsonl").write_bytes(b"{}\n")  # the new subdirectory got its watch at once
        assert notify.read().paths == {str(sub / "b.jsonl")}
        sub.rename(tmp_path.parent / f"{tmp_path.name}-away")
        assert notify.read().rescan  # its watch would follow it to a path unknown here
    finally:
        notify.close()


def test_a_missing_top_directory_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Inotify([str(tmp_path / "missing")], False)


async def test_nearby_wakes_for_a_commit_in_the_write_ahead_log(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    writer.commit()
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    reader.execute("SELECT * FROM t").fetchall()
    waiter = Nearby(db, ignore=("-shm",))
    try:
        assert waiter.arm()
        reader.execute("PRAGMA data_version").fetchone()  # the reader's own look wakes nothing
        (tmp_path / "other.log").write_text("x")  # another file in the directory: nothing
        assert not await woken(waiter, 0.3)
        writer.execute("INSERT INTO t VALUES (1)")
        writer.commit()
        assert await woken(waiter)
    finally:
        waiter.close()
        reader.close()
        writer.close()


async def test_nearby_follows_a_missing_directory_down_as_it_appears(tmp_path: Path) -> None:
    root = tmp_path / "home" / ".pi" / "agent" / "sessions"
    waiter = Nearby(root, appear_only=True)
    try:
        assert waiter.arm()  # on tmp_path, the nearest existing ancestor
        (tmp_path / "unrelated").write_text("x")  # another entry created there: not on the way
        os.utime(tmp_path / "unrelated")
        assert not await woken(waiter, 0.3)
        (tmp_path / "home").mkdir()
        assert await woken(waiter)
        for part in (tmp_path / "home" / ".pi", tmp_path / "home" / ".pi" / "agent", root):
            assert waiter.arm()
            assert not root.is_dir() or part == root
            part.mkdir()
            assert await woken(waiter)
        assert root.is_dir()
    finally:
        waiter.close()
