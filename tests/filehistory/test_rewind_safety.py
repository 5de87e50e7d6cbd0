"""Rewind safety beyond single paths: the session's directory itself (its identity), and undoing
a rewind that created a symlink (issue 14, items 6 and 7)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiond.filehistory import FileHistory, PathRefusedError, RootChangedError

from .helpers import Session, leftovers, statuses, tree


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """Another directory, laid out like the session's, that must never be written."""
    d = tmp_path / "other"
    d.mkdir()
    (d / "a.txt").write_bytes(b"someone else's a\n")
    (d / "keep.txt").write_bytes(b"keep\n")
    return d


def _edited(s: Session, cwd: Path) -> None:
    """A prompt, then the agent edits a.txt, creates new.txt and deletes gone.txt."""
    (cwd / "a.txt").write_bytes(b"a0\n")
    (cwd / "gone.txt").write_bytes(b"g0\n")
    s.track("a.txt")
    s.track("gone.txt")
    s.checkpoint("p1")
    s.write("a.txt", b"a1\n")
    s.write("new.txt", b"created\n")
    s.delete("gone.txt")


def _swap_for_symlink(cwd: Path, to: Path) -> Path:
    real = cwd.with_name(cwd.name + ".real")
    os.rename(cwd, real)
    cwd.symlink_to(to)
    return real


def _replace_dir(path: Path) -> None:
    """Delete ``path`` and create it again (as a fresh checkout would). The new directory is
    made first, so it cannot reuse the old one's inode number."""
    fresh = path.with_name(path.name + ".fresh")
    fresh.mkdir()
    shutil.rmtree(path)
    os.rename(fresh, path)


def _refused_everywhere(history: FileHistory, cwd: Path) -> None:
    for force in (False, True):
        with pytest.raises(RootChangedError) as exc:
            history.plan("p1", force=force)
        assert isinstance(exc.value, PathRefusedError)  # PATH_REFUSED on the wire
        assert exc.value.path == str(cwd)
        assert exc.value.data["recorded"] != exc.value.data["current"]
        assert "not the directory" in exc.value.reason


# ---------------------------------------------------------------------- item 6: the root's identity


def test_snapshots_record_the_identity_of_the_root(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    _edited(s, cwd)
    st = os.stat(cwd)
    for data in s.log:
        assert data["roots"] == {str(cwd): {"dev": st.st_dev, "ino": st.st_ino}}, data


def test_a_root_replaced_by_a_symlink_to_another_directory_is_refused(
    store: Path, cwd: Path, other: Path
) -> None:
    s = Session(store, cwd)
    _edited(s, cwd)
    before = tree(other)
    real = _swap_for_symlink(cwd, other)
    _refused_everywhere(s.history, cwd)
    _refused_everywhere(s.fresh(), cwd)  # the identity travels in the persisted snapshots
    assert tree(other) == before and leftovers(other) == []
    assert tree(real) == {"a.txt": ("file", b"a1\n", 0o644), "new.txt": ("file", b"created\n", 0o644)}
    # Put back, the directory rewinds as usual.
    cwd.unlink()
    os.rename(real, cwd)
    _, result = s.rewind("p1")
    assert {status for _, status in statuses(result).values()} == {"ok"}
    assert tree(cwd) == {"a.txt": ("file", b"a0\n", 0o644), "gone.txt": ("file", b"g0\n", 0o644)}


def test_a_root_deleted_and_created_again_is_refused(store: Path, cwd: Path, tmp_path: Path) -> None:
    s = Session(store, cwd)
    _edited(s, cwd)
    _replace_dir(cwd)
    (cwd / "a.txt").write_bytes(b"a fresh checkout\n")
    _refused_everywhere(s.history, cwd)
    assert tree(cwd) == {"a.txt": ("file", b"a fresh checkout\n", 0o644)}


def test_a_root_swapped_between_plan_and_execute_is_refused_per_file(
    store: Path, cwd: Path, other: Path
) -> None:
    s = Session(store, cwd)
    _edited(s, cwd)
    before = tree(other)
    plan = s.history.plan("p1")
    assert {f.status for f in plan.files} == {"ok"}
    s.history.undo_data(plan, "u1")
    real = _swap_for_symlink(cwd, other)
    result, seen = s.history.execute(plan)
    assert {f.status for f in result.files} == {"refused"}
    assert all("not the directory" in (f.reason or "") for f in result.files)
    assert seen["seen"] == {}
    assert tree(other) == before and leftovers(other) == []
    assert (real / "a.txt").read_bytes() == b"a1\n"


def test_a_root_that_is_a_symlink_all_along_is_fine(store: Path, tmp_path: Path) -> None:
    """A cwd reached through a symlink (macOS's /tmp, a ~/src link) is the directory it leads to."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    s = Session(store, link)
    _edited(s, link)
    _, result = s.rewind("p1")
    assert {status for _, status in statuses(result).values()} == {"ok"}
    assert tree(real) == {"a.txt": ("file", b"a0\n", 0o644), "gone.txt": ("file", b"g0\n", 0o644)}
    # Re-pointed at another directory, it is refused.
    s.write("a.txt", b"a2\n")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(real, elsewhere)
    link.unlink()
    link.symlink_to(elsewhere)
    _refused_everywhere(s.history, link)


def test_a_session_that_moved_to_a_new_directory_rewinds_only_checkpoints_taken_there(
    store: Path, cwd: Path
) -> None:
    s = Session(store, cwd)
    _edited(s, cwd)
    _replace_dir(cwd)  # a fresh checkout
    (cwd / "a.txt").write_bytes(b"a1\n")
    (cwd / "new.txt").write_bytes(b"created\n")
    s.checkpoint("p2")  # the session goes on in the new directory
    s.write("a.txt", b"a2\n")
    _refused_everywhere(s.history, cwd)
    _, result = s.rewind("p2")
    assert {status for _, status in statuses(result).values()} == {"ok"}
    assert (cwd / "a.txt").read_bytes() == b"a1\n"


def _without_identities(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in data.items() if k != "roots"} for data in log]


def test_old_snapshots_without_identity_rewind_while_the_root_is_no_symlink(
    store: Path, cwd: Path, other: Path
) -> None:
    """Documented fallback: with no identity recorded, a root that is itself a symlink now is
    refused (it cannot be told from a swapped one); a plain directory rewinds."""
    s = Session(store, cwd)
    _edited(s, cwd)
    s.log = _without_identities(s.log)
    history = s.fresh()
    plan = history.plan("p1")
    assert {f.status for f in plan.files} == {"ok"}
    before = tree(other)
    real = _swap_for_symlink(cwd, other)
    with pytest.raises(RootChangedError) as exc:
        s.fresh().plan("p1")
    assert exc.value.path == str(cwd) and "symlink" in exc.value.reason
    assert exc.value.data["recorded"] is None
    assert tree(other) == before
    cwd.unlink()
    os.rename(real, cwd)
    # Identities recorded later stand in for the old snapshots' (what is known is compared).
    history = s.fresh()
    s.history = history
    s.track("a.txt")
    _replace_dir(cwd)
    with pytest.raises(RootChangedError):
        s.fresh().plan("p1")


def test_bad_root_identities_are_invalid_snapshots(store: Path, cwd: Path) -> None:
    from sessiond.filehistory import InvalidSnapshotError  # noqa: PLC0415

    s = Session(store, cwd)
    bad_roots: list[object] = [
        [],
        {"": {"dev": 1, "ino": 2}},
        {str(cwd): {"dev": "1", "ino": 2}},
        {str(cwd): {"ino": 2}},
    ]
    for roots in bad_roots:
        with pytest.raises(InvalidSnapshotError):
            s.history.replay({"messageId": "p1", "kind": "checkpoint", "files": {}, "roots": roots})
    assert s.history.checkpoints == {}


# ---------------------------------------------------------------------- item 7: undo of a link


def _link_replaced_by_a_file(store: Path, cwd: Path, content: bytes) -> Session:
    """``ln -> real.txt`` tracked and checkpointed at ``p1``; then the session replaces the link
    with a regular file of its own holding ``content``."""
    (cwd / "ln").symlink_to("real.txt")
    s = Session(store, cwd)
    s.track("ln")
    s.checkpoint("p1")
    s.track("ln")
    (cwd / "ln").unlink()
    (cwd / "ln").write_bytes(content)
    s.track("ln", phase="after")
    return s


def test_undo_of_a_rewind_that_restored_a_symlink_brings_the_file_back(store: Path, cwd: Path) -> None:
    (cwd / "real.txt").write_bytes(b"the real file\n")
    s = _link_replaced_by_a_file(store, cwd, b"the session's own file\n")
    after_session = tree(cwd)

    _, rewound = s.rewind("p1", undo_id="u1")
    assert statuses(rewound) == {"ln": ("symlink", "ok")}
    assert os.readlink(cwd / "ln") == "real.txt"
    _, undone = s.rewind("u1", undo_id="u2")
    assert statuses(undone) == {"ln": ("write", "ok")}
    assert tree(cwd) == after_session
    assert leftovers(cwd) == []
    # And the undo of the undo puts the link back; a replayed history agrees.
    _, again = s.rewind("u2", undo_id="u3")
    assert statuses(again) == {"ln": ("symlink", "ok")}
    assert os.readlink(cwd / "ln") == "real.txt"
    history = s.fresh()
    plan = history.plan("u1")
    assert [(f.action, f.status) for f in plan.files] == [("write", "ok")]


def test_undo_of_a_rewind_that_recreated_a_deleted_symlink_deletes_it(store: Path, cwd: Path) -> None:
    (cwd / "ln").symlink_to("somewhere")
    s = Session(store, cwd)
    s.checkpoint("p0")
    s.track("ln")
    s.checkpoint("p1")
    s.delete("ln")
    _, rewound = s.rewind("p1", undo_id="u1")
    assert statuses(rewound) == {"ln": ("symlink", "ok")}
    _, undone = s.rewind("u1", undo_id="u2")
    assert statuses(undone) == {"ln": ("delete", "ok")}
    assert not os.path.lexists(cwd / "ln")


def test_an_undo_never_replaces_a_symlink_it_did_not_create(store: Path, cwd: Path, outside: Path) -> None:
    s = _link_replaced_by_a_file(store, cwd, b"mine\n")
    s.rewind("p1", undo_id="u1")
    # Someone re-points the link the rewind created: it is theirs now.
    (cwd / "ln").unlink()
    (cwd / "ln").symlink_to(outside / "victim.txt")
    for force in (False, True):
        _, result = s.rewind("u1", force=force, undo_id=f"u-{force}")
        assert statuses(result) == {"ln": ("write", "refused")}
        assert result.files[0].reason == "is a symlink"
    assert os.readlink(cwd / "ln") == str(outside / "victim.txt")
    assert (outside / "victim.txt").read_bytes() == b"do not touch\n"


def test_the_link_check_also_holds_between_plan_and_execute(store: Path, cwd: Path, tmp_path: Path) -> None:
    (cwd / "ln").symlink_to("real.txt")
    s = Session(store, cwd)
    s.track("ln")
    s.checkpoint("p1")
    s.track("ln")
    (cwd / "ln").unlink()
    (cwd / "ln").write_bytes(b"mine\n")
    s.track("ln", phase="after")
    s.rewind("p1", undo_id="u1")
    plan = s.history.plan("u1")
    assert [(f.action, f.status) for f in plan.files] == [("write", "ok")]
    s.history.undo_data(plan, "u2")
    (cwd / "ln").unlink()
    (cwd / "ln").symlink_to("/etc/passwd")
    result, _ = s.history.execute(plan)
    assert [f.status for f in result.files] == ["conflict"]
    assert os.readlink(cwd / "ln") == "/etc/passwd"


def test_snapshot_logs_stay_json(store: Path, cwd: Path) -> None:
    s = Session(store, cwd)
    _edited(s, cwd)
    s.rewind("p1")
    for data in s.log:
        assert json.loads(json.dumps(data)) == data
