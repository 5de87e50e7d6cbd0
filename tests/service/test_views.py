"""The read views (describe, tree, branch, context, usage, the listing page) and the wire shape.

They are what both the daemon and the command line's file mode answer with, so they are
checked here once, on sessions grown in-process, and the file mode is checked to be them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiond.cli_commands.sources import FileSource
from sessiond.errors import EntryNotFoundError, InvalidArgumentError
from sessiond.service import host as host_module
from sessiond.service import views
from sessiond.service.results import wire
from sessiond.service.service import Service
from sessiond.service.windows import context_window
from sessiond_protocol import methods as M
from tests.builders import assistant, user
from tests.service.peers import FakePeer, make_service

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("service_backend")]


def message(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "message", "message": m}]


async def forked_session(service: Service, peer: FakePeer) -> tuple[str, dict[str, str]]:
    """``q1 -> a1 -> q2 -> a2`` and, from ``a1``, ``q3 -> a3`` (the leaf)."""
    sid = (await service.new_session(peer, "/work/project")).sessionId
    ids: dict[str, str] = {}
    for name, m in (("q1", user("one")), ("a1", assistant("first", total=100))):
        ids[name] = (await service.append(peer, sid, message(m))).leafId
    for name, m in (("q2", user("two")), ("a2", assistant("second", total=200))):
        ids[name] = (await service.append(peer, sid, message(m))).leafId
    for name, m in (("q3", user("three")), ("a3", assistant("third", total=300))):
        parent = ids["a1"] if name == "q3" else ids["q3"]
        ids[name] = (await service.append(peer, sid, message(m), parent_id=parent)).leafId
    await service.label(peer, sid, ids["a2"], "kept", None)
    return sid, ids


async def test_tree_branch_and_context_follow_the_branch_asked_for(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid, ids = await forked_session(service, peer)
    session = service.hosts[sid].session

    tree = views.tree(session)
    assert tree.leafId == session.leaf_id
    nodes = {n["id"]: n for n in wire(tree)["nodes"]}  # nested payloads are the store's JSON objects
    assert nodes[ids["a1"]]["childCount"] == 2
    assert nodes[ids["a2"]]["label"] == "kept"
    assert nodes[ids["q3"]]["role"] == "user" and nodes[ids["q3"]]["parentId"] == ids["a1"]

    leaf_path = [ids[k] for k in ("q1", "a1", "q3", "a3")]
    at_leaf = views.branch(session, None, False).entryIds
    assert at_leaf[:4] == leaf_path and at_leaf[-1] == session.leaf_id  # the label is an entry too
    other = views.branch(session, ids["a2"], True)
    assert other.entryIds == [ids[k] for k in ("q1", "a1", "q2", "a2")]
    assert [e["id"] for e in wire(other)["entries"]] == other.entryIds
    assert "entries" not in wire(views.branch(session, ids["a2"], False))

    here = views.context(session, None)
    assert here.entryIds == at_leaf
    assert [m["entryId"] for m in wire(here)["messages"]] == leaf_path  # a label carries no message
    there = views.context(session, ids["q2"])
    assert there.entryIds == [ids[k] for k in ("q1", "a1", "q2")]
    assert wire(there)["model"] == {"provider": "anthropic", "modelId": "claude"}
    service.close_all()


async def test_an_unknown_entry_is_refused_with_its_id(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid, _ = await forked_session(service, peer)
    session = service.hosts[sid].session
    for read in (
        lambda: views.branch(session, "nope", True),
        lambda: views.branch(session, "nope", False),
        lambda: views.context(session, "nope"),
    ):
        with pytest.raises(EntryNotFoundError) as caught:
            read()
        assert caught.value.data == {"entryId": "nope"}
    with pytest.raises(EntryNotFoundError) as caught:
        views.require_entry(session, "nope", "fromEntryId")
    assert caught.value.data == {"entryId": "nope", "field": "fromEntryId"}
    service.close_all()


async def test_usage_says_where_its_number_comes_from(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid = (await service.new_session(peer, "/work/project")).sessionId
    session = service.hosts[sid].session
    window = service.registry.window_for

    empty = views.usage(session, service.estimator, window)
    assert (empty.used, empty.source, empty.size, empty.percent) == (0, "unknown", None, None)

    await service.append(peer, sid, message(user("hello")))
    # a model the registry knows (the bare "claude" of the builders has no window: never guessed)
    await service.append(peer, sid, message(assistant("hi", total=50_000, model="claude-sonnet-4-5")))
    answered = views.usage(session, service.estimator, window)
    assert (answered.used, answered.source, answered.size) == (50_000, "api", 200_000)
    assert answered.percent == 25.0 and answered.estimator == service.estimator.name

    await service.append(peer, sid, message(user("and more " * 100)))
    estimated = views.usage(session, service.estimator, window)
    assert estimated.source == "estimate" and estimated.used is not None and estimated.used > 50_000
    assert estimated.trailingTokens == estimated.used - 50_000
    assert wire(await service.usage(peer, sid)) == wire(estimated)
    service.close_all()


async def test_the_listing_pages_through_every_session_once(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    made = set()
    for n in range(5):
        sid = (await service.new_session(peer, "/work/project")).sessionId
        await service.append(peer, sid, message(user(f"session {n}")))
        made.add(sid)
    listed = service.catalog.list_all()

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = views.page(listed, cursor, 2)
        seen += [s["sessionId"] for s in wire(page)["sessions"]]
        pages += 1
        cursor = page.nextCursor
        if cursor is None:
            break
    assert pages == 3 and sorted(seen) == sorted(made) and len(seen) == 5
    everything = views.page(listed, None, None)
    rows = wire(everything)["sessions"]
    assert [s["sessionId"] for s in rows] == seen and everything.nextCursor is None
    row = rows[0]
    assert (row["format"], row["root"], row["readOnly"], row["messageCount"]) == ("pi", "sessiond", False, 1)

    for bad in ("garbage!", views.encode_cursor("/no/such/file.jsonl")):
        with pytest.raises(InvalidArgumentError) as caught:
            views.page(listed, bad, 2)
        assert caught.value.data["field"] == "cursor"
    service.close_all()


async def test_the_command_lines_file_mode_answers_with_the_daemons_views(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    peer = FakePeer()
    sid, ids = await forked_session(service, peer)
    service.release(peer)  # read the file afresh, as the command line will
    daemon = {
        "describe": wire(await service.load(peer, sid, subscribe=False)),
        "tree": wire(await service.tree(peer, sid)),
        "branch": wire(await service.branch(peer, sid, ids["a2"], True)),
        "context": wire(await service.context(peer, sid, ids["q2"])),
        "usage": wire(await service.usage(peer, sid)),
    }
    path = service.hosts[sid].session.path
    service.close_all()

    source = FileSource(path, service.config)
    await source.load()
    try:
        file_mode = {
            "describe": await source.describe(),
            "tree": await source.tree(),
            "branch": await source.branch(ids["a2"], full=True),
            "context": await source.context(ids["q2"]),
            "usage": await source.usage(),
        }
    finally:
        source.close()

    # the same answers, but for where the file was read from (and that the CLI never writes it)
    assert {**daemon["describe"], "root": "file", "readOnly": True} == file_mode["describe"]
    for view in ("tree", "branch", "context", "usage"):
        assert file_mode[view] == daemon[view], view


# ---------------------------------------------------------------------------- the wire shape


def test_the_wire_shape_is_the_fields_set_with_nested_values_untouched() -> None:
    entries = [{"type": "message", "id": "a"}]
    branch = M.BranchResult.model_construct(entryIds=["a"], entries=entries)
    sent = wire(branch)
    assert sent == {"entryIds": ["a"], "entries": entries}
    assert sent["entries"] is entries, "nothing is copied"

    moved = M.NavigateResult.model_construct(leafId="b", moved=True)
    assert moved.editorText is None  # a typed reader sees the default...
    assert wire(moved) == {"leafId": "b", "moved": True}  # ...and the wire omits it, as before
    prompt = M.NavigateResult.model_construct(leafId="b", moved=True, editorText="edit me")
    assert wire(prompt)["editorText"] == "edit me"

    extra = M.AppendResult.model_construct(entryIds=["a"], leafId="a", newerField=1)
    assert wire(extra) == {"entryIds": ["a"], "leafId": "a", "newerField": 1}
    assert wire({"plain": True}) == {"plain": True} and wire(None) is None


async def test_service_results_validate_as_their_protocol_models(tmp_path: Path) -> None:
    """Built without validation for speed, so checked here: what is sent is what the schema says."""
    service = make_service(tmp_path)
    peer = FakePeer()
    sid, ids = await forked_session(service, peer)
    results = [
        await service.load(peer, sid, subscribe=True),
        await service.tree(peer, sid),
        await service.branch(peer, sid, None, True),
        await service.context(peer, sid, None),
        await service.usage(peer, sid),
        await service.entries(peer, sid, 0, None, 3),
        await service.set_name(peer, sid, "named", None),
        await service.navigate(peer, sid, ids["q2"], None, None, None, None),
        await service.fork(peer, sid, ids["q2"], "before"),
        await service.configure(peer, sid, 100_000),
        await service.list_sessions(None, None, 10),
        await service.compactor.prepare(peer, sid, 10, None, None),
        await service.file_history.list(peer, sid),
    ]
    for result in results:
        sent = wire(result)
        type(result).model_validate(sent)
    service.close_all()


# ---------------------------------------------------------------------------- context windows


def test_a_sessions_window_is_its_own_setting_else_the_tables_remembered_per_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked_up: list[Any] = []

    def counted(provider: Any, model_id: Any, overrides: Any = None) -> int | None:
        looked_up.append(model_id)
        return context_window(provider, model_id, overrides)

    monkeypatch.setattr(host_module, "context_window", counted)
    own: dict[str, int | None] = {}
    window = host_module.default_window_for({"gpt-4o": 64_000}, own.get)

    class Session:
        id = "s1"

    s: Any = Session()
    claude = {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert window(s, claude) == window(s, claude) == 200_000
    assert looked_up == ["claude-sonnet-4-5"], "looked up once"
    assert window(s, {"provider": "openai", "modelId": "gpt-4o"}) == 64_000  # the config wins
    assert window(s, {"provider": "x", "modelId": "unheard-of"}) is None
    assert window(s, None) is None and window(s, {"provider": 1, "modelId": ["odd"]}) is None
    own["s1"] = 50_000
    assert window(s, claude) == 50_000, "the session's own setting wins over a remembered model"
    own["s1"] = None
    for n in range(host_module._KNOWN_MODELS):  # invented names: what is remembered stays bounded
        window(s, {"provider": "x", "modelId": f"claude-{n}"})
    looked_up.clear()
    assert window(s, claude) == 200_000
    assert looked_up == ["claude-sonnet-4-5"], "forgotten when the memory was full"
