"""A Pi session sessiond owns: its file, its lazy index, its leaf, and every operation Pi's
SessionManager has.

This is the object the daemon owns one of per open session. It is the only writer of its
file. The jobs are layered, one module each, every layer using only those below it:

* :mod:`.reads` — identity and reads over the light index (shared with other agents' sessions);
* :mod:`.context` — the cached projection, usage, compaction preparation;
* :mod:`.ingest` — the journal, and lines someone else appended;
* :mod:`.writes` — the append path and Pi's first flush;
* :mod:`.leaf` — leaf moves, in memory and persisted;
* :mod:`.fork`, :mod:`.migration` — what a fork holds; v1/v2 files brought to v3;
* this module — creating, opening, forking: the writable :class:`Session` itself.

Pi's behaviours are kept, including its error messages, with three deliberate additions:
v1/v2 files are migrated *atomically* when opened for writing, ``fork_from`` migrates old
sources (Pi 1.6.0 copies them unmigrated), and leaf moves can be persisted
(:meth:`~.leaf.LeafMoves.move_leaf`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from ...errors import SessionExistsError
from ...formats.pi import LoadDiagnostics, encode_line, load_session
from ...model import entries as E
from ...model.js import UNDEFINED, get, iso_now, truthy
from ..ids import uuid7
from ..index import DEFAULT_CACHE_BYTES, SessionIndex
from ..journal import Durability, Journal
from ..layout import resolve_cwd, session_file_name, validate_session_id
from ..regular import open_regular
from .fork import branched_entries, fork_point
from .leaf import LeafMoves
from .migration import migrate_file, needs_migration


class Session(LeafMoves):
    """One Pi session. Thread-safe: mutations serialise on a lock, ``fsync`` waits are shared.

    Opened with a ``read_only`` reason (another agent's Pi file), it reads, follows and forks
    but refuses every write.
    """

    @classmethod
    def create(
        cls,
        directory: Path,
        cwd: str,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
        durability: Durability = Durability.BUFFERED,
        path: Path | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> Session:
        """A new session in ``directory``. Its file appears with the first user/assistant message."""
        sid = uuid7() if session_id is None else validate_session_id(session_id)
        timestamp = iso_now()
        header = E.new_header(
            sid, timestamp, resolve_cwd(cwd), UNDEFINED if parent_session is None else parent_session
        )
        file = path if path is not None else directory / session_file_name(timestamp, sid)
        if file.exists():
            raise SessionExistsError(str(file))
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cls(file, SessionIndex(header, cache_bytes), None, LoadDiagnostics(), durability)

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        durability: Durability = Durability.BUFFERED,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        read_only: str | None = None,
    ) -> Session:
        """Open an existing session file for reading and appending.

        Reading builds the light index in one pass and writes nothing, except for v1/v2 files:
        those are migrated and rewritten atomically first (Pi rewrites them in place on open).
        A torn last line is repaired by the next append, not here.

        ``read_only`` (the reason, for the error) opens a file sessiond must never write —
        another agent's — for reading and following its growth; a v1/v2 file is then migrated
        in memory only.
        """
        path = Path(path)
        # never blocks on a FIFO; a writable file is never read through a symbolic link
        with open_regular(path, follow=read_only is not None) as f:
            index, diag = SessionIndex.from_lines(f, str(path), cache_bytes)
        if read_only is not None:
            if needs_migration(index.header):
                loaded = load_session(path)
                index = SessionIndex(loaded.header, cache_bytes)
                for entry in loaded.entries:
                    index.add(entry, -1, len(encode_line(entry)))
                session = cls(path, index, None, loaded.diagnostics, durability)
            else:
                journal = Journal.open(path, read_only=True)
                session = cls(path, index, journal, diag, durability, scan_end=journal.size)
                if diag.torn_tail and diag.torn_tail_parsed:
                    session._tail_start = int(index.offsets[len(index) - 1])
            session.read_only = read_only
            return session
        if needs_migration(index.header):
            migrated_from = migrate_file(path)
            with open_regular(path, follow=False) as f:
                index, diag = SessionIndex.from_lines(f, str(path), cache_bytes)
            diag.source_version = migrated_from
        journal = Journal.open(path)
        session = cls(path, index, journal, diag, durability, scan_end=journal.size)
        if diag.torn_tail:
            # The unterminated last line stays where it is; ingest must not read it again.
            session._scan_end = journal.size
            if diag.torn_tail_parsed:
                session._tail_start = int(index.offsets[len(index) - 1])
        # The current leaf's light context (path, settings, context entries): what Pi's load
        # builds with its context, and what the first read after open (usage, context, a
        # compaction's cut) starts from; appends keep it current from here on.
        session._light_context()
        return session

    # ------------------------------------------------------------------ fork and clone

    def create_branched_session(
        self, leaf_id: Any, *, durability: Durability | None = None, directory: Path | None = None
    ) -> Session:
        """Pi's ``createBranchedSession``: a new session holding only the path to ``leaf_id``
        (see :func:`~.fork.branched_entries`). The new file is written at once when the path
        holds a user or assistant message."""
        with self._lock:
            entries = branched_entries(self, leaf_id)
            sid = uuid7()
            timestamp = iso_now()
            header = E.new_header(sid, timestamp, self.cwd, str(self.path))
            new_path = (directory or self.path.parent) / session_file_name(timestamp, sid)
            new_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return _session_from_entries(new_path, header, entries, durability or self.durability)

    def fork(
        self,
        entry_id: Any,
        position: Literal["before", "at"] = "before",
        *,
        durability: Durability | None = None,
        directory: Path | None = None,
    ) -> Session:
        """``/fork`` (before a user message: its parent becomes the leaf) or ``/clone`` (at an entry).

        Forking before a first message gives a new, empty session whose ``parentSession`` is
        this one. The new session goes beside this one, or into ``directory`` (a read-only
        session's forks go to sessiond's store).
        """
        with self._lock:
            target = fork_point(self, entry_id, position)
            if not truthy(target):
                return Session.create(
                    directory or self.path.parent,
                    self.cwd,
                    parent_session=str(self.path),
                    durability=durability or self.durability,
                )
            return self.create_branched_session(target, durability=durability, directory=directory)

    @classmethod
    def fork_from(
        cls,
        source: Path,
        target_dir: Path,
        target_cwd: str,
        *,
        session_id: str | None = None,
        durability: Durability = Durability.BUFFERED,
    ) -> Session:
        """Pi's ``forkFrom`` (``--fork``): copy every entry of another session into a new one.

        The source is only read (Pi appends a newline to it). A v1/v2 source is migrated
        first, so the copy is a valid v3 session (Pi 1.6.0 copies it unmigrated).
        """
        loaded = load_session(source)
        sid = uuid7() if session_id is None else validate_session_id(session_id)
        timestamp = iso_now()
        header = E.new_header(sid, timestamp, resolve_cwd(target_cwd), os.path.abspath(source))
        target_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = target_dir / session_file_name(timestamp, sid)
        data = encode_line(header) + b"".join(encode_line(e) for e in loaded.entries)
        Journal.create(path, data, durability).close()
        return cls.open(path, durability=durability)


def _session_from_entries(
    path: Path, header: dict[str, Any], entries: list[Any], durability: Durability
) -> Session:
    """A new session holding ``entries``; written now iff they include a conversation (Pi's rule)."""
    if path.exists():
        raise SessionExistsError(str(path))
    index = SessionIndex(header)
    lines = [encode_line(e) for e in entries]
    for entry, line in zip(entries, lines, strict=True):
        index.add(entry, -1, len(line))
    session = Session(path, index, None, LoadDiagnostics(), durability)
    conversation = any(
        get(e, "type") == E.MESSAGE and get(get(e, "message"), "role") in ("user", "assistant")
        for e in entries
    )
    if conversation:
        head = encode_line(header)
        journal = Journal.create(path, head + b"".join(lines), durability)
        offsets = []
        offset = len(head)
        for line in lines:
            offsets.append((offset, len(line)))
            offset += len(line)
        index.mark_written(0, offsets)
        index.read_body = journal.pread
        session._journal = journal
        session._scan_end = journal.size
    return session
