"""Every method against the real daemon over its Unix socket, results checked against the protocol models.

The tests share one daemon (``shared_daemon``: each works on sessions of its own and leaves no
connection behind); those that list every session of the store, or write into it, have their own
(``own_daemon``, ``own_client``)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import Client, RpcError
from sessiond_protocol import METHODS, ErrorCode
from tests.builders import assistant, user
from tests.harness.calls import append_entries, call, msg
from tests.harness.daemon import Daemon
from tests.harness.fixtures import SharedDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """The file's one daemon (module docstring)."""
    return shared_daemon


@pytest.fixture
async def own_client(own_daemon: Daemon) -> AsyncIterator[Client]:
    """A client of a daemon of the test's own (the store to itself)."""
    c = await own_daemon.client()
    try:
        yield c
    finally:
        with contextlib.suppress(Exception):
            await c.close()


async def new_session(client: Client, **kw: Any) -> str:
    result = await call(client, "session/new", {"cwd": "/work/proj", **kw})
    return str(result["sessionId"])


def file_lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_bytes().split(b"\n") if x]


async def test_initialize_answers_capabilities(daemon: Daemon) -> None:
    client = await daemon.client(initialize=False)
    result = await client.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "t"}})
    model = METHODS["initialize"].result
    assert model is not None
    model.model_validate(result)
    assert result["serverInfo"]["name"] == "sessiond"
    assert set(result["capabilities"]["methods"]) == set(METHODS)
    with pytest.raises(RpcError) as exc:
        await client.request("initialize", {"protocolVersion": 1})
    assert exc.value.code == ErrorCode.INVALID_REQUEST
    await client.close()


async def test_session_lifecycle_new_append_load_list(own_client: Client) -> None:
    client = own_client
    sid = await new_session(client, subscribe=True)
    appended = await call(
        client,
        "session/append",
        {"sessionId": sid, "entries": [msg(user("hello")), msg(assistant("hi there", total=120))]},
    )
    assert len(appended["entryIds"]) == 2 and appended["leafId"] == appended["entryIds"][1]
    loaded = await call(client, "session/load", {"sessionId": sid})
    assert loaded["leafId"] == appended["leafId"] and loaded["entryCount"] == 2 and loaded["saved"]
    lines = file_lines(loaded["path"])
    assert [e["id"] for e in lines[1:]] == appended["entryIds"]
    listing = await call(client, "session/list", {"cwd": "/work/proj"})
    assert [s["sessionId"] for s in listing["sessions"]] == [sid]
    assert listing["sessions"][0]["firstMessage"] == "hello" and listing["sessions"][0]["messageCount"] == 2


async def test_updates_arrive_in_order(client: Client) -> None:
    sid = await new_session(client, subscribe=True)
    ids = []
    for i in range(5):
        ids += (await call(client, "session/append", {"sessionId": sid, "entries": [msg(user(f"u{i}"))]}))[
            "entryIds"
        ]
    seen = []
    async for update in client.updates(sid, timeout=5):
        if update["sessionUpdate"] == "entries_appended":
            seen += update["entryIds"]
        if len(seen) == 5:
            break
    assert seen == ids


async def test_usage_update_with_a_known_model(client: Client) -> None:
    sid = await new_session(client, subscribe=True)
    await call(
        client,
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
                msg(user("x" * 400)),
                msg(assistant("ok", total=50_000, model="claude-sonnet-4-5")),
            ],
        },
    )
    usage = None
    async for update in client.updates(sid, timeout=5):
        if update["sessionUpdate"] == "usage_update":
            usage = update
            if usage["used"] == 50_000:
                break
    assert usage == {
        "sessionUpdate": "usage_update",
        "used": 50_000,
        "size": 200_000,
        "percent": 25.0,
        "source": "api",
    }
    await call(client, "session/append", {"sessionId": sid, "entries": [msg(user("y" * 40))]})
    direct = await call(client, "context/usage", {"sessionId": sid})
    assert direct["used"] == 50_010 and direct["source"] == "estimate" and direct["usageTokens"] == 50_000
    await call(client, "session/configure", {"sessionId": sid, "contextWindow": 100_000})
    assert (await call(client, "context/usage", {"sessionId": sid}))["percent"] == 50.0


async def test_append_options_and_errors(client: Client) -> None:
    sid = await new_session(client)
    first = (await call(client, "session/append", {"sessionId": sid, "entries": [msg(user("a"))]}))[
        "entryIds"
    ][0]
    second = (await call(client, "session/append", {"sessionId": sid, "entries": [msg(assistant("b"))]}))[
        "entryIds"
    ][0]
    with pytest.raises(RpcError) as exc:
        await client.request(
            "session/append", {"sessionId": sid, "expectLeafId": first, "entries": [msg(user("c"))]}
        )
    assert exc.value.code == ErrorCode.LEAF_MISMATCH and exc.value.data["currentLeafId"] == second
    alt = await call(
        client,
        "session/append",
        {
            "sessionId": sid,
            "parentId": first,
            "expectLeafId": second,
            "durability": "fsync",
            "entries": [msg(assistant("alternative"))],
        },
    )
    root = await call(
        client, "session/append", {"sessionId": sid, "parentId": None, "entries": [msg(user("root"))]}
    )
    loaded = await call(client, "session/load", {"sessionId": sid})
    lines = file_lines(loaded["path"])
    assert lines[-2]["parentId"] == first and lines[-2]["id"] == alt["entryIds"][0]
    assert lines[-1]["parentId"] is None and lines[-1]["id"] == root["entryIds"][0]
    before = Path(loaded["path"]).read_bytes()
    for params, code, field in [
        ({"sessionId": sid, "entries": []}, ErrorCode.INVALID_PARAMS, "entries"),
        ({"sessionId": sid, "entries": [{"type": "nope"}]}, ErrorCode.INVALID_PARAMS, "entries.0"),
        (
            {"sessionId": sid, "entries": [msg({"role": "branchSummary"})]},
            ErrorCode.INVALID_PARAMS,
            "entries.0.message.role",
        ),
        (
            {"sessionId": sid, "entries": [{"type": "label", "targetId": "zz", "label": "x"}]},
            ErrorCode.ENTRY_NOT_FOUND,
            None,
        ),
        ({"sessionId": sid, "parentId": "zz", "entries": [msg(user("x"))]}, ErrorCode.ENTRY_NOT_FOUND, None),
        ({"sessionId": "no-such-session", "entries": [msg(user("x"))]}, ErrorCode.SESSION_NOT_FOUND, None),
        ({"sessionId": "bad id!", "entries": [msg(user("x"))]}, ErrorCode.INVALID_PARAMS, "sessionId"),
        (
            {"sessionId": sid, "entries": [msg(user("x"))], "durability": "later"},
            ErrorCode.INVALID_PARAMS,
            "durability",
        ),
    ]:
        with pytest.raises(RpcError) as exc:
            await client.request("session/append", params)
        assert exc.value.code == code, (params, exc.value)
        if field is not None:
            assert exc.value.data["field"].startswith(field), exc.value.data
        assert "Traceback" not in exc.value.message
    assert Path(loaded["path"]).read_bytes() == before


async def test_entries_paging(client: Client) -> None:
    sid = await new_session(client)
    ids = await append_entries(client, sid, *(msg(user(f"m{i}")) for i in range(7)))
    page = await call(client, "session/entries", {"sessionId": sid, "limit": 3})
    assert [e["id"] for e in page["entries"]] == ids[:3] and page["nextOffset"] == 3 and page["total"] == 7
    page = await call(
        client, "session/entries", {"sessionId": sid, "offset": page["nextOffset"], "limit": 10}
    )
    assert [e["id"] for e in page["entries"]] == ids[3:] and page["nextOffset"] is None
    page = await call(client, "session/entries", {"sessionId": sid, "afterId": ids[4]})
    assert [e["id"] for e in page["entries"]] == ids[5:]


async def test_tree_branch_navigate_label(client: Client) -> None:
    sid = await new_session(client, subscribe=True)
    u1, a1, u2, a2 = await append_entries(
        client, sid, msg(user("one")), msg(assistant("a1")), msg(user("two")), msg(assistant("a2"))
    )
    nav = await call(client, "tree/navigate", {"sessionId": sid, "targetId": u2, "summary": "tried two"})
    assert nav["editorText"] == "two" and nav["summaryEntryId"] == nav["leafId"]
    tree = await call(client, "tree/get", {"sessionId": sid})
    by_id = {n["id"]: n for n in tree["nodes"]}
    assert by_id[a1]["childCount"] == 2 and by_id[u2]["preview"] == "two" and by_id[u2]["role"] == "user"
    assert tree["leafId"] == nav["leafId"]
    branch = await call(client, "tree/branch", {"sessionId": sid, "full": True})
    assert branch["entryIds"] == [u1, a1, nav["summaryEntryId"]]
    assert branch["entries"][-1]["type"] == "branch_summary" and branch["entries"][-1]["fromId"] == a2
    moved = await call(client, "tree/navigate", {"sessionId": sid, "targetId": a2, "label": "keep"})
    assert moved["markerEntryId"] and moved["moved"] and "editorText" not in moved
    lab = await call(client, "tree/label", {"sessionId": sid, "entryId": u1, "label": "start"})
    tree = await call(client, "tree/get", {"sessionId": sid})
    labels = {n["id"]: n.get("label") for n in tree["nodes"]}
    assert labels[u1] == "start" and labels[a2] == "keep" and lab["entryId"] in labels
    same = await call(client, "tree/navigate", {"sessionId": sid, "targetId": tree["leafId"]})
    assert same["moved"] is False
    kinds = [
        u["sessionUpdate"]
        for u in (p["update"] for m, p in client.drain_notifications() if m == "session/update")
    ]
    assert "leaf_changed" in kinds and "label_update" in kinds


async def test_context_get_and_edit(client: Client) -> None:
    sid = await new_session(client)
    u, a = await append_entries(client, sid, msg(user("question")), msg(assistant("answer")))
    ctx = await call(client, "context/get", {"sessionId": sid})
    assert [m["entryId"] for m in ctx["messages"]] == [u, a] and ctx["entryIds"] == [u, a]
    await call(client, "context/edit", {"sessionId": sid, "targetId": a, "replacement": {"content": "short"}})
    ctx = await call(client, "context/get", {"sessionId": sid})
    assert ctx["messages"][1]["message"]["content"] == [{"type": "text", "text": "short"}]
    await call(client, "context/edit", {"sessionId": sid, "targetId": a, "replacement": None})
    assert [m["entryId"] for m in (await call(client, "context/get", {"sessionId": sid}))["messages"]] == [u]
    assert (await call(client, "context/get", {"sessionId": sid, "leafId": u}))["entryIds"] == [u]
    with pytest.raises(RpcError) as exc:
        await client.request("context/edit", {"sessionId": sid, "targetId": "nope", "replacement": None})
    assert exc.value.code == ErrorCode.ENTRY_NOT_FOUND and exc.value.message == "Entry nope not found"


async def test_set_name_fork_delete_close(own_client: Client, own_daemon: Daemon) -> None:
    client, daemon = own_client, own_daemon
    sid = await new_session(client, subscribe=True)
    u1, a1, u2 = await append_entries(client, sid, msg(user("one")), msg(assistant("a")), msg(user("two")))
    named = await call(client, "session/setName", {"sessionId": sid, "name": "  My\nsession "})
    assert named["name"] == "My session"
    forked = await call(client, "session/fork", {"sessionId": sid, "entryId": u2, "position": "before"})
    assert forked["selectedText"] == "two" and forked["saved"]
    assert [e["id"] for e in file_lines(forked["path"])[1:]] == [u1, a1]
    cloned = await call(client, "session/fork", {"sessionId": sid, "entryId": u2, "position": "at"})
    assert file_lines(cloned["path"])[0]["parentSession"].endswith(f"_{sid}.jsonl")
    deleted = await call(client, "session/delete", {"sessionId": cloned["sessionId"]})
    assert Path(deleted["trashedPath"]).exists() and not Path(cloned["path"]).exists()
    assert Path(deleted["trashedPath"]).parent == daemon.store / "trash"
    with pytest.raises(RpcError) as exc:
        await client.request("session/load", {"sessionId": cloned["sessionId"]})
    assert exc.value.code == ErrorCode.SESSION_NOT_FOUND
    assert await call(client, "session/close", {"sessionId": sid}) == {}
    listed = await call(client, "session/list", {})
    assert {s["sessionId"] for s in listed["sessions"]} == {sid, forked["sessionId"]}


async def test_list_pagination_and_bad_cursor(own_client: Client) -> None:
    client = own_client
    sids = []
    for i in range(5):
        sid = await new_session(client)
        await call(client, "session/append", {"sessionId": sid, "entries": [msg(user(f"s{i}", ts=1000 + i))]})
        sids.append(sid)
    page = await call(client, "session/list", {"limit": 2})
    got = [s["sessionId"] for s in page["sessions"]]
    while page["nextCursor"]:
        page = await call(client, "session/list", {"limit": 2, "cursor": page["nextCursor"]})
        got += [s["sessionId"] for s in page["sessions"]]
    assert sorted(got) == sorted(sids) and len(got) == 5
    with pytest.raises(RpcError) as exc:
        await client.request("session/list", {"cursor": "garbage"})
    assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == "cursor"


async def test_subscribe_unsubscribe_and_opt_out(daemon: Daemon) -> None:
    writer = await daemon.client()
    quiet = await daemon.client(notifications={"optOut": ["usage_update"]})
    sid = await new_session(writer)
    await call(quiet, "session/subscribe", {"sessionId": sid})
    await call(writer, "session/append", {"sessionId": sid, "entries": [msg(user("x"))]})
    _method, params = await quiet.notification(timeout=5)
    assert params["update"]["sessionUpdate"] == "entries_appended"
    await call(quiet, "session/unsubscribe", {"sessionId": sid})
    await call(writer, "session/append", {"sessionId": sid, "entries": [msg(user("y"))]})
    await call(quiet, "context/usage", {"sessionId": sid})  # a round trip: anything queued has arrived
    assert [n for n in quiet.drain_notifications() if n[0] == "session/update"] == []
    await writer.close()
    await quiet.close()


async def test_new_session_errors(client: Client) -> None:
    for params, code in [
        ({"cwd": "relative/path"}, ErrorCode.INVALID_PARAMS),
        ({"cwd": "/x", "sessionId": "-bad"}, ErrorCode.INVALID_PARAMS),
        ({}, ErrorCode.INVALID_PARAMS),
    ]:
        with pytest.raises(RpcError) as exc:
            await client.request("session/new", params)
        assert exc.value.code == code
    await call(client, "session/new", {"cwd": "/x", "sessionId": "taken-1"})
    with pytest.raises(RpcError) as exc:
        await client.request("session/new", {"cwd": "/x", "sessionId": "taken-1"})
    assert exc.value.code == ErrorCode.SESSION_EXISTS


async def test_a_new_subscriber_gets_the_usage_alone(daemon: Daemon) -> None:
    a = await daemon.client()
    sid = await new_session(a, subscribe=True)
    await call(a, "session/append", {"sessionId": sid, "entries": [msg(user("x"))]})
    await call(a, "context/usage", {"sessionId": sid})
    a.drain_notifications()
    b = await daemon.client()
    await call(b, "session/subscribe", {"sessionId": sid})
    _method, params = await b.notification()
    assert params["update"]["sessionUpdate"] == "usage_update"
    await call(a, "context/usage", {"sessionId": sid})
    assert a.drain_notifications() == []
    await a.close()
    await b.close()


async def test_domain_error_codes(own_client: Client, own_daemon: Daemon) -> None:
    client, daemon = own_client, own_daemon
    sid = await new_session(client)
    mc = (
        await call(
            client,
            "session/append",
            {"sessionId": sid, "entries": [{"type": "model_change", "provider": "p", "modelId": "m"}]},
        )
    )["entryIds"][0]
    with pytest.raises(RpcError) as exc:
        await client.request("session/fork", {"sessionId": sid, "entryId": mc, "position": "at"})
    assert exc.value.code == ErrorCode.NOT_SAVED
    u1, a1 = await append_entries(client, sid, msg(user("one")), msg(assistant("a")))
    with pytest.raises(RpcError) as exc:
        await client.request("context/edit", {"sessionId": sid, "targetId": mc, "replacement": None})
    assert exc.value.code == ErrorCode.NOT_EDITABLE
    assert exc.value.message == f"Entry {mc} does not contribute editable model content"
    await call(client, "session/append", {"sessionId": sid, "parentId": u1, "entries": [msg(assistant("b"))]})
    with pytest.raises(RpcError) as exc:
        await client.request("context/edit", {"sessionId": sid, "targetId": a1, "replacement": None})
    assert exc.value.code == ErrorCode.NOT_ON_BRANCH and exc.value.data["entryId"] == a1
    # a file that is named like a session but is not one
    bad_dir = daemon.store / "sessions" / "--junk--"
    bad_dir.mkdir(parents=True)
    (bad_dir / "2026-01-01T00-00-00-000Z_junk-1.jsonl").write_text('{"type":"message"}\n')
    with pytest.raises(RpcError) as exc:
        await client.request("session/load", {"sessionId": "junk-1"})
    assert exc.value.code == ErrorCode.NOT_A_SESSION and exc.value.data["path"].endswith("_junk-1.jsonl")
    # the file changed underneath: truncated by someone else
    path = (await call(client, "session/load", {"sessionId": sid}))["path"]
    with open(path, "r+b") as f:
        f.truncate(Path(path).stat().st_size - 3)
    with pytest.raises(RpcError) as exc:
        await client.request("session/append", {"sessionId": sid, "entries": [msg(user("x"))]})
    assert exc.value.code == ErrorCode.SESSION_CHANGED and "truncated" in exc.value.message


def _fill(path: Path, *, leave: int) -> None:
    """Fill the file system holding ``path`` until at most ``leave`` bytes stay free.

    The daemon may write meanwhile (its search and usage indexes catch up with the first append
    in the background): one write of "the free space less ``leave``", sized from a figure read
    just before, once ran out of space itself. Here a write refused for space means the disk is
    already fuller than asked, which is what the test wants."""
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as f:
        while True:
            st = os.statvfs(path.parent)
            free = st.f_bavail * st.f_frsize
            if free <= leave:
                return
            try:
                f.write(chunk[: min(len(chunk), free - leave)])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_the_disk_fills_up_while_something_else_writes_there(tmp_path: Path) -> None:
    """``_fill`` beside another writer (as the daemon's indexes write beside the test): it ends
    with the disk as full as asked or fuller, never with an error of its own."""
    import subprocess  # noqa: PLC0415
    import threading  # noqa: PLC0415

    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        started = threading.Event()

        def other() -> None:
            with open(mount / "other", "wb", buffering=0) as f, contextlib.suppress(OSError):
                for _ in range(256):  # 1 MiB in small writes, until the disk is full
                    f.write(b"x" * 4096)
                    started.set()
            started.set()

        writer = threading.Thread(target=other)
        writer.start()
        started.wait(10)
        try:
            _fill(mount / "filler", leave=48 * 1024)
        finally:
            writer.join()
        st = os.statvfs(mount)
        assert st.f_bavail * st.f_frsize <= 48 * 1024
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="mounting a small tmpfs needs root")
async def test_disk_full_is_a_storage_error_and_nothing_is_acknowledged(tmp_path: Path) -> None:
    import subprocess  # noqa: PLC0415

    from tests.harness.daemon import start_daemon  # noqa: PLC0415

    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        d = start_daemon(mount)
        try:
            c = await d.client()
            sid = await new_session(c)
            await call(c, "session/append", {"sessionId": sid, "entries": [msg(user("first"))]})
            # The disk fills up now, whatever the daemon's indexes took at start (a fixed small
            # tmpfs was once full before the session could be created): 48 KiB stay free,
            # less than one of the appends below.
            _fill(mount / "filler", leave=48 * 1024)
            big = "z" * 100_000
            codes = []
            for _ in range(5):
                try:
                    await c.request("session/append", {"sessionId": sid, "entries": [msg(user(big))]})
                except RpcError as exc:
                    codes.append((exc.code, (exc.data or {}).get("errno")))
            assert (ErrorCode.STORAGE_ERROR, 28) in codes
            loaded = await call(c, "session/load", {"sessionId": sid})
            lines = file_lines(loaded["path"])  # the file loads: no half line was left behind
            assert len(lines) - 1 == loaded["entryCount"]
            await c.close()
        finally:
            d.stop()
    finally:
        subprocess.run(["umount", str(mount)], check=False)
