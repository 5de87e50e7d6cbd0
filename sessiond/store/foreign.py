"""Another agent's session behind sessiond's session API: read-only, Pi-shaped, followed.

Codex rollouts and OpenCode sessions share one shape of reader: a format module turns the
agent's records into Pi v3 entries (the tree) and into the conversation the agent would
resume with (the context, each message attributed to the entry it comes from). This class
holds both behind :class:`~sessiond.store.session.Session`'s read API, so the daemon's
views (describe, tree, branch, context, usage, entries) serve them unchanged. It is a
:class:`~sessiond.store.session.ReadableSession` with ``read_only`` set, so
:meth:`~sessiond.service.host.SessionHost.writer` refuses every write with
:class:`~sessiond.errors.ReadOnlySessionError` (sessiond never writes another agent's data);
it stays a ``Session`` subclass only so that a fork (``SessionHost.pi_session``) reaches
:meth:`fork`, which writes the context at the chosen entry into sessiond's store as a new Pi
session (an export). Subclasses supply :meth:`_messages_at` and :meth:`ingest`.

Entries are kept in memory (offset ``-1`` in the index): these sources are not Pi files that
bodies could be re-read from.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from ..errors import InvalidArgumentError, ReadOnlySessionError
from ..formats.pi import LoadDiagnostics, paused_gc
from ..model.js import UNDEFINED, get, key, truthy
from ..model.projection import ContextSettings, ProjectedEntry, Projection
from ..model.tokens import PI, ContextEstimate, TokenEstimator, estimate_projected_context_tokens
from .index import SessionIndex
from .journal import Durability
from .session import IngestResult, Session

Message = dict[str, Any]


def foreign_header(session_id: str, timestamp: Any, cwd: str | None) -> dict[str, Any]:
    """The Pi v3 header another agent's session is shown with (it has none of its own)."""
    return {"type": "session", "version": 3, "id": session_id, "timestamp": timestamp, "cwd": cwd or ""}


def grown_to(path: Path, inode: int | None, read_end: int, result: IngestResult) -> int | None:
    """The size of a followed file read up to ``read_end`` (equal: nothing new), or ``None``
    with ``result.reload_required`` saying why it cannot be followed any more: deleted, replaced
    (another inode than ``inode``, when known) or truncated. Every follower of another agent's
    file asks this before reading what was appended."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        result.reload_required = "the file was deleted"
        return None
    if inode is not None and st.st_ino != inode:
        result.reload_required = "the file was replaced"
        return None
    if st.st_size < read_end:
        result.reload_required = "the file was truncated"
        return None
    return st.st_size


class ForeignSession(Session):
    """A read-only session whose entries and context come from another agent's records."""

    format_name = "foreign"
    """Names the agent in errors and ``describe``."""

    def __init__(self, path: Path, header: dict[str, Any], read_only: str) -> None:
        super().__init__(path, SessionIndex(header), None, LoadDiagnostics(), Durability.BUFFERED)
        self.read_only = read_only
        self._context_cache: tuple[Any, Projection] | None = None

    # ------------------------------------------------------------------ for subclasses

    def _messages_at(self, leaf: Any) -> list[tuple[str, Message]]:
        """The conversation resumed at ``leaf`` (the current leaf is the common case)."""
        raise NotImplementedError

    def _add_entries(self, entries: list[dict[str, Any]], leaf: Any) -> None:
        with paused_gc():  # one small dict per entry, none of them garbage
            for entry in entries:
                self._index.add(entry, -1, 0)
        if leaf is not None and leaf in self._index.tree:
            self._index.tree.set_leaf(leaf)
        self._invalidate()

    def _invalidate(self) -> None:
        self._context_cache = None
        self._projection = None
        self._light_ctx = None
        self._usage.clear()

    # ------------------------------------------------------------------ what differs from Pi

    @property
    def flushed(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def context(self) -> Projection:
        with self._lock:
            leaf = key(self.leaf_id)
            cached = self._context_cache
            if cached is not None and cached[0] == leaf:
                return cached[1]
            projection = self._project(self._messages_at(self.leaf_id))
            self._context_cache = (leaf, projection)
            return projection

    def context_for(self, path: list[Any]) -> Projection:
        if not path:
            return Projection([], [], ContextSettings())
        with self._lock:
            return self._project(self._messages_at(get(path[-1], "id")))

    def context_usage(self, estimator: TokenEstimator = PI) -> ContextEstimate:
        with self._lock:
            return estimate_projected_context_tokens(self.context(), self._current_branch(), estimator)

    def _project(self, messages: list[tuple[str, Message]]) -> Projection:
        entries: list[ProjectedEntry] = []
        out: list[Message] = []
        model: Any = None
        tree = self._index.tree
        for source_id, message in messages:
            if not entries or key(get(entries[-1].source, "id")) != key(source_id):
                light = tree.get(source_id)
                source = (
                    self._index.full(light) if light is not None else {"type": "message", "id": source_id}
                )
                entries.append(ProjectedEntry(source, []))
            entries[-1].messages.append(message)
            out.append(message)
            if message.get("role") == "assistant" and truthy(message.get("model")):
                model = {"provider": message.get("provider"), "modelId": message.get("model")}
        return Projection(entries, out, ContextSettings("off", model))

    def native_context_window(self) -> int | None:
        """The model's context window as the agent recorded it (None when it did not)."""
        return None

    def _refuse(self, what: str) -> ReadOnlySessionError:
        return ReadOnlySessionError(self.id, f"{what} a {self.format_name} session is not supported")

    def prepare_compaction_at_leaf(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("compacting")

    def fork(
        self,
        entry_id: Any,
        position: Literal["before", "at"] = "before",
        *,
        durability: Durability | None = None,
        directory: Path | None = None,
    ) -> Session:
        """Pi's ``/clone`` (``at``) or ``/fork`` (``before`` a user message) into sessiond's store:
        an export of the context at that point (:mod:`sessiond.store.export`)."""
        from .export import export_to_pi  # noqa: PLC0415 (export builds on Session)

        selected = self.get(entry_id)
        if selected is None:
            raise InvalidArgumentError("Invalid entry ID for forking", field="entryId")
        if directory is None:
            raise self._refuse("forking beside")
        if position == "at":
            target = get(selected, "id")
        elif position == "before":
            if get(selected, "type") != "message" or get(get(selected, "message"), "role") != "user":
                raise InvalidArgumentError("Invalid entry ID for forking", field="entryId")
            target = get(selected, "parentId")
        else:
            raise InvalidArgumentError("position must be 'before' or 'at'", field="position")
        if not truthy(target):
            raise InvalidArgumentError("nothing to fork before the first entry", field="entryId")
        info = {
            "format": self.diagnostics.as_json().get("format"),
            "path": str(self.path),
            "forkedAt": entry_id,
        }
        return export_to_pi(
            self,
            lambda _cwd: directory,
            source_info=info,
            leaf=target,
            durability=durability or self.durability,
        )

    def create_branched_session(self, *args: Any, **kwargs: Any) -> Session:
        raise self._refuse("branching into a new file beside")

    def set_leaf(self, entry_id: Any) -> None:
        super().set_leaf(entry_id)
        self._invalidate()

    def reset_leaf(self) -> None:
        super().reset_leaf()
        self._invalidate()


def leaf_or_none(value: Any) -> Any:
    return value if value is not UNDEFINED else None


__all__ = ["ForeignSession"]
