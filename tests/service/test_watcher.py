"""The file watcher: what it reports for appends, rewrites, replaces, deletes and new files, in
inotify and in polling mode; no echo of the daemon's own writes, nothing lost on restart."""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import os
import sys
import threading
import time
import types
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiond.service import inotify as inotify_module
from sessiond.service import watcher as watcher_module
from sessiond.service.watcher import POLL_ENV, FileEvent, Watcher

pytestmark = pytest.mark.anyio

try:
    import watchfiles  # noqa: F401

    HAVE_WATCHFILES = True
except ImportError:  # pragma: no cover - watchfiles is a dependency
    HAVE_WATCHFILES = False

HAVE_INOTIFY = inotify_module.available()

MODES = [
    pytest.param("inotify", marks=pytest.mark.skipif(not HAVE_INOTIFY, reason="no inotify here")),
    pytest.param(
        "watchfiles", marks=pytest.mark.skipif(not HAVE_WATCHFILES, reason="watchfiles is not installed")
    ),
    "poll",
]
"""``inotify``: the kernel's events read on the event loop (the default on Linux);
``watchfiles``: watchfiles' ``RustNotify`` in threads (where inotify is not available; the
watcher's ``mode`` says ``inotify`` for both); ``poll``: the polling fallback."""


@pytest.fixture(autouse=True)
def _backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``watchfiles`` case runs without the direct inotify reader."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("mode") == "watchfiles":
        monkeypatch.setattr(inotify_module, "available", lambda: False)


POLL_INTERVAL = 0.02
TIMEOUT = 3.0


class Recorder:
    """Collects the watcher's batches; tests wait for what they expect with a timeout."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[list[FileEvent]](math.inf)
        self.batches: list[list[FileEvent]] = []

    def __call__(self, events: list[FileEvent]) -> None:
        self.send.send_nowait(list(events))

    async def until(
        self, done: Callable[[list[FileEvent]], bool], timeout: float = TIMEOUT
    ) -> list[FileEvent]:
        """Events received from now on until ``done(events)`` holds."""
        events: list[FileEvent] = []
        with anyio.move_on_after(timeout):
            while not done(events):
                batch = await self.receive.receive()
                self.batches.append(batch)
                events.extend(batch)
            return events
        pytest.fail(f"timed out; got {[(e.kind, e.path.name, e.previous_size, e.size) for e in events]}")

    async def next(self, timeout: float = TIMEOUT) -> list[FileEvent]:
        return await self.until(bool, timeout)

    async def nothing(self, duration: float) -> None:
        with anyio.move_on_after(duration):
            batch = await self.receive.receive()
            pytest.fail(f"unexpected events {batch}")


@contextlib.asynccontextmanager
async def running(mode: str, *dirs: Path, **kw: Any) -> AsyncIterator[tuple[Watcher, Recorder]]:
    rec = Recorder()
    callback = kw.pop("callback", rec)
    if mode == "poll":
        kw.setdefault("poll_interval", POLL_INTERVAL)
    w = Watcher(callback, **kw)
    for d in dirs:
        w.watch_dir(d)
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.run)
        await started(w)
        assert w.mode == ("inotify" if mode == "watchfiles" else mode)
        try:
            yield w, rec
        finally:
            w.stop()


async def started(w: Watcher) -> None:
    """Until the first scan ran (the kernel watches exist then)."""
    with anyio.fail_after(TIMEOUT):
        while w.batches == 0:
            await anyio.sleep(0.005)


def append(path: Path, data: bytes) -> int:
    with path.open("ab") as f:
        f.write(data)
    return path.stat().st_size


def grown_to(path: Path, size: int) -> Callable[[list[FileEvent]], bool]:
    return lambda evs: any(e.path == path and e.kind == "grown" and e.size == size for e in evs)


def kinds(events: list[FileEvent]) -> list[tuple[str, str]]:
    return [(e.kind, e.path.name) for e in events]


async def grows_alone(rec: Recorder, path: Path) -> None:
    """Append a line to ``path``: the watcher reports its growth and nothing else meanwhile."""
    size = append(path, b"{}\n")
    assert kinds(await rec.until(grown_to(path, size))) == [("grown", path.name)]


@pytest.fixture
def session_dir(tmp_path: Path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    return d


# --------------------------------------------------------------------------- what is reported


@pytest.mark.parametrize("mode", MODES)
async def test_appends_are_grown_with_sizes(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b'{"type":"session"}\n')
    start = s.stat().st_size
    async with running(mode, session_dir) as (w, rec):
        size = append(s, b'{"a":1}\n')
        events = await rec.until(grown_to(s, size))
        assert events == [FileEvent("grown", s, size, s.stat().st_ino, start)]
        sizes = [append(s, b'{"b":%d}\n' % i) for i in range(5)]  # may coalesce
        events = await rec.until(grown_to(s, sizes[-1]))
        assert all(e.kind == "grown" for e in events)
        assert events[0].previous_size == size
        assert [e.previous_size for e in events[1:]] == [e.size for e in events[:-1]]
        assert w.known(s) == (sizes[-1], s.stat().st_ino)


@pytest.mark.parametrize("mode", MODES)
async def test_partial_line_then_its_completion(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (_, rec):
        half = append(s, b'{"type":"mess')
        events = await rec.until(grown_to(s, half))
        assert events[-1].previous_size == 3
        full = append(s, b'age"}\n')
        events = await rec.until(grown_to(s, full))
        assert [(e.kind, e.previous_size, e.size) for e in events] == [("grown", half, full)]


@pytest.mark.parametrize("mode", MODES)
async def test_truncate_and_rewrite_is_rewritten(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n" * 10)
    ino = s.stat().st_ino
    async with running(mode, session_dir) as (_, rec):
        with s.open("r+b") as f:
            f.truncate(0)
            f.write(b'{"x":1}\n')
        events = await rec.next()
        assert events == [FileEvent("rewritten", s, 8, ino, 30)]


@pytest.mark.parametrize("mode", MODES)
async def test_atomic_replace_then_append(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n" * 10)
    async with running(mode, session_dir) as (w, rec):
        tmp = session_dir / "s.jsonl.tmp"
        tmp.write_bytes(b'{"new":true}\n' * 3)
        os.replace(tmp, s)
        new_ino = s.stat().st_ino
        events = await rec.next()
        assert events == [FileEvent("replaced", s, 39, new_ino, 30)]  # the temp file is not reported
        size = append(s, b'{"after":1}\n')
        events = await rec.until(grown_to(s, size))
        assert events == [FileEvent("grown", s, size, new_ino, 39)]
        assert w.known(s) == (size, new_ino)


@pytest.mark.parametrize("mode", MODES)
async def test_delete_and_create(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (w, rec):
        s.unlink()
        assert await rec.next() == [FileEvent("deleted", s, 0, None, 3)]
        assert w.known(s) is None
        n = session_dir / "n.jsonl"
        n.write_bytes(b"{}\n{}\n")
        (session_dir / "notes.txt").write_text("not a session")
        assert await rec.next() == [FileEvent("created", n, 6, n.stat().st_ino, None)]
        await grows_alone(rec, n)


@pytest.mark.parametrize("mode", MODES)
async def test_temp_file_appearing_and_vanishing_is_ignored(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (_, rec):
        t = session_dir / "tmp123.jsonl"
        t.write_bytes(b"{}\n")
        t.unlink()
        await grows_alone(rec, s)


@pytest.mark.parametrize("mode", MODES)
async def test_batch_is_sorted_by_path(mode: str, session_dir: Path) -> None:
    names = ["d.jsonl", "b.jsonl", "a.jsonl", "c.jsonl"]
    async with running(mode, session_dir) as (_, rec):
        for name in names:
            (session_dir / name).write_bytes(b"{}\n")
        events = await rec.until(lambda evs: len(evs) == 4)
        assert sorted(e.path.name for e in events) == sorted(names)
        for batch in rec.batches:
            assert [e.path for e in batch] == sorted(e.path for e in batch)


# --------------------------------------------------------------------------- the daemon's own writes


@pytest.mark.parametrize("mode", MODES)
async def test_expect_suppresses_own_write_not_the_next_external_one(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (w, rec):
        own = append(s, b'{"own":1}\n')
        w.expect(s, own)  # right after the write, as the daemon does (same loop step)
        # With kernel watches expect() looks once (the write has landed: seen, settled); a
        # poller's expectation moves nothing by itself, its next look settles it.
        assert w.known(s) == (own if mode != "poll" else 3, s.stat().st_ino)
        await rec.nothing(0.15)
        assert w.known(s) == (own, s.stat().st_ino)
        own2 = append(s, b'{"own":2}\n')
        w.expect(s, own2)
        external = append(s, b'{"external":1}\n')  # lands right after the daemon's write
        events = await rec.until(grown_to(s, external))
        assert [(e.kind, e.previous_size, e.size) for e in events] == [("grown", own2, external)]


@pytest.mark.parametrize("mode", [m for m in MODES if m != "poll"])
async def test_a_truncation_back_to_the_size_before_an_own_write_is_reported(
    mode: str, session_dir: Path
) -> None:
    """Another program truncates the file back to its size before the daemon's write, before
    the watcher read the write's kernel event: not the daemon's write still on its way (which
    the sizes alone cannot tell), since expect() looked when the write had landed."""
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (w, rec):
        own = append(s, b'{"own":1}\n')
        w.expect(s, own)
        with s.open("r+b") as f:  # no await in between: the watcher has read no event yet
            f.truncate(3)
        events = await rec.next()
        assert [(e.kind, e.previous_size, e.size) for e in events] == [("rewritten", own, 3)]


@pytest.mark.parametrize("mode", MODES)
async def test_expect_before_the_write_lands(mode: str, session_dir: Path) -> None:
    """A writer thread: expect() first, the look may come before the bytes: no shrink, no echo."""
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (w, rec):
        w.expect(s, 3 + 10)
        w.track(s, 3)  # forces a look now: the file is still at 3 -> nothing, expectation kept
        w.expect(s, 13)
        await anyio.sleep(0.05)
        await anyio.to_thread.run_sync(append, s, b'{"own":1}\n')
        await rec.nothing(0.15)
        ext = append(s, b"{}\n")
        assert [(e.kind, e.previous_size) for e in await rec.until(grown_to(s, ext))] == [("grown", 13)]


@pytest.mark.parametrize("mode", MODES)
async def test_expect_a_new_file_and_an_own_replace(mode: str, session_dir: Path) -> None:
    async with running(mode, session_dir) as (w, rec):
        n = session_dir / "new.jsonl"
        n.write_bytes(b'{"type":"session"}\n')
        w.expect(n, n.stat().st_size)  # the daemon created it: no "created"
        tmp = session_dir / "new.jsonl.tmp"
        tmp.write_bytes(b'{"type":"session","v":3}\n')
        w.expect(n, tmp.stat().st_size, tmp.stat().st_ino)  # its own atomic rewrite
        os.replace(tmp, n)
        await rec.nothing(0.15)
        size = append(n, b"{}\n")
        events = await rec.until(grown_to(n, size))
        assert [(e.kind, e.previous_size) for e in events] == [("grown", 25)]


@pytest.mark.parametrize("mode", MODES)
async def test_track_with_an_older_state_reports_the_difference(mode: str, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"  # not a watched directory: tracking watches it
    elsewhere.mkdir()
    s = elsewhere / "s.jsonl"
    s.write_bytes(b"{}\n{}\n")
    async with running(mode) as (w, rec):
        w.track(s, 3, s.stat().st_ino)  # what the daemon read; the file grew since
        events = await rec.next()
        assert [(e.kind, e.previous_size, e.size) for e in events] == [("grown", 3, 6)]
        await grows_alone(rec, s)
        other = elsewhere / "other.jsonl"  # untracked, and the directory is not watched
        other.write_bytes(b"{}\n")
        w.untrack(s)
        append(s, b"{}\n")
        await rec.nothing(0.15)
        assert w.known(s) is None


# --------------------------------------------------------------------------- watching while running


@pytest.mark.parametrize("mode", MODES)
async def test_watch_dir_while_running_loses_nothing(mode: str, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    sa, existing = a / "s.jsonl", b / "existing.jsonl"
    sa.write_bytes(b"{}\n")
    existing.write_bytes(b"{}\n")
    async with running(mode, a) as (w, rec):
        w.watch_dir(b)  # restarts the kernel watches
        assert w.known(existing) == (3, existing.stat().st_ino)  # taken as it is: no event
        grown = append(sa, b"{}\n")  # during the restart
        nb = b / "n.jsonl"
        nb.write_bytes(b"{}\n")
        events = await rec.until(lambda evs: {e.path for e in evs} >= {sa, nb})
        assert sorted(kinds(events)) == [("created", "n.jsonl"), ("grown", "s.jsonl")]
        assert w.known(sa) == (grown, sa.stat().st_ino)
        await grows_alone(rec, existing)
        w.unwatch_dir(b)
        assert w.known(existing) is None
        append(existing, b"{}\n")
        await grows_alone(rec, sa)


@pytest.mark.parametrize("mode", MODES)
async def test_recursive_watch_sees_files_of_a_new_subdirectory(mode: str, session_dir: Path) -> None:
    async with running(mode) as (w, rec):
        w.watch_dir(session_dir, recursive=True)
        await rec.nothing(0.05)
        sub = session_dir / "--home-project--"
        sub.mkdir()
        f = sub / "s.jsonl"
        f.write_bytes(b"{}\n")  # before the subdirectory's own watch exists
        assert await rec.next() == [FileEvent("created", f, 3, f.stat().st_ino, None)]
        await grows_alone(rec, f)


@pytest.mark.parametrize("mode", MODES)
async def test_watched_directory_deleted_and_recreated(mode: str, session_dir: Path) -> None:
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running(mode, session_dir) as (_, rec):
        s.unlink()
        session_dir.rmdir()
        assert kinds(await rec.next()) == [("deleted", "s.jsonl")]
        session_dir.mkdir()  # a new directory: the old kernel watch is dead
        n = session_dir / "n.jsonl"
        n.write_bytes(b"{}\n")
        assert kinds(await rec.next()) == [("created", "n.jsonl")]
        await grows_alone(rec, n)


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize("mode", MODES)
async def test_stop_is_prompt(mode: str, session_dir: Path) -> None:
    w = Watcher(lambda evs: None, poll_interval=0.25 if mode == "poll" else None)
    w.watch_dir(session_dir)
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.run)
        await started(w)
        await anyio.sleep(0.1)
        t0 = time.perf_counter()
        w.stop()
    assert time.perf_counter() - t0 < 0.05


async def test_cancelling_run_is_prompt(session_dir: Path) -> None:
    w = Watcher(lambda evs: None)
    w.watch_dir(session_dir)
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.run)
        await started(w)
        t0 = time.perf_counter()
        tg.cancel_scope.cancel()
    assert time.perf_counter() - t0 < 0.05
    await anyio.sleep(0.02)  # the abandoned Rust thread exits at its next step


@pytest.mark.parametrize("mode", MODES)
async def test_callback_that_raises_is_logged(
    mode: str, session_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = Recorder()
    calls = 0

    async def callback(events: list[FileEvent]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("consumer bug")
        rec(events)

    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    with caplog.at_level(logging.ERROR, logger="sessiond.watch"):
        async with running(mode, session_dir, callback=callback) as (w, _):
            first = append(s, b"{}\n")
            with anyio.fail_after(TIMEOUT):
                while calls == 0:
                    await anyio.sleep(0.005)
            assert w.known(s) == (first, s.stat().st_ino)  # updated before the callback
            size = append(s, b"{}\n")
            events = await rec.until(grown_to(s, size))
            assert [(e.kind, e.previous_size) for e in events] == [("grown", first)]
    assert "consumer bug" in caplog.text


async def test_polling_sees_appends_that_leave_the_mtime_unchanged(session_dir: Path) -> None:
    """watchfiles' own polling compares whole-second mtimes, so appends within one second look
    like no change at all; this one compares sizes. With the mtime pinned to its first value,
    each of eight appends is still reported, one growth each (each within the default timeout:
    the poll, not the 30 s resync, saw it). No wall-clock assert: the machine may be loaded."""
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    pinned = s.stat().st_mtime_ns
    async with running("poll", session_dir) as (_, rec):
        sizes = []
        for i in range(8):
            sizes.append(append(s, b'{"i":%d}\n' % i))
            os.utime(s, ns=(pinned, pinned))
            await rec.until(grown_to(s, sizes[-1]))
        assert [e.size for batch in rec.batches for e in batch] == sizes


async def test_poll_env_var(monkeypatch: pytest.MonkeyPatch, session_dir: Path) -> None:
    monkeypatch.setenv(POLL_ENV, "1")
    s = session_dir / "s.jsonl"
    s.write_bytes(b"")
    w = Watcher(lambda evs: None)
    w.watch_dir(session_dir)
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.run)
        await started(w)
        assert w.mode == "poll"
        w.stop()


def _fake_watchfiles(monkeypatch: pytest.MonkeyPatch, notify_class: Any) -> None:
    """watchfiles' backend (used where inotify cannot be read directly), with a stand-in."""
    monkeypatch.setattr(inotify_module, "available", lambda: False)
    rust = types.ModuleType("watchfiles._rust_notify")
    rust.RustNotify = notify_class  # type: ignore[attr-defined]  # a stand-in for watchfiles' module
    main = types.ModuleType("watchfiles.main")
    main._default_force_polling = lambda _: False  # type: ignore[attr-defined]  # likewise
    monkeypatch.setitem(sys.modules, "watchfiles._rust_notify", rust)
    monkeypatch.setitem(sys.modules, "watchfiles.main", main)


async def _polls_after_refusal(session_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With kernel watches refused: the watcher says once that it polls, and a growing file
    is still reported."""
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    rec = Recorder()
    w = Watcher(rec)
    w.watch_dir(session_dir)
    with caplog.at_level(logging.WARNING, logger="sessiond.watch"):
        async with anyio.create_task_group() as tg:
            tg.start_soon(w.run)
            with anyio.fail_after(TIMEOUT):
                while w.mode != "poll":
                    await anyio.sleep(0.005)
            await grows_alone(rec, s)
            w.stop()
    assert caplog.text.count("polling instead") == 1


async def test_falls_back_to_polling_when_kernel_watches_fail(
    monkeypatch: pytest.MonkeyPatch, session_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: Any) -> None:
        raise OSError(28, "inotify watch limit reached")

    _fake_watchfiles(monkeypatch, refuse)
    await _polls_after_refusal(session_dir, caplog)


async def test_falls_back_to_polling_after_repeated_watch_errors(
    monkeypatch: pytest.MonkeyPatch, session_dir: Path
) -> None:
    class Broken:
        def __init__(self, *args: Any) -> None:
            pass

        def watch(self, *args: Any) -> Any:
            raise RuntimeError("error in underlying watcher")

        def close(self) -> None:
            pass

    _fake_watchfiles(monkeypatch, Broken)
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    rec = Recorder()
    w = Watcher(rec)
    w.watch_dir(session_dir)
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.run)
        with anyio.fail_after(TIMEOUT):
            while w.mode != "poll":
                await anyio.sleep(0.005)
        await grows_alone(rec, s)
        w.stop()


@pytest.mark.parametrize("mode", MODES)
async def test_concurrent_appenders_lose_nothing(mode: str, session_dir: Path) -> None:
    files = [session_dir / f"s{i:02d}.jsonl" for i in range(8)]
    for f in files:
        f.write_bytes(b"")
    async with running(mode, session_dir) as (w, rec):

        def writer(path: Path) -> None:
            for i in range(30):
                append(path, b'{"i":%d}\n' % i)

        threads = [threading.Thread(target=writer, args=(f,)) for f in files]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        final = {f: f.stat().st_size for f in files}
        last: dict[Path, int] = {}

        def done(events: list[FileEvent]) -> bool:
            for e in events:
                last[e.path] = e.size
            return last == final

        events = await rec.until(done)
        assert {e.kind for e in events} == {"grown"}
        assert all(w.known(f) == (final[f], f.stat().st_ino) for f in files)


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_that_cannot_be_looked_at_is_skipped(
    mode: str, session_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bad, good = session_dir / "bad.jsonl", session_dir / "good.jsonl"
    bad.write_bytes(b"{}\n")
    good.write_bytes(b"{}\n")
    real_stat = watcher_module._stat

    def stat(path: str) -> os.stat_result | None:
        if path == str(bad):
            raise PermissionError(13, "Permission denied", path)
        return real_stat(path)

    with caplog.at_level(logging.WARNING, logger="sessiond.watch"):
        async with running(mode, session_dir) as (w, rec):
            monkeypatch.setattr(watcher_module, "_stat", stat)
            append(bad, b"{}\n")
            await grows_alone(rec, good)
            assert w.known(bad) == (3, bad.stat().st_ino)  # kept as it was
            monkeypatch.setattr(watcher_module, "_stat", real_stat)
            size = append(bad, b"{}\n")
            assert [(e.kind, e.previous_size) for e in await rec.until(grown_to(bad, size))] == [("grown", 3)]
    assert caplog.text.count("cannot stat") == 1


@pytest.mark.skipif(not HAVE_WATCHFILES, reason="watchfiles is not installed")
async def test_a_quiet_watcher_looks_less_often_and_still_sees_the_next_append(
    monkeypatch: pytest.MonkeyPatch, session_dir: Path
) -> None:
    """watchfiles' thread wakes every ``step`` whether anything changed or not: after
    ``FOLLOWING_MS`` without a change the watcher waits with ``idle_step_ms`` (and no timeout:
    an idle wait ends only with changes), and goes back to ``step_ms`` after the next batch."""
    rust_notify = importlib.import_module("watchfiles._rust_notify").RustNotify  # the real one
    calls: list[tuple[int, int, str]] = []

    class Recording:
        """watchfiles' own watcher, noting each wait's step, timeout and how it ended."""

        def __init__(self, *args: Any) -> None:
            self.notify = rust_notify(*args)

        def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: Any) -> Any:
            raw = self.notify.watch(debounce_ms, step_ms, timeout_ms, stop_event)
            calls.append((step_ms, timeout_ms, raw if isinstance(raw, str) else "changes"))
            return raw

        def close(self) -> None:
            self.notify.close()

    _fake_watchfiles(monkeypatch, Recording)
    monkeypatch.setattr(watcher_module, "FOLLOWING_MS", 100)
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running("inotify", session_dir, step_ms=5, idle_step_ms=30) as (_, rec):
        with anyio.fail_after(TIMEOUT):
            while (5, 100, "timeout") not in calls:  # the first wait follows, then gives up
                await anyio.sleep(0.01)
        await grows_alone(rec, s)
        with anyio.fail_after(TIMEOUT):
            while calls[-1:] != [(5, 100, "timeout")] or len(calls) < 3:
                await anyio.sleep(0.01)
        await grows_alone(rec, s)
        # The growth may already have been reported by the look at the spell's files that
        # follows a timeout (when the append lands first); the idle wait still gets its event.
        with anyio.fail_after(TIMEOUT):
            while len(calls) < 4:
                await anyio.sleep(0.01)
    # The append after the quiet spell was seen by the idle wait, which had no timeout; the
    # wait after that batch followed at step_ms again, then gave up after FOLLOWING_MS.
    assert calls[:4] == [(5, 100, "timeout"), (30, 0, "changes"), (5, 100, "timeout"), (30, 0, "changes")]


async def test_a_change_dropped_by_a_timed_out_wait_is_still_seen(
    monkeypatch: pytest.MonkeyPatch, session_dir: Path
) -> None:
    """watchfiles empties its change set after a wait found it empty and timed out, so a change
    landing in between is gone. The stand-in below drops one that way: the append made during
    the following wait is never returned. The watcher looks at the spell's files again when the
    wait times out, so the growth is reported without waiting for the slow re-scan (off here)."""
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    waits: list[str] = []

    class Dropping:
        def __init__(self, *args: Any) -> None:
            pass

        def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: Any) -> Any:
            if not waits:  # the first wait: one change to the file
                waits.append("changes")
                append(s, b'{"a":1}\n')
                return {(2, str(s))}
            if len(waits) == 1:  # following: the file changes, the change is dropped, "timeout"
                waits.append("timeout")
                append(s, b'{"a":2}\n')
                return "timeout"
            waits.append("idle")  # idle: nothing more, until stopped
            while not stop_event.is_set():
                time.sleep(0.005)
            return "stop"

        def close(self) -> None:
            pass

    _fake_watchfiles(monkeypatch, Dropping)
    async with running("inotify", session_dir, resync_interval=None) as (_, rec):
        while len(waits) < 2:
            await anyio.sleep(0.005)
        final = s.stat().st_size
        await rec.until(grown_to(s, final))


# --------------------------------------------------------------------------- inotify read on the loop


@pytest.mark.skipif(not HAVE_INOTIFY, reason="no inotify here")
async def test_an_idle_watcher_does_not_wake(session_dir: Path) -> None:
    """Nothing changes: no kernel event, no timer (the re-scan is off here), so the watcher
    never wakes; the next append wakes it once and is reported."""
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    (session_dir / "sub").mkdir()
    async with running("inotify", session_dir, resync_interval=None) as (w, rec):
        w.watch_dir(session_dir / "sub", recursive=True)
        await rec.nothing(0.3)  # the watches are renewed for the new directory meanwhile
        before = w.wakeups
        await rec.nothing(1.2)  # longer than DIR_CHECK_INTERVAL
        assert w.wakeups == before
        await grows_alone(rec, s)
        assert w.wakeups > before


@pytest.mark.skipif(not HAVE_INOTIFY, reason="no inotify here")
async def test_dropped_kernel_events_reread_everything(
    monkeypatch: pytest.MonkeyPatch, session_dir: Path
) -> None:
    """A queue overflow (the kernel dropped events) loses the paths: the watcher re-reads all
    files with new watches, so the append behind the overflow is still reported."""
    real_read = inotify_module.Inotify.read
    overflowed: list[bool] = []

    def read(self: Any) -> Any:
        changes = real_read(self)
        if changes.paths and not overflowed:
            overflowed.append(True)
            return inotify_module.Changes(rescan=True)  # as IN_Q_OVERFLOW reads
        return changes

    monkeypatch.setattr(inotify_module.Inotify, "read", read)
    s = session_dir / "s.jsonl"
    s.write_bytes(b"{}\n")
    async with running("inotify", session_dir, resync_interval=None) as (_, rec):
        size = append(s, b"{}\n")
        assert kinds(await rec.until(grown_to(s, size))) == [("grown", "s.jsonl")]
        assert overflowed
        await grows_alone(rec, s)


@pytest.mark.parametrize("mode", MODES)
async def test_a_subdirectory_moved_out_and_back(mode: str, session_dir: Path, tmp_path: Path) -> None:
    """A directory moved out of a recursive tree takes its files with it (deleted), and its
    kernel watches must not report them under the old path; moved back in, they are there
    again and followed."""
    sub = session_dir / "--project--"
    sub.mkdir()
    f = sub / "s.jsonl"
    f.write_bytes(b"{}\n")
    away = tmp_path / "away"
    async with running(mode, resync_interval=None) as (w, rec):
        w.watch_dir(session_dir, recursive=True)
        await rec.nothing(0.1)
        sub.rename(away)
        assert kinds(await rec.next()) == [("deleted", "s.jsonl")]
        append(away / "s.jsonl", b"{}\n")  # outside the tree now
        await rec.nothing(0.2)
        away.rename(sub)
        assert kinds(await rec.next()) == [("created", "s.jsonl")]
        await grows_alone(rec, f)


@pytest.mark.skipif(not HAVE_INOTIFY, reason="no inotify here")
async def test_the_watch_limit_falls_back_to_polling(
    monkeypatch: pytest.MonkeyPatch, session_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: Any) -> None:
        raise OSError(28, "inotify_add_watch: No space left on device")

    monkeypatch.setattr(inotify_module, "Inotify", refuse)
    await _polls_after_refusal(session_dir, caplog)
