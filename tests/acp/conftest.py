"""The daemon every ACP test records through (one per test, on its own store and socket)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.daemon import Daemon, start_daemon


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        d.stop()
