"""Finding, listing and opening sessions across the roots sessiond serves.

A session id names one file in one root: the store first, then Pi's directory, then Claude
Code's projects, Codex's home and OpenCode's data directory. Pi-format files are found by
their header (``*_<id>.jsonl``, Pi's naming); Claude Code files by their name
(``<project>/<uuid>.jsonl``; sub-agent transcripts are not sessions); Codex rollouts and
OpenCode sessions through :mod:`sessiond.service.agent_roots`. Listing merges every root,
newest first, each summary saying where it lives and whether sessiond may write it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import NotASessionError, PathEscapeError, SessionNotFoundError
from ..formats.claude_code import listing_fields
from ..store.backend import LocalStore, StoreBackend
from ..store.claude import ClaudeSession
from ..store.claude_files import load_transcript
from ..store.codex import CodexSession
from ..store.journal import Durability
from ..store.layout import ensure_within, validate_session_id
from ..store.listing import ListingCache, SessionInfo, list_dir, list_sessions_in, read_header, scan_session
from ..store.opencode import OpenCodeSession
from ..store.regular import NotRegularFileError, SymlinkRefusedError
from ..store.session import ReadableSession, Session
from .agent_roots import (
    CodexListing,
    _codex_summary,
    codex_files,
    find_codex,
    find_opencode,
    opencode_infos,
)
from .roots import Root, claude_project_dir_name

UUID_STEM: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CLAUDE_PREFIX: Final = 200


@dataclass(frozen=True, slots=True)
class Listed:
    info: SessionInfo
    root: Root


class Catalog:
    def __init__(self, roots: list[Root], listing: ListingCache, store: StoreBackend | None = None) -> None:
        self.roots = roots
        self.listing = listing
        self.store: StoreBackend = LocalStore() if store is None else store
        """How sessiond's own sessions (the first root) are opened, found and listed."""
        self._claude_cache: dict[str, tuple[tuple[int, int, int], SessionInfo | None]] = {}
        self.codex_listing = CodexListing()

    def root(self, name: str) -> Root | None:
        return next((r for r in self.roots if r.name == name), None)

    def root_of(self, path: Path) -> Root:
        """The root a file belongs to (the store when none claims it: sessions sessiond created)."""
        for root in self.roots[1:]:
            if root.contains(path):
                return root
        return self.roots[0]

    # ------------------------------------------------------------------ finding

    def find(self, session_id: str) -> tuple[Root, Path]:
        """The file of a session id, searching the roots in order."""
        validate_session_id(session_id)  # also keeps glob metacharacters out of the patterns below
        invalid: Path | None = None
        for root in self.roots:
            if root.format == "claude-code":
                for candidate in sorted(root.path.glob(f"*/{session_id}.jsonl")):
                    if candidate.is_file():
                        return root, candidate
                continue
            if root.format in ("codex", "opencode"):
                found = (find_codex if root.format == "codex" else find_opencode)(root.path, session_id)
                if found is not None:
                    return root, found
                continue
            for candidate in sorted(root.path.glob(f"*/*_{session_id}.jsonl")):
                if root.read_only_reason is None and candidate.is_symlink():
                    # refused before anything is read through it: whether the target parses
                    # must not show in the answer (security.md)
                    raise PathEscapeError(
                        str(candidate), str(root.path), "the session file is a symbolic link"
                    )
                header = read_header(candidate)
                if header is not None and header.get("id") == session_id:
                    return root, candidate
                if header is None and candidate.is_file() and invalid is None:
                    invalid = candidate
        for listed in self.list_all():  # a Pi file named otherwise (Pi's discovery reads headers)
            if listed.info.id == session_id:
                return listed.root, Path(listed.info.path)
        if invalid is not None:
            raise NotASessionError(str(invalid), "its first JSON line is not a session header")
        located = self.store.locate(session_id)  # created by another daemon sharing the store
        if located is not None:
            return self.roots[0], located
        raise SessionNotFoundError(session_id)

    def open(self, root: Root, path: Path, durability: Durability) -> ReadableSession:
        """The session in ``path``; a FIFO or other special file is not a session (-32021), a
        link in a writable root is refused before its target is opened (-32016)."""
        try:
            return self._open(root, path, durability)
        except NotRegularFileError as exc:
            raise NotASessionError(str(path), f"it is not a regular file but a {exc.kind}") from None
        except SymlinkRefusedError:
            raise PathEscapeError(str(path), str(root.path), "the session file is a symbolic link") from None

    def _open(self, root: Root, path: Path, durability: Durability) -> ReadableSession:
        if root.format == "claude-code":
            return ClaudeSession.open(path)
        if root.format == "codex":
            return CodexSession.open(path)
        if root.format == "opencode":
            return OpenCodeSession.open(path)
        if root.read_only_reason is None:
            # A writer never follows a link planted in a writable root: appending through it would
            # make sessiond write a file outside the root it owns.
            ensure_within(root.path, path)
            if path.is_symlink():
                raise PathEscapeError(str(path), str(root.path), "the session file is a symbolic link")
        if root is self.roots[0]:
            return self.store.open(path, durability=durability)
        return Session.open(path, durability=durability, read_only=root.read_only_reason)

    # ------------------------------------------------------------------ listing

    def list_all(
        self, cwd: str | None = None, root: str | None = None, fmt: str | None = None
    ) -> list[Listed]:
        """Every session of the selected roots (and cwd), newest first."""
        out: list[Listed] = []
        if (root is None or root == self.roots[0].name) and fmt in (None, "pi"):
            self.store.refresh()
        for r in self.roots:
            if (root is not None and r.name != root) or (fmt is not None and r.format != fmt):
                continue
            if r.format == "claude-code":
                out += [Listed(i, r) for i in self._claude_infos(r, cwd)]
            elif r.format == "codex":
                out += [Listed(i, r) for i in self._codex_infos(r, cwd)]
            elif r.format == "opencode":
                out += [Listed(i, r) for i in opencode_infos(r.path, cwd)]
            else:
                out += [Listed(i, r) for i in list_sessions_in(r.path, cwd, cache=self.listing)]
        out.sort(key=lambda x: (os.path.basename(x.info.path), x.info.path), reverse=True)
        out.sort(
            key=lambda x: (1, 0.0) if x.info.modified_ms != x.info.modified_ms else (0, -x.info.modified_ms)
        )
        return out

    def info_of(self, root: Root, path: Path) -> SessionInfo | None:
        """The listing row of one session, computed as :meth:`list_all` computes it (cached the
        same way): what ``session/load`` reports as the session's ``messageCount`` and
        ``firstMessage``, so the list and a session's header never disagree."""
        if root.format == "claude-code":
            return self.claude_info(path)
        if root.format == "codex":
            return self.codex_listing.info(root.path, path)
        wanted = str(path)
        if root.format == "opencode":
            infos = opencode_infos(root.path, None)
        else:
            infos = list_dir(path.parent, cache=self.listing)
        return next((i for i in infos if i.path == wanted), None)

    def claude_files(self, root: Root, cwd: str | None = None) -> Iterator[Path]:
        """Session transcripts (``<uuid>.jsonl``) of a Claude Code projects root."""
        if cwd is None:
            dirs = _subdirs(root.path)
        else:
            name = claude_project_dir_name(os.path.realpath(os.path.expanduser(cwd)))
            if len(name) <= _CLAUDE_PREFIX:
                dirs = [root.path / name]
            else:
                dirs = [d for d in _subdirs(root.path) if d.name.startswith(name[:_CLAUDE_PREFIX])]
        for directory in dirs:
            try:
                with os.scandir(directory) as it:
                    names = [e.name for e in it if e.name.endswith(".jsonl")]
            except OSError:
                continue
            for name in sorted(names):
                if UUID_STEM.fullmatch(name[:-6]):
                    yield directory / name

    def _claude_infos(self, root: Root, cwd: str | None) -> list[SessionInfo]:
        infos: list[SessionInfo] = []
        for path in self.claude_files(root, cwd):
            info = self.claude_info(path)
            if info is not None:
                infos.append(info)
        return infos

    def _codex_infos(self, root: Root, cwd: str | None) -> list[SessionInfo]:
        wanted = None if cwd is None else {cwd, os.path.realpath(os.path.expanduser(cwd))}
        infos = []
        for path in codex_files(root.path):
            info = self.codex_listing.info(root.path, path)
            if info is not None and (wanted is None or info.cwd in wanted):
                infos.append(info)
        return infos

    def claude_info(self, path: Path) -> SessionInfo | None:
        """The listing summary of a Claude Code transcript (re-read only when the file changed)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._claude_cache.get(str(path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            transcript = load_transcript(path)
        except (OSError, ValueError):
            info = None
        else:
            info = _claude_summary(path, transcript, st.st_mtime_ns / 1e6)
        self._claude_cache[str(path)] = (stamp, info)
        return info


def row_of_file(path: Path, fmt: str) -> SessionInfo | None:
    """The listing row a session FILE read directly would have in its root's list (the same
    functions, no cache): its ``messageCount`` and ``firstMessage`` for ``sessiond show FILE``."""
    try:
        mtime_ms = os.stat(path).st_mtime_ns / 1e6
        if fmt == "claude-code":
            return _claude_summary(path, load_transcript(path), mtime_ms)
        if fmt == "codex":
            return _codex_summary(path, mtime_ms)[0]
        if fmt == "pi":
            return scan_session(path)
    except (OSError, ValueError):
        return None
    return None  # an OpenCode session is a database row: its list has it


def _newest_first(x: Listed) -> tuple[int, float]:
    modified = x.info.modified_ms
    return (1, 0.0) if modified != modified else (0, -modified)


def _subdirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as it:
            return sorted(Path(e.path) for e in it if e.is_dir())
    except OSError:
        return []


def _claude_summary(path: Path, transcript: Any, mtime_ms: float) -> SessionInfo:
    fields = listing_fields(transcript)
    created = fields.get("created_ms")
    modified = fields.get("modified_ms")
    return SessionInfo(
        path=str(path),
        id=transcript.session_id or path.stem,
        cwd=transcript.cwd or "",
        name=transcript.title(),
        parent_session_path=None,
        created_ms=created if created is not None else mtime_ms,
        modified_ms=modified if modified is not None else mtime_ms,
        message_count=int(fields.get("message_count", 0)),
        first_message=str(fields.get("first_message") or "(no messages)"),
    )
