"""File states (the spec's JSON, exactly) and the blob store."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from sessiond.filehistory import (
    MISSING,
    BlobMissingError,
    BlobStore,
    FileState,
    InvalidSnapshotError,
    PathRefusedError,
    content_key,
)

SHA = hashlib.sha256(b"x").hexdigest()

# ---------------------------------------------------------------------- states


def test_state_json_is_the_spec_shape() -> None:
    f = FileState.file(SHA, 0o644, 1)
    assert f.to_json() == {"kind": "file", "blob": SHA, "mode": 420, "size": 1}
    assert json.dumps(f.to_json()) == f'{{"kind": "file", "blob": "{SHA}", "mode": 420, "size": 1}}'
    assert FileState.symlink("../x").to_json() == {"kind": "symlink", "target": "../x"}
    assert MISSING.to_json() == {"kind": "missing"}
    for state in (f, FileState.symlink("../x"), MISSING):
        assert FileState.from_json(json.loads(json.dumps(state.to_json()))) == state


def test_content_keys() -> None:
    assert content_key(FileState.file(SHA, 0o755, 1)) == SHA
    assert content_key(FileState.symlink("/etc/passwd")) == "symlink:/etc/passwd"
    assert content_key(MISSING) == "missing"


def test_extra_json_keys_are_ignored() -> None:
    assert FileState.from_json({"kind": "missing", "future": 1}) == MISSING


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"kind": "dir"},
        {"kind": "file", "blob": "../../etc/passwd", "mode": 420, "size": 1},
        {"kind": "file", "blob": SHA.upper(), "mode": 420, "size": 1},
        {"kind": "file", "blob": SHA, "mode": True, "size": 1},
        {"kind": "file", "blob": SHA, "mode": 0o10000, "size": 1},
        {"kind": "file", "blob": SHA, "mode": 420, "size": -1},
        {"kind": "file", "blob": SHA, "mode": 420},
        {"kind": "symlink", "target": ""},
        {"kind": "symlink", "target": "a\0b"},
        {"kind": "symlink"},
    ],
)
def test_invalid_states_are_refused(data: object) -> None:
    with pytest.raises(InvalidSnapshotError):
        FileState.from_json(data)


# ---------------------------------------------------------------------- blobs


def test_put_dedups_and_lays_out(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "fh" / "s1")
    src = tmp_path / "a.txt"
    src.write_bytes(b"hello\n")
    sha, size = store.put_file(src)
    assert (sha, size) == (hashlib.sha256(b"hello\n").hexdigest(), 6)
    assert store.put_bytes(b"hello\n") == sha
    other = tmp_path / "b.txt"
    other.write_bytes(b"hello\n")
    assert store.put_file(other) == (sha, 6)
    blob = tmp_path / "fh" / "s1" / "blobs" / sha[:2] / sha
    assert store.path(sha) == blob
    assert blob.read_bytes() == b"hello\n"
    assert stat.S_IMODE(blob.stat().st_mode) == 0o444
    assert store.stats() == {"count": 1, "bytes": 6}
    assert [p.name for p in (tmp_path / "fh" / "s1" / "blobs").iterdir() if p.name.startswith(".")] == []
    assert store.has(sha) and not store.has(SHA)
    with store.open(sha) as f:
        assert f.read() == b"hello\n"
    store.put_bytes(b"")
    assert store.stats() == {"count": 2, "bytes": 6}
    assert sorted(store) == sorted([sha, hashlib.sha256(b"").hexdigest()])


def test_put_file_relative_to_a_directory_descriptor(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    store = BlobStore(tmp_path / "store")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert store.put_file(None, dir_fd=fd, name="f") == (hashlib.sha256(b"abc").hexdigest(), 3)
    finally:
        os.close(fd)
    with pytest.raises(ValueError):
        store.put_file(None)


def test_put_file_refuses_symlinks_and_fifos(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"s")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "fifo")
    store = BlobStore(tmp_path / "store")
    with pytest.raises(PathRefusedError, match="symlink"):
        store.put_file(tmp_path / "link")
    with pytest.raises(PathRefusedError, match="regular"):
        store.put_file(tmp_path / "fifo")
    assert store.stats() == {"count": 0, "bytes": 0}


def test_blob_ids_cannot_name_other_paths(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "store")
    for bad in ("../../../etc/passwd", "ab", SHA + "0", SHA.upper()):
        with pytest.raises(InvalidSnapshotError):
            store.path(bad)
    with pytest.raises(BlobMissingError):
        store.open(SHA)


def test_a_damaged_blob_is_replaced_when_the_content_comes_again(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "store")
    sha = store.put_bytes(b"content")
    path = store.path(sha)
    path.chmod(0o644)
    path.write_bytes(b"cont")  # truncated by some accident
    assert store.put_bytes(b"content") == sha
    assert path.read_bytes() == b"content"


def test_link_into_hard_links_and_skips(tmp_path: Path) -> None:
    a = BlobStore(tmp_path / "a")
    b = BlobStore(tmp_path / "b")
    s1 = a.put_bytes(b"one")
    s2 = a.put_bytes(b"two")
    b.put_bytes(b"two")
    assert a.link_into(b, [s1, s2, s1, SHA]) == 1  # s2 already there, SHA nowhere
    assert os.stat(a.path(s1)).st_ino == os.stat(b.path(s1)).st_ino
    assert b.stats() == {"count": 2, "bytes": 6}
    assert a.link_into(b, [s1]) == 0


def test_link_into_copies_across_file_systems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = BlobStore(tmp_path / "a")
    b = BlobStore(tmp_path / "b")
    sha = a.put_bytes(b"data" * 1000)

    def no_link(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    assert a.link_into(b, [sha]) == 1
    assert b.path(sha).read_bytes() == b"data" * 1000
    assert os.stat(a.path(sha)).st_ino != os.stat(b.path(sha)).st_ino
