"""The daemon fixtures of the integration tests: one per test, or one per file shared by its tests.

A conftest (or a test file) imports the fixture it uses from here, so that every directory's
daemon is started, stopped and checked the same way (they were near-copies in tests/rpc,
tests/acp and tests/clients/python):

* ``daemon``: a daemon of the test's own on ``tmp_path``, stopped with SIGTERM after it and
  checked to have stopped cleanly (:func:`stop_cleanly`); ``own_daemon`` is the same under
  another name, for the tests of a file whose ``daemon`` is the shared one.
* ``shared_daemon``: one daemon for all the tests of a file (started once; each start costs ~1 s
  of CPU of imports, and a file of twenty such tests spent most of its time starting daemons).
  A file uses it when its tests are independent of each other and none of them changes the
  daemon itself (its configuration, its store on disk behind its back, its life). Between two
  tests it is checked that the test left no connection open (a connected client — an agent
  answering ``compaction/summarize``, a subscriber — is daemon state another test would see):
  the clients the test opened with :meth:`SharedDaemon.client` are closed, then the daemon must
  report only the asking connection in ``daemon/status``, or the test fails. Sessions a test made
  stay in the store: such tests name their own sessions and never count the store's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client
from tests.harness.daemon import Daemon, start_daemon

__all__ = ["SharedDaemon", "daemon", "file_daemon", "own_daemon", "shared_daemon", "stop_cleanly"]

LEFT_CONNECTIONS_TIMEOUT = 30.0
"""Seconds a shared daemon may take to see a test's closed connections go (an upper bound for
"it happened at all": the daemon notices a closed socket at once, but the machine may be loaded)."""


def stop_cleanly(daemon: Daemon) -> None:
    """SIGTERM, then check that the daemon stopped as it should: exit code 0, its socket removed,
    and no traceback in its log but for an internal error a test provoked on purpose."""
    code = daemon.stop()
    log = daemon.log_text()
    assert code == 0, log
    assert not daemon.socket.exists(), "the socket was not removed on SIGTERM"
    assert "Traceback" not in log or "internal error" in log, log


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of the test's own on ``tmp_path``, stopped cleanly after it."""
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        stop_cleanly(d)


@pytest.fixture
def own_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of the test's own (as ``daemon``), in a file whose other tests share one: for a
    test that needs the store to itself (it lists every session, or writes into the store)."""
    d = start_daemon(tmp_path)
    try:
        yield d
    finally:
        stop_cleanly(d)


@dataclass
class SharedDaemon(Daemon):
    """The file's daemon as one test sees it: the clients it opens are remembered, to be closed
    after the test, and stopping it is refused (the file's next tests use it)."""

    opened: list[Client] = field(default_factory=list)

    async def client(
        self, framing: str = "content-length", *, initialize: bool = True, **caps: object
    ) -> Client:
        client = await super().client(framing, initialize=initialize, **caps)
        self.opened.append(client)
        return client

    def stop(self) -> int:
        raise AssertionError("a shared daemon outlives the test: start a daemon of the test's own to stop it")


@pytest.fixture(scope="module")
def file_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The daemon a file's tests share (see :func:`shared_daemon`), stopped cleanly after the last."""
    d = start_daemon(tmp_path_factory.mktemp("shared-daemon"))
    try:
        yield d
    finally:
        stop_cleanly(d)


@pytest.fixture
async def shared_daemon(file_daemon: Daemon) -> AsyncIterator[SharedDaemon]:
    """The file's daemon for one test; after the test, its clients are closed and the daemon must
    have no other connection left (module docstring)."""
    assert file_daemon.process.poll() is None, (
        "the shared daemon is no longer running:\n" + file_daemon.log_text()
    )
    view = SharedDaemon(
        file_daemon.store,
        file_daemon.socket,
        file_daemon.process,
        file_daemon.log,
        file_daemon.tcp,
        file_daemon.env,
    )
    try:
        yield view
    finally:
        for client in view.opened:
            with contextlib.suppress(Exception):
                await client.close()
    await _no_connection_left(file_daemon)


async def _no_connection_left(d: Daemon) -> None:
    """Wait until ``daemon/status`` lists the asking connection alone; fail after the timeout."""
    checker = await Client.connect_unix(d.socket)
    try:
        await checker.initialize("pytest-shared-daemon-check")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEFT_CONNECTIONS_TIMEOUT
        while True:
            status: dict[str, Any] = await checker.request("daemon/status", {})
            others = len(status["clients"]) - 1
            if others == 0:
                return
            if loop.time() >= deadline:
                raise AssertionError(
                    f"the test left {others} connection(s) open on the shared daemon: {status['clients']}"
                )
            await asyncio.sleep(0.02)
    finally:
        await checker.close()
