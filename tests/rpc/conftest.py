"""Fixtures of the integration tests: the real daemon on a temporary store, and a client of it.

The daemon itself is started by :mod:`tests.harness.daemon` (the one harness every test uses);
``Daemon`` and ``start_daemon`` stay importable from here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from sessiond_client import Client
from tests.harness.daemon import Daemon, start_daemon

__all__ = ["Daemon", "client", "daemon", "start_daemon"]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        code = d.stop()
        assert code == 0, d.log_text()
        assert not d.socket.exists(), "the socket was not removed on SIGTERM"
        assert "Traceback" not in d.log_text() or "internal error" in d.log_text(), d.log_text()


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[Client]:
    c = await daemon.client()
    try:
        yield c
    finally:
        with contextlib.suppress(Exception):
            await c.close()
