"""Linux inotify read straight from the event loop: no thread, no timer, no wake-up while
nothing changes.

watchfiles' ``RustNotify.watch`` collects the kernel's events in a thread that sleeps a
``step`` (5-10 ms) between looks at its change set, so an idle daemon woke ~100 times a
second to find nothing (issue 30). Here the inotify descriptor is non-blocking and the caller
waits for it to become readable (``anyio.wait_readable``: the loop's ``epoll`` sleeps in the
kernel), then :meth:`Inotify.read` drains what is queued and says which paths to look at.

What a watch covers, and what this reports (the watcher re-``stat``\\ s whatever is named, so
a path is only ever "look here"):

* one watch per directory (files are never watched themselves: an atomic replace would leave
  a file watch on the old inode); a recursive group watches every subdirectory too, and a
  directory created (or moved in) below one gets its watches at once — the files created in
  it before that are found by the watcher listing the new directory, which it does for every
  directory path reported;
* a queue overflow (``IN_Q_OVERFLOW``: events were dropped) and a directory of a recursive
  group moved away (its watches would follow it to a path this no longer knows) are
  :attr:`Changes.rescan`: the caller re-reads everything (and renews the watches);
* a watched directory itself deleted or moved is reported by its path, like any change.

Only the libc calls ``inotify_init1``/``inotify_add_watch``/``inotify_rm_watch`` are used
(through ``ctypes``); :func:`available` says whether they exist (Linux with glibc or musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import logging
import os
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

import anyio

log = logging.getLogger("sessiond.watch")

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
"""What changes a session file or a directory of them (``IN_ATTRIB``: a truncation through
``ftruncate`` reports ``IN_MODIFY``, a link count change ``IN_ATTRIB``)."""

_HEADER = struct.Struct("iIII")
READ_SIZE = 256 * 1024
"""Bytes read per ``read()`` call (the queue is drained in a loop)."""


@functools.cache
def _load() -> ctypes.CDLL | None:
    """libc with the three inotify calls typed, once; ``None`` where they do not exist."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_init1.restype = ctypes.c_int
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_add_watch.restype = ctypes.c_int
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.inotify_rm_watch.restype = ctypes.c_int
    return libc


def available() -> bool:
    """Whether this system has inotify (through libc)."""
    return _load() is not None


def _raise_errno(what: str, path: str | None = None) -> None:
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}", path)


@dataclass
class Changes:
    """One :meth:`Inotify.read`: the paths to look at, and whether to re-read everything."""

    paths: set[str] = field(default_factory=set)
    rescan: bool = False


class Inotify:
    """One inotify instance watching ``paths`` (directories; with ``recursive``, every directory
    below them too). Created watches are in place when the constructor returns.

    ``ignore_permission_denied``: a directory that cannot be watched (``EACCES``) is skipped
    with a warning instead of raising (a top directory as well as one found below).
    Raises ``FileNotFoundError`` when a top directory is missing, ``OSError`` for the rest
    (``ENOSPC``: the per-user watch limit)."""

    def __init__(
        self,
        paths: Iterable[str],
        recursive: bool,
        *,
        ignore_permission_denied: bool = True,
        mask: int = MASK,
    ) -> None:
        libc = _load()
        if libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self._libc = libc
        self.recursive = recursive
        self._mask = mask | IN_ONLYDIR | IN_DONT_FOLLOW
        self._ignore_permission_denied = ignore_permission_denied
        self._paths: dict[int, str] = {}
        """Watch descriptor -> directory."""
        self._tops = [os.fspath(p) for p in paths]
        self.fd: int = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        if self.fd < 0:
            _raise_errno("inotify_init1")
        try:
            for top in self._tops:
                self._add(top, top_level=True)
                if recursive:
                    self._add_below(top)
        except BaseException:
            self.close()
            raise

    def fileno(self) -> int:
        return self.fd

    @property
    def watches(self) -> int:
        """Directories watched now."""
        return len(self._paths)

    def _add(self, directory: str, *, top_level: bool = False) -> bool:
        wd: int = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), self._mask)
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.EACCES and self._ignore_permission_denied:
                log.warning("file watching: cannot watch %s (permission denied); skipped", directory)
                return False
            if not top_level and code in (errno.ENOENT, errno.ENOTDIR):
                return False  # gone again before its watch: its parent's event says so
            raise OSError(code, f"inotify_add_watch: {os.strerror(code)}", directory)
        self._paths[wd] = directory
        return True

    def _add_below(self, directory: str) -> None:
        stack = [directory]
        while stack:
            d = stack.pop()
            try:
                with os.scandir(d) as it:
                    subdirs = [e.path for e in it if e.is_dir(follow_symlinks=False)]
            except (FileNotFoundError, NotADirectoryError):
                continue
            except PermissionError:
                if not self._ignore_permission_denied:
                    raise
                log.warning("file watching: cannot list %s (permission denied); skipped", d)
                continue
            for sub in subdirs:
                if self._add(sub):
                    stack.append(sub)

    def read(self) -> Changes:
        """Drain the queued events (non-blocking; nothing queued: no paths)."""
        out = Changes()
        while True:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                return out
            if not data:
                return out
            self._parse(data, out)

    def _parse(self, data: bytes, out: Changes) -> None:
        offset, end = 0, len(data)
        unpack = _HEADER.unpack_from
        size = _HEADER.size
        paths = self._paths
        while offset + size <= end:
            wd, mask, _cookie, length = unpack(data, offset)
            name = data[offset + size : offset + size + length].split(b"\0", 1)[0]
            offset += size + length
            if mask & IN_Q_OVERFLOW:
                out.rescan = True
                continue
            directory = paths.get(wd)
            if directory is None:
                continue
            if mask & IN_IGNORED:
                del paths[wd]  # the directory is gone (or its watch was removed)
                out.paths.add(directory)
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                out.paths.add(directory)
                continue
            path = os.path.join(directory, os.fsdecode(name)) if name else directory
            out.paths.add(path)
            if self.recursive and mask & IN_ISDIR:
                if mask & (IN_CREATE | IN_MOVED_TO):
                    try:
                        if self._add(path):
                            self._add_below(path)
                    except OSError as exc:  # the watch limit: re-read and let the caller renew
                        log.warning("file watching: cannot watch %s: %s", path, exc)
                        out.rescan = True
                elif mask & IN_MOVED_FROM:
                    out.rescan = True  # its watches moved with it, to a path unknown here

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._paths.clear()


CREATED = IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
"""What a watch on an ancestor of a missing directory needs: entries appearing, itself going."""


class Nearby:
    """Wait for changes to ``target`` (a file, or a directory that may not exist yet) without
    polling: a watch on its directory, filtered to names starting with ``target``'s name (a
    database's ``-wal`` and ``-journal`` too); while that directory is missing, a watch on
    its nearest existing ancestor that only sees entries appear (a busy home directory's
    writes do not wake it), moved down as the path comes into being.

    Arm it *before* looking at the target, then :meth:`wait`: a change after the look wakes
    the wait. ``ignore``: suffixes of ``target`` whose changes do not count (a database's
    ``-shm``, written through a memory map by readers too). ``appear_only``: only the
    target's appearing counts (a root directory that does not exist yet), so its parent is
    watched for created entries only as well."""

    def __init__(
        self, target: os.PathLike[str] | str, ignore: tuple[str, ...] = (), *, appear_only: bool = False
    ) -> None:
        self.target = os.path.abspath(os.fspath(target))
        self._appear_only = appear_only
        self._ignore = tuple(self.target + suffix for suffix in ignore)
        self._notify: Inotify | None = None
        self._watched: str | None = None

    def arm(self) -> bool:
        """The watch is in place (made or moved as needed); ``False`` when it cannot be (no
        inotify, the watch limit): then the caller polls."""
        if not available():
            return False
        directory = os.path.dirname(self.target)
        watched = directory
        while not os.path.isdir(watched):
            parent = os.path.dirname(watched)
            if parent == watched:
                return False
            watched = parent
        if self._notify is not None and self._watched == watched and self._notify.watches:
            return True
        self.close()
        try:
            mask = MASK if watched == directory and not self._appear_only else CREATED
            self._notify = Inotify([watched], False, mask=mask)
        except OSError as exc:
            log.warning("file watching: cannot watch %s (%s); polling it", watched, exc)
            return False
        self._watched = watched
        return True

    def _relevant(self, paths: set[str]) -> bool:
        for p in paths:
            if p == self._watched:
                return True  # the watched directory itself went or changed
            if p.startswith(self.target) and not (self._ignore and p.startswith(self._ignore)):
                return True
            if self.target.startswith(p + os.sep):
                return True  # a directory on the way to the target appeared
        return False

    async def wait(self, timeout: float) -> bool:
        """Until the target (or the way to it) changes, at most ``timeout`` seconds. Armed.
        Whether it changed (``False``: the time ran out)."""
        notify = self._notify
        assert notify is not None, "arm() first"
        with anyio.move_on_after(timeout):
            while True:
                await anyio.wait_readable(notify.fileno())
                changes = notify.read()
                if changes.rescan or self._relevant(changes.paths):
                    return True
        return False

    def close(self) -> None:
        if self._notify is not None:
            self._notify.close()
        self._notify = None
        self._watched = None
