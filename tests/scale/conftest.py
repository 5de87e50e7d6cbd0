"""The scale tests' cluster: the run's one real 3-node JetStream cluster on loopback."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def cluster(nats_cluster: Any) -> Any:
    """The run's shared cluster (a test that kills a node starts it again before it ends)."""
    return nats_cluster
