"""The workspace: where paths may be, and reads and writes that never follow a symlink."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from sessiond.filehistory import (
    MISSING,
    BlobCorruptError,
    BlobStore,
    FileChangedError,
    FileState,
    PathRefusedError,
    Workspace,
)

from .helpers import leftovers


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "store" / "file-history" / "s1")


# ---------------------------------------------------------------------- resolve


def test_keys_are_relative_inside_the_cwd_and_absolute_in_other_roots(cwd: Path, tmp_path: Path) -> None:
    extra = tmp_path / "other-root"
    extra.mkdir()
    ws = Workspace(cwd, [extra])
    assert ws.resolve("src/app.py") == (cwd / "src" / "app.py", "src/app.py")
    assert ws.resolve(str(cwd / "src/app.py")) == (cwd / "src" / "app.py", "src/app.py")
    assert ws.resolve("./a/../b.txt")[1] == "b.txt"
    assert ws.resolve(str(extra / "x.md")) == (extra / "x.md", str(extra / "x.md"))
    assert ws.resolve("../other-root/x.md")[1] == str(extra / "x.md")
    assert ws.cwd == cwd


def test_the_resolved_form_of_a_root_is_recognised(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    ws = Workspace(tmp_path / "alias")  # a cwd below a symlink (macOS /tmp) is configuration
    assert ws.resolve(str(real / "f.txt"))[1] == "f.txt"
    assert ws.resolve("f.txt") == (tmp_path / "alias" / "f.txt", "f.txt")
    (real / "f.txt").write_text("x")
    assert ws.read_state("f.txt", None).kind == "file"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside/victim.txt", "outside"),
        ("/etc/passwd", "outside"),
        ("a/../../x", "outside"),
        ("a\0b", "NUL"),
        ("", "empty"),
        (".", "root"),
        ("a/..", "root"),
    ],
)
def test_paths_outside_the_roots_are_refused(cwd: Path, path: str, reason: str) -> None:
    ws = Workspace(cwd)
    with pytest.raises(PathRefusedError, match=reason) as info:
        ws.resolve(path)
    assert info.value.data["reason"]


def test_undecodable_names_are_refused(cwd: Path) -> None:
    with pytest.raises(PathRefusedError, match="UTF-8"):
        Workspace(cwd).resolve(os.fsdecode(b"caf\xe9.txt"))


def test_a_directory_on_the_way_that_is_a_symlink_is_refused(cwd: Path, outside: Path) -> None:
    (cwd / "out").symlink_to(outside)
    (cwd / "real").mkdir()
    (cwd / "alias").symlink_to(cwd / "real")
    (cwd / "file").write_text("x")
    ws = Workspace(cwd)
    with pytest.raises(PathRefusedError, match="symlink"):
        ws.resolve("out/victim.txt")
    with pytest.raises(PathRefusedError, match="symlink"):
        ws.resolve("alias/x.txt")  # even one staying inside: the spec refuses any
    with pytest.raises(PathRefusedError, match="not a directory"):
        ws.resolve("file/x.txt")
    assert ws.resolve("out")[1] == "out"  # the link itself is a path like any other
    assert ws.resolve("missing/dir/x.txt")[1] == "missing/dir/x.txt"


# ---------------------------------------------------------------------- read_state


def test_read_state_kinds(cwd: Path, outside: Path, blobs: BlobStore) -> None:
    ws = Workspace(cwd)
    script = cwd / "run.sh"
    script.write_bytes(b"#!/bin/sh\n")
    script.chmod(0o755)
    sha = hashlib.sha256(b"#!/bin/sh\n").hexdigest()
    assert ws.read_state("run.sh", None) == FileState.file(sha, 0o755, 10)
    assert not blobs.has(sha)
    assert ws.read_state("run.sh", blobs) == FileState.file(sha, 0o755, 10)
    assert blobs.has(sha)
    assert ws.current_key("run.sh") == sha
    assert ws.read_state("nope.txt", None) == MISSING
    assert ws.read_state("no/such/dir.txt", None) == MISSING
    (cwd / "escape").symlink_to(outside / "victim.txt")
    assert ws.read_state("escape", blobs) == FileState.symlink(str(outside / "victim.txt"))
    assert ws.current_key("escape") == f"symlink:{outside / 'victim.txt'}"
    assert blobs.stats()["count"] == 1  # the link's target was not read
    (cwd / "dir").mkdir()
    with pytest.raises(PathRefusedError, match="directory"):
        ws.read_state("dir", None)
    os.mkfifo(cwd / "fifo")
    with pytest.raises(PathRefusedError, match="regular"):
        ws.read_state("fifo", None)


def test_read_state_through_a_symlinked_parent_is_refused(cwd: Path, outside: Path) -> None:
    (cwd / "out").symlink_to(outside)
    with pytest.raises(PathRefusedError, match="symlink"):
        Workspace(cwd).read_state("out/victim.txt", None)


# ---------------------------------------------------------------------- apply


def _file(blobs: BlobStore, data: bytes, mode: int = 0o644) -> FileState:
    return FileState.file(blobs.put_bytes(data), mode, len(data))


def test_apply_writes_creates_parents_and_keeps_modes(cwd: Path, blobs: BlobStore) -> None:
    ws = Workspace(cwd)
    ws.apply("a/b/run.sh", _file(blobs, b"#!/bin/sh\necho hi\n", 0o755), blobs)
    target = cwd / "a" / "b" / "run.sh"
    assert target.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    inode = target.stat().st_ino
    ws.apply("a/b/run.sh", _file(blobs, b"v2\n", 0o600), blobs)
    assert target.read_bytes() == b"v2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.stat().st_ino != inode  # replaced by rename, not written in place
    ws.apply("a/b/run.sh", _file(blobs, b"v2\n", 0o644), blobs)  # a mode change alone
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    ws.apply("a/b/run.sh", MISSING, blobs)
    assert not target.exists()
    ws.apply("a/b/run.sh", MISSING, blobs)  # already so
    ws.apply("x/y/z.txt", MISSING, blobs)  # missing parents: nothing to do, nothing created
    assert not (cwd / "x").exists()
    assert leftovers(cwd) == []


def test_apply_symlinks(cwd: Path, outside: Path, blobs: BlobStore) -> None:
    ws = Workspace(cwd)
    ws.apply("link", FileState.symlink("../outside/victim.txt"), blobs)
    assert os.readlink(cwd / "link") == "../outside/victim.txt"
    ws.apply("link", FileState.symlink("other"), blobs)  # a link replaced by a link
    assert os.readlink(cwd / "link") == "other"
    (cwd / "f").write_text("was a file")
    ws.apply("f", FileState.symlink("g"), blobs)
    assert os.readlink(cwd / "f") == "g"
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"
    assert leftovers(cwd) == []


def test_apply_never_writes_through_a_symlink(cwd: Path, outside: Path, blobs: BlobStore) -> None:
    ws = Workspace(cwd)
    (cwd / "escape").symlink_to(outside / "victim.txt")
    with pytest.raises(PathRefusedError, match="is a symlink"):
        ws.apply("escape", _file(blobs, b"pwned\n"), blobs)
    with pytest.raises(PathRefusedError, match="is a symlink"):
        ws.apply("escape", MISSING, blobs)  # spec: a symlink is only ever replaced by a symlink
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"
    assert (cwd / "escape").is_symlink()
    (cwd / "out").symlink_to(outside)
    with pytest.raises(PathRefusedError, match="a directory on the way is a symlink"):
        ws.apply("out/victim.txt", _file(blobs, b"pwned\n"), blobs)
    with pytest.raises(PathRefusedError, match="a directory on the way is a symlink"):
        ws.apply("out/new.txt", _file(blobs, b"pwned\n"), blobs)
    with pytest.raises(PathRefusedError, match="a directory on the way is a symlink"):
        ws.apply("out/victim.txt", MISSING, blobs)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"


def test_apply_refuses_directories(cwd: Path, blobs: BlobStore) -> None:
    (cwd / "d").mkdir()
    (cwd / "d" / "keep").write_text("k")
    ws = Workspace(cwd)
    for target in (MISSING, _file(blobs, b"x"), FileState.symlink("y")):
        with pytest.raises(PathRefusedError, match="directory"):
            ws.apply("d", target, blobs)
    assert (cwd / "d" / "keep").read_text() == "k"


def test_apply_checks_the_expected_state(cwd: Path, blobs: BlobStore) -> None:
    ws = Workspace(cwd)
    (cwd / "f").write_bytes(b"theirs\n")
    mine = _file(blobs, b"mine\n")
    with pytest.raises(FileChangedError):
        ws.apply("f", _file(blobs, b"old\n"), blobs, expected=mine)
    with pytest.raises(FileChangedError):
        ws.apply("g", _file(blobs, b"old\n"), blobs, expected=mine)  # gone
    with pytest.raises(FileChangedError):
        ws.apply("f", _file(blobs, b"old\n"), blobs, expected=MISSING)  # appeared
    assert (cwd / "f").read_bytes() == b"theirs\n"
    assert not (cwd / "g").exists()
    ws.apply("f", _file(blobs, b"old\n"), blobs, expected=ws.read_state("f", None))
    assert (cwd / "f").read_bytes() == b"old\n"


def test_a_file_changed_while_the_rewind_writes_it_is_left_alone(
    cwd: Path, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the check and the rename someone writes the file: the identity re-check catches it."""
    ws = Workspace(cwd)
    (cwd / "f").write_bytes(b"before\n")
    target = _file(blobs, b"restored\n")
    real_open = blobs.open

    def open_and_interfere(sha: str) -> Any:
        (cwd / "f").write_bytes(b"someone else, meanwhile\n")
        return real_open(sha)

    monkeypatch.setattr(blobs, "open", open_and_interfere)
    with pytest.raises(FileChangedError, match="meanwhile"):
        ws.apply("f", target, blobs, expected=ws.read_state("f", None))
    assert (cwd / "f").read_bytes() == b"someone else, meanwhile\n"
    assert leftovers(cwd) == []


def test_a_file_created_while_the_rewind_writes_it_is_not_replaced(
    cwd: Path, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(cwd)
    target = _file(blobs, b"restored\n")
    real_open = blobs.open

    def open_and_interfere(sha: str) -> Any:
        (cwd / "f").write_bytes(b"new work\n")
        return real_open(sha)

    monkeypatch.setattr(blobs, "open", open_and_interfere)
    with pytest.raises(FileChangedError, match="created meanwhile"):
        ws.apply("f", target, blobs, expected=MISSING)
    assert (cwd / "f").read_bytes() == b"new work\n"
    assert leftovers(cwd) == []


def test_a_damaged_backup_is_never_written(cwd: Path, blobs: BlobStore) -> None:
    ws = Workspace(cwd)
    (cwd / "f").write_bytes(b"current\n")
    target = _file(blobs, b"the backup\n")
    blob = blobs.path(target.blob or "")
    blob.chmod(0o644)
    blob.write_bytes(b"the bakcup\n")
    with pytest.raises(BlobCorruptError):
        ws.apply("f", target, blobs)
    assert (cwd / "f").read_bytes() == b"current\n"
    assert leftovers(cwd) == []


def test_a_directory_swapped_for_a_symlink_during_the_walk_is_refused(
    cwd: Path, outside: Path, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk opens each component with O_NOFOLLOW: a swap after any check is still refused."""
    (cwd / "sub").mkdir()
    (cwd / "sub" / "f.txt").write_bytes(b"old\n")
    ws = Workspace(cwd)
    ws.resolve("sub/f.txt")  # checked fine ...
    os.rename(cwd / "sub", cwd / "sub.moved")  # ... then swapped
    (cwd / "sub").symlink_to(outside)
    (outside / "f.txt").write_bytes(b"outside\n")
    with pytest.raises(PathRefusedError, match="symlink"):
        ws.apply("sub/f.txt", _file(blobs, b"new\n"), blobs)
    with pytest.raises(PathRefusedError, match="symlink"):
        ws.read_state("sub/f.txt", None)
    assert (outside / "f.txt").read_bytes() == b"outside\n"
    assert leftovers(outside) == []


def test_a_symlink_planted_where_a_directory_is_created_is_refused(
    cwd: Path, outside: Path, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(cwd)
    target = _file(blobs, b"x\n")
    real_mkdir = os.mkdir

    def mkdir_then_swap(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)
        os.rmdir(cwd / "new")
        os.symlink(outside, cwd / "new")

    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    with pytest.raises(PathRefusedError, match="symlink"):
        ws.apply("new/f.txt", target, blobs)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
