"""``service_backend``: run a service test once on the local store and once on JetStream."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.conftest import jetstream_config
from tests.service import peers

_streams = itertools.count()


@pytest.fixture
def service_backend(backend_name: str, request: pytest.FixtureRequest) -> Iterator[str]:
    if backend_name == "jetstream":
        # A stream of its own per test: listing shows every session of the shared store.
        name = f"SERVICE{next(_streams)}"
        peers.BACKEND_CONFIG.append(jetstream_config(request.getfixturevalue("nats_cluster"), name))
    try:
        yield backend_name
    finally:
        peers.BACKEND_CONFIG.clear()
        while peers.SERVICES:
            peers.SERVICES.pop().store.close()
