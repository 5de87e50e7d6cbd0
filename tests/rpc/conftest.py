"""Fixtures of the integration tests: the real daemon on a temporary store, and a client of it.

The daemon itself is started by :mod:`tests.harness.daemon` (the one harness every test uses) and
its fixtures are :mod:`tests.harness.fixtures`' (``daemon``: one per test, ``shared_daemon``: one
per file); ``Daemon`` and ``start_daemon`` stay importable from here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from sessiond_client import Client
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.fixtures import daemon, file_daemon, own_daemon, shared_daemon

__all__ = ["Daemon", "client", "daemon", "file_daemon", "own_daemon", "shared_daemon", "start_daemon"]


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[Client]:
    c = await daemon.client()
    try:
        yield c
    finally:
        with contextlib.suppress(Exception):
            await c.close()
