"""What every reader of a session needs, whoever wrote the session: the read protocol.

sessiond serves two kinds of session. Its own Pi sessions (:class:`~.session.Session`) are
written by it; other agents' transcripts (a Claude Code file,
:class:`~sessiond.store.claude.ClaudeSession`) are only read and followed. Both answer
:class:`ReadableSession`, and code that only reads takes that type. Code that writes takes
the writable :class:`~.session.Session`, which a transcript sessiond must not write is not:
a write to one is refused by the type before it can be attempted, not by a method that
raises deep inside a writer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ...model.js import UNDEFINED
from ...model.projection import Projection
from ...model.tokens import PI, ContextEstimate, ContextUsage, TokenEstimator
from ...model.tree import SessionTree, TreeNode
from ..index import SessionIndex
from .ingest import IngestResult

T = TypeVar("T")


class SessionDiagnostics(Protocol):
    """What loading the session noticed (``session/load`` reports it)."""

    def as_json(self) -> dict[str, Any]: ...


class ReadableSession(Protocol):
    """A session as every reader sees it: identity, entries, the tree, the context, growth."""

    @property
    def path(self) -> Path: ...

    @property
    def read_only(self) -> str | None:
        """Why sessiond must not write this session (another agent's file), or ``None``."""
        ...

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def header(self) -> dict[str, Any]: ...

    @property
    def name(self) -> str | None: ...

    @property
    def diagnostics(self) -> SessionDiagnostics: ...

    @property
    def tree(self) -> SessionTree:
        """The tree over *light* entries (:meth:`get` gives full ones)."""
        ...

    @property
    def index(self) -> SessionIndex: ...

    @property
    def leaf_id(self) -> Any: ...

    @property
    def entry_count(self) -> int: ...

    @property
    def flushed(self) -> bool:
        """Whether the session's file exists."""
        ...

    def file_size(self) -> int | None:
        """Bytes of the file as far as the session has read or written it (``None``: no file yet)."""
        ...

    def get(self, entry_id: Any) -> Any | None: ...

    def branch(self, from_id: Any = UNDEFINED) -> list[Any]:
        """Full entries root -> ``from_id`` (default: the leaf)."""
        ...

    def branch_ids(self, from_id: Any = UNDEFINED) -> list[Any]: ...

    def children(self, entry_id: Any) -> list[Any]: ...

    def tree_view(self) -> dict[str, Any]: ...

    def tree_nodes(self) -> list[TreeNode]: ...

    def label(self, entry_id: Any) -> Any: ...

    def entries(self) -> list[Any]: ...

    def current_branch(self) -> list[Any]:
        """Light entries root -> leaf."""
        ...

    def context(self) -> Projection:
        """What the model sees from the current leaf."""
        ...

    def context_for(self, path: list[Any]) -> Projection:
        """What the model would see at the end of ``path`` (light entries root -> an entry)."""
        ...

    def context_usage(self, estimator: TokenEstimator = PI) -> ContextEstimate: ...

    def usage_view(self, estimator: TokenEstimator = PI) -> ContextUsage:
        """The usage, model and size of the context, cheap after appends: what the daemon
        reports after each one (the context itself need not stay in memory for it)."""
        ...

    def ingest(self) -> IngestResult:
        """Index what another program appended to the file since it was last read."""
        ...

    def if_free(self, fn: Callable[[], T]) -> T | None:
        """``fn()`` holding the session's lock when no other thread holds it, else ``None``
        (``fn`` not called, nothing waited for)."""
        ...

    def close(self) -> None: ...
