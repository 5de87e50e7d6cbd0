"""Sessions shared by daemons through a real 3-node JetStream cluster on loopback (issue 18).

Each test starts two real daemons (separate stores, configs and sockets) on one cluster and
talks to them with the real client. Skipped when the ``nats`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("nats")

from sessiond.store.session import Session
from sessiond_client import Client
from sessiond_client.client import RpcError
from tests.conftest import PI_FIXTURES
from tests.harness.daemon import Daemon, daemon_env, start_daemon
from tests.harness.nats_cluster import Cluster, nats_server_binary

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(nats_server_binary() is None, reason="nats-server is not installed (the nats extra)"),
]

STORAGE_ERROR = -32018
LEAF_MISMATCH = -32012


def config(servers: list[str], stream: str, replicas: int = 3) -> str:
    urls = ", ".join(f'"{u}"' for u in servers)
    return (
        '[store]\nbackend = "jetstream"\n[store.jetstream]\n'
        f'servers = [{urls}]\nstream = "{stream}"\nsubject_prefix = "t.{stream}"\n'
        f'kv_bucket = "kv-{stream}"\nobject_bucket = "obj-{stream}"\nreplicas = {replicas}\nack_wait = 8.0\n'
    )


def two_daemons(
    tmp_path: Path, cluster: Cluster, stream: str, servers: tuple[list[str], list[str]] | None = None
) -> tuple[Daemon, Daemon]:
    a_servers, b_servers = servers or (cluster.urls, cluster.urls[::-1])
    a = start_daemon(tmp_path / "a", config=config(a_servers, stream))
    try:
        b = start_daemon(tmp_path / "b", config=config(b_servers, stream))
    except BaseException:
        a.stop()
        raise
    return a, b


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


async def collect(client: Client, sid: str, count: int, timeout: float = 60) -> list[str]:
    """Entry ids of ``entries_appended`` updates until ``count`` have arrived."""
    seen: list[str] = []

    async def run() -> None:
        while len(seen) < count:
            method, params = await client.notification(timeout=None)
            if method == "session/update" and params["sessionId"] == sid:
                update = params["update"]
                if update["sessionUpdate"] == "entries_appended":
                    seen.extend(update["entryIds"])

    await asyncio.wait_for(run(), timeout)
    return seen


async def writer(
    client: Client, sid: str, name: str, count: int, acked: list[str], retry_unavailable: bool = False
) -> None:
    """Append ``count`` entries, each with ``expectLeafId`` of the leaf last seen: a lost race
    re-reads the leaf and tries again (what an agent sharing a session does). With
    ``retry_unavailable``, "the cluster is unavailable" (a node killed under the run) is waited
    out, for the appends and for the leaf's re-reads alike: no request was acknowledged then."""

    async def current_leaf() -> Any:
        while True:
            try:
                return (await client.request("session/load", {"sessionId": sid}))["leafId"]
            except RpcError as exc:
                if exc.code != STORAGE_ERROR or not retry_unavailable:
                    raise
                await asyncio.sleep(0.2)

    leaf = await current_leaf()
    done = 0
    while done < count:
        try:
            result = await client.request(
                "session/append",
                {"sessionId": sid, "entries": [user(f"{name}-{done}")], "expectLeafId": leaf},
            )
        except RpcError as exc:
            if exc.code == LEAF_MISMATCH:
                leaf = exc.data["currentLeafId"]
                continue
            if exc.code == STORAGE_ERROR and retry_unavailable:
                await asyncio.sleep(0.2)
                leaf = await current_leaf()
                continue
            raise
        acked.extend(result["entryIds"])
        leaf = result["leafId"]
        done += 1
        await asyncio.sleep(random.random() * 0.005)


async def entries_of(client: Client, sid: str) -> list[dict[str, Any]]:
    result = await client.request("session/entries", {"sessionId": sid, "limit": 5000})
    return list(result["entries"])


def assert_one_chain(entries: list[dict[str, Any]], acked: list[str]) -> None:
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "an entry is stored twice"
    assert sorted(set(acked)) == sorted(acked), "an entry was acknowledged twice"
    assert set(acked) <= set(ids), f"acknowledged entries lost: {set(acked) - set(ids)}"
    for prev, entry in itertools.pairwise(entries):
        assert entry["parentId"] == prev["id"], "the session is not one chain"


async def new_shared_session(client: Client) -> str:
    sid = str((await client.request("session/new", {"cwd": "/tmp/shared"}))["sessionId"])
    await client.request("session/append", {"sessionId": sid, "entries": [user("first")]})
    return sid


async def test_two_daemons_eight_racing_writers(tmp_path: Path, cluster: Cluster) -> None:
    a, b = two_daemons(tmp_path, cluster, "RACE")
    try:
        ca, cb = await a.client(), await b.client()
        sid = await new_shared_session(ca)
        # B has never seen the session: it finds it through the shared metadata.
        await ca.request("session/load", {"sessionId": sid, "subscribe": True})
        await cb.request("session/load", {"sessionId": sid, "subscribe": True})
        clients = [await a.client() for _ in range(4)] + [await b.client() for _ in range(4)]
        acked: list[str] = []
        per_writer = 12
        watch_a = asyncio.create_task(collect(ca, sid, 8 * per_writer))
        watch_b = asyncio.create_task(collect(cb, sid, 8 * per_writer))
        await asyncio.gather(*(writer(c, sid, f"w{i}", per_writer, acked) for i, c in enumerate(clients)))
        assert len(acked) == 8 * per_writer
        seen_a, seen_b = await watch_a, await watch_b
        assert seen_a == seen_b, "the daemons' subscribers saw different orders"
        entries_a, entries_b = await entries_of(ca, sid), await entries_of(cb, sid)
        assert [e["id"] for e in entries_a] == [e["id"] for e in entries_b]
        assert_one_chain(entries_a, acked)
        assert seen_a == [e["id"] for e in entries_a][1:], "subscribers saw another order than stored"
        for c in [ca, cb, *clients]:
            await c.close()
    finally:
        a.stop()
        b.stop()


async def test_leader_killed_mid_run(tmp_path: Path, cluster: Cluster) -> None:
    a, b = two_daemons(tmp_path, cluster, "LEADER")
    try:
        ca, cb = await a.client(), await b.client()
        sid = await new_shared_session(ca)
        clients = [await a.client() for _ in range(2)] + [await b.client() for _ in range(2)]
        acked: list[str] = []
        run = asyncio.gather(
            *(writer(c, sid, f"w{i}", 25, acked, retry_unavailable=True) for i, c in enumerate(clients))
        )
        await asyncio.sleep(0.3)
        leader = await asyncio.to_thread(stream_leader, cluster, "LEADER")
        node = next(n for n in cluster.nodes if n.name == leader)
        cluster.kill_node(node)
        try:
            await asyncio.wait_for(run, 120)
        finally:
            cluster.start_node(node)
            await asyncio.to_thread(cluster.wait_ready)
        entries_a, entries_b = await converged(ca, cb, sid)
        assert [e["id"] for e in entries_a] == [e["id"] for e in entries_b]
        assert_one_chain(entries_a, acked)
        for c in [ca, cb, *clients]:
            await c.close()
    finally:
        a.stop()
        b.stop()


async def converged(
    ca: Client, cb: Client, sid: str, timeout: float = 30
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both daemons' entries once they agree: a daemon hears the other's last appends through its
    subscription, which restarts after a leader change (eventually, not at once)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        entries_a, entries_b = await entries_of(ca, sid), await entries_of(cb, sid)
        if [e["id"] for e in entries_a] == [e["id"] for e in entries_b]:
            return entries_a, entries_b
        if asyncio.get_running_loop().time() > deadline:
            return entries_a, entries_b  # the caller's assertion shows the difference
        await asyncio.sleep(0.2)


async def test_daemon_cut_from_the_cluster_refuses_then_catches_up(tmp_path: Path, cluster: Cluster) -> None:
    cut = cluster.nodes[0]
    a, b = two_daemons(tmp_path, cluster, "CUT", servers=([cut.url], [n.url for n in cluster.nodes[1:]]))
    try:
        ca, cb = await a.client(), await b.client()
        sid = await new_shared_session(cb)
        await ca.request("session/load", {"sessionId": sid, "subscribe": True})
        cluster.kill_node(cut)
        try:
            for _ in range(100):  # the daemon notices within its ping interval
                try:
                    await ca.request("session/append", {"sessionId": sid, "entries": [user("lost?")]})
                except RpcError as exc:
                    assert exc.code == STORAGE_ERROR
                    assert exc.data["cluster"] == "unavailable"
                    assert "cluster is unavailable" in exc.message
                    break
                await asyncio.sleep(0.2)
            else:
                pytest.fail("a daemon cut from the cluster kept acknowledging writes")
            written = []
            for i in range(5):  # the rest of the cluster goes on
                r = await cb.request("session/append", {"sessionId": sid, "entries": [user(f"b{i}")]})
                written.extend(r["entryIds"])
        finally:
            cluster.start_node(cut)
            await asyncio.to_thread(cluster.wait_ready)
        # A resumes: its subscriber hears what B wrote meanwhile, and it writes again.
        seen = await collect(ca, sid, len(written), timeout=60)
        assert seen[-len(written) :] == written
        for _ in range(100):
            try:
                r = await ca.request("session/append", {"sessionId": sid, "entries": [user("back")]})
                break
            except RpcError as exc:
                assert exc.code == STORAGE_ERROR
                await asyncio.sleep(0.2)
        entries_a, entries_b = await converged(ca, cb, sid)
        assert [e["id"] for e in entries_a] == [e["id"] for e in entries_b]
        assert_one_chain(entries_a, [*written, *r["entryIds"]])
        await ca.close()
        await cb.close()
    finally:
        a.stop()
        b.stop()


def stream_leader(cluster: Cluster, stream: str) -> str:
    import nats  # noqa: PLC0415 - imported after the importorskip above

    async def ask() -> str:
        nc = await nats.connect(servers=cluster.urls)
        try:
            info = await nc.jetstream().stream_info(stream)
            assert info.cluster is not None and info.cluster.leader is not None
            return info.cluster.leader
        finally:
            await nc.close()

    return asyncio.run(ask())


async def test_import_then_serve_then_export(tmp_path: Path, cluster: Cluster) -> None:
    """A local Pi file (2.3 MB, migrated from v1: several messages) goes into the shared store
    with `sessiond store import`, a daemon that never saw it serves and extends it, and
    `sessiond store export` gives back the same bytes plus the new entry."""
    source = tmp_path / "local.jsonl"
    shutil.copy(PI_FIXTURES / "before-compaction.v1.jsonl", source)
    Session.open(source).close()  # migrated to v3 in place (atomically)
    original = source.read_bytes()
    conf = config(cluster.urls, "IMPORT")
    (tmp_path / "cli").mkdir()
    env = daemon_env(tmp_path / "cli", config=conf)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sessiond", "store", *args, "--json"],
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = cli("import", str(source))
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)["imported"][0]
    assert imported["messages"] > 1
    sid = imported["sessionId"]
    again = cli("import", str(source))
    assert again.returncode == 4 and "already in the shared store" in again.stdout

    daemon = start_daemon(tmp_path / "d", config=conf)
    try:
        client = await daemon.client()
        loaded = await client.request("session/load", {"sessionId": sid})
        assert loaded["entryCount"] == original.count(b"\n") - 1
        added = await client.request("session/append", {"sessionId": sid, "entries": [user("more")]})
        await client.close()
    finally:
        daemon.stop()
    exported = tmp_path / "exported.jsonl"
    out = cli("export", sid, "-o", str(exported))
    assert out.returncode == 0, out.stderr
    data = exported.read_bytes()
    assert data.startswith(original)
    tail = json.loads(data[len(original) :])
    assert tail["id"] == added["entryIds"][0]
    assert cli("export", sid, "-o", str(exported)).returncode != 0  # never over an existing file


def test_a_daemon_without_its_cluster_says_so_and_exits(tmp_path: Path) -> None:
    conf = (
        '[store]\nbackend = "jetstream"\n[store.jetstream]\n'
        'servers = ["nats://127.0.0.1:1"]\nconnect_timeout = 1.0\n'
    )
    (tmp_path / "home").mkdir()
    env = daemon_env(tmp_path / "home", config=conf)
    done = subprocess.run(
        [sys.executable, "-m", "sessiond", "serve", "--socket", str(tmp_path / "s.sock")],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cluster is unavailable (cannot connect to nats://127.0.0.1:1 within 1 s" in done.stderr
    assert "Traceback" not in done.stderr


@contextlib.contextmanager
def two_stores(tmp_path: Path, cluster: Cluster, name: str) -> Iterator[tuple[Any, Any, Session, Session]]:
    """Two JetStream store backends (as two daemons hold them) on one stream, a session created
    through the first with one entry, and the same session opened through the second."""
    from sessiond.store.backend import open_store  # noqa: PLC0415
    from sessiond.store.jetstream.settings import JetStreamSettings  # noqa: PLC0415
    from sessiond.store.journal import Durability  # noqa: PLC0415

    settings = JetStreamSettings(
        servers=tuple(cluster.urls), stream=name, subject_prefix=name.lower(), kv_bucket=name.lower()
    )
    a = open_store("jetstream", tmp_path / "a", settings)
    b = open_store("jetstream", tmp_path / "b", settings)
    try:
        s = a.create(
            tmp_path / "a" / "w", "/w", session_id=None, parent_session=None, durability=Durability.BUFFERED
        )
        s.append_message(user("one")["message"])
        path = b.locate(s.id)
        assert path is not None
        yield a, b, s, b.open(path, durability=Durability.BUFFERED)
    finally:
        a.close()
        b.close()


def test_a_session_deleted_by_another_daemon_refuses_writes_clearly(tmp_path: Path, cluster: Cluster) -> None:
    from sessiond.errors import SessionChangedError  # noqa: PLC0415

    with two_stores(tmp_path, cluster, "DEL") as (a, b, s, other):
        a.delete(s.id)
        with pytest.raises(SessionChangedError, match="deleted or cut short"):
            other.append_message(user("after the delete")["message"])
        assert b.locate(s.id) is None


def test_a_delivery_after_a_gap_is_not_applied_the_stream_is_read_instead(
    tmp_path: Path, cluster: Cluster
) -> None:
    """A subscription that skipped a message (while restarting after a leader change) must not
    leave the replica without it; and what a pull took from the subscription reaches the
    replica even when reading the stream fails (a leader kill lost an entry that way)."""
    import time  # noqa: PLC0415

    from sessiond.store.jetstream.log import JetStreamLog  # noqa: PLC0415

    with two_stores(tmp_path, cluster, "GAP") as (_, _, s, other):
        log = other.remote
        assert isinstance(log, JetStreamLog)
        woken: list[int] = []
        log.follow(lambda: woken.append(1))
        two = s.append_message(user("two")["message"])
        three = s.append_message(user("three")["message"])
        deadline = time.monotonic() + 30
        while len(log._delivered) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        delivered = list(log._delivered)
        assert [p for _, p, _ in delivered] == [delivered[0][0] - 1, delivered[0][0]], delivered
        log._delivered.popleft()  # the subscription "skipped" the message of "two"
        entries = other.take_remote()
        assert [e["id"] for e in entries] == [two, three]
        assert other.path.read_bytes() == s.path.read_bytes()

        four = s.append_message(user("four")["message"])
        while not log._delivered and time.monotonic() < deadline:
            time.sleep(0.05)
        log.link.connected.clear()  # the cluster is away while the rest would be read
        try:
            batches = log.pull(fetch=True)
        finally:
            log.link.connected.set()
        assert len(batches) == 1 and four.encode() in batches[0]


async def test_file_history_blobs_shared_rewind_on_the_other_daemon(tmp_path: Path, cluster: Cluster) -> None:
    """Snapshots taken through daemon A, rewound through daemon B: B fetches the blobs from the
    object store (keyed by hash: the same content twice is stored once) and restores the files
    byte for byte; a blob missing from the object store gives the existing precise answer."""
    import hashlib  # noqa: PLC0415
    import os  # noqa: PLC0415

    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    big = os.urandom(3 * 1024 * 1024 + 123)  # several object-store chunks
    originals = {
        "src/app.py": b"print('v0')\n",
        "big.bin": big,
        "copy.bin": big,  # same content: one blob
        "empty.txt": b"",
    }
    for rel, data in originals.items():
        (ws / rel).write_bytes(data)
    a, b = two_daemons(tmp_path, cluster, "BLOBS")
    try:
        ca, cb = await a.client(), await b.client()
        sid = (await ca.request("session/new", {"cwd": str(ws)}))["sessionId"]
        prompt = (await ca.request("session/append", {"sessionId": sid, "entries": [user("edit")]}))["leafId"]
        await ca.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": prompt})
        for rel in originals:
            await ca.request("fileHistory/track", {"sessionId": sid, "path": rel})
            (ws / rel).write_bytes(b"edited by the agent " + rel.encode())
            await ca.request("fileHistory/track", {"sessionId": sid, "path": rel, "phase": "after"})
        (ws / "new.txt").write_bytes(b"created\n")
        await ca.request("fileHistory/track", {"sessionId": sid, "path": "new.txt", "phase": "after"})

        shas = {hashlib.sha256(d).hexdigest() for d in originals.values()}
        stored = await asyncio.to_thread(object_names, cluster, "obj-BLOBS")
        assert sorted(stored) == sorted(shas), "each content once, named by its hash"

        # B never saw the session nor its blobs.
        assert not (b.store / "file-history" / sid).exists()
        plan = await cb.request("fileHistory/rewind", {"sessionId": sid, "messageId": prompt, "dryRun": True})
        assert plan["conflicts"] == 0 and plan["refused"] == 0, plan
        done = await cb.request("fileHistory/rewind", {"sessionId": sid, "messageId": prompt})
        assert done["conflicts"] == 0 and done["refused"] == 0, done
        for rel, data in originals.items():
            assert (ws / rel).read_bytes() == data, rel
        cached = {p.name for p in (b.store / "file-history" / sid / "blobs").rglob("*") if p.is_file()}
        assert shas - {hashlib.sha256(b"").hexdigest()} <= cached

        # A blob gone from the object store (and from B's cache): the existing "missing" answer.
        edited = b"edited again\n"
        await ca.request("fileHistory/track", {"sessionId": sid, "path": "src/app.py"})
        (ws / "src/app.py").write_bytes(edited)
        await ca.request("fileHistory/track", {"sessionId": sid, "path": "src/app.py", "phase": "after"})
        app_sha = hashlib.sha256(originals["src/app.py"]).hexdigest()
        await asyncio.to_thread(delete_object, cluster, "obj-BLOBS", app_sha)
        shutil.rmtree(b.store / "file-history" / sid)
        await cb.request("session/load", {"sessionId": sid})
        dry = await cb.request("fileHistory/rewind", {"sessionId": sid, "messageId": prompt, "dryRun": True})
        app = next(f for f in dry["files"] if f["path"] == "src/app.py")
        assert app["status"] == "failed" and app["reason"] == f"the backup {app_sha} is missing"
        assert (ws / "src/app.py").read_bytes() == edited
        await ca.close()
        await cb.close()
    finally:
        a.stop()
        b.stop()


def object_names(cluster: Cluster, bucket: str) -> list[str]:
    import nats  # noqa: PLC0415 - imported after the importorskip above

    async def ask() -> list[str]:
        nc = await nats.connect(servers=cluster.urls)
        try:
            store = await nc.jetstream().object_store(bucket)
            return [info.name for info in await store.list(ignore_deletes=True)]
        finally:
            await nc.close()

    return asyncio.run(ask())


def delete_object(cluster: Cluster, bucket: str, name: str) -> None:
    import nats  # noqa: PLC0415 - imported after the importorskip above

    async def run() -> None:
        nc = await nats.connect(servers=cluster.urls)
        try:
            store = await nc.jetstream().object_store(bucket)
            await store.delete(name)
        finally:
            await nc.close()

    asyncio.run(run())


@pytest.mark.parametrize("write", ["navigate", "checkpoint"])
async def test_a_commit_waiting_for_the_cluster_does_not_hold_other_sessions(
    tmp_path: Path, cluster: Cluster, write: str
) -> None:
    """A leaf move (or a file-history marker) on a shared session waits for the cluster — here
    for up to ``ack_wait``, the stream having lost its quorum — in a worker thread: a request on
    another session of the same daemon is answered meanwhile."""
    node = cluster.nodes[0]
    daemon = start_daemon(tmp_path / "d", config=config([node.url], f"STALL{write.upper()}"))
    try:
        c1, c2 = await daemon.client(), await daemon.client()
        s1 = await new_shared_session(c1)
        first = (await entries_of(c1, s1))[0]["id"]
        await c1.request("session/append", {"sessionId": s1, "entries": [user("second")]})
        s2 = await new_shared_session(c2)
        others = [n for n in cluster.nodes if n is not node]
        for n in others:
            cluster.kill_node(n)
        try:
            if write == "navigate":
                params = {"sessionId": s1, "targetId": first}
                stalled = asyncio.create_task(c1.request("tree/navigate", params))
            else:
                params = {"sessionId": s1, "messageId": first}
                stalled = asyncio.create_task(c1.request("fileHistory/checkpoint", params))
            await asyncio.sleep(0.5)
            assert not stalled.done(), "the commit did not wait for the cluster"
            loaded = await c2.request("session/load", {"sessionId": s2})
            assert loaded["entryCount"] == 1
            assert not stalled.done(), "a request on another session waited for this session's commit"
            with pytest.raises(RpcError) as refused:
                await stalled
            assert refused.value.code == STORAGE_ERROR and refused.value.data["cluster"] == "unavailable"
        finally:
            for n in others:
                cluster.start_node(n)
            await asyncio.to_thread(cluster.wait_ready)
        await c1.close()
        await c2.close()
    finally:
        daemon.stop()


async def test_a_batch_over_max_payload_is_refused_precisely_and_changes_nothing(
    tmp_path: Path, cluster: Cluster
) -> None:
    """An append is one message (all or nothing, one order everywhere): one bigger than the
    cluster takes is refused before anything is sent, naming the field and the limit."""
    daemon = start_daemon(tmp_path / "d", config=config(cluster.urls, "BIG"))
    try:
        client = await daemon.client()
        sid = await new_shared_session(client)
        before = await entries_of(client, sid)
        batch = [user("x" * 200_000) for _ in range(6)]  # ~1.2 MB of Pi lines; the default limit is 1 MB
        with pytest.raises(RpcError) as refused:
            await client.request("session/append", {"sessionId": sid, "entries": batch})
        error = refused.value
        assert error.code == -32602
        assert error.data["field"] == "entries"
        assert error.data["limit"] < 1024 * 1024 < error.data["size"]
        assert f"at most {error.data['limit']:,} bytes per write" in error.message
        assert await entries_of(client, sid) == before
        done = await client.request("session/append", {"sessionId": sid, "entries": batch[:4]})
        assert [e["id"] for e in await entries_of(client, sid)][-4:] == done["entryIds"]
        await client.close()
    finally:
        daemon.stop()


def test_reopening_reads_only_what_followed_the_replica_when_it_still_matches_the_log(
    tmp_path: Path, cluster: Cluster
) -> None:
    """A replica let go of is marked with the log's sequence; reopening it reads only the
    messages after that (and gives the same file as a full read). A replica that no longer
    matches its mark — appended to, or cut — is read in full again."""
    from sessiond.store.jetstream.log import fetch_all  # noqa: PLC0415
    from sessiond.store.journal import Durability  # noqa: PLC0415

    with two_stores(tmp_path, cluster, "REOPEN") as (_, b, s, other):
        path = other.path
        assert (b.full_reads, b.tail_reads) == (1, 1)  # located (full), then opened (nothing new)
        let_go(other)
        for i in range(3):
            s.append_message(user(f"later {i}")["message"])

        def log_bytes() -> bytes:
            return b"".join(fetch_all(b.link, b.subject(s.id))[0])

        again = b.open(path, durability=Durability.BUFFERED)
        assert (b.full_reads, b.tail_reads) == (1, 2)
        assert path.read_bytes() == log_bytes() == s.path.read_bytes()
        assert [e["id"] for e in again.entries()] == [e["id"] for e in s.entries()]
        let_go(again)

        with open(path, "ab") as f:  # a line the log does not have
            f.write(b'{"type":"label","id":"x1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n')
        third = b.open(path, durability=Durability.BUFFERED)
        assert (b.full_reads, b.tail_reads) == (2, 2)
        assert path.read_bytes() == log_bytes()
        let_go(third)


def let_go(session: Session) -> None:
    """What the daemon does when nobody uses a session any more: stop following it, close it."""
    assert session.remote is not None
    session.remote.close()
    session.close()


def test_a_link_closed_with_a_subscription_open_leaves_no_task_behind(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """An ordered consumer's heartbeat and flow-control tasks outlive the connection; left
    pending on the stopped loop, they were logged as errors when collected — in whichever test
    ran then (a registry test's captured log once)."""
    import gc  # noqa: PLC0415

    from sessiond.store.jetstream.link import Link  # noqa: PLC0415
    from sessiond.store.jetstream.settings import JetStreamSettings  # noqa: PLC0415

    link = Link(
        JetStreamSettings(
            servers=tuple(cluster.urls),
            stream="LEAK",
            subject_prefix="t.LEAK",
            kv_bucket="kv-LEAK",
            object_bucket="obj-LEAK",
        )
    )

    async def follow(on: Link) -> None:
        await on.js.subscribe("t.LEAK.>", ordered_consumer=True)

    link.call(follow(link))
    link.close()
    del link
    gc.collect()
    assert not [r for r in caplog.records if "destroyed but it is pending" in r.getMessage()]
