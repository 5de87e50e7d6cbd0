"""sessiond makes its own directories private, and never a directory others share: a socket or
an index put straight in a sticky directory (``--socket /tmp/sessiond.sock``) left ``/tmp``
``0700`` for the whole machine (a benchmark's index in /tmp did it here, and every test running
as another user failed after it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sessiond.search.database import open_index
from sessiond.store.private import private_dir
from tests.harness.daemon import start_daemon


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A directory like /tmp: everyone may write, the sticky bit set."""
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)
    return d


def test_private_dir_makes_and_tightens_our_own(tmp_path: Path) -> None:
    made = tmp_path / "a" / "b"
    private_dir(made)
    assert _mode(made) == 0o700
    left_open = tmp_path / "open"
    left_open.mkdir(mode=0o755)
    os.chmod(left_open, 0o755)
    private_dir(left_open)
    assert _mode(left_open) == 0o700


def test_private_dir_leaves_a_shared_directory_as_it_is(shared: Path) -> None:
    private_dir(shared)
    assert _mode(shared) == 0o1777


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's needs root")
def test_private_dir_leaves_another_users_directory_as_it_is(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chmod(theirs, 0o755)
    os.chown(theirs, 65534, 65534)
    private_dir(theirs)
    assert _mode(theirs) == 0o755


def test_an_index_in_a_shared_directory_is_private_by_its_own_mode(shared: Path) -> None:
    db = open_index(shared / "index.sqlite3")
    db.close()
    assert _mode(shared) == 0o1777
    assert _mode(shared / "index.sqlite3") == 0o600


def test_a_socket_in_a_shared_directory_leaves_it_shared(tmp_path: Path, shared: Path) -> None:
    daemon = start_daemon(tmp_path, socket_path=shared / "sessiond.sock")
    try:
        assert _mode(shared) == 0o1777
        assert _mode(shared / "sessiond.sock") == 0o600
    finally:
        daemon.stop()
    own = tmp_path / "run-own"
    own.mkdir(mode=0o755)
    os.chmod(own, 0o755)
    daemon = start_daemon(tmp_path, socket_path=own / "sessiond.sock")
    try:
        assert _mode(own) == 0o700  # its own run directory, left open: tightened
    finally:
        daemon.stop()
