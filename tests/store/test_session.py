"""Session operations: Pi's append API and rules, first flush, repair, migration, fork/clone."""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.compaction.prepare import (
    CompactionPreparation,
    CompactionSettings,
    NoCompaction,
    prepare_compaction,
)
from sessiond.errors import (
    EntryNotFoundError,
    EntryNotOnBranchError,
    InvalidArgumentError,
    InvalidSessionIdError,
    LeafMismatchError,
    NotEditableError,
    SessionChangedError,
    SessionNotSavedError,
)
from sessiond.formats.pi import encode_line, load_session
from sessiond.model.js import UNDEFINED, get
from sessiond.model.messages import current_system_message
from sessiond.model.projection import project
from sessiond.model.tokens import estimate_projected_context_tokens
from sessiond.store.journal import Durability
from sessiond.store.session import LEAF_MARKER, Session
from sessiond.store.session import context as session_context
from tests.builders import assistant, tool_result, user
from tests.conftest import PI_FIXTURES, log_file


def copy(path: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / path.name
    target.write_bytes(path.read_bytes())
    return target


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_bytes().split(b"\n") if x]


STORE: list[Any] = []
"""The backend ``new`` creates sessions through (set per test by ``_backend``)."""


@pytest.fixture(autouse=True)
def _backend(store_backend: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test runs on the local store and on JetStream; after a JetStream run, the stream's
    log of every session it wrote equals the session's file (the daemon's replica). Tests of
    the file itself (``local_store``: torn tails, other programs writing or truncating it, the
    index's byte cache) run on the local store only: a JetStream replica is only ever written
    from its log."""
    if store_backend.name != "local" and request.node.get_closest_marker("local_store"):
        pytest.skip("a test of the local file itself")
    STORE[:] = [store_backend]
    made: list[Session] = []
    STORE.append(made)
    yield
    STORE.clear()
    for session in made:
        if session.flushed and session.path.exists() and session.remote is not None:
            log_file(store_backend, session, tmp_path)


def new(tmp_path: Path, **kw: Any) -> Session:
    store, made = STORE
    if "cache_bytes" in kw:  # the local store's index option (a local_store test)
        return Session.create(tmp_path / "--w--", "/w", **kw)
    s: Session = store.create(
        tmp_path / "--w--",
        "/w",
        session_id=kw.pop("session_id", None),
        parent_session=kw.pop("parent_session", None),
        durability=kw.pop("durability", Durability.BUFFERED),
    )
    assert not kw, kw
    made.append(s)
    return s


def test_setup_only_sessions_create_no_file(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_model_change("anthropic", "claude")
    s.append_thinking_level_change("high")
    s.append_message({"role": "system", "content": "prompt", "timestamp": 0})
    s.append_custom("ext", {"a": 1})
    assert not s.flushed and not s.path.exists()
    assert [e["type"] for e in s.branch()] == ["model_change", "thinking_level_change", "message", "custom"]


def test_first_user_message_creates_the_file_with_everything_held(tmp_path: Path) -> None:
    s = new(tmp_path, session_id="my-session")
    s.append_model_change("anthropic", "claude")
    uid = s.append_message(user("hello"))
    assert s.flushed
    written = lines(s.path)
    assert written[0] == {
        "type": "session",
        "version": 3,
        "id": "my-session",
        "timestamp": written[0]["timestamp"],
        "cwd": "/w",
    }
    assert [e["type"] for e in written[1:]] == ["model_change", "message"]
    assert written[2]["id"] == uid and written[2]["parentId"] == written[1]["id"]
    assert oct(os.stat(s.path).st_mode & 0o777) == "0o600"
    assert s.path.name.endswith("_my-session.jsonl")


def test_custom_session_id_rule(tmp_path: Path) -> None:
    with pytest.raises(InvalidSessionIdError):
        new(tmp_path, session_id="bad id")


def test_every_append_is_a_child_of_the_leaf_and_advances_it(tmp_path: Path) -> None:
    s = new(tmp_path)
    ids = [
        s.append_message(user("u")),
        s.append_message(assistant("a", total=10)),
        s.append_thinking_level_change("low"),
        s.append_model_change("openai", "gpt"),
        s.append_usage("cache_warm", "openai", "gpt", {"input": 1}),
        s.append_custom("x"),
        s.append_custom_message("note", "text", False),
        s.set_name("name"),
    ]
    s.append_label(ids[0], "first")
    written = lines(s.path)[1:]
    for prev, cur in itertools.pairwise(written):
        assert cur["parentId"] == prev["id"]
    assert s.leaf_id == written[-1]["id"]
    assert "note" not in written[4]


def test_key_order_is_pis(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    s.append_custom("x", {"k": 1})
    s.append_custom_message("m", "c", True)
    s.append_label(s.leaf_id)
    s.append_usage("cache_warm", "p", "m", {"input": 1}, "why")
    order = [list(e) for e in lines(s.path)[2:]]
    assert order[0] == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert order[1] == ["type", "customType", "content", "display", "id", "parentId", "timestamp"]
    assert order[2] == ["type", "id", "parentId", "timestamp", "targetId"]  # clearing writes no label key
    assert order[3] == ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage", "note"]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.append_message("x"), InvalidArgumentError),
        (lambda s: s.append_message({"role": "compactionSummary", "summary": "s"}), InvalidArgumentError),
        (lambda s: s.append_thinking_level_change(""), InvalidArgumentError),
        (lambda s: s.append_model_change("p", 5), InvalidArgumentError),
        (lambda s: s.append_custom_message("t", 5, True), InvalidArgumentError),
        (lambda s: s.append_label("nope", "x"), EntryNotFoundError),
        (lambda s: s.set_leaf("nope"), EntryNotFoundError),
        (lambda s: s.branch_with_summary("nope", "s"), EntryNotFoundError),
        (lambda s: s.append_context_edit("nope", None), EntryNotFoundError),
        (lambda s: s.append_context_edit("x", {"content": 5}), InvalidArgumentError),
        (lambda s: s.append_compaction("s", "nope", 1), EntryNotFoundError),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path, call: Any, error: type[Exception]) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    before = s.path.read_bytes()
    leaf = s.leaf_id
    with pytest.raises(error):
        call(s)
    assert s.path.read_bytes() == before
    assert s.leaf_id == leaf and s.entry_count == 1


def test_context_edit_rules_and_messages(tmp_path: Path) -> None:
    s = new(tmp_path)
    u = s.append_message(user("question"))
    a = s.append_message(assistant("answer"))
    c = s.append_custom("state")
    with pytest.raises(NotEditableError) as exc:
        s.append_context_edit(c, None)
    assert exc.value.message == f"Entry {c} does not contribute editable model content"
    s.set_leaf(u)
    other = s.append_message(assistant("other branch"))
    with pytest.raises(EntryNotOnBranchError) as exc2:
        s.append_context_edit(a, None)
    assert exc2.value.message == f"Entry {a} is not on the active branch"
    with pytest.raises(InvalidArgumentError) as exc3:
        s.append_context_edit(other, {"nope": 1})
    assert exc3.value.message == "Context edit replacement must be null or contain string/array content"
    s.append_context_edit(other, {"content": "short"})
    assert lines(s.path)[-1]["replacement"] == {"content": [{"type": "text", "text": "short"}]}
    s.append_context_edit(u, {"content": "user text stays a string"})
    assert lines(s.path)[-1]["replacement"] == {"content": "user text stays a string"}
    assert s.context().messages[1]["content"] == [{"type": "text", "text": "short"}]


def test_name_is_sanitised_and_empty_clears(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    s.set_name("  multi\r\n\nline  ")
    assert lines(s.path)[-1]["name"] == "multi line"
    assert s.name == "multi line"
    s.set_name("")
    assert s.name is None
    assert Session.open(s.path).name is None


def test_branch_with_summary_and_reset(tmp_path: Path) -> None:
    s = new(tmp_path)
    u = s.append_message(user("u"))
    a = s.append_message(assistant("a"))
    bs = s.branch_with_summary(u, "left a branch")
    entry = lines(s.path)[-1]
    assert (entry["parentId"], entry["fromId"]) == (u, a)
    assert s.leaf_id == bs
    s.reset_leaf()
    root = s.branch_with_summary(None, "from nothing")
    entry = lines(s.path)[-1]
    assert entry["parentId"] is None and entry["fromId"] == "root"
    assert s.branch_ids() == [root]


def test_compaction_snapshots_the_system_prompt_and_projects(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message({"role": "system", "content": "base", "toolsAdded": [{"name": "read"}], "timestamp": 5})
    u1 = s.append_message(user("old"))
    s.append_message(assistant("old answer"))
    u2 = s.append_message(user("new"))
    s.append_message(assistant("new answer"))
    s.append_compaction("summary", u2, 1234, {"readFiles": [], "modifiedFiles": []})
    entry = lines(s.path)[-1]
    assert list(entry)[-1] == "systemMessage"
    assert entry["systemMessage"]["content"] == "base" and entry["systemMessage"]["toolsAdded"] == [
        {"name": "read"}
    ]
    assert isinstance(entry["systemMessage"]["timestamp"], int) and entry["systemMessage"]["timestamp"] > 5
    assert [m["role"] for m in s.context().messages] == ["system", "compactionSummary", "user", "assistant"]
    keep_none = s.append_compaction("all", None, 1)
    assert lines(s.path)[-1]["firstKeptEntryId"] == keep_none
    s.set_leaf(u1)
    with pytest.raises(EntryNotOnBranchError):
        s.append_compaction("wrong branch", u2, 1)


def test_persisted_leaf_move_restores_the_branch_on_reopen(tmp_path: Path) -> None:
    s = new(tmp_path)
    u = s.append_message(user("u"))
    s.append_message(assistant("a1"))
    s.set_leaf(u)
    a2 = s.append_message(assistant("a2"))
    assert s.move_leaf(a2) is None  # already there
    marker = s.move_leaf(u)
    entry = lines(s.path)[-1]
    assert entry["type"] == "custom" and entry["customType"] == LEAF_MARKER and entry["parentId"] == u
    assert entry["data"] == {"from": a2}
    reopened = Session.open(s.path)
    assert reopened.leaf_id == marker
    assert reopened.branch_ids() == [u, marker]
    assert [m["role"] for m in reopened.context().messages] == ["user"]
    with pytest.raises(EntryNotFoundError):
        s.move_leaf("nope")


def test_a_persisted_leaf_move_changes_no_pi_derived_view(tmp_path: Path) -> None:
    # Pi navigates in memory: its leaf is the target. sessiond persists the move as a marker
    # below the target; projection, usage and the compaction decision must be Pi's (issue 14 #9).
    s = new(tmp_path)
    for i in range(4):
        s.append_message(user(f"question {i} " + "q" * 400))
        s.append_message(assistant(f"answer {i} " + "a" * 400, total=900 + i))
    kept = s.branch_ids()[-2]
    checkpoint = s.append_compaction("## Goal\nsummary", kept, 4000)
    for i in range(4, 6):
        s.append_message(user(f"question {i} " + "q" * 400))
        s.append_message(assistant(f"answer {i} " + "a" * 400))
    before_move = copy(s.path, tmp_path / "before-move")
    pi = Session.open(before_move, read_only="Pi's view")
    pi.set_leaf(checkpoint)  # what Pi's /tree does
    marker = s.move_leaf(checkpoint)
    assert s.leaf_id == marker != checkpoint
    settings = CompactionSettings(True, 16384, 10)
    for ours in (s, Session.open(s.path, read_only="reopened")):
        assert ours.prepare_compaction(settings) == NoCompaction("already_compacted")
        assert ours.prepare_compaction(settings) == pi.prepare_compaction(settings)
        assert ours.context().messages == pi.context().messages
        assert ours.context().settings == pi.context().settings
        assert ours.context_usage() == pi.context_usage()
        entry_ids = [get(p.source, "id") for p in ours.context().entries]
        assert entry_ids == [get(p.source, "id") for p in pi.context().entries]
        assert marker not in entry_ids
    # Going on from there, the marker stays between the checkpoint and what follows: Pi (which
    # navigated in memory, no marker) and sessiond still cut at the same message.
    twin = Session.open(copy(pi.path, tmp_path / "twin"))
    twin.set_leaf(checkpoint)
    for session in (s, twin):
        session.append_message(user("go on " + "q" * 400))
        session.append_message(assistant("went on " + "a" * 400))
    tight = CompactionSettings(True, 16384, 150)
    ours_prep, pis = s.prepare_compaction(tight), twin.prepare_compaction(tight)
    assert isinstance(ours_prep, CompactionPreparation) and isinstance(pis, CompactionPreparation)
    kept, twin_kept = s.get(ours_prep.first_kept_entry_id), twin.get(pis.first_kept_entry_id)
    assert kept is not None and twin_kept is not None and kept["message"] == twin_kept["message"]
    assert (ours_prep.is_split_turn, ours_prep.tokens_before) == (pis.is_split_turn, pis.tokens_before)
    assert ours_prep.messages_to_summarize == pis.messages_to_summarize
    assert s.context().messages == twin.context().messages
    assert s.context_usage() == twin.context_usage()


def test_reopen_gives_the_same_views(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    s.append_message(assistant("a", calls=[("read", {"path": "x"})]))
    s.append_message(tool_result("r"))
    r = Session.open(s.path)
    assert r.leaf_id == s.leaf_id
    assert r.branch_ids() == s.branch_ids()
    assert r.context().messages == s.context().messages


@pytest.mark.local_store
def test_torn_tail_repaired_by_the_next_append(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    s.close()
    with open(s.path, "ab") as f:
        f.write(b'{"type":"message","id":"torn"')
    r = Session.open(s.path)
    assert r.diagnostics.torn_tail
    assert r.path.read_bytes().endswith(b'"torn"')  # opening does not write
    new_id = r.append_message(assistant("after"))
    data = r.path.read_bytes()
    assert data.endswith(b"\n") and b'"id":"torn"\n{' in data
    loaded = load_session(r.path)
    assert loaded.diagnostics.unparsable_lines == 1
    assert loaded.entries[-1]["id"] == new_id


@pytest.mark.local_store
def test_opening_a_v1_file_migrates_it_atomically(tmp_path: Path) -> None:
    src = PI_FIXTURES / "before-compaction.v1.jsonl"
    path = tmp_path / "v1.jsonl"
    path.write_bytes(src.read_bytes())
    inode = os.stat(path).st_ino
    s = Session.open(path)
    assert s.diagnostics.source_version == 1
    assert os.stat(path).st_ino != inode  # replaced, not rewritten in place
    assert lines(path)[0]["version"] == 3
    assert s.entry_count == 1002
    assert len(s.branch_ids()) == 1002
    assert [p.name for p in tmp_path.iterdir()] == ["v1.jsonl"]  # no temp file left


@pytest.mark.local_store
def test_lazy_context_reads_only_context_entries(tmp_path: Path) -> None:
    s = new(tmp_path, cache_bytes=0)
    for i in range(200):
        s.append_message(user(f"question {i} " + "x" * 500))
        s.append_message(assistant(f"answer {i} " + "y" * 500))
    kept = s.append_message(user("kept"))
    s.append_compaction("summary", kept, 1)
    s.append_message(assistant("last"))
    s.close()
    r = Session.open(s.path, cache_bytes=0)
    reads: list[int] = []
    original = r.index.read_body
    assert original is not None

    def counting(offset: int, length: int) -> bytes:
        reads.append(length)
        return original(offset, length)

    r.index.read_body = counting
    roles = [m["role"] for m in r.context().messages]
    assert roles == ["compactionSummary", "user", "assistant"]
    assert len(reads) == 3  # compaction, kept user, last assistant: not the 400 entries before


@pytest.mark.local_store
def test_ingest_follows_external_appends(tmp_path: Path) -> None:
    s = new(tmp_path)
    u = s.append_message(user("u"))
    external = {
        "type": "message",
        "id": "ext1",
        "parentId": u,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "from elsewhere"}]},
    }
    line = encode_line(external)
    with open(s.path, "ab") as f:
        f.write(line[:20])
    first = s.ingest()
    assert first.entries == [] and first.partial_tail
    with open(s.path, "ab") as f:
        f.write(line[20:])
    second = s.ingest()
    assert [e["id"] for e in second.entries] == ["ext1"]
    assert s.leaf_id == "ext1"
    assert s.context().messages[-1]["content"][0]["text"] == "from elsewhere"
    mine = s.append_message(user("mine"))
    assert lines(s.path)[-1]["parentId"] == "ext1" and lines(s.path)[-1]["id"] == mine
    assert s.ingest().entries == []  # our own append is not read back as external


@pytest.mark.local_store
def test_ingest_detects_truncation_and_replacement(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    s.append_message(assistant("a"))
    with open(s.path, "r+b") as f:
        f.truncate(os.path.getsize(s.path) - 5)
    assert s.ingest().reload_required == "the file was truncated"
    with pytest.raises(SessionChangedError):
        s.append_message(user("x"))
    t = new(tmp_path / "t")
    t.append_message(user("u"))
    tmp = t.path.with_suffix(".tmp")
    tmp.write_bytes(t.path.read_bytes())
    os.replace(tmp, t.path)
    assert t.ingest().reload_required == "the file was replaced"
    with pytest.raises(SessionChangedError):
        t.append_message(user("x"))


def test_clone_and_fork(tmp_path: Path) -> None:
    s = new(tmp_path)
    u1 = s.append_message(user("one"))
    a1 = s.append_message(assistant("a1"))
    lab = s.append_label(u1, "start")
    u2 = s.append_message(user("two"))
    s.append_message(assistant("a2"))
    clone = s.fork(u2, "at")
    cl = lines(clone.path)
    assert cl[0]["parentSession"] == str(s.path)
    body = [e for e in cl[1:] if e["type"] != "label"]
    assert [e["id"] for e in body] == [u1, a1, u2]
    assert body[2]["parentId"] == a1  # re-chained past the removed label
    labels = [e for e in cl[1:] if e["type"] == "label"]
    assert len(labels) == 1 and labels[0]["targetId"] == u1 and labels[0]["parentId"] == u2
    assert labels[0]["timestamp"] == lines(s.path)[3]["timestamp"] and labels[0]["id"] != lab
    assert clone.leaf_id == labels[0]["id"]
    forked = s.fork(u2, "before")
    assert [e["id"] for e in lines(forked.path)[1:] if e["type"] != "label"] == [u1, a1]
    empty = s.fork(u1, "before")
    assert not empty.flushed and empty.header["parentSession"] == str(s.path)
    with pytest.raises(InvalidArgumentError) as exc:
        s.fork(a1, "before")
    assert exc.value.message == "Invalid entry ID for forking"


def test_fork_refused_before_the_session_is_saved(tmp_path: Path) -> None:
    s = new(tmp_path)
    mc = s.append_model_change("p", "m")
    with pytest.raises(SessionNotSavedError):
        s.fork(mc, "at")


def test_clone_without_conversation_is_not_written_until_one_arrives(tmp_path: Path) -> None:
    s = new(tmp_path)
    mc = s.append_model_change("p", "m")
    s.append_message(user("u"))
    clone = s.create_branched_session(mc)
    assert not clone.flushed
    clone.append_message(user("now"))
    assert [e["type"] for e in lines(clone.path)] == ["session", "model_change", "message"]


@pytest.mark.local_store
def test_fork_from_migrates_old_sources_and_leaves_them_untouched(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    src.write_bytes((PI_FIXTURES / "large-session.v1.jsonl").read_bytes())
    before = src.read_bytes()
    forked = Session.fork_from(src, tmp_path / "target", "/elsewhere")
    assert src.read_bytes() == before
    out = lines(forked.path)
    assert out[0]["cwd"] == "/elsewhere" and out[0]["parentSession"] == str(src) and out[0]["version"] == 3
    assert all("id" in e and "parentId" in e for e in out[1:])
    assert forked.entry_count == len(out) - 1


@pytest.mark.local_store
def test_fork_from_copies_v3_lines_byte_for_byte(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("ü 😀"))
    s.append_message(assistant("a"))
    forked = Session.fork_from(s.path, tmp_path / "t", "/x", session_id="copy-1")
    assert forked.path.read_bytes().split(b"\n")[1:] == s.path.read_bytes().split(b"\n")[1:]
    assert forked.id == "copy-1"


@pytest.mark.local_store
def test_group_commit_shares_fdatasync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = new(tmp_path, durability=Durability.FSYNC)
    s.append_message(user("u"))
    calls = 0
    real = os.fdatasync
    gate = threading.Event()

    def slow_fdatasync(fd: int) -> None:
        nonlocal calls
        calls += 1
        gate.wait(0.05)
        real(fd)

    monkeypatch.setattr("sessiond.store.journal.os.fdatasync", slow_fdatasync)
    threads = [threading.Thread(target=lambda: [s.append_custom("t") for _ in range(10)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s.entry_count == 81
    assert calls < 80  # concurrent appends shared flushes
    assert len(load_session(s.path).entries) == 81


def test_undefined_label_and_clearing(tmp_path: Path) -> None:
    s = new(tmp_path)
    u = s.append_message(user("u"))
    s.append_label(u, "x")
    assert s.label(u) == "x"
    s.append_label(u, None)
    assert s.label(u) is UNDEFINED


def test_incremental_context_equals_a_fresh_build_after_every_operation(tmp_path: Path) -> None:
    rng = random.Random(7)
    s = new(tmp_path)
    s.append_message(user("start"))
    for step in range(150):
        ids = s.branch_ids()
        op = rng.random()
        if op < 0.35:
            s.append_message(user(f"u{step} " + "x" * rng.randint(0, 300)))
        elif op < 0.6:
            s.append_message(assistant(f"a{step}", total=rng.randint(0, 5000)))
        elif op < 0.65:
            s.append_thinking_level_change(rng.choice(["low", "high"]))
        elif op < 0.7:
            s.append_model_change("p", f"m{step}")
        elif op < 0.75:
            s.append_compaction(f"sum{step}", rng.choice(ids), 100)
        elif op < 0.8:
            s.set_leaf(rng.choice(ids))
        elif op < 0.85:
            s.move_leaf(rng.choice(ids))
        elif op < 0.9:
            s.branch_with_summary(rng.choice(ids), f"bs{step}")
        elif op < 0.95:
            targets = [
                e["id"] for e in s.branch() if e["type"] == "message" and e["message"]["role"] == "user"
            ]
            if targets:
                s.append_context_edit(rng.choice(targets), rng.choice([None, {"content": "edited"}]))
        else:
            s.append_label(rng.choice(ids), f"l{step}")
        branch = s.branch()
        fresh = project(branch)
        assert s.context().messages == fresh.messages, step
        assert s.context().settings == fresh.settings, step
        assert s.context_usage().tokens == estimate_projected_context_tokens(fresh, branch).tokens
    reopened = Session.open(s.path)
    reopened.set_leaf(s.leaf_id)
    assert reopened.context().messages == s.context().messages


def test_an_append_extends_the_cached_projection_without_copying_it(tmp_path: Path) -> None:
    """An append below the leaf costs what was appended, not the branch: the cached projection's
    lists grow in place (copying them per append made appends slower as the session grew)."""
    s = new(tmp_path)
    for i in range(50):
        s.append_message(user(f"u{i}"))
        s.append_message(assistant(f"a{i}", total=100 + i))
    before = s.context()
    entries, messages = before.entries, before.messages
    s.append_message(user("one more"))
    after = s.context()
    assert after.entries is entries and after.messages is messages
    assert len(messages) == 101
    assert after.messages == project(s.branch()).messages


def test_a_compaction_preparation_is_not_changed_by_later_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preparation is made off the event loop while appends go on: it works on a copy of the
    projection, not on the lists appends extend."""
    s = new(tmp_path)
    for i in range(30):
        s.append_message(user(f"u{i} " + "x" * 400))
        s.append_message(assistant(f"a{i}", total=1000 * (i + 1)))
    s.context()
    seen: list[Any] = []
    real = prepare_compaction

    def spy(branch: Any, settings: Any, estimator: Any, *, projection: Any) -> Any:
        seen.append((projection, len(projection.messages)))
        return real(branch, settings, estimator, projection=projection)

    monkeypatch.setattr(session_context, "prepare_compaction", spy)
    s.prepare_compaction_at_leaf(CompactionSettings(reserve_tokens=100, keep_recent_tokens=200))
    projection, count = seen[0]
    s.append_message(user("after the snapshot"))
    s.context()
    assert len(projection.messages) == count == 60
    assert projection.messages is not s.context().messages


def test_batch_append_chains_entries_and_writes_them_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    writes = 0
    real = os.write

    def counting(fd: int, data: Any) -> int:
        nonlocal writes
        writes += 1
        return real(fd, data)

    monkeypatch.setattr("sessiond.store.journal.os.write", counting)
    ids = s.append_entries(
        [
            {"type": "message", "message": assistant("", calls=[("read", {"path": "a"})])},
            {"type": "message", "message": tool_result("contents")},
            {"type": "message", "message": assistant("done")},
        ]
    )
    assert writes == 1
    written = lines(s.path)[-3:]
    assert [e["id"] for e in written] == ids
    assert written[1]["parentId"] == ids[0] and written[2]["parentId"] == ids[1]
    assert s.leaf_id == ids[2]


def test_batch_validation_failure_writes_nothing_and_names_the_entry(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    before = s.path.read_bytes()
    with pytest.raises(InvalidArgumentError) as exc:
        s.append_entries(
            [{"type": "message", "message": user("ok")}, {"type": "model_change", "provider": "p"}]
        )
    assert exc.value.data["index"] == 1 and exc.value.field == "modelId"
    assert s.path.read_bytes() == before and s.entry_count == 1


def test_batch_entries_can_refer_to_earlier_ones_of_the_batch(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_message(user("u"))
    bad = s.append_message(assistant("", stop="error", error="overloaded"))
    ids = s.append_entries(
        [
            {"type": "context_edit", "targetId": bad, "replacement": None},
            {"type": "message", "message": user("again")},
        ]
    )
    label = s.append_entries([{"type": "label", "targetId": ids[1], "label": "retry"}])
    assert s.label(ids[1]) == "retry" and label
    assert [m["role"] for m in s.context().messages] == ["user", "user"]


def test_expect_leaf_and_explicit_parent(tmp_path: Path) -> None:
    s = new(tmp_path)
    u = s.append_message(user("u"))
    a = s.append_message(assistant("a"))
    with pytest.raises(LeafMismatchError) as exc:
        s.append_entries([{"type": "message", "message": user("x")}], expect_leaf_id=u)
    assert exc.value.data == {"expectedLeafId": u, "currentLeafId": a}
    ids = s.append_entries([{"type": "message", "message": assistant("alt")}], parent_id=u, expect_leaf_id=a)
    assert lines(s.path)[-1]["parentId"] == u and s.leaf_id == ids[0]
    root = s.append_entries([{"type": "message", "message": user("new root")}], parent_id=None)
    assert lines(s.path)[-1]["parentId"] is None and s.branch_ids() == root
    with pytest.raises(EntryNotFoundError):
        s.append_entries([{"type": "message", "message": user("x")}], parent_id="nope")
    with pytest.raises(InvalidArgumentError):
        s.append_entries([])


def test_batch_on_an_unsaved_session_flushes_with_everything(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.append_model_change("p", "m")
    ids = s.append_entries(
        [
            {"type": "thinking_level_change", "thinkingLevel": "low"},
            {"type": "message", "message": user("first")},
        ]
    )
    assert [e["type"] for e in lines(s.path)] == [
        "session",
        "model_change",
        "thinking_level_change",
        "message",
    ]
    assert lines(s.path)[-1]["id"] == ids[1]


@pytest.mark.local_store
def test_an_external_append_is_indexed_before_the_next_write(tmp_path: Path) -> None:
    """Another program appended to the file: the daemon's next entry hangs below its entry."""
    session = Session.create(tmp_path, "/w")
    first = session.append_message(user("mine"))
    external = {
        "type": "message",
        "id": "ext00001",
        "parentId": first,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": assistant("written by someone else"),
    }
    with open(session.path, "ab") as f:
        f.write(json.dumps(external).encode() + b"\n")
    second = session.append_message(user("mine again"))
    assert [e["id"] for e in session.take_external()] == ["ext00001"]
    assert session.take_external() == []
    chained = session.get(second)
    assert chained is not None and chained["parentId"] == "ext00001"
    reopened = Session.open(session.path)
    assert reopened.branch_ids() == [first, "ext00001", second]


@pytest.mark.local_store
def test_a_line_being_written_by_another_program_is_not_cut(tmp_path: Path) -> None:
    session = Session.create(tmp_path, "/w")
    session.append_message(user("mine"))
    with open(session.path, "ab") as f:
        f.write(b'{"type":"message","id":"half"')  # no newline yet, written just now
    size = session.path.stat().st_size
    with pytest.raises(SessionChangedError):
        session.append_message(user("would cut it"))
    assert session.path.stat().st_size == size


@pytest.mark.parametrize("seed", range(25))
def test_a_checkpoints_system_prompt_is_the_whole_contexts(tmp_path: Path, seed: int) -> None:
    """The snapshot reads only the entries that can make a system message (issue 30): it is the
    system message of the whole projected context, with system messages hidden by a
    ``context_edit(null)`` (another writer's), edits that cannot change one, and a checkpoint
    that carries one already."""
    rng = random.Random(seed)
    header = {
        "type": "session",
        "version": 3,
        "id": f"0190e6f0-0000-7000-8000-{seed:012d}",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/w",
    }
    entries: list[dict[str, Any]] = []
    parent: Any = None
    for n in range(rng.randint(1, 30)):
        eid = f"e{n:04d}"
        base = {"id": eid, "parentId": parent, "timestamp": f"2026-01-01T00:00:{n % 60:02d}.000Z"}
        kind = rng.random()
        ids = [e["id"] for e in entries]
        if kind < 0.25:
            message: dict[str, Any] = {"role": "system", "content": f"prompt {n}", "timestamp": n}
            if rng.random() < 0.5:
                message["sections"] = {rng.choice("ab"): rng.choice([f"s{n}", None])}
            if rng.random() < 0.5:
                message["toolsAdded"] = [{"name": rng.choice(["read", "bash"]), "n": n}]
            if rng.random() < 0.3:
                message["toolsRemoved"] = [{"name": "read"}]
            entry = {"type": "message", **base, "message": message}
        elif kind < 0.4 and ids:
            replacement = None if rng.random() < 0.6 else {"content": "edited"}
            entry = {"type": "context_edit", **base, "targetId": rng.choice(ids), "replacement": replacement}
        elif kind < 0.5 and ids:
            entry = {
                "type": "compaction",
                **base,
                "summary": "s",
                "firstKeptEntryId": rng.choice(ids),
                "tokensBefore": 1,
            }
            if rng.random() < 0.5:
                entry["systemMessage"] = {"role": "system", "content": f"snap {n}", "timestamp": n}
        else:
            message = user(f"u{n}") if rng.random() < 0.5 else assistant(f"a{n}")
            entry = {"type": "message", **base, "message": message}
        entries.append(entry)
        parent = eid
    path = tmp_path / "s.jsonl"
    path.write_bytes(encode_line(header) + b"".join(encode_line(e) for e in entries))
    s = Session.open(path)
    checkpoint = {"type": "compaction", "summary": "now", "firstKeptEntryId": None, "tokensBefore": 1}
    if rng.random() < 0.5:
        s.append_compaction("now", None, 1)
    else:  # a batch: what was staged before the checkpoint counts too
        staged = {"role": rng.choice(["system", "user"]), "content": "staged", "timestamp": 99}
        s.append_entries([{"type": "message", "message": staged}, checkpoint])
    expected = current_system_message(project(load_session(path).entries[:-1]).messages)
    written = lines(path)[-1]
    if expected is None:
        assert "systemMessage" not in written
    else:
        assert written["systemMessage"] == {**expected, "timestamp": written["systemMessage"]["timestamp"]}
    s.close()
