"""Store layout: Pi's naming, id rule, and refusing every path that leaves the store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiond.errors import InvalidSessionIdError, PathEscapeError
from sessiond.store.ids import short_id, uuid7
from sessiond.store.layout import (
    StoreLayout,
    default_root,
    encode_cwd,
    ensure_within,
    session_file_name,
    validate_session_id,
)


def test_root_from_env() -> None:
    assert default_root({"SESSIOND_HOME": "/x/y"}) == Path("/x/y")
    assert default_root({"XDG_DATA_HOME": "/data"}) == Path("/data/sessiond")
    assert default_root({"XDG_DATA_HOME": "relative"}) == Path.home() / ".local/share/sessiond"
    assert default_root({}) == Path.home() / ".local/share/sessiond"


@pytest.mark.parametrize(
    ("cwd", "encoded"),
    [
        ("/home/u/my proj", "--home-u-my proj--"),
        ("/a/b.c/ü", "--a-b.c-ü--"),
        ("/", "----"),
        ("/a/../b", "--b--"),
    ],
)
def test_cwd_encoding_is_pis(cwd: str, encoded: str) -> None:
    assert encode_cwd(cwd) == encoded


def test_file_name() -> None:
    assert session_file_name("2026-12-02T13:15:53.822Z", "01a2-x") == "2026-12-02T13-15-53-822Z_01a2-x.jsonl"


@pytest.mark.parametrize("good", ["abc-123_def.456", "a", "A9"])
def test_valid_ids(good: str) -> None:
    assert validate_session_id(good) == good


@pytest.mark.parametrize(
    "bad", ["", "-abc", "abc-", "_abc", "abc_", ".abc", "abc.", "abc/def", "abc\\def", "abc def", "a\n"]
)
def test_invalid_ids_use_pis_message(bad: str) -> None:
    with pytest.raises(InvalidSessionIdError) as exc:
        validate_session_id(bad)
    assert exc.value.message.startswith("Session id must be non-empty, contain only alphanumeric")


def test_uuid7_is_time_ordered_and_versioned() -> None:
    ids = [uuid7() for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(i[14] == "7" and i[19] in "89ab" for i in ids)


def test_short_id_avoids_collisions() -> None:
    taken = set()
    for _ in range(500):
        taken.add(short_id(lambda c: c in taken))
    assert len(taken) == 500
    assert len(short_id(lambda c: True)) == 36  # after 100 collisions, a full uuid


def test_paths_inside_the_root_are_accepted(tmp_path: Path) -> None:
    layout = StoreLayout(tmp_path)
    layout.ensure_dirs()
    assert layout.contain("sessions/--a--/x.jsonl") == tmp_path.resolve() / "sessions/--a--/x.jsonl"
    assert layout.contain(str(tmp_path / "sessions")) == (tmp_path / "sessions").resolve()
    assert oct(os.stat(tmp_path / "sessions").st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("candidate", ["../etc/passwd", "sessions/../../x", "/etc/passwd", "a/\x00b"])
def test_escapes_are_refused(tmp_path: Path, candidate: str) -> None:
    with pytest.raises(PathEscapeError):
        ensure_within(tmp_path, candidate)


def test_symlink_escape_is_refused_and_nothing_is_touched(tmp_path: Path) -> None:
    root = tmp_path / "store"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(PathEscapeError) as exc:
        ensure_within(root, "link/new.jsonl")
    assert "symlink" in exc.value.message
    assert list(outside.iterdir()) == []
    (root / "inner").mkdir()
    (root / "ok").symlink_to(root / "inner")
    assert ensure_within(root, "ok/f") == (root / "inner" / "f").resolve()


def test_short_ids_are_drawn_from_a_pool_that_a_forked_child_does_not_share() -> None:
    from sessiond.store import ids  # noqa: PLC0415

    drawn = [ids._RANDOM.hex8() for _ in range(3000)]  # refills the 4 KiB pool twice
    assert all(len(d) == 8 and int(d, 16) >= 0 for d in drawn)
    assert len(set(drawn)) > 2990  # 32 random bits each: a repeat or two at most
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh pool, not the rest of the parent's
        os.write(write, ids._RANDOM.hex8().encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert status == 0 and len(child) == 8
    assert child != ids._RANDOM.hex8()  # the parent's next bytes are not the child's
