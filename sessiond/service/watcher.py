"""Notice other programs' changes to session files: appends, rewrites, replacements, deletions.

The rules (docs/design-notes.md §2):

* **Directories are watched, not files.** An atomic replace (write a temp file, ``os.replace``)
  gives the target a new inode; a watch on the file itself would follow the old inode and
  miss every later append. Directory watches see the new file and everything after it.
* **The kernel event only says "look here".** Every event (and every poll tick) re-``stat``\\ s
  the files concerned and compares ``(size, inode)`` with the last state the watcher knows:
  growth with the same inode is ``grown``, a smaller size is ``rewritten``, another inode is
  ``replaced``, a file gone is ``deleted``, a new file is ``created``. Several appends between
  two looks are one ``grown`` with the final size.
* **No echo of the daemon's own writes.** After writing, the daemon calls :meth:`Watcher.expect`
  with the size (and inode) it wrote up to; the next look that finds exactly that state says
  nothing, and a look that finds more reports ``grown`` from the expected size on. An
  expectation is only a promise: the known state moves when the file is seen in that state,
  so a look that happens *before* the daemon's bytes land never mistakes the file for a
  shrunk one.
* **No lost events.** The known state is updated before the consumer is called; kernel events
  arriving while the consumer runs queue in the kernel and make the next batch (nothing is
  dropped); after every (re)start of the kernel watches — start, a new directory, an error — every
  known file and every watched directory is re-read *after* the new watches are in place,
  so whatever changed while no watch was active is found; a new subdirectory of a recursive
  watch is listed at once (files created in it before its own watch existed raise no event);
  a queue overflow (``IN_Q_OVERFLOW``) or a directory moved out of a recursive tree re-reads
  everything with new watches; and a slow full re-scan every ``resync_interval`` seconds
  covers the rest (a parent of a watched directory renamed, a file system without events).

Three backends. **inotify read on the event loop** (:mod:`.inotify`) is the default on Linux:
the loop's ``epoll`` sleeps in the kernel until an event arrives, so an idle watcher never
wakes except for its deadlines (the re-scan; a directory check every second only while a
watched directory is missing). **watchfiles' ``RustNotify``** (one worker thread per recursive /
non-recursive group of directories) where inotify cannot be read directly: its thread wakes
every ``step`` to look for changes. **Polling** stats every known file and
lists every watched directory every ``poll_interval`` seconds; it is used when asked for
(``poll_interval=...`` or ``SESSIOND_WATCH_POLL=1``), when neither kernel backend is there (or
watchfiles would poll itself: WSL, ``WATCHFILES_FORCE_POLLING``), or the kernel watches cannot be
created (the watch limit). It does its own size comparison: watchfiles' polling compares
whole-second mtimes and loses appends made within the same second.

Why ``RustNotify`` and not ``awatch`` (for the watchfiles backend): ``awatch`` is a thin
loop over exactly these calls, but it creates its watches lazily inside the generator and
says nothing when they are in place, so the re-scan that makes a restart lossless could run
before them. Here the watches are created first, then the re-scan runs, then the wait loop
starts (same ``debounce``/``step``/``rust_timeout`` and ``stop_event`` use as ``awatch``,
with a slower ``step`` while nothing changes: see :class:`Watcher`).

All methods are meant to be called from the event loop's thread (they are not thread-safe).
A stopped watcher stays stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
import math
import os
import stat as stat_module
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from . import inotify as _inotify

log = logging.getLogger("sessiond.watch")

EventKind = Literal["grown", "rewritten", "replaced", "deleted", "created"]

POLL_ENV = "SESSIOND_WATCH_POLL"
"""Set to ``1`` to use the polling fallback instead of inotify."""
DEFAULT_POLL_INTERVAL = 0.25
FOLLOWING_MS = 2000
"""How long the watcher keeps looking every ``step_ms`` after the last change before it slows
down to ``idle_step_ms`` (docs/design-notes.md §2)."""
DIR_CHECK_INTERVAL = 1.0
"""How often the watched directories are checked for appearing, vanishing or being replaced."""
SCAN_CHUNK = 512
"""Files looked at between two yields to the event loop in a full scan."""
MAX_NOTIFY_ERRORS = 3
"""Kernel-watch errors within ``NOTIFY_ERROR_WINDOW`` seconds before falling back to polling."""
NOTIFY_ERROR_WINDOW = 60.0
RESYNC_INTERVAL = 30.0
"""Seconds between two full re-scans with watchfiles (whose queue overflows go unreported)."""
DIRECT_RESYNC_INTERVAL = 300.0
"""The same with inotify read directly: an overflow is reported (and re-reads everything), so
the re-scan only covers the rare rest (a parent of a watched directory renamed) and need not
cost an idle daemon with 10,000 sessions ~1 ms/s (a scan of them takes ~30 ms)."""


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One file's change since the last state the watcher knew.

    ``size`` and ``inode`` are what the file is now (``0`` / ``None`` once deleted);
    ``previous_size`` is the size the watcher knew before (the expected size when the change
    came right after the daemon's own write; ``None`` for ``created``).
    """

    kind: EventKind
    path: Path
    size: int
    inode: int | None
    previous_size: int | None


OnEvents = Callable[[list[FileEvent]], Awaitable[None] | None]


class _Notify(Protocol):
    """The part of ``watchfiles._rust_notify.RustNotify`` used here."""

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: Any) -> Any: ...

    def close(self) -> None: ...


class _ReadState:
    """What the inotify reader's loop callback found for its task (see ``_read_events``)."""

    __slots__ = ("arrivals", "error", "rescan")

    def __init__(self) -> None:
        self.arrivals = 0
        self.rescan = False
        self.error: OSError | None = None


class _File:
    """What the watcher knows about one file."""

    __slots__ = ("expected", "explicit", "inode", "size")

    def __init__(self, size: int | None, inode: int | None, explicit: bool) -> None:
        self.size = size
        """Last size seen (``None``: the file is absent)."""
        self.inode = inode
        self.expected: tuple[int, int | None] | None = None
        """The daemon's own write: ``(size, inode or None for any)``, until seen."""
        self.explicit = explicit
        """Tracked by :meth:`Watcher.track` / :meth:`Watcher.expect` (kept while absent)."""


class _Flag:
    """The ``stop_event`` of one generation of kernel watches: ``is_set`` is polled by the
    Rust thread every ``step`` ms (so it must be cheap)."""

    __slots__ = ("error", "is_set_", "signature")

    def __init__(self) -> None:
        self.is_set_ = False
        self.signature: dict[str, tuple[int, int] | None] = {}
        """The wanted directories -> (st_dev, st_ino), ``None`` for missing (not watched)."""
        self.error: Exception | None = None

    def is_set(self) -> bool:
        return self.is_set_

    def set(self) -> None:
        self.is_set_ = True


def _norm(path: os.PathLike[str] | str) -> str:
    return os.path.abspath(os.fspath(path))


def _under(parent: str, directory: str) -> bool:
    """``parent`` is ``directory`` or below it."""
    return parent == directory or parent.startswith(directory.rstrip(os.sep) + os.sep)


def _stat(path: str) -> os.stat_result | None:
    """``os.stat``, ``None`` when the file is not there; other errors propagate."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


class Watcher:
    """Watch directories for changes to session files; see the module docstring.

    ``on_events`` gets each batch's events (sorted by path); it may be sync or async; an
    exception in it is logged and the watcher goes on. With inotify read directly (Linux) a
    change is looked at as soon as the loop is free and nothing wakes in between.
    ``debounce_ms`` / ``step_ms`` are the watchfiles backend's knobs (a batch is returned once
    no new change arrived for ``step_ms``, at the latest ``debounce_ms`` after the first).
    watchfiles' thread wakes every step whether anything changed or not, so after
    ``FOLLOWING_MS`` without a change it looks every ``idle_step_ms`` instead, until the next
    change: a followed transcript is seen within ~``2 * step_ms``, the first change after a
    quiet spell within ~``2 * idle_step_ms``, and its thread wakes 100 times a second rather
    than 200 (at the defaults).
    ``suffixes``: untracked files with these
    endings in watched directories are followed too (reported as ``created`` when they
    appear); ``()`` follows only tracked files. ``resync_interval``: seconds between two full
    re-scans (``None``: none; ``"auto"``: ``DIRECT_RESYNC_INTERVAL`` with inotify read
    directly, ``RESYNC_INTERVAL`` with watchfiles).
    """

    def __init__(
        self,
        on_events: OnEvents,
        *,
        debounce_ms: int = 50,
        step_ms: int = 5,
        idle_step_ms: int = 10,
        poll_interval: float | None = None,
        suffixes: tuple[str, ...] = (".jsonl",),
        resync_interval: float | Literal["auto"] | None = "auto",
    ) -> None:
        self._on_events = on_events
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._idle_step_ms = max(idle_step_ms, step_ms)
        self._poll_interval = poll_interval
        self._suffixes = tuple(suffixes)
        self._resync_interval = resync_interval
        self._files: dict[str, _File] = {}
        self._by_parent: dict[str, set[str]] = {}
        self._dirs: dict[str, bool] = {}
        """Watched directories -> recursive."""
        self._active: dict[str, bool] = {}
        """The directories of the current kernel watches (explicit and tracked files' parents)."""
        self._dirty: set[str] = set()
        self._check_dirs = False
        self._renew_watches = False
        self._stopped = False
        self._running = False
        self._gen: _Flag | None = None
        self._wake: anyio.Event | None = None
        self._lock: anyio.Lock | None = None
        self._warned: set[str] = set()
        self._notify_errors: list[float] = []
        self.mode: Literal["inotify", "poll"] | None = None
        """The mode ``run()`` is in (``None`` before it starts)."""
        self.batches = 0
        """Batches looked at (kernel batches, poll ticks, re-scans): for tests and benchmarks."""
        self.wakeups = 0
        """Times the watcher woke in the event loop: kernel events read, timers and pokes
        (``daemon/status`` and benchmarks; an idle watcher adds none between its deadlines)."""

    # ------------------------------------------------------------------ public API

    def watch_dir(self, directory: Path | str, *, recursive: bool = False) -> None:
        """Watch ``directory`` (and its subdirectories when ``recursive``).

        The matching files already in it are taken as they are now (no event); may be called
        while running: the kernel watches are recreated and everything re-read after that, so
        no change is lost. The directory need not exist yet (it is picked up when it does,
        within about a second).
        """
        d = _norm(directory)
        if self._dirs.get(d) == recursive:
            return
        self._dirs[d] = recursive
        for path in self._list_dir(d, recursive):
            if path not in self._files:
                st = self._safe_stat(path)
                if st is not None and stat_module.S_ISREG(st.st_mode):
                    self._add(path, _File(st.st_size, st.st_ino, explicit=False))
        self._restart()

    def unwatch_dir(self, directory: Path | str) -> None:
        """Stop watching ``directory``; files in it stay followed only if tracked."""
        d = _norm(directory)
        if self._dirs.pop(d, None) is None:
            return
        for path in [p for p, f in self._files.items() if not f.explicit and not self._wanted(p)]:
            self._forget(path)
        self._restart()

    def track(self, path: Path | str, size: int | None = None, inode: int | None = None) -> None:
        """Follow ``path`` from this known state (``None``: as it is now; absent is fine).

        Changes are reported relative to this state: when ``size``/``inode`` are given, the
        file is looked at soon, so a change made before this call is reported too. Also the
        way to reset the state after the daemon truncated the file itself (a rolled-back
        write). A tracked file outside the watched directories gets its directory watched.
        """
        key = _norm(path)
        given = size is not None or inode is not None
        st = None
        if size is None or inode is None:
            st = self._safe_stat(key)
            if st is not None and not stat_module.S_ISREG(st.st_mode):
                st = None
        if size is None:
            if st is None:
                inode = None  # absent: reported as created when it appears
            else:
                size = st.st_size
                inode = st.st_ino if inode is None else inode
        elif inode is None and st is not None:
            inode = st.st_ino
        f = self._files.get(key)
        if f is None:
            self._add(key, _File(size, inode, explicit=True))
        else:
            f.size, f.inode, f.expected, f.explicit = size, inode, None, True
        self._note_tracked_dir(key)
        if given:
            self._dirty.add(key)
            self._poke()

    def untrack(self, path: Path | str) -> None:
        """Stop following ``path`` (it stays followed as any other file of a watched directory)."""
        key = _norm(path)
        f = self._files.get(key)
        if f is None:
            return
        self._dirty.discard(key)
        if self._wanted(key) and f.size is not None:
            f.explicit = False
            f.expected = None
        else:
            self._forget(key)

    def expect(self, path: Path | str, size: int, inode: int | None = None) -> None:
        """The daemon itself wrote ``path`` up to ``size`` (``inode``: of the file it wrote,
        ``None`` = the same file as now, or any for a file the watcher does not know).

        The next look that finds exactly this state reports nothing; one that finds more
        (same inode) reports ``grown`` with ``previous_size=size``; anything else is reported
        as usual. Call it right after the write, in the same event-loop step (calling it
        before is safe too: a look in between sees the old state and reports nothing, or part
        of the write as ``grown``). For a truncation the daemon made itself use :meth:`track`.
        """
        key = _norm(path)
        f = self._files.get(key)
        if f is None:
            f = self._add(key, _File(None, None, explicit=True))
            self._note_tracked_dir(key)
        else:
            f.explicit = True
        if inode is None:
            inode = f.inode
        if f.size is not None and (inode is None or inode == f.inode) and f.size >= size:
            f.expected = None  # already seen (the look came first): nothing left to suppress
            return
        f.expected = (size, inode)
        if self.mode == "inotify" and self._gen is not None:
            # A look now (one stat): a write that already landed is settled before anyone else
            # can touch the file. Otherwise another program truncating it back to its size
            # before the daemon's write, before the kernel event was read, would look like the
            # daemon's write still on its way and go unreported.
            self._unexpected({key})

    def known(self, path: Path | str) -> tuple[int, int | None] | None:
        """``(size, inode)`` the watcher knows for ``path``; ``None`` if absent or not followed."""
        f = self._files.get(_norm(path))
        if f is None or f.size is None:
            return None
        return f.size, f.inode

    def stop(self) -> None:
        """Make :meth:`run` return (within ``idle_step_ms`` plus a thread hop; a callback that
        is running finishes first)."""
        self._stopped = True
        if self._gen is not None:
            self._gen.set()
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Watch until :meth:`stop` (or cancellation)."""
        if self._running:
            raise RuntimeError("Watcher.run() is already running")
        if self._stopped:
            return
        self._running = True
        self._wake = anyio.Event()
        self._lock = anyio.Lock()
        try:
            if not self._polling_wanted():
                if _inotify.available():
                    self.mode = "inotify"
                    await self._run_notify(None)
                else:
                    notify_class = self._notify_class()
                    if notify_class is not None:
                        self.mode = "inotify"
                        await self._run_notify(notify_class)
            if not self._stopped:
                self.mode = "poll"
                await self._run_poll(self._poll_interval or DEFAULT_POLL_INTERVAL)
        finally:
            self._stopped = True
            if self._gen is not None:
                self._gen.set()  # a Rust thread abandoned by a cancellation exits at its next step
            self._running = False

    # ------------------------------------------------------------------ known files

    def _add(self, key: str, f: _File) -> _File:
        self._files[key] = f
        self._by_parent.setdefault(os.path.dirname(key), set()).add(key)
        return f

    def _forget(self, key: str) -> None:
        if self._files.pop(key, None) is None:
            return
        parent = os.path.dirname(key)
        siblings = self._by_parent.get(parent)
        if siblings is not None:
            siblings.discard(key)
            if not siblings:
                del self._by_parent[parent]

    def _in_watched_dir(self, parent: str) -> bool:
        if self._dirs.get(parent) is not None:
            return True
        return any(rec and _under(parent, d) for d, rec in self._dirs.items())

    def _wanted(self, key: str) -> bool:
        """An untracked file that is followed anyway: watched suffix in a watched directory."""
        return (
            bool(self._suffixes)
            and key.endswith(self._suffixes)
            and self._in_watched_dir(os.path.dirname(key))
        )

    def _note_tracked_dir(self, key: str) -> None:
        """A tracked file whose directory the kernel watches do not cover: recreate them."""
        if self._gen is None or self.mode != "inotify":
            return
        parent = os.path.dirname(key)
        wanted = self._gen.signature
        if parent in wanted or any(self._dirs.get(d) and _under(parent, d) for d in wanted):
            return
        self._restart()

    def _effective_dirs(self) -> dict[str, bool]:
        """The directories to watch: the watched ones and the parents of tracked files."""
        dirs = dict(self._dirs)
        recursive = [d for d, rec in dirs.items() if rec]
        for key, f in self._files.items():
            if not f.explicit:
                continue
            parent = os.path.dirname(key)
            if parent in dirs or any(_under(parent, d) for d in recursive):
                continue
            dirs[parent] = False
        return dirs

    # ------------------------------------------------------------------ looking at files

    def _warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, *args)

    def _safe_stat(self, path: str) -> os.stat_result | None:
        try:
            return _stat(path)
        except OSError as exc:
            self._warn_once(f"stat:{path}", "cannot stat %s: %s", path, exc)
            return None

    def _list_dir(self, directory: str, recursive: bool) -> list[str]:
        """Files with a watched suffix in ``directory`` (and below); unreadable parts skipped."""
        out: list[str] = []
        if not self._suffixes:
            return out
        stack = [directory]
        suffixes = self._suffixes
        while stack:
            d = stack.pop()
            try:
                with os.scandir(d) as it:
                    for entry in it:
                        try:
                            if entry.name.endswith(suffixes) and entry.is_file():
                                out.append(entry.path)
                            elif recursive and entry.is_dir(follow_symlinks=False):
                                stack.append(entry.path)
                        except OSError:
                            continue
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                self._warn_once(f"list:{d}", "cannot list %s: %s", d, exc)
        return out

    def _observe(self, key: str, st: os.stat_result | None) -> FileEvent | None:
        """Compare what ``stat`` found with the known state, update it, return the event."""
        f = self._files.get(key)
        if st is None:
            if f is None or f.size is None:
                return None  # still absent (an expectation for a file about to be created stays)
            previous = f.size
            f.expected = None
            if f.explicit:
                f.size = f.inode = None
            else:
                self._forget(key)
            return FileEvent("deleted", Path(key), 0, None, previous)
        size, inode = st.st_size, st.st_ino
        if f is None:
            self._add(key, _File(size, inode, explicit=False))
            return FileEvent("created", Path(key), size, inode, None)
        base_size, base_inode = f.size, f.inode
        expected = f.expected
        if expected is not None:
            e_size, e_inode = expected
            same_file = e_inode is None or e_inode == inode
            if same_file and size == e_size:
                f.size, f.inode, f.expected = size, inode, None
                return None
            if same_file and size > e_size:
                base_size, base_inode = e_size, inode  # the daemon's bytes, then someone else's
                f.expected = None
            elif not (
                # the daemon's write has not (fully) landed yet: keep waiting for it
                (base_size is not None and inode == base_inode and size >= base_size)
                or (base_size is None and same_file and size < e_size)
            ):
                f.expected = None  # contradicted (replaced, truncated): report as usual
        f.size, f.inode = size, inode
        if base_size is None:
            return FileEvent("created", Path(key), size, inode, None)
        if base_inode is not None and inode != base_inode:
            return FileEvent("replaced", Path(key), size, inode, base_size)
        if size < base_size:
            return FileEvent("rewritten", Path(key), size, inode, base_size)
        if size > base_size:
            return FileEvent("grown", Path(key), size, inode, base_size)
        return None

    def _candidates(self, raw: Iterable[str]) -> set[str]:
        """The files to look at for a batch of changed paths (files, directories, gone paths)."""
        out: set[str] = set()
        for p in raw:
            if p in self._files:
                out.add(p)
                continue
            if p in self._active:
                # A watched directory itself was deleted, moved or changed: its kernel watch may
                # be dead, and a directory re-created at once can get the same inode back.
                self._check_dirs = self._renew_watches = True
            try:
                st = _stat(p)
            except OSError as exc:
                self._warn_once(f"stat:{p}", "cannot stat %s: %s", p, exc)
                continue
            if st is None or stat_module.S_ISDIR(st.st_mode):
                # A directory (or something gone): known files below it may have moved or gone,
                # and a new subdirectory's files may predate its own kernel watch.
                prefix = p.rstrip(os.sep) + os.sep
                for parent, keys in self._by_parent.items():
                    if parent == p or parent.startswith(prefix):
                        out.update(keys)
                if st is not None:
                    parent = os.path.dirname(p)
                    if any(rec and _under(parent, d) for d, rec in self._dirs.items()):
                        out.update(self._list_dir(p, recursive=True))
            elif self._wanted(p):
                out.add(p)
        return out

    def _all_candidates(self) -> set[str]:
        out = set(self._files)
        for d, recursive in self._dirs.items():
            out.update(self._list_dir(d, recursive))
        return out

    async def _process(self, raw: Iterable[str] | None) -> None:
        """Look at the files a batch concerns (``None``: everything), then deliver the events."""
        assert self._lock is not None
        async with self._lock:
            self.batches += 1
            events: list[FileEvent] = []
            observe, files = self._observe, self._files
            try:
                keys = self._all_candidates() if raw is None else self._candidates(raw)
                for i, key in enumerate(keys):
                    if i and i % SCAN_CHUNK == 0:
                        await anyio.sleep(0)  # a long scan lets the loop breathe; each look is atomic
                    self._dirty.discard(key)
                    try:
                        st = _stat(key)
                    except OSError as exc:  # permission and the like: keep the known state
                        self._warn_once(f"stat:{key}", "cannot stat %s: %s", key, exc)
                        continue
                    if st is not None and not stat_module.S_ISREG(st.st_mode):
                        st = None
                    if st is not None and key not in files and not self._wanted(key):
                        continue  # an untracked file outside the watched set
                    event = observe(key, st)
                    if event is not None:
                        events.append(event)
            except Exception:  # never let one odd path stop the watcher
                log.exception("file watching: looking at changed files failed")
            if events:
                events.sort(key=lambda e: e.path)
                await self._deliver(events)

    async def _deliver(self, events: list[FileEvent]) -> None:
        try:
            result = self._on_events(events)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("watcher callback failed on %d event(s)", len(events))

    # ------------------------------------------------------------------ control

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _restart(self) -> None:
        """Recreate the kernel watches (the current generation ends at its next step)."""
        if self._gen is not None:
            self._gen.set()
        self._poke()

    async def _wait(self, timeout: float) -> None:
        """Sleep up to ``timeout`` or until poked; re-arm the wake-up."""
        assert self._wake is not None
        with anyio.move_on_after(timeout):
            await self._wake.wait()
        if self._wake.is_set():
            self._wake = anyio.Event()
            if self._stopped:
                self._wake.set()

    def _polling_wanted(self) -> bool:
        if self._poll_interval is not None:
            return True
        if os.environ.get(POLL_ENV, "").strip().lower() in {"1", "true", "yes", "on"}:
            log.info("file watching: polling (%s is set)", POLL_ENV)
            return True
        return False

    def _notify_class(self) -> Callable[..., _Notify] | None:
        """watchfiles' ``RustNotify`` when it is to be used (no direct inotify), else ``None``."""
        try:
            rust = importlib.import_module("watchfiles._rust_notify")
            main = importlib.import_module("watchfiles.main")
        except ImportError as exc:
            log.warning("file watching: watchfiles unavailable (%s), polling instead", exc)
            return None
        with contextlib.suppress(Exception):  # a private helper: WSL or WATCHFILES_FORCE_POLLING
            if main._default_force_polling(None):
                log.warning("file watching: watchfiles would poll here, using sessiond's polling instead")
                return None
        cls: Callable[..., _Notify] = rust.RustNotify
        return cls

    def _dir_signature(self, dirs: Iterable[str]) -> dict[str, tuple[int, int] | None]:
        sig: dict[str, tuple[int, int] | None] = {}
        for d in dirs:
            try:
                st = os.stat(d)
                sig[d] = (st.st_dev, st.st_ino) if stat_module.S_ISDIR(st.st_mode) else None
            except OSError:
                sig[d] = None
        return sig

    def _notify_failed(self, what: str, exc: BaseException) -> bool:
        """Count a kernel-watch error; ``True`` when it is time to fall back to polling."""
        now = time.monotonic()
        self._notify_errors = [t for t in self._notify_errors if now - t < NOTIFY_ERROR_WINDOW]
        self._notify_errors.append(now)
        if len(self._notify_errors) >= MAX_NOTIFY_ERRORS:
            log.warning("file watching: %s failed again (%s), polling instead", what, exc)
            return True
        log.warning("file watching: %s failed (%s), recreating the watches", what, exc)
        return False

    async def _run_notify(self, notify_class: Callable[..., _Notify] | None) -> None:
        """Generations of kernel watches until stopped; returns early to fall back to polling.

        ``notify_class`` ``None``: inotify read on the event loop (:mod:`.inotify`), else
        watchfiles' ``RustNotify`` in worker threads (where inotify is not available)."""
        while not self._stopped:
            gen = _Flag()
            self._gen = gen
            self._renew_watches = False
            wanted = self._effective_dirs()
            # The signature is taken before the watches are created: a directory replaced in
            # between is then seen as changed (one restart too many rather than a dead watch).
            gen.signature = self._dir_signature(wanted)
            active = {d: rec for d, rec in wanted.items() if gen.signature[d] is not None}
            self._active = active
            notifies: list[Any] = []
            try:
                for recursive in (False, True):
                    paths = sorted(d for d, rec in active.items() if rec is recursive)
                    if not paths:
                        continue
                    if notify_class is None:
                        notifies.append(await self._create_inotify(paths, recursive))
                    else:
                        notifies.append(await self._create_notify(notify_class, paths, recursive))
            except FileNotFoundError:
                for n in notifies:
                    n.close()
                await anyio.sleep(self._step_ms / 1000)  # a directory vanished meanwhile: again
                continue
            except Exception as exc:
                for n in notifies:
                    n.close()
                log.warning("file watching: cannot create kernel watches (%s), polling instead", exc)
                return
            fallback = False
            try:
                if gen.is_set() and self._stopped:
                    return
                await self._process(None)  # after the watches exist: nothing falls in between
                async with anyio.create_task_group() as tg:
                    for n in notifies:
                        tg.start_soon(self._pump if notify_class is not None else self._read_events, n, gen)
                    fallback = await self._housekeeping(gen, direct=notify_class is None)
                    if notify_class is None:
                        tg.cancel_scope.cancel()  # the readers wait in the loop's epoll
            finally:
                gen.set()
                for n in notifies:
                    n.close()
            if fallback:
                return

    async def _create_notify(
        self, notify_class: Callable[..., _Notify], paths: list[str], recursive: bool
    ) -> _Notify:
        def create() -> _Notify:
            try:
                return notify_class(paths, False, False, 300, recursive, False)
            except PermissionError as exc:
                # Some subdirectory cannot be watched: watch the rest (errors then go unreported).
                self._warn_once(f"perm:{paths}", "file watching: %s; skipping what cannot be watched", exc)
                return notify_class(paths, False, False, 300, recursive, True)

        return await anyio.to_thread.run_sync(create)

    async def _create_inotify(self, paths: list[str], recursive: bool) -> _inotify.Inotify:
        """The kernel watches, made in a worker thread (a large tree takes a while to walk)."""
        return await anyio.to_thread.run_sync(_inotify.Inotify, paths, recursive)

    async def _read_events(self, notify: _inotify.Inotify, gen: _Flag) -> None:
        """Read the kernel's events as they come, until ``gen`` is set (then this task is
        cancelled): the descriptor stays registered with the event loop, whose ``epoll``
        sleeps in the kernel, so nothing wakes while nothing changes.

        Each readable descriptor is drained in the loop's callback at once, and the files
        found exactly as the daemon said it wrote them (:meth:`expect`) are settled there: an
        append of the daemon's to a watched file costs one read and one ``stat``. What remains
        is taken as watchfiles takes a batch: once no new event came for ``step_ms``, at the
        latest ``debounce_ms`` after the first (a file being written — created, then filled —
        is looked at once, whole); events arriving while a batch is processed make the next
        one. A queue overflow or a directory moved out of a recursive tree re-reads everything
        with new watches."""
        loop = asyncio.get_running_loop()
        fd = notify.fileno()
        pending: set[str] = set()
        arrived = asyncio.Event()
        state = _ReadState()

        def on_readable() -> None:
            try:
                changes = notify.read()
            except OSError as exc:
                state.error = exc
                arrived.set()
                return
            self.wakeups += 1
            paths = self._unexpected(changes.paths)
            if paths or changes.rescan:
                pending.update(paths)
                state.rescan = state.rescan or changes.rescan
                state.arrivals += 1
                arrived.set()

        loop.add_reader(fd, on_readable)
        try:
            while not gen.is_set():
                await arrived.wait()
                arrived.clear()
                deadline = anyio.current_time() + self._debounce_ms / 1000
                while not (state.rescan or state.error):
                    step = min(self._step_ms / 1000, deadline - anyio.current_time())
                    if step <= 0:
                        break
                    seen = state.arrivals
                    await anyio.sleep(step)
                    if state.arrivals == seen:
                        break
                if gen.is_set():
                    return
                if state.error is not None:
                    gen.error = state.error
                    gen.set()
                    self._poke()
                    return
                if state.rescan:
                    log.info("file watching: kernel events were dropped or a directory moved; re-reading all")
                    self._check_dirs = self._renew_watches = True
                    self._poke()
                    return
                batch = set(pending)
                pending.clear()
                arrived.clear()  # what came during the settling is in this batch
                if batch:
                    await self._process(batch)
                    if self._check_dirs:
                        self._poke()
        finally:
            loop.remove_reader(fd)

    def _unexpected(self, paths: set[str]) -> set[str]:
        """``paths`` less the known files found exactly as the daemon said it wrote them
        (:meth:`expect`; their known state moves on here, the same rule as :meth:`_observe`'s
        first case) or exactly as last seen: an append of the daemon's costs a ``stat`` or
        two, not a batch."""
        out: set[str] = set()
        files = self._files
        for p in paths:
            f = files.get(p)
            if f is None or (f.expected is None and f.size is None):
                out.add(p)
                continue
            try:
                st = os.stat(p)
            except OSError:
                out.add(p)
                continue
            if not stat_module.S_ISREG(st.st_mode):
                out.add(p)
            elif f.expected is None:
                if (st.st_size, st.st_ino) != (f.size, f.inode):
                    out.add(p)  # else: as last seen (a write already settled by expect)
            else:
                e_size, e_inode = f.expected
                if st.st_size == e_size and (e_inode is None or e_inode == st.st_ino):
                    f.size, f.inode, f.expected = st.st_size, st.st_ino, None
                    self._dirty.discard(p)
                else:
                    out.add(p)
        return out

    async def _pump(self, notify: _Notify, gen: _Flag) -> None:
        """Wait for kernel batches in a worker thread and process them, until ``gen`` is set.

        Two speeds: after a batch, a wait that looks every ``step_ms`` and gives up after
        ``FOLLOWING_MS`` without a change (watchfiles' ``timeout``); then one that looks every
        ``idle_step_ms`` and returns only with changes (or when ``gen`` is set): while idle, no
        wait ends empty, and its thread wakes half as often.

        A wait that times out empties watchfiles' change set *after* finding it empty (two
        separate locks in its Rust loop), so a change landing in between is dropped. The files
        of the spell that just ended — the ones being written, where the next change most
        likely lands — are looked at once more when it times out; any other file is covered
        by the slow re-scan."""
        following = True
        recent: set[str] = set()
        while not gen.is_set():
            step, timeout = (self._step_ms, FOLLOWING_MS) if following else (self._idle_step_ms, 0)
            try:
                raw = await anyio.to_thread.run_sync(
                    notify.watch,
                    self._debounce_ms,
                    step,
                    timeout,
                    gen,
                    abandon_on_cancel=True,
                )
            except Exception as exc:  # WatchfilesRustInternalError: sticky for this instance
                gen.error = exc
                gen.set()
                self._poke()
                return
            if isinstance(raw, set):
                following = True
                paths = [p for _, p in raw]
                recent.update(paths)
                await self._process(paths)
                if self._check_dirs:
                    self._poke()
                continue
            following = False
            if raw == "timeout" and recent:
                await self._process(list(recent))
            recent.clear()

    async def _housekeeping(self, gen: _Flag, *, direct: bool = False) -> bool:
        """Pending looks (tracked files), directory checks and the slow re-scan, until the
        generation ends; returns ``True`` to fall back to polling.

        ``direct`` (inotify read on the loop): a watched directory deleted or moved is an
        event, so the directories are checked every ``DIR_CHECK_INTERVAL`` only while one is
        missing (waiting for it to appear), else with the re-scan; between two deadlines this
        sleeps until poked."""
        interval = self._resync_interval
        if interval == "auto":
            interval = DIRECT_RESYNC_INTERVAL if direct else RESYNC_INTERVAL
        next_resync = None if interval is None else time.monotonic() + interval
        next_dir_check = time.monotonic() + DIR_CHECK_INTERVAL
        while True:
            now = time.monotonic()
            if not direct or any(v is None for v in gen.signature.values()):
                timeout = max(0.0, next_dir_check - now)
            elif next_resync is not None:
                timeout = max(0.0, next_resync - now)
                next_dir_check = next_resync
            else:
                timeout = math.inf
                next_dir_check = math.inf
            await self._wait(timeout)
            self.wakeups += 1
            if gen.is_set():
                break
            if self._dirty:
                await self._process(list(self._dirty))
            now = time.monotonic()
            if self._check_dirs or now >= next_dir_check:
                # Watched directories that appeared, vanished or were replaced: new watches.
                self._check_dirs = False
                next_dir_check = now + DIR_CHECK_INTERVAL
                wanted = self._effective_dirs()
                if (
                    self._renew_watches
                    or wanted.keys() != gen.signature.keys()
                    or self._dir_signature(wanted) != gen.signature
                ):
                    gen.set()
                    break
            if next_resync is not None and now >= next_resync:
                next_resync = now + (interval or 0)
                await self._process(None)
        return gen.error is not None and self._notify_failed("the kernel watch", gen.error)

    async def _run_poll(self, interval: float) -> None:
        """Stat every known file and list every watched directory each ``interval`` seconds."""
        self._gen = None
        self._active = {}
        while not self._stopped:
            self.wakeups += 1
            await self._process(None)
            deadline = time.monotonic() + interval
            while not self._stopped:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                await self._wait(remaining)
                if self._dirty and not self._stopped:
                    await self._process(list(self._dirty))
