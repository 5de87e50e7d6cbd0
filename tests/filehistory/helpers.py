"""A session's file history on a real temporary workspace, recording what it would persist."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from sessiond.filehistory import BlobStore, FileHistory, RewindPlan, RewindResult, Workspace

Tree = dict[str, tuple[str, bytes | str, int]]


class Session:
    """One agent session: its history, and the JSON of every snapshot it returned (the log)."""

    def __init__(self, store: Path, cwd: Path, session_id: str = "s1", roots: tuple[Path, ...] = ()) -> None:
        self.store = store
        self.cwd = cwd
        self.id = session_id
        self.roots = roots
        self.blobs = BlobStore(store / "file-history" / session_id)
        self.workspace = Workspace(cwd, roots)
        self.history = FileHistory(self.blobs, self.workspace)
        self.log: list[dict[str, Any]] = []

    def persist(self, data: dict[str, Any]) -> dict[str, Any]:
        # Through JSON, as the session file would hold it.
        self.log.append(json.loads(json.dumps(data)))
        return data

    def checkpoint(self, message_id: str) -> dict[str, Any]:
        return self.persist(self.history.checkpoint(message_id))

    def track(self, path: str, message_id: str | None = None, phase: str = "before") -> dict[str, Any]:
        return self.persist(self.history.track(path, message_id, phase))

    def write(self, path: str, content: bytes, mode: int | None = None) -> None:
        """What an agent's edit tool does: track before, write, track after."""
        self.track(path)
        target = self.cwd / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        if mode is not None:
            target.chmod(mode)
        self.track(path, phase="after")

    def delete(self, path: str) -> None:
        self.track(path)
        (self.cwd / path).unlink()
        self.track(path, phase="after")

    def rename(self, old: str, new: str) -> None:
        self.track(old)
        self.track(new)
        (self.cwd / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.cwd / old, self.cwd / new)
        self.track(old, phase="after")
        self.track(new, phase="after")

    def rewind(
        self, message_id: str, *, force: bool = False, undo_id: str | None = None
    ) -> tuple[RewindPlan, RewindResult]:
        plan = self.history.plan(message_id, force=force)
        dry = plan.as_json()
        undo = self.persist(self.history.undo_data(plan, undo_id or f"undo-{len(self.log)}"))
        assert undo["kind"] == "undo"
        result, seen = self.history.execute(plan)
        self.persist(seen)
        assert plan.as_json() == dry  # building the undo and executing leave the plan as it was
        return plan, result

    def fresh(self) -> FileHistory:
        """A new history for the same session, replayed from the log."""
        history = FileHistory(BlobStore(self.blobs.directory), Workspace(self.cwd, self.roots))
        for data in self.log:
            history.replay(data)
        return history


def statuses(result: RewindResult | RewindPlan) -> dict[str, tuple[str, str]]:
    """Each path's (action, status) in a rewind's answer, as a client would read it."""
    return {f["path"]: (f["action"], f["status"]) for f in result.as_json()["files"]}


def tree(root: Path) -> Tree:
    """Every file and symlink below ``root``: kind, content (or target) and mode."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*filenames, *dirnames]:
            full = Path(dirpath, name)
            st = full.lstat()
            rel = full.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.readlink(full), 0)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", full.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def leftovers(root: Path) -> list[str]:
    """Temporary files a rewind left behind (there must be none)."""
    return [str(p) for p in root.rglob(".sessiond-*")]
