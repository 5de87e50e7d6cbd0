"""Diffs between states: text, binary, missing sides, too large, and the checkpoint-vs-disk view."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sessiond.filehistory import MISSING, BlobStore, FileState, Workspace, diff_states

from .helpers import Session


@pytest.fixture
def env(tmp_path: Path) -> tuple[BlobStore, Workspace, Path]:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    return BlobStore(tmp_path / "store"), Workspace(cwd), cwd


def _state(blobs: BlobStore, data: bytes, mode: int = 0o644) -> FileState:
    return FileState.file(blobs.put_bytes(data), mode, len(data))


def test_text_diff(env: tuple[BlobStore, Workspace, Path]) -> None:
    blobs, ws, _ = env
    old = _state(blobs, b"".join(b"line %d\n" % i for i in range(1, 11)))
    new = _state(
        blobs, b"".join(b"line %d\n" % i for i in range(1, 11)).replace(b"line 5\n", b"five\nand more\n")
    )
    d = diff_states("src/app.py", old, new, blobs, ws)
    assert d.diff == (
        "--- a/src/app.py\n"
        "+++ b/src/app.py\n"
        "@@ -2,7 +2,8 @@\n"
        " line 2\n"
        " line 3\n"
        " line 4\n"
        "-line 5\n"
        "+five\n"
        "+and more\n"
        " line 6\n"
        " line 7\n"
        " line 8\n"
    )
    assert (d.added, d.removed, d.binary, d.too_large, d.changed) == (2, 1, False, False, True)
    j = d.as_json()
    assert j["oldSize"] == old.size and j["newSize"] == new.size and j["from"] == old.to_json()
    assert "error" not in j


def test_created_and_deleted_files_use_dev_null(env: tuple[BlobStore, Workspace, Path]) -> None:
    blobs, ws, _ = env
    f = _state(blobs, b"a\nb")
    created = diff_states("n.txt", MISSING, f, blobs, ws)
    assert (
        created.diff == "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
    )
    assert (created.added, created.removed) == (2, 0)
    deleted = diff_states("n.txt", f, MISSING, blobs, ws)
    assert deleted.diff is not None and deleted.diff.startswith("--- a/n.txt\n+++ /dev/null\n")
    assert (deleted.added, deleted.removed) == (0, 2)
    absolute = diff_states("/abs/x", MISSING, f, blobs, ws).diff
    assert absolute is not None and absolute.startswith("--- /dev/null\n+++ b/abs/x\n")


def test_lines_split_on_newlines_only(env: tuple[BlobStore, Workspace, Path]) -> None:
    blobs, ws, _ = env
    d = diff_states("f", _state(blobs, b"a\x0cb\rc\n"), _state(blobs, b"a\x0cb\rd\n"), blobs, ws)
    assert d.diff is not None
    assert (d.added, d.removed) == (1, 1)
    assert "-a\x0cb\rc\n+a\x0cb\rd\n" in d.diff


def test_a_diff_applies_with_patch(env: tuple[BlobStore, Workspace, Path], tmp_path: Path) -> None:
    blobs, ws, _ = env
    a = b"".join(b"%d\n" % i for i in range(200)) + b"tail"
    b = a.replace(b"17\n", b"seventeen\n").replace(b"150\n", b"").replace(b"tail", b"tail\n")
    d = diff_states("f.txt", _state(blobs, a), _state(blobs, b), blobs, ws)
    work = tmp_path / "apply"
    work.mkdir()
    (work / "f.txt").write_bytes(a)
    (work / "d.patch").write_text(d.diff or "")
    subprocess.run(["patch", "-p1", "-s", "-i", "d.patch"], cwd=work, check=True)
    assert (work / "f.txt").read_bytes() == b


@pytest.mark.parametrize("data", [b"text\0with nul\n", b"caf\xe9\n", bytes(range(256))])
def test_binary_files_have_no_text_diff(env: tuple[BlobStore, Workspace, Path], data: bytes) -> None:
    blobs, ws, _ = env
    d = diff_states("bin", _state(blobs, b"plain\n"), _state(blobs, data), blobs, ws)
    assert d.binary and d.diff is None and (d.added, d.removed) == (0, 0)
    assert d.as_json()["newSize"] == len(data)


def test_too_large_reads_nothing(env: tuple[BlobStore, Workspace, Path]) -> None:
    blobs, ws, _ = env
    big = FileState.file("f" * 64, 0o644, 5 * 1024 * 1024)  # not even stored: never read
    d = diff_states("big", _state(blobs, b"small\n"), big, blobs, ws)
    assert d.too_large and d.diff is None and d.as_json()["newSize"] == 5 * 1024 * 1024
    small = diff_states("s", _state(blobs, b"123456"), _state(blobs, b"1234567"), blobs, ws, max_bytes=6)
    assert small.too_large


def test_equal_contents_and_symlinks(env: tuple[BlobStore, Workspace, Path]) -> None:
    blobs, ws, _ = env
    f = _state(blobs, b"same\n")
    same = diff_states("f", f, f, blobs, ws)
    assert same.diff == "" and not same.changed
    mode_only = diff_states("f", f, _state(blobs, b"same\n", 0o755), blobs, ws)
    assert mode_only.diff == "" and mode_only.changed
    link = diff_states("l", FileState.symlink("a"), FileState.symlink("b"), blobs, ws)
    assert link.diff == (
        "--- a/l\n+++ b/l\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"
    )


def test_history_diff_against_the_disk(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    s = Session(tmp_path / "store", cwd)
    (cwd / "a.txt").write_bytes(b"one\ntwo\n")
    (cwd / "b.bin").write_bytes(b"\0\1\2")
    s.checkpoint("p1")
    s.write("a.txt", b"one\n2\n")
    s.write("b.bin", b"\0\1\2\3")
    s.write("c.txt", b"new\n")
    (cwd / "a.txt").write_bytes(b"one\n2\nby the user, not backed up\n")  # read from the disk
    diffs = {d.path: d for d in s.history.diff("p1")}
    assert sorted(diffs) == ["a.txt", "b.bin", "c.txt"]
    assert diffs["a.txt"].diff == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+2\n+by the user, not backed up\n"
    )
    assert diffs["b.bin"].binary
    assert diffs["c.txt"].diff == "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+new\n"
    assert [d.path for d in s.history.diff("p1", "c.txt")] == ["c.txt"]
    assert [d.path for d in s.history.diff("p1", str(cwd / "c.txt"))] == ["c.txt"]
    assert s.history.diff("p1", "untracked.txt") == []
    (cwd / "c.txt").unlink()
    (cwd / "c.txt").mkdir()
    broken = s.history.diff("p1", "c.txt")[0]
    assert broken.diff is None and "directory" in (broken.error or "")
    assert broken.changed is None and broken.as_json()["to"] is None  # unknown, not "unchanged"
