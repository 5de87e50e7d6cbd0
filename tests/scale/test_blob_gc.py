"""``sessiond gc`` on the JetStream store: the object store's unreferenced blobs (issue 18).

Real daemons on the real 3-node loopback cluster write the snapshots and upload the blobs;
the collector reads the references from the stream (every daemon's sessions) and deletes
through the object store's own metadata. The clock is the only thing given: a plan made
"later" (``now``) instead of waiting out a day's grace.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nats")

from sessiond.errors import ClusterUnavailableError, InvalidArgumentError
from sessiond.store.jetstream import collect, objects
from sessiond.store.jetstream.link import Link
from sessiond.store.jetstream.objects import ObjectBlobs, read_object
from sessiond.store.jetstream.settings import JetStreamSettings
from sessiond_client import Client
from tests.harness.daemon import Daemon, daemon_env
from tests.harness.nats_cluster import Cluster, nats_server_binary
from tests.scale.test_jetstream import object_names, two_daemons, user

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(nats_server_binary() is None, reason="nats-server is not installed (the nats extra)"),
]

GRACE = collect.DEFAULT_GRACE


def settings(cluster: Cluster, stream: str) -> JetStreamSettings:
    """What the daemons of ``tests.scale.test_jetstream.config`` use."""
    return JetStreamSettings(
        servers=tuple(cluster.urls),
        stream=stream,
        subject_prefix=f"t.{stream}",
        kv_bucket=f"kv-{stream}",
        object_bucket=f"obj-{stream}",
        ack_wait=8.0,
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def backed_up(client: Client, ws: Path, files: dict[str, bytes]) -> tuple[str, str]:
    """A new session in ``ws`` that backed up ``files`` (their contents as given) under its
    prompt: the session's id and the prompt's."""
    for rel, data in files.items():
        (ws / rel).write_bytes(data)
    sid = str((await client.request("session/new", {"cwd": str(ws)}))["sessionId"])
    prompt = (await client.request("session/append", {"sessionId": sid, "entries": [user("edit")]}))["leafId"]
    await client.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": prompt})
    for rel in files:
        await client.request("fileHistory/track", {"sessionId": sid, "path": rel})
    return sid, str(prompt)


def gc_cli(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiond", "gc", "--json", *args],
        env=daemon.env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_unreferenced_blobs_go_referenced_and_recent_ones_stay(
    tmp_path: Path, cluster: Cluster
) -> None:
    """Sessions on two daemons: a deleted session's own blob goes; one it shared with a live
    session on the other daemon stays; an unreferenced blob uploaded within the grace stays;
    a dry run (the plan, and ``sessiond gc`` without --apply) changes nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    own, shared, live, fresh = b"only the deleted session\n", b"both sessions\n", b"live\n", b"fresh\n"
    a, b = two_daemons(tmp_path, cluster, "GC")
    link = await asyncio.to_thread(Link, settings(cluster, "GC"))
    try:
        ca, cb = await a.client(), await b.client()
        gone, _ = await backed_up(ca, ws, {"own.txt": own, "shared.txt": shared})
        kept, prompt = await backed_up(cb, ws, {"shared.txt": shared, "live.txt": live})
        await ca.request("session/delete", {"sessionId": gone})
        time.sleep(0.05)
        between = time.time()
        time.sleep(0.05)
        late, _ = await backed_up(ca, ws, {"fresh.txt": fresh})
        await ca.request("session/delete", {"sessionId": late})
        stored = set(await asyncio.to_thread(object_names, cluster, "obj-GC"))
        assert {sha(own), sha(shared), sha(live), sha(fresh)} <= stored

        # As if a grace after `between`: `own` is older, `fresh` younger.
        reports: list[tuple[str, int, int]] = []

        def progress(stage: str, done: int, total: int) -> None:
            reports.append((stage, done, total))

        plan = await asyncio.to_thread(
            lambda: collect.plan(link, GRACE, now=between + GRACE, progress=progress)
        )
        assert reports[-1] == ("scan", plan.messages, plan.messages)
        assert [c.object.name for c in plan.candidates] == [sha(own)]
        assert plan.candidates[0].object.size == len(own)
        assert plan.referenced == 2 and plan.recent == 1  # shared + live; fresh
        assert plan.sessions == 1 and plan.messages > 0  # deleted sessions' subjects were purged
        assert set(await asyncio.to_thread(object_names, cluster, "obj-GC")) == stored, (
            "a plan changes nothing"
        )

        # The command, now: everything is within the grace, nothing is touched.
        dry = gc_cli(a)
        assert dry.returncode == 0, dry.stderr
        report = json.loads(dry.stdout)
        assert report["applied"] is False
        assert not [i for i in report["items"] if "object" in i]
        assert report["objects"]["kept"]["recent"] == 2 and report["objects"]["kept"]["referenced"] == 2
        assert set(await asyncio.to_thread(object_names, cluster, "obj-GC")) == stored

        await asyncio.to_thread(collect.apply, link, plan, progress)
        assert plan.deleted == [sha(own)] and not plan.changed and not plan.errors
        assert reports[-1] == ("delete", 1, 1)
        left = set(await asyncio.to_thread(object_names, cluster, "obj-GC"))
        assert left == stored - {sha(own)}
        assert await asyncio.to_thread(link.call, read_object(link, sha(own))) is not None  # a marker

        # The live session on B still rewinds from the object store (its cache gone).
        for rel in ("shared.txt", "live.txt"):
            (ws / rel).write_bytes(b"changed\n")
        shutil.rmtree(b.store / "file-history" / kept)
        done = await cb.request("fileHistory/rewind", {"sessionId": kept, "messageId": prompt, "force": True})
        assert not [f for f in done["files"] if f["status"] not in ("ok", "forced")], done
        assert (ws / "shared.txt").read_bytes() == shared and (ws / "live.txt").read_bytes() == live
        # The last live reference goes: the shared blob becomes collectable.
        await cb.request("session/delete", {"sessionId": kept})
        later = await asyncio.to_thread(collect.plan, link, GRACE, now=time.time() + GRACE + 60)
        assert {c.object.name for c in later.candidates} >= {sha(shared), sha(live), sha(fresh)}
        await ca.close()
        await cb.close()
    finally:
        await asyncio.to_thread(link.close)
        a.stop()
        b.stop()


def test_a_blob_reused_after_the_plan_is_not_deleted(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup that finds an old object stored re-stamps it (compare-and-set on its metadata);
    a collector that listed it before deletes nothing (the delete's compare-and-set fails), and
    one that lists it after sees it young."""
    Link(settings(cluster, "GCREUSE")).close()  # the stream exists before the collector's link
    link = Link(settings(cluster, "GCREUSE"))
    try:
        link.call(link.js.publish("t.GCREUSE.x", b'{"type":"session","id":"x"}\n'))  # no file history
        link.call(link.objects.put("notes.txt", b"not a blob"))  # someone else's object: never collected
        data = b"content found stored again\n"
        blobs = ObjectBlobs(link, "s1")
        assert not blobs.keep(sha(data), len(data))
        blobs.upload(sha(data), len(data), io.BytesIO(data))
        plan = collect.plan(link, GRACE, now=time.time() + GRACE + 60)
        assert [c.object.name for c in plan.candidates] == [sha(data)]
        before = link.call(read_object(link, sha(data)))
        assert before is not None
        assert blobs.keep(sha(data), len(data))  # young: not re-stamped
        after = link.call(read_object(link, sha(data)))
        assert after is not None and after.seq == before.seq
        monkeypatch.setattr(objects, "RESTAMP_AFTER", 0.0)  # as if it was stamped long ago
        assert blobs.keep(sha(data), len(data))
        after = link.call(read_object(link, sha(data)))
        assert after is not None and after.seq > before.seq and after.whole
        collect.apply(link, plan)
        assert plan.changed == [sha(data)] and not plan.deleted
        assert sorted(object_names(cluster, "obj-GCREUSE")) == sorted([sha(data), "notes.txt"])
        fresh = collect.plan(link, GRACE, now=after.stamped + GRACE - 1)
        assert not fresh.candidates and fresh.recent == 1
    finally:
        link.close()


def test_a_misnamed_stream_or_a_short_grace_is_refused(tmp_path: Path, cluster: Cluster) -> None:
    """A stream that did not exist has no references to read: refused (else every blob would
    look unreferenced). A grace shorter than twice the re-stamp interval: refused."""
    link = Link(settings(cluster, "GCNOPE"))
    try:
        with pytest.raises(InvalidArgumentError) as short:
            collect.plan(link, collect.MIN_GRACE - 1)
        assert short.value.field == "grace"
        with pytest.raises(ClusterUnavailableError, match="did not exist"):
            collect.plan(link)
    finally:
        link.close()


def test_gc_refuses_and_changes_nothing_without_the_cluster(tmp_path: Path) -> None:
    """The cluster is not there: exit 4 with the reason, and the local part is not carried
    out either (a deleted session's file history stays)."""
    conf = (
        '[store]\nbackend = "jetstream"\n[store.jetstream]\n'
        'servers = ["nats://127.0.0.1:1"]\nconnect_timeout = 1.0\n'
    )
    home = tmp_path / "home"
    (home / "store" / "file-history" / "0199-gone").mkdir(parents=True)
    env = daemon_env(home, config=conf)
    done = subprocess.run(
        [sys.executable, "-m", "sessiond", "gc", "--apply", "--json"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 4, done.stderr
    error = json.loads(done.stdout)["error"]
    assert "cluster is unavailable" in error["message"] and "nats://127.0.0.1:1" in error["message"]
    assert "Traceback" not in done.stderr
    assert (home / "store" / "file-history" / "0199-gone").is_dir()
    short = subprocess.run(
        [sys.executable, "-m", "sessiond", "gc", "--grace-hours", "1", "--json"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert short.returncode == 2 and "--grace-hours" in json.loads(short.stdout)["error"]["message"]
