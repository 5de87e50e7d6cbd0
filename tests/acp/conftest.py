"""The daemon every ACP test records through (one per test, on its own store and socket):
:mod:`tests.harness.fixtures`' ``daemon``, stopped and checked like every other test's."""

from __future__ import annotations

from tests.harness.fixtures import daemon

__all__ = ["daemon"]
