"""Blobs shared by several daemons: a store in the cluster, this daemon's directory as its cache.

With a shared session store (JetStream) a session's snapshots are read by every daemon, so the
blobs they name must be too: a rewind on daemon B of snapshots taken through daemon A. Blobs go
to a store every daemon reaches (:class:`RemoteBlobs`: the object store, keyed by the hash, so
the same content is stored once however many sessions and daemons back it up), and
:class:`SharedBlobs` keeps the local :class:`~.blobs.BlobStore` in front of it:

* **put**: stored locally first (streamed, hashed), then uploaded unless the remote store
  already holds that hash (then kept there: :meth:`RemoteBlobs.keep`) — and only then does
  ``put`` return, so a snapshot entry persisted after it never names a blob another daemon
  cannot fetch.
* **open**: from the local directory; a blob this daemon has not seen is downloaded into it
  first (streamed, re-hashed on the way: a wrong copy is never kept), so every reader gets a
  real file and reads it once from the cluster.
* **has**: the local directory, else the remote store.

The bytes never pass through the daemon's event loop: the file history runs these calls in
worker threads, and the remote store streams in chunks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO, Protocol

from .blobs import Blobs, BlobStore, HashingWriter
from .errors import BlobMissingError


class RemoteBlobs(Protocol):
    """A blob store other daemons share, keyed by the content's SHA-256. Calls block; a store
    out of reach raises :class:`~sessiond.errors.ClusterUnavailableError`."""

    def size(self, sha: str) -> int | None:
        """The size of blob ``sha`` if the store holds it whole (its recorded digest is ``sha``)."""
        ...

    def keep(self, sha: str, size: int) -> bool:
        """Whether the store holds blob ``sha`` (``size`` bytes) whole — and will keep it while
        a snapshot naming it is committed: a store that collects unreferenced blobs after a
        grace period restarts that period here. False: upload it."""
        ...

    def upload(self, sha: str, size: int, source: BinaryIO) -> None:
        """Store ``size`` bytes read from ``source`` (which hash to ``sha``) as blob ``sha``."""
        ...

    def download(self, sha: str, size: int, into: HashingWriter) -> None:
        """Write blob ``sha`` (``size`` bytes) into ``into``, chunk by chunk."""
        ...


class SharedBlobs:
    """One session's blobs: the remote store, cached in the session's local directory."""

    def __init__(self, local: BlobStore, remote: RemoteBlobs) -> None:
        self.local = local
        self.remote = remote
        self._uploaded: set[str] = set()
        """Hashes known to be in the remote store (no round trip to ask again)."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SharedBlobs({self.local!r}, {self.remote!r})"

    @property
    def directory(self) -> Path:
        return self.local.directory

    # ------------------------------------------------------------------ reading

    def has(self, sha: str) -> bool:
        if self.local.has(sha):
            return True
        size = self.remote.size(sha)
        if size is None:
            return False
        with self._lock:
            self._uploaded.add(sha)
        return True

    def open(self, sha: str) -> BinaryIO:
        if not self.local.has(sha):
            self.fetch(sha)
        return self.local.open(sha)

    def fetch(self, sha: str) -> None:
        """Download blob ``sha`` into the local directory (:class:`BlobMissingError` if the remote
        store does not hold it either)."""
        self.local.path(sha)  # a malformed id is refused before any round trip
        size = self.remote.size(sha)
        if size is None:
            raise BlobMissingError(sha)
        self.local.put_from(sha, lambda sink: self.remote.download(sha, size, sink))
        with self._lock:
            self._uploaded.add(sha)

    # ------------------------------------------------------------------ writing

    def put_fd(self, fd: int) -> tuple[str, int]:
        sha, size = self.local.put_fd(fd)
        self._share(sha, size)
        return sha, size

    def put_file(
        self, path: Path | None, *, dir_fd: int | None = None, name: str | None = None
    ) -> tuple[str, int]:
        sha, size = self.local.put_file(path, dir_fd=dir_fd, name=name)
        self._share(sha, size)
        return sha, size

    def put_bytes(self, data: bytes) -> str:
        sha = self.local.put_bytes(data)
        self._share(sha, len(data))
        return sha

    def link_into(self, other: SharedBlobs, shas: Iterable[str]) -> int:
        """A fork: the remote store is shared by every session already, so only the local
        cache is linked (what this daemon holds); every blob of ``shas`` the remote store or
        this cache has counts as added."""
        wanted = sorted(set(shas))
        self.local.link_into(other.local, wanted)
        added = 0
        for sha in wanted:
            if other.local.has(sha) or self.has(sha):
                if not other.local.has(sha):
                    with other._lock:
                        other._uploaded.add(sha)
                added += 1
        return added

    def _share(self, sha: str, size: int) -> None:
        """Make sure the remote store holds blob ``sha`` (uploaded from the local copy)."""
        with self._lock:
            if sha in self._uploaded:
                return
        if not self.remote.keep(sha, size):
            with self.local.open(sha) as source:
                self.remote.upload(sha, size, source)
        with self._lock:
            self._uploaded.add(sha)


def copy_blobs(source: Blobs, target: Blobs, shas: Iterable[str]) -> int:
    """Give ``target`` the blobs ``shas`` of ``source``: linked when both are of one kind, else
    copied (a fork of another agent's session, whose backups are local, into a shared store)."""
    if isinstance(source, BlobStore) and isinstance(target, BlobStore):
        return source.link_into(target, shas)
    if isinstance(source, SharedBlobs) and isinstance(target, SharedBlobs):
        return source.link_into(target, shas)
    added = 0
    for sha in sorted(set(shas)):
        if target.has(sha) or not source.has(sha):
            continue
        with source.open(sha) as f:
            target.put_fd(f.fileno())
        added += 1
    return added


Factory = Callable[[Path], Blobs]
"""What the session store hands the file history: the blobs of the session whose directory
(``<store>/file-history/<sessionId>``) is given."""
