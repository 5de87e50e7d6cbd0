"""The directories every file-history test works in: the session's workspace, a directory
beside it that a rewind must never write (the target of escapes and symlinks), and the store.

They sit under one ``tmp_path`` so a test can check that nothing outside ``cwd`` changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim.txt").write_bytes(b"do not touch\n")
    return d


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"
