"""The store the service writes its own sessions to: what creating, opening, finding and listing
need, and the local implementation (docs/store.md; the JetStream one is in :mod:`.jetstream`).

Both backends hand out the same :class:`~.session.Session`: with the local store its file is
the session's log; with JetStream the file is this daemon's replica of a log in the cluster
(:class:`~.remote.RemoteLog`), so every read path is shared and only committing differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..errors import SessiondError
from ..filehistory.blobs import Blobs, BlobStore
from .jetstream.settings import JetStreamSettings
from .journal import Durability
from .session import Session


class StoreBackend(Protocol):
    name: str
    """``local`` or ``jetstream`` (the config's ``[store] backend``)."""

    def create(
        self,
        directory: Path,
        cwd: str,
        *,
        session_id: str | None,
        parent_session: str | None,
        durability: Durability,
    ) -> Session:
        """A new session (its file, and its log, appear with the first conversation entry)."""
        ...

    def open(self, path: Path, *, durability: Durability) -> Session:
        """A session of the store, writable."""
        ...

    def adopt(self, session: Session) -> Session:
        """A session made from another (a fork) becomes a session of this store."""
        ...

    def locate(self, session_id: str) -> Path | None:
        """The file of a session this daemon has not seen yet (another daemon's), or ``None``."""
        ...

    def refresh(self) -> None:
        """Before listing: make sessions other daemons created visible in the store's directory."""
        ...

    def delete(self, session_id: str) -> None:
        """Forget a session the service moved to its trash (a shared store: for every daemon)."""
        ...

    def blobs(self, directory: Path) -> Blobs:
        """The file-history blobs of one of the store's sessions (``directory``:
        ``<store>/file-history/<sessionId>``): where every daemon serving it can read them."""
        ...

    def close(self) -> None: ...


class LocalStore:
    """Today's store: one JSONL file per session, written by this daemon alone."""

    name = "local"

    def create(
        self,
        directory: Path,
        cwd: str,
        *,
        session_id: str | None,
        parent_session: str | None,
        durability: Durability,
    ) -> Session:
        return Session.create(
            directory, cwd, session_id=session_id, parent_session=parent_session, durability=durability
        )

    def open(self, path: Path, *, durability: Durability) -> Session:
        return Session.open(path, durability=durability)

    def adopt(self, session: Session) -> Session:
        return session

    def locate(self, session_id: str) -> Path | None:
        return None

    def refresh(self) -> None:
        return None

    def delete(self, session_id: str) -> None:
        return None  # the file in the trash was the session

    def blobs(self, directory: Path) -> Blobs:
        return BlobStore(directory)

    def close(self) -> None:
        return None


def open_store(backend: str, sessions_dir: Path, jetstream: JetStreamSettings | None = None) -> StoreBackend:
    """The configured backend; JetStream connects to its cluster here (it needs the ``nats`` extra)."""
    if backend == "local":
        return LocalStore()
    try:
        from .jetstream.store import JetStreamStore  # noqa: PLC0415 - only with the nats extra
    except ImportError as exc:
        raise SessiondError(
            f"store.backend = 'jetstream' needs the nats extra (pip install 'sessiond[nats]'): {exc}"
        ) from exc
    return JetStreamStore(jetstream or JetStreamSettings(), sessions_dir)
