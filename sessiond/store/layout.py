"""Where sessions live on disk, and proof that client-supplied paths stay there.

The store mirrors Pi's agent directory so a store can be opened by Pi and vice versa:

    <root>/sessions/--<encoded cwd>--/<iso timestamp>_<session id>.jsonl

``<root>`` is ``$SESSIOND_HOME``, else ``$XDG_DATA_HOME/sessiond``, else
``~/.local/share/sessiond``. The cwd encoding and file naming are Pi's (docs/pi-format.md §1.1-§1.2).

Every path that comes from a client goes through :meth:`StoreLayout.contain` (or
:func:`ensure_within`): it must name something inside the root after resolving ``..`` and
symlinks, or it is refused with :class:`~sessiond.errors.PathEscapeError` before anything is
touched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..errors import InvalidArgumentError, InvalidSessionIdError, PathEscapeError

SESSION_ID_RE: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it passes Pi's rule, else raise :class:`InvalidSessionIdError`."""
    if type(session_id) is not str or SESSION_ID_RE.fullmatch(session_id) is None:
        raise InvalidSessionIdError(session_id)
    return session_id


def encode_cwd(cwd: str) -> str:
    """Pi's per-cwd directory name: ``/home/u/my proj`` -> ``--home-u-my proj--``.

    Only one leading separator is dropped; every ``/``, ``\\`` and ``:`` becomes ``-``.
    """
    resolved = resolve_cwd(cwd)
    body = resolved[1:] if resolved[:1] in ("/", "\\") else resolved
    return "--" + body.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


MAX_NAME_BYTES: Final = 255
"""The longest file or directory name Linux, macOS and Windows file systems take (in bytes)."""


def check_cwd_fits(cwd: str) -> None:
    """Refuse a ``cwd`` whose store directory name (:func:`encode_cwd`) the file system cannot
    create: -32602 naming ``cwd`` before anything is written, not a storage error from
    ``mkdir`` ("File name too long") that reads like a broken disk."""
    size = len(encode_cwd(cwd).encode("utf-8", "surrogateescape"))
    if size > MAX_NAME_BYTES:
        raise InvalidArgumentError(
            f"cwd is too long for a session directory: its name would be {size} bytes, "
            f"the file system takes at most {MAX_NAME_BYTES}",
            field="cwd",
        )


_WINDOWS_ABSOLUTE: Final = re.compile(r"[A-Za-z]:[\\/]|\\\\")
"""``D:\\dir``, ``D:/dir`` or ``\\\\server\\share``: a cwd recorded on Windows."""


def resolve_cwd(cwd: str) -> str:
    """``path.resolve(cwd)`` after ``~`` expansion: absolute and normalised, symlinks kept.

    A Windows path (an agent's session recorded on Windows, exported or forked here) is kept as
    it was written: joined onto this process's current directory it would name a folder that
    depends on where the command ran (``<cwd>/D:\\oh-my-posh``). Pi on Windows resolves it to
    itself, so its store folder (:func:`encode_cwd`) is the one Pi there would use."""
    if _WINDOWS_ABSOLUTE.match(cwd):
        return cwd
    return os.path.abspath(os.path.expanduser(cwd))


def file_timestamp(iso: str) -> str:
    """The file-name form of an ISO timestamp (``:`` and ``.`` replaced by ``-``)."""
    return iso.replace(":", "-").replace(".", "-")


def session_file_name(iso: str, session_id: str) -> str:
    return f"{file_timestamp(iso)}_{validate_session_id(session_id)}.jsonl"


def default_root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("SESSIOND_HOME"):
        return Path(env["SESSIOND_HOME"]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sessiond"
    return Path.home() / ".local" / "share" / "sessiond"


def ensure_within(root: Path, candidate: str | os.PathLike[str]) -> Path:
    """Resolve ``candidate`` (relative to ``root`` unless absolute) and prove it stays in ``root``.

    ``..`` components are refused outright (they have no business in a client path); then the
    path is resolved with symlinks followed — the whole path if it exists, its deepest existing
    ancestor otherwise — and must lie inside the resolved root.
    """
    raw = os.fspath(candidate)
    root_real = os.path.realpath(root)
    if "\x00" in raw:
        raise PathEscapeError(raw, root_real, "the path contains a NUL byte")
    parts = Path(raw).parts
    if ".." in parts:
        raise PathEscapeError(raw, root_real, "'..' is not allowed")
    path = Path(raw) if os.path.isabs(raw) else Path(root) / raw
    resolved = os.path.realpath(path)  # follows every symlink that exists, keeps the missing tail
    if resolved != root_real and not resolved.startswith(root_real.rstrip(os.sep) + os.sep):
        reason = "it resolves outside the root" + (" through a symlink" if _has_symlink(path) else "")
        raise PathEscapeError(raw, root_real, reason)
    return Path(resolved)


def _has_symlink(path: Path) -> bool:
    p = Path(path)
    for q in (p, *p.parents):
        try:
            if q.is_symlink():
                return True
        except OSError:
            return False
    return False


@dataclass(frozen=True)
class StoreLayout:
    """The paths of one store. Creating directories is explicit (:meth:`ensure_dirs`)."""

    root: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StoreLayout:
        return cls(default_root(env))

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def trash_dir(self) -> Path:
        return self.root / "trash"

    def cwd_dir(self, cwd: str) -> Path:
        """The directory holding the sessions of ``cwd`` (not created here)."""
        return self.sessions_dir / encode_cwd(cwd)

    def new_session_path(self, cwd: str, session_id: str, iso_timestamp: str) -> Path:
        return self.cwd_dir(cwd) / session_file_name(iso_timestamp, session_id)

    def contain(self, candidate: str | os.PathLike[str]) -> Path:
        """A client path proven to lie inside this store (see :func:`ensure_within`)."""
        return ensure_within(self.root, candidate)

    def ensure_dirs(self, *dirs: Path) -> None:
        """Create the store root and the given directories (0700: transcripts are private)."""
        for d in (self.root, self.sessions_dir, *dirs):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
