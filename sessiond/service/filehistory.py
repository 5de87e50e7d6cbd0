"""File history in the daemon: per-session snapshots, diffs and safe rewinds (docs/file-history.md).

The state machine and every touch of the user's files live in :mod:`sessiond.filehistory`;
this module gives each open session its history (replayed from the session's
``sessiond.fileSnapshot`` entries), persists what changes (as more such entries, or — for a
session sessiond may not write — in a side file in the store), runs the file work off the event
loop one operation per session at a time, and tells subscribers.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import orjson

from sessiond_protocol import methods as M

from ..errors import CheckpointNotFoundError
from ..filehistory import Blobs, BlobStore, FileHistory, Workspace, copy_blobs
from ..filehistory.references import SNAPSHOT
from ..filehistory.shared import Factory
from ..filehistory.states import MISSING_KEY, SYMLINK_PREFIX
from ..model import entries as E
from ..model.js import get
from ..store.journal import Durability
from ..store.session import Session
from .config import Config
from .navigation import navigate, prompt_text
from .peer import Peer
from .registry import SessionRegistry
from .views import require_entry

if TYPE_CHECKING:
    from .host import SessionHost

SIDE_FILE: Final = "snapshots.jsonl"


class _Open:
    """One session's history, its lock, and where its snapshots go."""

    def __init__(self, history: FileHistory, side: Path | None) -> None:
        self.history = history
        self.side = side
        """For a session sessiond may not write: the store file its snapshots are appended to."""
        self.lock = anyio.Lock()


class FileHistoryService:
    def __init__(
        self, registry: SessionRegistry, root: Path, config: Config, store_blobs: Factory = BlobStore
    ) -> None:
        """``root``: where blobs and side files go (``<store>/file-history``); ``store_blobs``:
        the blobs of a session of the store (the store backend's choice: this directory, or a
        store every daemon sharing the session reads)."""
        self.registry = registry
        self.root = root
        self.config = config
        self.store_blobs = store_blobs
        self._open: dict[str, _Open] = {}

    def blobs(self, session_id: str, shared: bool = True) -> Blobs:
        """A session's blobs: the store's for a session of the store (``shared``), else this
        daemon's directory (another agent's session, a file not in a shared store: their
        snapshots are kept on this daemon only)."""
        directory = self.root / session_id
        return self.store_blobs(directory) if shared else BlobStore(directory)

    # ------------------------------------------------------------------ loading

    async def _history(self, host: SessionHost) -> _Open:
        current = self._open.get(host.id)
        if current is not None and current.history.workspace.cwd == Path(host.session.cwd or "/"):
            return current
        opened = await anyio.to_thread.run_sync(lambda: self._load(host))
        self._open[host.id] = opened
        return opened

    def _load(self, host: SessionHost) -> _Open:
        session = host.session
        workspace = Workspace(Path(session.cwd or "/"), self.config.file_history_roots)
        shared = isinstance(session, Session) and session.remote is not None
        history = FileHistory(self.blobs(host.id, shared), workspace)
        side: Path | None = None
        if host.root is not None and host.root.format == "claude-code":
            from ..filehistory.claude import claude_history_data  # noqa: PLC0415

            for data in claude_history_data(session, history.blobs, self.config):
                history.replay(data)
        else:
            for data in _snapshot_data(host):
                history.replay(data)
        if session.read_only is not None:
            side = self.root / host.id / SIDE_FILE
            if side.exists():
                for line in side.read_bytes().splitlines():
                    if line.strip():
                        history.replay(orjson.loads(line))
        return _Open(history, side)

    def forget(self, session_id: str) -> None:
        self._open.pop(session_id, None)

    # ------------------------------------------------------------------ persisting

    async def _persist(self, host: SessionHost, opened: _Open, data: dict[str, Any]) -> str | None:
        """Record a snapshot entry: in the session, or in the side file of a read-only one."""
        if opened.side is not None:
            side = opened.side

            def write() -> None:
                side.parent.mkdir(parents=True, exist_ok=True)
                with open(side, "ab") as f:
                    f.write(orjson.dumps(data) + b"\n")

            await anyio.to_thread.run_sync(write)
            return None
        spec = {"type": E.CUSTOM, "customType": SNAPSHOT, "data": data}
        pending = await host.commit(lambda w: w.begin_append([spec], durability=Durability.FSYNC))
        return pending.entry_ids[0]

    def _publish(
        self, host: SessionHost, event: str, message_id: str | None, paths: list[str], **extra: Any
    ) -> None:
        update: dict[str, Any] = {
            "sessionUpdate": "file_history_update",
            "event": event,
            "messageId": message_id,
            "paths": paths,
        }
        update.update({k: v for k, v in extra.items() if v is not None})
        self.registry.hub.publish(host.id, update)

    # ------------------------------------------------------------------ methods

    async def fork(self, source: SessionHost, forked_id: str) -> None:
        """Give a fork (or clone) the blobs its copied snapshots refer to (hard links when possible)."""
        opened = await self._history(source)
        shas = opened.history.referenced_blobs()
        if shas:
            target = self.blobs(forked_id)
            await anyio.to_thread.run_sync(lambda: copy_blobs(opened.history.blobs, target, shas))

    async def track(
        self, user: Peer, session_id: str, path: str, message_id: str | None, phase: str
    ) -> M.TrackResult:
        host = await self.registry.host(session_id, user)
        _writable(host)
        opened = await self._history(host)
        async with opened.lock:
            data = await anyio.to_thread.run_sync(lambda: opened.history.track(path, message_id, phase))
            entry_id = await self._persist(host, opened, data)
        key = next(iter(data.get("seen") or data.get("files") or {path: None}))
        backed_up = (data.get("files") or {}).get(key)
        state = backed_up if backed_up is not None else _state_of(data["seen"][key])
        self._publish(host, "track", data["messageId"], [key])
        return M.TrackResult.model_construct(
            path=key,
            messageId=data["messageId"],
            state=state,
            backedUp=backed_up is not None,
            entryId=entry_id or "",
        )

    async def checkpoint(self, user: Peer, session_id: str, message_id: str) -> M.CheckpointResult:
        host = await self.registry.host(session_id, user)
        _writable(host)
        require_entry(host.session, message_id)
        opened = await self._history(host)
        async with opened.lock:
            history = opened.history
            previous = history.latest_checkpoint()
            data = await anyio.to_thread.run_sync(lambda: history.checkpoint(message_id))
            files = data.get("files") or {}
            entry_id = await self._persist(host, opened, data)  # even empty: rewinding to it must work
        changed = sum(1 for k, v in files.items() if previous is None or previous.get(k) != v)
        self._publish(host, "checkpoint", message_id, sorted(files))
        return M.CheckpointResult.model_construct(
            messageId=message_id, files=len(files), changed=changed, entryId=entry_id
        )

    async def list(self, user: Peer, session_id: str) -> M.FileHistoryListResult:
        host = await self.registry.host(session_id, user)
        opened = await self._history(host)
        session = host.session
        out = []
        previous: dict[str, Any] | None = None
        for message_id, snapshot in opened.history.checkpoints.items():
            files = {k: v.to_json() for k, v in snapshot.items()}
            entry = session.get(message_id) if message_id in session.tree else None
            message = get(entry, "message")
            content = get(message, "content")
            out.append(
                {
                    "messageId": message_id,
                    "kind": opened.history.kinds.get(message_id, "checkpoint"),
                    "prompt": prompt_text(content) if type(content) in (str, list) else None,
                    "timestamp": get(entry, "timestamp") if entry is not None else None,
                    "files": len(files),
                    "changed": sum(1 for k, v in files.items() if previous is None or previous.get(k) != v),
                }
            )
            previous = files
        return M.FileHistoryListResult.model_construct(
            checkpoints=out, tracked=sorted(opened.history.tracked)
        )

    async def diff(self, user: Peer, session_id: str, message_id: str, path: str | None) -> M.DiffResult:
        host = await self.registry.host(session_id, user)
        opened = await self._history(host)
        history = opened.history
        if message_id not in history.checkpoints:
            raise CheckpointNotFoundError(message_id)

        def run() -> list[dict[str, Any]]:
            return [d.as_json() for d in history.diff(message_id, path)]

        files = await anyio.to_thread.run_sync(run)
        return M.DiffResult.model_construct(
            files=files,
            added=sum(f.get("added", 0) for f in files),
            removed=sum(f.get("removed", 0) for f in files),
        )

    async def rewind(
        self,
        user: Peer,
        session_id: str,
        message_id: str,
        dry_run: bool,
        force: bool,
        conversation: bool,
    ) -> M.RewindResult:
        host = await self.registry.host(session_id, user)
        if conversation and not dry_run:
            _writable(host)  # moving the leaf writes the session: refuse before touching any file
        opened = await self._history(host)
        history = opened.history
        if message_id not in history.checkpoints:
            raise CheckpointNotFoundError(message_id)
        async with opened.lock:
            plan = await anyio.to_thread.run_sync(lambda: history.plan(message_id, force=force))
            if dry_run:
                report = plan.as_json()
                dry: dict[str, Any] = {**_totals(report), "dryRun": True, "files": report["files"]}
                return M.RewindResult.model_construct(**dry, undoId=None)
            undo_id = f"undo-{secrets.token_hex(6)}"
            undo = await anyio.to_thread.run_sync(lambda: history.undo_data(plan, undo_id))
            if undo.get("files"):
                await self._persist(host, opened, undo)
            else:
                undo_id = ""
            result, seen = await anyio.to_thread.run_sync(lambda: history.execute(plan))
            if seen.get("seen"):
                await self._persist(host, opened, seen)
        report = result.as_json()
        out: dict[str, Any] = {
            **_totals(report),
            "dryRun": False,
            "files": report["files"],
            "undoId": undo_id or None,
        }
        changed = [
            f["path"]
            for f in report["files"]
            if f.get("status") in ("ok", "forced") and f.get("action") != "none"
        ]
        self._publish(host, "rewind", message_id, changed, undoId=undo_id or None)
        if conversation and message_id in host.session.tree:
            moved = await navigate(host, message_id)
            out["leafId"] = moved.leafId
            out["editorText"] = moved.editorText
        return M.RewindResult.model_construct(**out)


def _totals(report: dict[str, Any]) -> dict[str, int]:
    files = report["files"]
    done = [f for f in files if f.get("status") in ("ok", "forced")]
    return {
        "written": sum(1 for f in done if f.get("action") in ("write", "symlink")),
        "deleted": sum(1 for f in done if f.get("action") == "delete"),
        "conflicts": sum(1 for f in files if f.get("status") == "conflict"),
        "refused": sum(1 for f in files if f.get("status") == "refused"),
    }


def _writable(host: SessionHost) -> None:
    host.writer()  # ReadOnlySessionError for a session sessiond must not write


def _snapshot_data(host: SessionHost) -> list[dict[str, Any]]:
    """The ``data`` of every ``sessiond.fileSnapshot`` entry, in file order (all branches)."""
    session = host.session
    index = session.index
    out = []
    for light in index.tree.entries:
        if get(light, "type") == E.CUSTOM and get(light, "customType") == SNAPSHOT:
            data = get(index.full(light), "data")
            if isinstance(data, dict):
                out.append(data)
    return out


def _state_of(content: str) -> dict[str, Any]:
    """The file state a ``seen`` content key stands for (a file's mode and size are not in it)."""
    if content == MISSING_KEY:
        return {"kind": "missing"}
    if content.startswith(SYMLINK_PREFIX):
        return {"kind": "symlink", "target": content.removeprefix(SYMLINK_PREFIX)}
    return {"kind": "file", "blob": content}
