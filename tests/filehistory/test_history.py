"""The state machine on real workspaces: prompts, edits, rewinds, undos, conflicts, refusals."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiond.errors import CheckpointNotFoundError, InvalidArgumentError
from sessiond.filehistory import (
    MISSING,
    FileHistory,
    FileState,
    InvalidSnapshotError,
    PathRefusedError,
    RewindOrderError,
    content_key,
)

from .helpers import Session, leftovers, statuses, tree

BINARY = bytes(range(256)) * 40 + b"\0\xff\xfe"


def _three_prompts(s: Session, cwd: Path) -> dict[str, Any]:
    """Edits, creations, deletions, a rename, a binary file, a mode change and a symlink across
    three prompts; returns the tree at each prompt and at the end."""
    (cwd / "a.txt").write_bytes(b"a0\n")
    (cwd / "c.txt").write_bytes(b"c0\n")
    (cwd / "run.sh").write_bytes(b"#!/bin/sh\necho 0\n")
    (cwd / "run.sh").chmod(0o755)
    (cwd / "untracked.txt").write_bytes(b"never touched by the session\n")
    (cwd / "ln").symlink_to("a.txt")
    trees: dict[str, Any] = {}

    trees["p1"] = tree(cwd)
    s.checkpoint("p1")
    s.write("a.txt", b"a1\n")
    s.write("new/b.txt", b"b1\n")
    s.write("bin.dat", BINARY)

    trees["p2"] = tree(cwd)
    s.checkpoint("p2")
    s.write("a.txt", b"a2\nmore\n")
    s.delete("c.txt")
    s.rename("new/b.txt", "d.txt")
    s.write("run.sh", b"#!/bin/sh\necho 2\n", mode=0o644)
    s.write("bin.dat", BINARY[::-1])

    trees["p3"] = tree(cwd)
    s.checkpoint("p3")
    s.delete("a.txt")
    s.write("c.txt", b"c3 (re-created)\n", mode=0o600)
    s.track("ln")  # the agent re-points a symlink
    (cwd / "ln").unlink()
    (cwd / "ln").symlink_to("d.txt")
    s.track("ln", phase="after")
    trees["end"] = tree(cwd)
    return trees


def test_rewind_to_every_checkpoint_and_back(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    trees = _three_prompts(s, cwd)
    assert s.history.tracked == {"a.txt", "new/b.txt", "bin.dat", "c.txt", "d.txt", "run.sh", "ln"}
    for message_id in ("p1", "p2", "p3"):
        plan, result = s.rewind(message_id)
        assert tree(cwd) == trees[message_id], message_id  # bytes, modes, symlinks
        assert result.as_json()["files"] == plan.as_json()["files"]  # the dry run is what ran
        assert {f.status for f in result.files} == {"ok"}
        _, back = s.rewind(result.undo_id)
        assert tree(cwd) == trees["end"], f"undo of {message_id}"
        assert {f.status for f in back.files} == {"ok"}
    # Chained, without undoing in between.
    for message_id in ("p1", "p3", "p2", "p1", "p2", "p3"):
        _, result = s.rewind(message_id)
        assert tree(cwd) == trees[message_id], message_id
        assert result.as_json()["totals"]["conflicts"] == 0
    assert leftovers(cwd) == []
    assert tree(cwd)["untracked.txt"][1] == b"never touched by the session\n"


def test_the_plan_names_each_action(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    _three_prompts(s, cwd)
    plan = s.history.plan("p1")
    assert statuses(plan) == {
        "a.txt": ("write", "ok"),  # deleted at p3: re-created
        "bin.dat": ("delete", "ok"),  # created after p1
        "c.txt": ("write", "ok"),
        "d.txt": ("delete", "ok"),
        "ln": ("symlink", "ok"),
        "new/b.txt": ("none", "ok"),  # created then renamed away: missing, as at p1
        "run.sh": ("write", "ok"),
    }
    dry = plan.as_json()
    assert dry["totals"] == {
        "files": 7,
        "changes": 6,
        "unchanged": 1,
        "conflicts": 0,
        "refused": 0,
        "forced": 0,
        "failed": 0,
    }
    entry = next(f for f in dry["files"] if f["path"] == "run.sh")
    assert entry["to"]["mode"] == 0o755 and entry["from"]["mode"] == 0o644
    assert set(entry) == {"path", "action", "status", "from", "to"}
    assert json.loads(json.dumps(dry)) == dry


def test_replay_of_the_persisted_data_reproduces_the_history(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    _three_prompts(s, cwd)
    _, result = s.rewind("p2")
    s.write("a.txt", b"after the rewind\n")
    s.checkpoint("p4")
    fresh = s.fresh()
    h = s.history
    assert fresh.tracked == h.tracked
    assert fresh.checkpoints == h.checkpoints
    assert list(fresh.checkpoints) == list(h.checkpoints) == ["p1", "p2", "p3", result.undo_id, "p4"]
    assert fresh.kinds == h.kinds
    assert fresh.kinds[result.undo_id] == "undo"
    assert fresh.first_state == h.first_state
    assert fresh.seen == h.seen
    for message_id in h.checkpoints:
        assert fresh.target(message_id) == h.target(message_id)
        assert fresh.plan(message_id).as_json() == h.plan(message_id).as_json()
    assert fresh.referenced_blobs() == h.referenced_blobs()


def test_a_file_first_tracked_after_a_checkpoint_returns_to_its_first_state(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "old.txt").write_bytes(b"existed before\n")
    s.checkpoint("p1")
    s.checkpoint("p2")
    s.write("old.txt", b"edited at p2\n")
    s.write("created.txt", b"created at p2\n")
    target = s.history.target("p1")
    assert target["old.txt"].kind == "file"
    assert target["created.txt"] == MISSING
    s.rewind("p1")
    assert (cwd / "old.txt").read_bytes() == b"existed before\n"
    assert not (cwd / "created.txt").exists()


def test_tracking_before_the_first_checkpoint_uses_initial(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "f").write_bytes(b"0")
    data = s.track("f")
    assert data["messageId"] == "initial" and data["kind"] == "update"
    (cwd / "f").write_bytes(b"1")
    s.track("f", phase="after")
    s.checkpoint("p1")
    assert s.track("f")["messageId"] == "p1"  # the latest checkpoint
    s.rewind("initial")
    assert (cwd / "f").read_bytes() == b"0"


def test_track_data_shapes(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "f.py").write_bytes(b"x = 1\n")
    s.checkpoint("p1")
    before = s.track("f.py", "p1")
    sha = content_key(s.workspace.read_state("f.py", None))
    roots = {str(cwd): {"dev": os.stat(cwd).st_dev, "ino": os.stat(cwd).st_ino}}
    assert before == {
        "messageId": "p1",
        "kind": "update",
        "files": {"f.py": {"kind": "file", "blob": sha, "mode": 0o644, "size": 6}},
        "seen": {"f.py": sha},
        "roots": roots,
    }
    assert s.blobs.has(sha)
    (cwd / "f.py").write_bytes(b"x = 2\n")
    after = s.track(str(cwd / "f.py"), "p1", "after")
    assert after == {
        "messageId": "p1",
        "kind": "update",
        "files": {},
        "seen": {"f.py": content_key(s.workspace.read_state("f.py", None))},
        "roots": roots,
    }
    assert s.history.checkpoints["p1"]["f.py"].blob == sha
    # A second "before" in the same prompt keeps the prompt's state (the first backup).
    again = s.track("f.py", "p1")
    assert again["files"] == {}
    assert s.history.checkpoints["p1"]["f.py"].blob == sha
    with pytest.raises(InvalidArgumentError):
        s.history.track("f.py", "p1", "during")
    with pytest.raises(PathRefusedError):
        s.history.track("../elsewhere.txt")


def test_a_file_reported_only_after_writing_is_not_tracked(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    s.checkpoint("p1")
    (cwd / "f").write_bytes(b"made without a backup")
    data = s.track("f", phase="after")
    assert data["files"] == {} and "f" in data["seen"]
    assert "f" not in s.history.tracked
    assert s.history.plan("p1").files == []  # its earlier state is unknown: never deleted


def test_checkpoint_data_and_seen(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "f").write_bytes(b"0")
    empty = s.checkpoint("p1")
    roots = {str(cwd): {"dev": os.stat(cwd).st_dev, "ino": os.stat(cwd).st_ino}}
    assert empty == {"messageId": "p1", "kind": "checkpoint", "files": {}, "seen": {}, "roots": roots}
    s.write("f", b"1")
    seen = dict(s.history.seen)
    (cwd / "f").write_bytes(b"someone else")
    data = s.checkpoint("p2")
    assert list(data["files"]) == ["f"]
    assert data["seen"] == {}
    assert s.history.seen == seen  # a checkpoint does not adopt someone else's content
    assert s.history.latest_checkpoint() == data["files"]
    assert s.history.latest_checkpoint_id() == "p2"
    with pytest.raises(CheckpointNotFoundError):
        s.history.plan("nope")


# ---------------------------------------------------------------------- conflicts


def test_two_sessions_editing_the_same_file(store: Path, cwd: Path) -> None:
    (cwd / "shared.py").write_bytes(b"v0\n")
    a = Session(store, cwd, "A")
    b = Session(store, cwd, "B")
    a.checkpoint("a1")
    b.checkpoint("b1")
    a.write("shared.py", b"v0\nA's line\n")
    b.write("shared.py", b"v0\nA's line\nB's line\n")

    plan = a.history.plan("a1")
    assert statuses(plan) == {"shared.py": ("write", "conflict")}
    _, result = a.rewind("a1")
    assert statuses(result) == {"shared.py": ("write", "conflict")}
    assert (cwd / "shared.py").read_bytes() == b"v0\nA's line\nB's line\n"  # B's edit stays
    assert result.as_json()["files"] == plan.as_json()["files"]

    # B rewinds its own edit: its target is what it first saw (A's edit), and it is B's content.
    _, result = b.rewind("b1")
    assert statuses(result) == {"shared.py": ("write", "ok")}
    assert (cwd / "shared.py").read_bytes() == b"v0\nA's line\n"

    # Now the file is what A last wrote: A's rewind goes through.
    _, result = a.rewind("a1")
    assert statuses(result) == {"shared.py": ("write", "ok")}
    assert (cwd / "shared.py").read_bytes() == b"v0\n"


def test_an_edit_by_another_session_before_the_next_prompt_is_still_protected(store: Path, cwd: Path) -> None:
    """OpenCode #33940: an undo in one session reverting another's work. The checkpoint of the
    next prompt records B's content, but does not make it A's."""
    (cwd / "f").write_bytes(b"v0\n")
    a = Session(store, cwd, "A")
    b = Session(store, cwd, "B")
    a.checkpoint("a1")
    a.write("f", b"A\n")
    b.write("f", b"A\nB\n")
    a.checkpoint("a2")
    assert statuses(a.history.plan("a1")) == {"f": ("write", "conflict")}
    assert statuses(a.history.plan("a2")) == {"f": ("none", "ok")}
    _, result = a.rewind("a1")
    assert statuses(result) == {"f": ("write", "conflict")}
    assert (cwd / "f").read_bytes() == b"A\nB\n"
    # force overrides a conflict, and the undo snapshot puts B's work back.
    _, forced = a.rewind("a1", force=True)
    assert statuses(forced) == {"f": ("write", "forced")}
    assert forced.files[0].reason
    assert (cwd / "f").read_bytes() == b"v0\n"
    a.rewind(forced.undo_id)
    assert (cwd / "f").read_bytes() == b"A\nB\n"


def test_the_user_editing_after_the_agent_is_a_conflict(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    s.checkpoint("p1")
    s.write("new.txt", b"agent\n")
    (cwd / "new.txt").write_bytes(b"agent\nuser\n")
    _, result = s.rewind("p1")
    assert statuses(result) == {"new.txt": ("delete", "conflict")}
    assert (cwd / "new.txt").read_bytes() == b"agent\nuser\n"
    # Already in the target state is never a conflict.
    (cwd / "new.txt").unlink()
    assert statuses(s.history.plan("p1")) == {"new.txt": ("none", "ok")}


def test_without_a_record_of_what_the_session_wrote_it_is_a_conflict(store: Path, cwd: Path) -> None:
    """Claude Code histories whose last write cannot be reconstructed carry no ``seen``."""
    (cwd / "f").write_bytes(b"now\n")
    s = Session(store, cwd)
    sha = s.blobs.put_bytes(b"then\n")
    s.history.replay(
        {
            "messageId": "p1",
            "kind": "checkpoint",
            "files": {"f": {"kind": "file", "blob": sha, "mode": 420, "size": 5}},
        }
    )
    plan = s.history.plan("p1")
    assert statuses(plan) == {"f": ("write", "conflict")}
    assert "no record" in (plan.files[0].reason or "")
    s.rewind("p1", force=True)
    assert (cwd / "f").read_bytes() == b"then\n"


# ---------------------------------------------------------------------- refusals


def test_a_symlink_out_of_the_root_is_tracked_as_a_symlink_and_never_written_through(
    store: Path, cwd: Path, outside: Path
) -> None:
    s = Session(store, cwd)
    (cwd / "escape").symlink_to(outside / "victim.txt")
    (cwd / "f.txt").write_bytes(b"mine\n")
    s.checkpoint("p1")
    s.track("escape")
    s.track("f.txt")
    assert s.history.first_state["escape"] == FileState.symlink(str(outside / "victim.txt"))
    assert s.blobs.stats()["count"] == 1  # f.txt only: the link's target was never read
    (cwd / "escape").unlink()
    (cwd / "escape").write_bytes(b"replaced by a file\n")
    s.track("escape", phase="after")
    # Someone swaps f.txt for a symlink to a file outside the root.
    (cwd / "f.txt").unlink()
    (cwd / "f.txt").symlink_to(outside / "victim.txt")
    for force in (False, True):
        plan = s.history.plan("p1", force=force)
        assert statuses(plan) == {"escape": ("symlink", "ok"), "f.txt": ("write", "refused")}
        assert plan.files[1].reason == "is a symlink"
    _, result = s.rewind("p1", force=True)
    assert statuses(result) == {"escape": ("symlink", "ok"), "f.txt": ("write", "refused")}
    assert os.readlink(cwd / "escape") == str(outside / "victim.txt")
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"
    assert (cwd / "f.txt").is_symlink()


def test_a_symlink_is_only_ever_replaced_by_a_symlink(store: Path, cwd: Path, outside: Path) -> None:
    """Spec: "the path is a symlink and the target is not -> never touched, even with force" --
    a symlink the session created is not deleted by a rewind either."""
    s = Session(store, cwd)
    s.checkpoint("p1")
    s.track("made.lnk")
    (cwd / "made.lnk").symlink_to(outside / "victim.txt")
    s.track("made.lnk", phase="after")
    for force in (False, True):
        _, result = s.rewind("p1", force=force)
        assert statuses(result) == {"made.lnk": ("delete", "refused")}
        assert result.files[0].reason == "is a symlink"
    assert (cwd / "made.lnk").is_symlink()
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"


def test_paths_through_a_symlinked_directory_are_refused_even_with_force(
    store: Path, cwd: Path, outside: Path
) -> None:
    s = Session(store, cwd)
    (cwd / "out").symlink_to(outside)
    with pytest.raises(PathRefusedError, match="symlink"):
        s.track("out/victim.txt")
    # A tampered (or stale) snapshot naming such paths, or paths outside every root.
    sha = s.blobs.put_bytes(b"pwned\n")
    pwn = {"kind": "file", "blob": sha, "mode": 420, "size": 6}
    s.history.replay(
        {
            "messageId": "p1",
            "kind": "checkpoint",
            "files": {"out/victim.txt": pwn, "../outside/victim.txt": pwn, str(outside / "new.txt"): pwn},
            "seen": {"out/victim.txt": "missing", "../outside/victim.txt": "missing"},
        }
    )
    _, result = s.rewind("p1", force=True)
    assert {f.status for f in result.files} == {"refused"}
    assert result.as_json()["totals"]["refused"] == 3
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"


def test_a_directory_swapped_for_a_symlink_between_plan_and_execute(
    store: Path, cwd: Path, outside: Path
) -> None:
    s = Session(store, cwd)
    (cwd / "sub").mkdir()
    (cwd / "sub" / "f.txt").write_bytes(b"v0\n")
    (cwd / "g.txt").write_bytes(b"g0\n")
    (outside / "f.txt").write_bytes(b"outside\n")
    s.checkpoint("p1")
    s.write("sub/f.txt", b"v1\n")
    s.write("g.txt", b"g1\n")
    s.write("sub/new.txt", b"created\n")

    for when in ("before undo", "after undo"):
        plan = s.history.plan("p1")
        assert {f.status for f in plan.files} == {"ok"}
        if when == "before undo":
            os.rename(cwd / "sub", cwd / "sub.real")
            (cwd / "sub").symlink_to(outside)
        undo = s.history.undo_data(plan, f"u-{when}")
        if when == "after undo":
            os.rename(cwd / "sub", cwd / "sub.real")
            (cwd / "sub").symlink_to(outside)
        result, seen = s.history.execute(plan)
        assert statuses(result) == {
            "g.txt": ("write", "ok"),  # the other files go on
            "sub/f.txt": ("write", "refused"),
            "sub/new.txt": ("delete", "refused"),
        }
        assert "symlink" in (result.files[1].reason or "")
        assert sorted(p.name for p in outside.iterdir()) == ["f.txt", "victim.txt"]
        assert (outside / "f.txt").read_bytes() == b"outside\n"
        assert leftovers(outside) == []
        assert set(seen["seen"]) == {"g.txt"}
        assert ("sub/f.txt" in undo["files"]) == (when == "after undo")
        # Put things back for the next round.
        (cwd / "sub").unlink()
        os.rename(cwd / "sub.real", cwd / "sub")
        (cwd / "g.txt").write_bytes(b"g1\n")
        s.track("g.txt", phase="after")


# ---------------------------------------------------------------------- changes between plan and run


def test_a_file_changed_after_the_plan_is_a_conflict_at_execute(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "a").write_bytes(b"a0")
    (cwd / "b").write_bytes(b"b0")
    (cwd / "c").write_bytes(b"c0")
    s.checkpoint("p1")
    s.write("a", b"a1")
    s.write("b", b"b1")
    plan = s.history.plan("p1")
    dry = plan.as_json()
    assert statuses(plan) == {"a": ("write", "ok"), "b": ("write", "ok")}
    (cwd / "a").write_bytes(b"the user, meanwhile")
    s.history.undo_data(plan, "u1")
    result, _ = s.history.execute(plan)
    assert statuses(result) == {"a": ("write", "conflict"), "b": ("write", "ok")}
    assert result.files[0].reason == "changed since the plan"
    assert (cwd / "a").read_bytes() == b"the user, meanwhile"
    assert (cwd / "b").read_bytes() == b"b0"
    assert result.as_json()["files"][1] == dry["files"][1]  # the unchanged file: as planned


def test_with_force_a_change_before_the_backup_is_backed_up_and_overwritten(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "a").write_bytes(b"a0")
    s.checkpoint("p1")
    s.write("a", b"a1")
    plan = s.history.plan("p1", force=True)
    (cwd / "a").write_bytes(b"meanwhile")
    undo = s.persist(s.history.undo_data(plan, "u1"))
    result, seen = s.history.execute(plan)
    s.persist(seen)
    assert statuses(result) == {"a": ("write", "forced")}
    assert (cwd / "a").read_bytes() == b"a0"
    assert undo["files"]["a"]["blob"] == hashlib.sha256(b"meanwhile").hexdigest()
    s.rewind("u1")
    assert (cwd / "a").read_bytes() == b"meanwhile"


def test_even_with_force_a_change_after_the_backup_is_not_overwritten(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "a").write_bytes(b"a0")
    s.checkpoint("p1")
    s.write("a", b"a1")
    plan = s.history.plan("p1", force=True)
    s.history.undo_data(plan, "u1")
    (cwd / "a").write_bytes(b"after the backup")
    result, seen = s.history.execute(plan)
    assert statuses(result) == {"a": ("write", "conflict")}
    assert (cwd / "a").read_bytes() == b"after the backup"
    assert seen["seen"] == {}


def test_a_file_with_nothing_to_do_that_changes_is_reported(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "a").write_bytes(b"a0")
    s.checkpoint("p1")
    s.track("a")
    plan = s.history.plan("p1", force=True)
    assert statuses(plan) == {"a": ("none", "ok")}
    s.history.undo_data(plan, "u1")
    (cwd / "a").write_bytes(b"changed")
    result, _ = s.history.execute(plan)
    assert statuses(result) == {"a": ("write", "conflict")}
    assert (cwd / "a").read_bytes() == b"changed"


def test_the_undo_must_come_first_and_a_plan_runs_once(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    s.checkpoint("p1")
    plan = s.history.plan("p1")
    with pytest.raises(RewindOrderError):
        s.history.execute(plan)
    s.history.undo_data(plan, "u1")
    with pytest.raises(RewindOrderError):
        s.history.undo_data(plan, "u2")
    s.history.execute(plan)
    with pytest.raises(RewindOrderError):
        s.history.execute(plan)


def test_a_missing_backup_fails_that_file_only(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    (cwd / "a").write_bytes(b"a0")
    (cwd / "b").write_bytes(b"b0")
    s.checkpoint("p1")
    s.write("a", b"a1")
    s.write("b", b"b1")
    gone = s.history.checkpoints["p1"]["a"].blob or ""
    s.blobs.path(gone).unlink()
    _, result = s.rewind("p1")
    assert statuses(result) == {"a": ("write", "failed"), "b": ("write", "ok")}
    assert "missing" in (result.files[0].reason or "")
    assert (cwd / "a").read_bytes() == b"a1"
    assert (cwd / "b").read_bytes() == b"b0"


# ---------------------------------------------------------------------- fork, replay input


def test_a_fork_gets_the_blobs_and_can_rewind(store: Path, cwd: Path, tmp_path: Path) -> None:
    s = Session(store, cwd)
    trees = _three_prompts(s, cwd)
    fork = Session(store, cwd, "fork")
    added = s.blobs.link_into(fork.blobs, s.history.referenced_blobs())
    assert added == len(s.history.referenced_blobs()) == fork.blobs.stats()["count"]
    for data in s.log:
        fork.history.replay(data)
    shutil.rmtree(s.blobs.directory)  # the original may go away
    fork.rewind("p2")
    assert tree(cwd) == trees["p2"]


def test_bad_snapshot_data_changes_nothing(store: Path, cwd: Path) -> None:
    h = FileHistory(Session(store, cwd).blobs, Session(store, cwd).workspace)
    sha = "0" * 64
    good = {"kind": "file", "blob": sha, "mode": 420, "size": 1}
    bad: Any
    for bad in (
        [],
        {"kind": "snapshot", "messageId": "m"},
        {"kind": "checkpoint"},
        {"kind": "update", "files": {"a": good}},
        {"kind": "checkpoint", "messageId": "m", "files": {"a": good, "b": {"kind": "file"}}},
        {"kind": "checkpoint", "messageId": "m", "files": [], "seen": {}},
        {"kind": "update", "messageId": "m", "seen": {"a": 1}},
    ):
        with pytest.raises(InvalidSnapshotError):
            h.replay(bad)
    assert h.tracked == set() and h.checkpoints == {} and h.seen == {}
    h.replay({"kind": "update", "messageId": None, "files": {}, "seen": {"a": sha}})  # claude.py's seen data
    assert h.seen == {"a": sha} and h.checkpoints == {}
