"""SharedBlobs: the local blob directory as the cache of a store other daemons share.

The shared store here is a plain directory behind the ``RemoteBlobs`` protocol (what matters
is the cache's behaviour: when it uploads, what it keeps, what it refuses); the JetStream
object store itself is tested on the real cluster in tests/scale/test_jetstream.py.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO

import pytest

from sessiond.filehistory import BlobCorruptError, BlobMissingError, BlobStore, SharedBlobs, copy_blobs
from sessiond.filehistory.blobs import HashingWriter


class DirectoryRemote:
    """A shared store as a directory of ``<sha>`` files; counts what crosses the wire."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.uploads: list[str] = []
        self.downloads: list[str] = []
        self.kept: list[str] = []

    def size(self, sha: str) -> int | None:
        path = self.root / sha
        return path.stat().st_size if path.exists() else None

    def keep(self, sha: str, size: int) -> bool:
        self.kept.append(sha)
        return self.size(sha) == size

    def upload(self, sha: str, size: int, source: BinaryIO) -> None:
        data = source.read()
        assert len(data) == size and hashlib.sha256(data).hexdigest() == sha
        (self.root / sha).write_bytes(data)
        self.uploads.append(sha)

    def download(self, sha: str, size: int, into: HashingWriter) -> None:
        self.downloads.append(sha)
        with open(self.root / sha, "rb") as f:
            while chunk := f.read(1000):
                into.write(chunk)


def shared(tmp_path: Path, daemon: str, remote: DirectoryRemote) -> SharedBlobs:
    return SharedBlobs(BlobStore(tmp_path / daemon / "file-history" / "s1"), remote)


def test_a_blob_is_uploaded_before_put_returns_and_once_per_content(tmp_path: Path) -> None:
    remote = DirectoryRemote(tmp_path / "remote")
    a = shared(tmp_path, "a", remote)
    data = os.urandom(5000)
    sha = a.put_bytes(data)
    assert remote.uploads == [sha] and (remote.root / sha).read_bytes() == data
    assert a.put_bytes(data) == sha
    other_session = SharedBlobs(BlobStore(tmp_path / "a" / "file-history" / "s2"), remote)
    assert other_session.put_bytes(data) == sha
    assert remote.uploads == [sha], "the same content is stored once"
    assert remote.kept == [sha, sha], "a stored content found again is kept (a collector's grace restarts)"


def test_another_daemon_reads_through_its_cache_once(tmp_path: Path) -> None:
    remote = DirectoryRemote(tmp_path / "remote")
    a, b = shared(tmp_path, "a", remote), shared(tmp_path, "b", remote)
    data = os.urandom(70_000)
    sha = a.put_bytes(data)
    assert not b.local.has(sha) and b.has(sha)
    for _ in range(2):
        with b.open(sha) as f:
            assert f.read() == data
    assert remote.downloads == [sha]
    assert b.local.has(sha)


def test_a_blob_in_neither_place_is_missing(tmp_path: Path) -> None:
    b = shared(tmp_path, "b", DirectoryRemote(tmp_path / "remote"))
    sha = hashlib.sha256(b"never stored").hexdigest()
    assert not b.has(sha)
    with pytest.raises(BlobMissingError):
        b.open(sha)


def test_a_damaged_remote_copy_is_refused_and_not_kept(tmp_path: Path) -> None:
    remote = DirectoryRemote(tmp_path / "remote")
    a, b = shared(tmp_path, "a", remote), shared(tmp_path, "b", remote)
    sha = a.put_bytes(b"the real content\n")
    (remote.root / sha).write_bytes(b"something else!!\n")
    with pytest.raises(BlobCorruptError):
        b.open(sha)
    assert not b.local.has(sha)
    assert list(b.local.blobs_dir.rglob(".tmp-*")) == []


def test_a_fork_of_local_blobs_into_a_shared_store_uploads_them(tmp_path: Path) -> None:
    remote = DirectoryRemote(tmp_path / "remote")
    local = BlobStore(tmp_path / "claude-session")
    sha = local.put_bytes(b"a backup of another agent's session\n")
    fork = shared(tmp_path, "a", remote)
    assert copy_blobs(local, fork, [sha]) == 1
    assert remote.uploads == [sha] and fork.local.has(sha)
