"""The test cluster's readiness: once ``start()`` (or ``wait_ready`` after a restart) returns,
a test's first R3 stream is placed and written at once, without a retry of its own.

Without the placement probe this failed now and then on a loaded machine: right after the
nodes answered, ``add_stream`` with three replicas was refused ("no suitable peers for
placement", 10005: the meta leader did not know every peer's JetStream yet) — reproduced
with three busy loops beside a loop of starts (1 failure in 5). And after a node's restart,
``wait_ready`` returned while the restarted node's routes were still coming up: a stream
created and written through a node other than the one probed got ``NoStreamResponseError``.

What readiness cannot promise is the moment right after ``add_stream``: the new stream's leader
subscribes to its subjects when it is elected, and that interest reaches the other nodes over
the routes a little later. A publish through another node in that moment gets "no responders"
(a clean-clone CI run saw it once through a node that had not restarted). sessiond's writer
retries that within ``ack_wait``; this test allows it for one second, which a missing route
(the failure readiness is about) does not heal in.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.harness.nats_cluster import Cluster, nats_server_binary

pytestmark = pytest.mark.skipif(nats_server_binary() is None, reason="nats-server is not installed")


def place_and_write(urls: list[str], name: str) -> int:
    """Create an R3 stream (once: placement must work at once) and store one message: the
    stored sequence. The publish may wait up to 1 s for the new stream's interest to travel."""
    pytest.importorskip("nats")
    import nats  # noqa: PLC0415
    from nats.js.api import StorageType, StreamConfig  # noqa: PLC0415
    from nats.js.errors import NoStreamResponseError  # noqa: PLC0415

    async def run() -> int:
        nc = await nats.connect(servers=urls)
        try:
            js = nc.jetstream(timeout=5)
            config = StreamConfig(name=name, subjects=[f"{name}.>"], num_replicas=3, storage=StorageType.FILE)
            await js.add_stream(config)
            deadline = time.monotonic() + 1.0
            while True:
                try:
                    ack = await js.publish(f"{name}.x", b"x", headers={"Nats-Msg-Id": name})
                    break
                except NoStreamResponseError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.05)
            await js.delete_stream(name)
            return ack.seq
        finally:
            await nc.close()

    return asyncio.run(run())


def test_an_r3_stream_is_placeable_as_soon_as_the_cluster_is_ready(tmp_path: Path) -> None:
    with Cluster.create(tmp_path / "cluster") as cluster:
        assert place_and_write(cluster.urls, "FIRST") == 1
        node = cluster.nodes[0]
        cluster.kill_node(node)
        cluster.start_node(node)
        cluster.wait_ready()
        # Through each node in turn, the restarted one included: a client lands on any of them.
        for i, url in enumerate(cluster.urls):
            assert place_and_write([url], f"AFTER_RESTART_{i}") == 1
