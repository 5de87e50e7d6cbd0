"""Every touch of the user's files, safe by construction (docs/file-history.md, "Rewind").

A path is first placed lexically: joined to the cwd when relative, normalised (``..``
resolved by text, never by the file system), and kept only if it lies under the session's cwd
or a configured root. Its key is relative to the cwd when inside it, absolute otherwise.

Then every access walks from the root directory down to the parent directory **one component
at a time with** ``os.open(name, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)``: a component that
is a symlink fails to open (it is never followed), whenever it was swapped in, so nothing below
a root is ever reached through a link. The root itself is opened normally (it is configuration,
and may legitimately sit below a symlink such as macOS's ``/tmp``). The last component is then
only touched relative to the parent's descriptor:

* read: ``lstat`` (a symlink is read with ``readlink``, never followed; a regular file is
  opened with ``O_NOFOLLOW`` and checked with ``fstat``);
* write a file: a new temporary file in the parent (``O_EXCL | O_NOFOLLOW``), filled from the
  blob while re-hashing it, ``fchmod``, ``fsync``, then renamed over the name (``renameat``
  replaces a symlink itself, never what it points to) — or hard-linked into place when the
  path must not exist yet, so a file created meanwhile is not replaced;
* a symlink: created under a temporary name and renamed over, or created in place when absent;
* delete: ``unlinkat`` (removes a link itself; directories are refused);
* missing parents of a file to re-create: ``mkdirat`` (0o755) with the same no-follow walk.

A rewind also pins each root's identity (device and inode, recorded with the snapshots): every
walk checks the directory it opened as the root against it, so a root replaced by a symlink to
another directory (or by another directory) between the plan and the write is refused too.

Right before the rename or unlink, the path is ``lstat``-ed again and compared (inode, size,
mtime, ctime) with what was checked: a file changed in between is left alone
(:class:`FileChangedError`). What remains is the microseconds between that check and the
rename, which only a lock every writer honoured could close.
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, TypeAlias

from .blobs import Blobs, HashingWriter, copy_fd, hash_fd
from .errors import (
    BlobCorruptError,
    FileAccessError,
    FileChangedError,
    FileHistoryError,
    PathRefusedError,
    RootChangedError,
)
from .states import MISSING, FileState, content_key, is_utf8, same_state

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_DIR_MODE: Final = 0o755
_READ_ATTEMPTS: Final = 3
_LOCATED_MAX: Final = 1_000_000
"""Placed paths remembered per workspace (each a few hundred bytes; a session tracks far fewer)."""


def _normpath(path: str) -> str:
    norm = os.path.normpath(path)
    if norm.startswith("//"):  # POSIX keeps a leading "//" as is; it names "/" on Linux and macOS
        norm = "/" + norm.lstrip("/")
    return norm


def _under(path: str, root: str) -> tuple[str, ...] | None:
    """The components of ``path`` below ``root`` (both normalised, absolute), or None."""
    if root == "/":
        rest = path[1:]
    elif path == root:
        rest = ""
    elif path.startswith(root + "/"):
        rest = path[len(root) + 1 :]
    else:
        return None
    return tuple(rest.split("/")) if rest else ()


_RACY_SECONDS = 2.0

RootId: TypeAlias = tuple[int, int]
"""A directory's identity: ``(st_dev, st_ino)``."""


def identity_json(root_id: RootId | None) -> dict[str, int] | None:
    return None if root_id is None else {"dev": root_id[0], "ino": root_id[1]}


def root_mismatch(root: str, recorded: RootId | None, current: RootId | None) -> RootChangedError:
    """The error for a root that is not the recorded directory, saying what each was."""
    if current is None:
        reason = "the session's directory cannot be reached any more"
    elif recorded is None:
        reason = (
            "is a symlink now, and the file history was recorded before sessiond kept the identity "
            "of the session's directory, so it cannot tell whether the link leads to the same "
            "directory (track a file to record the directory as it is now)"
        )
    else:
        reason = (
            f"is not the directory the file history was recorded in (device {recorded[0]}, inode "
            f"{recorded[1]}; now device {current[0]}, inode {current[1]}): it was replaced, or a "
            "symlink now leads elsewhere; nothing was written"
        )
    return RootChangedError(root, reason, identity_json(recorded), identity_json(current))


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _tmp_name() -> str:
    # Short and bounded: a temporary name must fit NAME_MAX whatever the file's name is. The pid
    # says whose it is, so a copy left by a killed daemon can be told from one being written.
    return f".sessiond-{os.getpid()}-{secrets.token_hex(8)}.tmp"


_TMP_PATTERN = re.compile(r"\.sessiond-(\d+)-[0-9a-f]{16}\.tmp")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_temporaries(dfd: int) -> list[str]:
    """Remove the temporary copies a killed rewind left in this directory; their names.

    A rewind writes each file to ``.sessiond-<pid>-<hex>.tmp`` and renames it over; a kill in
    between leaves the copy (the real file is intact). Only names of exactly that shape, owned
    by this user, not directories, and whose process is gone are removed.
    """
    removed = []
    uid = os.getuid()
    for name in os.listdir(dfd):
        match = _TMP_PATTERN.fullmatch(name)
        if match is None or int(match.group(1)) == os.getpid() or _process_alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if st.st_uid == uid and not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=dfd)
                removed.append(name)
    return removed


@dataclass(frozen=True, slots=True)
class _Root:
    path: str
    """Absolute and normalised, as configured (symlinks above it are kept)."""
    real: str
    """``realpath`` of it: a path given through the resolved form is recognised too."""


@dataclass(frozen=True, slots=True)
class Located:
    """Where a path is: its key, the root its walk starts from, and the components below it."""

    key: str
    root: str
    parts: tuple[str, ...]

    @property
    def path(self) -> Path:
        return Path(self.root, *self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1]


class Workspace:
    """The files one session may read and rewind: below its cwd and the configured roots."""

    def __init__(self, cwd: Path, roots: Sequence[Path] = ()) -> None:
        self.cwd = Path(cwd)
        """As given (the service compares it to the session's cwd)."""
        self._cwd = self._root(self.cwd)
        self.roots: tuple[_Root, ...] = (self._cwd, *(self._root(Path(r)) for r in roots))
        self._deferred = threading.local()
        self._pins = threading.local()
        self._hashed: dict[str, tuple[tuple[int, ...], FileState]] = {}
        """key -> (identity, state) of files hashed earlier: an unchanged file is not read again."""
        self._hashed_lock = threading.Lock()
        self._located: dict[str, Located] = {}
        self._swept: set[tuple[str, tuple[str, ...]]] = set()
        """Directories already cleared of temporaries left by a killed daemon (once is enough:
        this process removes its own)."""

    @staticmethod
    def _root(path: Path) -> _Root:
        absolute = _normpath(os.path.abspath(os.fspath(path.expanduser())))
        return _Root(absolute, _normpath(os.path.realpath(absolute)))

    def __repr__(self) -> str:
        return f"Workspace({self._cwd.path!r}, roots={[r.path for r in self.roots[1:]]!r})"

    # ------------------------------------------------------------------ the roots' identities

    def root_paths(self) -> tuple[str, ...]:
        """The roots' paths as configured (the cwd first): the keys of :meth:`identities`."""
        return tuple(r.path for r in self.roots)

    @staticmethod
    def identity(root: str) -> RootId | None:
        """The identity of the directory ``root`` leads to now (symlinks above and at it followed,
        as the walk's first open does); None when it is not a reachable directory."""
        try:
            st = os.stat(root)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None

    def identities(self) -> dict[str, RootId]:
        """Every reachable root's identity now, by path: what a snapshot records."""
        out: dict[str, RootId] = {}
        for root in self.roots:
            found = self.identity(root.path)
            if found is not None:
                out.setdefault(root.path, found)
        return out

    @staticmethod
    def is_symlink(root: str) -> bool:
        try:
            return stat.S_ISLNK(os.lstat(root).st_mode)
        except OSError:
            return False

    @contextlib.contextmanager
    def pinned(self, roots: dict[str, RootId]) -> Iterator[None]:
        """Within it (this thread), every walk refuses (:class:`RootChangedError`) a root whose
        directory is not the one given for its path."""
        previous: dict[str, RootId] | None = getattr(self._pins, "roots", None)
        self._pins.roots = {**(previous or {}), **roots}
        try:
            yield
        finally:
            self._pins.roots = previous

    # ------------------------------------------------------------------ placing paths

    def locate(self, path: str) -> Located:
        """Place ``path`` lexically (no file-system access); :class:`PathRefusedError` when it
        is empty, holds a NUL byte, is not valid UTF-8, is a root itself or lies outside every
        root after normalisation. Remembered per path: a rewind places every tracked key twice
        (its root's identity, then the walk), and the answer depends on the text alone."""
        if type(path) is str:
            known = self._located.get(path)
            if known is not None:
                return known
        located = self._locate(path)
        if len(self._located) < _LOCATED_MAX:
            self._located[path] = located
        return located

    def _locate(self, path: str) -> Located:
        if not isinstance(path, str) or not path:
            raise PathRefusedError(repr(path), "empty path")
        if "\0" in path:
            raise PathRefusedError(path.replace("\0", "\\0"), "contains a NUL byte")
        if not is_utf8(path):
            raise PathRefusedError(repr(path), "is not valid UTF-8")
        norm = _normpath(path if os.path.isabs(path) else os.path.join(self._cwd.path, path))
        in_cwd: tuple[str, ...] | None = None
        best: tuple[_Root, tuple[str, ...]] | None = None
        for root in self.roots:
            for form in (root.path, root.real):
                parts = _under(norm, form)
                if parts is None:
                    continue
                if root is self._cwd and in_cwd is None:
                    in_cwd = parts
                # The deepest root holding the path starts the walk: everything below a root
                # must be free of symlinks, the root's own path is configuration.
                if best is None or len(parts) < len(best[1]):
                    best = (root, parts)
        if best is None:
            raise PathRefusedError(path, "outside the session's cwd and configured roots")
        root, parts = best
        if not parts or (in_cwd is not None and not in_cwd):
            raise PathRefusedError(path, "is a root directory")
        if in_cwd is not None:
            key = "/".join(in_cwd)
        else:
            key = os.path.join(root.path, *parts)
        return Located(key, root.path, parts)

    def resolve(self, path: str) -> tuple[Path, str]:
        """The absolute path and the key of ``path``; refused (:class:`PathRefusedError`) outside
        the roots, with a NUL byte, or when an existing directory on the way is a symlink (or not
        a directory)."""
        loc = self.locate(path)
        current = loc.root
        for part in loc.parts[:-1]:
            current = os.path.join(current, part)
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break
            except OSError as exc:
                raise FileAccessError(
                    loc.key, f"cannot inspect {current}: {exc.strerror}", exc.errno
                ) from exc
            if stat.S_ISLNK(st.st_mode):
                raise PathRefusedError(loc.key, f"a directory on the way is a symlink: {current}")
            if not stat.S_ISDIR(st.st_mode):
                raise PathRefusedError(loc.key, f"a directory on the way is not a directory: {current}")
        return loc.path, loc.key

    # ------------------------------------------------------------------ the no-follow walk

    def _open_parent(self, loc: Located, *, create: bool) -> int | None:
        """A descriptor of the path's parent directory, reached without following any symlink
        below the root; None when a directory on the way does not exist (and ``create`` is off)."""
        try:
            fd = os.open(loc.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise FileAccessError(
                loc.key, f"cannot open the root {loc.root}: {exc.strerror}", exc.errno
            ) from exc
        pins: dict[str, RootId] | None = getattr(self._pins, "roots", None)
        expected = pins.get(loc.root) if pins else None
        if expected is not None:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != expected:
                os.close(fd)
                raise root_mismatch(loc.root, expected, (st.st_dev, st.st_ino))
        for depth, part in enumerate(loc.parts[:-1]):
            try:
                child = self._open_dir(fd, part, loc, depth, create)
            finally:
                os.close(fd)
            if child is None:
                return None
            fd = child
        return fd

    def _open_dir(self, fd: int, part: str, loc: Located, depth: int, create: bool) -> int | None:
        where = os.path.join(loc.root, *loc.parts[: depth + 1])
        for _ in range(_READ_ATTEMPTS):
            try:
                return os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return None
                try:
                    os.mkdir(part, _NEW_DIR_MODE, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise FileAccessError(
                        loc.key, f"cannot create {where}: {exc.strerror}", exc.errno
                    ) from exc
                else:
                    os.fsync(fd)
                # Open what is there now with the same no-follow rule: a symlink planted between
                # the mkdir and this open is refused like any other.
            except OSError as exc:
                if exc.errno not in (errno_codes.ENOTDIR, errno_codes.ELOOP):
                    raise FileAccessError(loc.key, f"cannot open {where}: {exc.strerror}", exc.errno) from exc
                try:
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    raise PathRefusedError(loc.key, f"a directory on the way is a symlink: {where}") from None
                if not stat.S_ISDIR(st.st_mode):
                    raise PathRefusedError(
                        loc.key, f"a directory on the way is not a directory: {where}"
                    ) from None
        raise FileChangedError(loc.key, f"{where} kept changing while it was opened")

    # ------------------------------------------------------------------ reading

    def read_state(self, key: str, blobs: Blobs | None) -> FileState:
        """What ``key`` holds now: missing, a symlink (its target; never followed) or a regular
        file (its content stored in ``blobs`` when given, else only hashed). A directory, FIFO,
        socket or device is refused."""
        loc = self.locate(key)
        dfd = self._open_parent(loc, create=False)
        if dfd is None:
            return MISSING
        try:
            return self._read_at(dfd, loc, blobs)[0]
        finally:
            os.close(dfd)

    def current_key(self, key: str) -> str:
        """The content key (``seen`` value) of what is on disk now; nothing is stored."""
        return content_key(self.read_state(key, None))

    def open_file(self, key: str) -> BinaryIO:
        """Open the regular file at ``key`` for reading, through the no-follow walk.

        :class:`PathRefusedError` if it is a symlink or not a regular file,
        :class:`FileChangedError` if it does not exist."""
        loc = self.locate(key)
        dfd = self._open_parent(loc, create=False)
        if dfd is None:
            raise FileChangedError(loc.key, "it does not exist")
        try:
            try:
                fd = os.open(loc.name, _READ_FLAGS, dir_fd=dfd)
            except FileNotFoundError:
                raise FileChangedError(loc.key, "it does not exist") from None
            except OSError as exc:
                if exc.errno == errno_codes.ELOOP:
                    raise PathRefusedError(loc.key, "is a symlink") from None
                raise FileAccessError(loc.key, exc.strerror or str(exc), exc.errno) from exc
        finally:
            os.close(dfd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PathRefusedError(loc.key, "is not a regular file")
        return open(fd, "rb")

    def _read_at(
        self, dfd: int, loc: Located, blobs: Blobs | None
    ) -> tuple[FileState, os.stat_result | None]:
        """The state of ``loc.name`` in directory ``dfd`` and the stat it was read under."""
        name = loc.name
        for _ in range(_READ_ATTEMPTS):
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                return MISSING, None
            except OSError as exc:
                raise FileAccessError(loc.key, exc.strerror or str(exc), exc.errno) from exc
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=dfd)
                except (FileNotFoundError, OSError) as exc:
                    if isinstance(exc, FileNotFoundError) or exc.errno == errno_codes.EINVAL:
                        continue  # replaced meanwhile: look again
                    raise FileAccessError(loc.key, exc.strerror or str(exc), exc.errno) from exc
                if not is_utf8(target):
                    raise PathRefusedError(loc.key, "is a symlink whose target is not valid UTF-8")
                return FileState.symlink(target), st
            if stat.S_ISDIR(st.st_mode):
                raise PathRefusedError(loc.key, "is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise PathRefusedError(loc.key, "is not a regular file")
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno == errno_codes.ELOOP:
                    continue  # became a symlink meanwhile
                raise FileAccessError(loc.key, exc.strerror or str(exc), exc.errno) from exc
            try:
                before = os.fstat(fd)
                if not stat.S_ISREG(before.st_mode):
                    continue
                with self._hashed_lock:
                    known = self._hashed.get(loc.key)
                if (
                    known is not None
                    and known[0] == _identity(before)
                    and (blobs is None or (known[1].blob is not None and blobs.has(known[1].blob)))
                ):
                    return known[1], before  # same inode, size, mtime and ctime: same content
                try:
                    sha, size = blobs.put_fd(fd) if blobs is not None else hash_fd(fd)
                except OSError as exc:
                    raise FileAccessError(loc.key, exc.strerror or str(exc), exc.errno) from exc
                after = os.fstat(fd)
                if _identity(before) != _identity(after) or size != after.st_size:
                    continue  # written to while it was read: the bytes may be a mix; read again
                state = FileState.file(sha, stat.S_IMODE(after.st_mode), size)
                # Racy-git rule: a file modified within the last seconds could change again inside
                # the same timestamp tick without its stat changing; only older ones are remembered.
                if time.time() - after.st_mtime > _RACY_SECONDS:
                    with self._hashed_lock:
                        self._hashed[loc.key] = (_identity(after), state)
                return state, after
            finally:
                os.close(fd)
        raise FileChangedError(loc.key, "it kept changing while it was read")

    # ------------------------------------------------------------------ writing

    def apply(
        self,
        key: str,
        target: FileState,
        blobs: Blobs,
        *,
        expected: FileState | None = None,
        own_link: bool = False,
    ) -> None:
        """Make ``key`` hold ``target``, atomically and without following symlinks.

        ``expected``: the state the path must hold now (by content); anything else raises
        :class:`FileChangedError` and nothing is written. Refused (:class:`PathRefusedError`,
        whatever ``expected`` says): a symlink where the target is not a symlink, a directory,
        anything that is not a regular file, a directory on the way that is a symlink.

        ``own_link`` (with ``expected`` a symlink): that very symlink was created by sessiond and
        may be replaced by a file or deleted — the link itself, never what it points to.
        """
        loc = self.locate(key)
        try:
            dfd = self._open_parent(loc, create=False)
            if dfd is None:
                if expected is not None and expected.kind != "missing":
                    raise FileChangedError(loc.key, "it no longer exists")
                if target.kind == "missing":
                    return
                dfd = self._open_parent(loc, create=True)
                assert dfd is not None
            try:
                if (loc.root, loc.parts[:-1]) not in self._swept:
                    self._swept.add((loc.root, loc.parts[:-1]))
                    with contextlib.suppress(OSError):
                        sweep_stale_temporaries(dfd)
                current, checked = self._read_at(dfd, loc, None)
                if expected is not None and content_key(current) != content_key(expected):
                    raise FileChangedError(
                        loc.key, f"expected {content_key(expected)}, found {content_key(current)}"
                    )
                if current.kind == "symlink" and target.kind != "symlink":
                    mine = own_link and expected is not None and expected.kind == "symlink"
                    if not (mine and expected is not None and same_state(current, expected)):
                        raise PathRefusedError(loc.key, "is a symlink")
                if same_state(current, target):
                    return
                if target.kind == "missing":
                    self._check_unchanged(dfd, loc, checked)
                    os.unlink(loc.name, dir_fd=dfd)
                elif target.kind == "file":
                    self._write_file(dfd, loc, target, blobs, checked)
                else:
                    self._write_symlink(dfd, loc, target, checked)
                pending: set[tuple[str, tuple[str, ...]]] | None = getattr(self._deferred, "dirs", None)
                if pending is None:
                    os.fsync(dfd)
                else:
                    pending.add((loc.root, loc.parts[:-1]))
            finally:
                os.close(dfd)
        except FileHistoryError:
            raise
        except OSError as exc:
            raise FileAccessError(loc.key, exc.strerror or str(exc), exc.errno) from exc

    @contextlib.contextmanager
    def deferred_sync(self) -> Iterator[None]:
        """Within it (this thread), :meth:`apply` leaves flushing the directories it changed to
        the end, once per directory: the files themselves are still flushed before their rename,
        so each path holds the old or the new content whatever happens, and everything is on disk
        when the block is left."""
        if getattr(self._deferred, "dirs", None) is not None:
            yield
            return
        pending: set[tuple[str, tuple[str, ...]]] = set()
        self._deferred.dirs = pending
        try:
            yield
        finally:
            self._deferred.dirs = None
            for root, parents in sorted(pending):
                with contextlib.suppress(FileHistoryError, OSError):  # gone meanwhile: nothing to flush
                    dfd = self._open_parent(Located("", root, (*parents, ".")), create=False)
                    if dfd is not None:
                        try:
                            os.fsync(dfd)
                        finally:
                            os.close(dfd)

    def _check_unchanged(self, dfd: int, loc: Located, checked: os.stat_result | None) -> None:
        try:
            now = os.stat(loc.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            if checked is None:
                return
            raise FileChangedError(loc.key, "it was deleted meanwhile") from None
        if checked is None:
            raise FileChangedError(loc.key, "it was created meanwhile")
        if _identity(now) != _identity(checked):
            raise FileChangedError(loc.key, "it was modified meanwhile")

    def _write_file(
        self, dfd: int, loc: Located, target: FileState, blobs: Blobs, checked: os.stat_result | None
    ) -> None:
        assert target.blob is not None and target.mode is not None
        tmp = _tmp_name()
        with blobs.open(target.blob) as src:
            fd = os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=dfd)
            try:
                try:
                    sink = HashingWriter(fd)
                    copy_fd(src.fileno(), sink)
                    # The blob is re-hashed on the way: a damaged backup is never written.
                    got = sink.digest.hexdigest()
                    if got != target.blob or sink.size != target.size:
                        raise BlobCorruptError(target.blob, f"read {sink.size} bytes hashing to {got}")
                    os.fchmod(fd, target.mode)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                self._place(dfd, loc, tmp, checked)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                raise

    def _write_symlink(
        self, dfd: int, loc: Located, target: FileState, checked: os.stat_result | None
    ) -> None:
        assert target.target is not None
        if checked is None:
            try:
                os.symlink(target.target, loc.name, dir_fd=dfd)  # fails if something appeared
            except FileExistsError:
                raise FileChangedError(loc.key, "it was created meanwhile") from None
            return
        tmp = _tmp_name()
        os.symlink(target.target, tmp, dir_fd=dfd)
        try:
            self._place(dfd, loc, tmp, checked)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise

    def _place(self, dfd: int, loc: Located, tmp: str, checked: os.stat_result | None) -> None:
        """Give the prepared ``tmp`` the path's name, if the path still is what was checked."""
        self._check_unchanged(dfd, loc, checked)
        if checked is None:
            # Must not exist: a hard link fails if a file appeared since the check.
            try:
                os.link(tmp, loc.name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                raise FileChangedError(loc.key, "it was created meanwhile") from None
            except OSError as exc:
                if exc.errno not in (errno_codes.EPERM, errno_codes.ENOTSUP, errno_codes.EOPNOTSUPP):
                    raise
                os.rename(tmp, loc.name, src_dir_fd=dfd, dst_dir_fd=dfd)  # no hard links here
                return
            os.unlink(tmp, dir_fd=dfd)
            return
        os.rename(tmp, loc.name, src_dir_fd=dfd, dst_dir_fd=dfd)
