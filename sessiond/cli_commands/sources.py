"""Where a read command gets a session from: the daemon (a session id) or a file (a path).

Both give the same shapes — the results of ``session/load``, ``tree/get``, ``tree/branch``,
``context/get`` and ``context/usage`` — so a command renders them one way. A file is only
read: a Pi file through :meth:`Session.open` with ``read_only`` (a v1/v2 file is migrated in
memory, never rewritten), a Claude Code transcript through :class:`ClaudeSession`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from .base import EXIT_USAGE, CliError, call, daemon_client, load_config, looks_like_file

READ_ONLY_REASON = "it was opened read-only by the sessiond command line"


class Source(Protocol):
    label: str
    """``sessionId`` or ``file`` with its value, for JSON output."""
    key: str

    async def describe(self) -> dict[str, Any]: ...
    async def tree(self) -> dict[str, Any]: ...
    async def branch(self, entry_id: str | None) -> dict[str, Any]: ...
    async def context(self, leaf_id: str | None) -> dict[str, Any]: ...
    async def usage(self) -> dict[str, Any]: ...


class DaemonSource:
    key = "sessionId"

    def __init__(self, client: Any, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.label = session_id

    async def describe(self) -> dict[str, Any]:
        result: dict[str, Any] = await call(self.client, "session/load", {"sessionId": self.session_id})
        return result

    async def tree(self) -> dict[str, Any]:
        result: dict[str, Any] = await call(self.client, "tree/get", {"sessionId": self.session_id})
        return result

    async def branch(self, entry_id: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": self.session_id, "full": True}
        if entry_id is not None:
            params["entryId"] = entry_id
        result: dict[str, Any] = await call(self.client, "tree/branch", params)
        return result

    async def context(self, leaf_id: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": self.session_id}
        if leaf_id is not None:
            params["leafId"] = leaf_id
        result: dict[str, Any] = await call(self.client, "context/get", params)
        return result

    async def usage(self) -> dict[str, Any]:
        result: dict[str, Any] = await call(self.client, "context/usage", {"sessionId": self.session_id})
        return result


class FileSource:
    """A session file read in this process, answering as the daemon would."""

    key = "file"

    def __init__(self, path: str, config: Any) -> None:
        from ..formats import claude_code as cc  # noqa: PLC0415
        from ..store.claude import ClaudeSession  # noqa: PLC0415
        from ..store.session import Session  # noqa: PLC0415

        self.path = Path(path).expanduser()
        self.label = str(self.path.absolute())
        self.config = config
        if not self.path.is_file():
            raise CliError(f"no such file: {path}", EXIT_USAGE)
        try:
            if cc.is_claude_code_file(self.path):
                self.format = "claude-code"
                self.session: Any = ClaudeSession.open(self.path)
            else:
                self.format = "pi"
                self.session = Session.open(self.path, read_only=READ_ONLY_REASON)
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE) from None
        except (ValueError, KeyError) as exc:
            raise CliError(f"{path} is not a session: {exc}", EXIT_USAGE) from None

    def close(self) -> None:
        self.session.close()

    async def describe(self) -> dict[str, Any]:
        s = self.session
        return {
            "sessionId": s.id,
            "path": str(s.path),
            "cwd": s.cwd,
            "name": s.name,
            "leafId": s.leaf_id,
            "entryCount": s.entry_count,
            "header": s.header,
            "saved": True,
            "diagnostics": s.diagnostics.as_json(),
            "format": self.format,
            "root": "file",
            "readOnly": True,
        }

    async def tree(self) -> dict[str, Any]:
        from ..model.js import get, key  # noqa: PLC0415

        session = self.session
        index = session.index
        tree = session.tree
        children: dict[Any, int] = {}
        for light in (tree.get(i) for i in tree.ids()):
            parent_key = key(get(light, "parentId"))
            children[parent_key] = children.get(parent_key, 0) + 1
        nodes = []
        for pos, light in enumerate(tree.entries):
            eid = get(light, "id")
            label = tree.label(eid)
            node: dict[str, Any] = {
                "id": eid,
                "parentId": get(light, "parentId"),
                "type": get(light, "type"),
                "preview": index.previews[pos],
                "timestamp": get(light, "timestamp"),
                "childCount": children.get(key(eid), 0),
            }
            role = get(get(light, "message"), "role")
            if type(role) is str:
                node["role"] = role
            if type(label) is str:
                node["label"] = label
            nodes.append(node)
        return {"leafId": session.leaf_id, "nodes": nodes}

    def _check(self, entry_id: str) -> None:
        from ..errors import EntryNotFoundError  # noqa: PLC0415

        if entry_id not in self.session.tree:
            raise EntryNotFoundError(entry_id)

    async def branch(self, entry_id: str | None) -> dict[str, Any]:
        from ..model.js import UNDEFINED  # noqa: PLC0415

        if entry_id is not None:
            self._check(entry_id)
        start = UNDEFINED if entry_id is None else entry_id
        return {"entryIds": self.session.branch_ids(start), "entries": self.session.branch(start)}

    async def context(self, leaf_id: str | None) -> dict[str, Any]:
        from ..model.js import get  # noqa: PLC0415

        session = self.session
        if leaf_id is None:
            projection = session.context()
        else:
            self._check(leaf_id)
            projection = session.context_for(session.tree.branch(leaf_id))
        messages = [
            {"entryId": get(p.source, "id"), "message": m} for p in projection.entries for m in p.messages
        ]
        return {
            "messages": messages,
            "thinkingLevel": projection.settings.thinking_level,
            "model": projection.settings.model,
            "entryIds": [get(p.source, "id") for p in projection.entries],
        }

    async def usage(self) -> dict[str, Any]:
        from ..model.tokens import get_estimator  # noqa: PLC0415
        from ..service.host import SessionHost, default_window_for  # noqa: PLC0415
        from ..service.hub import Hub  # noqa: PLC0415
        from ..service.settings import SessionSettings  # noqa: PLC0415

        settings = SessionSettings(self.config.layout.root / "settings")

        def own_window(session_id: str) -> int | None:
            try:
                value = settings.get(session_id).get("contextWindow")
            except Exception:  # an id the store would not accept: no per-session setting
                return None
            return value if type(value) is int else None

        window_for = default_window_for(dict(self.config.context_windows), own_window)
        host = SessionHost(self.session, Hub(), get_estimator(self.config.estimator), window_for)
        return host.usage()


@contextlib.asynccontextmanager
async def open_source(args: argparse.Namespace, target: str) -> AsyncIterator[Source]:
    """A FILE path is read here; anything else is a session id asked of the daemon."""
    if looks_like_file(target):
        source = FileSource(os.path.expanduser(target), load_config(args))
        try:
            yield source
        finally:
            source.close()
        return
    async with daemon_client(args) as client:
        yield DaemonSource(client, target)
