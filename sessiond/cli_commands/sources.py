"""Where a read command gets a session from: the daemon (a session id) or a file (a path).

A FILE argument is always read here. A session id is asked of the daemon — except with
``--no-start`` when no daemon runs: then its file is found in the roots (as the daemon would
find it) and read here too, so ``show``/``tree``/``context``/``usage``/``ls`` work with no
daemon at all and never start one. Both give the same shapes — the results of
``session/load``, ``tree/get``, ``tree/branch``, ``context/get`` and ``context/usage``, made by
the same code (:mod:`sessiond.service.views`) — so a command renders them one way. A file is
only read: a Pi file through :meth:`Session.open` with ``read_only`` (a v1/v2 file is migrated
in memory, never rewritten), a Claude Code transcript through :class:`ClaudeSession`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .base import (
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CliError,
    Output,
    call,
    daemon_client,
    load_config,
    looks_like_file,
    match_session_id,
    not_a_session_message,
    path_problem,
    resolve_session,
    wants_prefix_match,
)

if TYPE_CHECKING:
    from ..store.session import ReadableSession

READ_ONLY_REASON = "it was opened read-only by the sessiond command line"


class Source(Protocol):
    label: str
    """``sessionId`` or ``file`` with its value, for JSON output."""
    key: str

    async def describe(self) -> dict[str, Any]: ...
    async def tree(self) -> dict[str, Any]: ...
    async def branch(self, entry_id: str | None, *, full: bool = True) -> dict[str, Any]: ...
    async def context(self, leaf_id: str | None) -> dict[str, Any]: ...
    async def usage(self) -> dict[str, Any]: ...


class DaemonSource:
    key = "sessionId"

    def __init__(self, client: Any, session_id: str, out: Output | None = None) -> None:
        self.client = client
        self.session_id = session_id
        self.label = session_id
        self.out = out

    async def describe(self) -> dict[str, Any]:
        # A huge session takes the daemon a while to index the first time: show that it works.
        params = {"sessionId": self.session_id, "workDoneToken": f"sessiond-cli-load-{os.getpid()}"}
        result: dict[str, Any] = await with_progress(
            self.out, f"Loading {self.session_id}", call(self.client, "session/load", params, timeout=600)
        )
        return result

    async def tree(self) -> dict[str, Any]:
        result: dict[str, Any] = await call(self.client, "tree/get", {"sessionId": self.session_id})
        return result

    async def branch(self, entry_id: str | None, *, full: bool = True) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": self.session_id, "full": full}
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


def open_session_file(path: Path) -> tuple[str, ReadableSession]:
    """``(format, session)`` of a session FILE, opened read-only, whatever agent wrote it.

    The format is sniffed from the content, never the name or place: a Claude Code transcript,
    else a Codex rollout or ``<data>/opencode.db#<id>``, else a Pi session (which raises
    :class:`~sessiond.errors.NotASessionError` when it is none). Every command that takes a
    FILE reads it here, so they agree on what a file is.
    """
    from ..inspection import open_agent_session  # noqa: PLC0415
    from ..store.claude import ClaudeSession  # noqa: PLC0415
    from ..store.claude_files import is_claude_code_file  # noqa: PLC0415
    from ..store.session import Session  # noqa: PLC0415

    if is_claude_code_file(path):
        return "claude-code", ClaudeSession.open(path)
    agent = open_agent_session(path)
    if agent is not None:
        return str(agent.diagnostics.as_json().get("format")), agent
    return "pi", Session.open(path, read_only=READ_ONLY_REASON)


class FileSource:
    """A session file read in this process, answering as the daemon would."""

    key = "file"
    format: str
    session: ReadableSession

    def __init__(
        self,
        path: str | Path,
        config: Any,
        *,
        session_id: str | None = None,
        root: Any = None,
        out: Output | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.config = config
        self.root = root
        if session_id is not None:  # found in a root for a session id: answer like the daemon
            self.key, self.label = "sessionId", session_id
        else:
            self.label = str(self.path.absolute())
        problem = path_problem(self.path)
        if problem is not None:
            raise CliError(problem, EXIT_USAGE)
        self._out = out

    async def load(self) -> None:
        """Read the file (in a thread, with a progress bar on a terminal when it takes a while)."""
        import asyncio  # noqa: PLC0415

        from ..errors import NotASessionError  # noqa: PLC0415

        def read() -> tuple[str, ReadableSession]:
            return open_session_file(self.path)

        try:
            size = self.path.stat().st_size if self.path.is_file() else 0
            what = f"Reading {self.path.name} ({size / 1e6:,.1f} MB)"
            self.format, self.session = await with_progress(
                self._out, what, asyncio.to_thread(read), at_once=size >= PROGRESS_BYTES
            )
        except OSError as exc:
            raise CliError(f"cannot read {self.path}: {exc.strerror or exc}", EXIT_USAGE) from None
        except NotASessionError as exc:
            raise CliError(not_a_session_message(self.path, exc), EXIT_USAGE) from None
        except (ValueError, KeyError) as exc:
            raise CliError(f"{self.path} is not a session: {exc}", EXIT_USAGE) from None

    def close(self) -> None:
        self.session.close()

    # The daemon's own views of the session (sessiond.service.views), so the shapes are its.

    async def describe(self) -> dict[str, Any]:
        import asyncio  # noqa: PLC0415

        from ..service import views  # noqa: PLC0415
        from ..service.catalog import row_of_file  # noqa: PLC0415
        from ..service.results import wire  # noqa: PLC0415

        root = self.root.name if self.root is not None else "file"
        row = await asyncio.to_thread(row_of_file, Path(self.session.path), self.format)
        result: dict[str, Any] = wire(views.describe(self.session, format=self.format, root=root, row=row))
        return result

    async def tree(self) -> dict[str, Any]:
        from ..service import views  # noqa: PLC0415
        from ..service.results import wire  # noqa: PLC0415

        result: dict[str, Any] = wire(views.tree(self.session))
        return result

    async def branch(self, entry_id: str | None, *, full: bool = True) -> dict[str, Any]:
        from ..service import views  # noqa: PLC0415
        from ..service.results import wire  # noqa: PLC0415

        result: dict[str, Any] = wire(views.branch(self.session, entry_id, full))
        return result

    async def context(self, leaf_id: str | None) -> dict[str, Any]:
        from ..service import views  # noqa: PLC0415
        from ..service.results import wire  # noqa: PLC0415

        result: dict[str, Any] = wire(views.context(self.session, leaf_id))
        return result

    async def usage(self) -> dict[str, Any]:
        from ..model.tokens import get_estimator  # noqa: PLC0415
        from ..service import views  # noqa: PLC0415
        from ..service.host import default_window_for  # noqa: PLC0415
        from ..service.results import wire  # noqa: PLC0415
        from ..service.settings import SessionSettings  # noqa: PLC0415

        settings = SessionSettings(self.config.layout.root / "settings")

        def own_window(session_id: str) -> int | None:
            try:
                value = settings.get(session_id).get("contextWindow")
            except Exception:  # an id the store would not accept: no per-session setting
                return None
            return value if type(value) is int else None

        window_for = default_window_for(dict(self.config.context_windows), own_window)
        estimator = get_estimator(self.config.estimator)
        result: dict[str, Any] = wire(views.usage(self.session, estimator, window_for))
        return result


PROGRESS_BYTES = 8 * 1024 * 1024
"""A file at least this big gets its progress bar at once; a smaller one only if it is slow."""
PROGRESS_DELAY = 0.5
"""Seconds of work before a progress bar appears (quick work draws nothing)."""

T = TypeVar("T")


async def with_progress(
    out: Output | None, description: str, work: Awaitable[T], *, at_once: bool = False
) -> T:
    """Await ``work``; on a terminal, a transient progress bar on stderr while it runs long.

    The bar only appears when stderr is a terminal, so pipes, files and ``--json`` consumers
    never see it; work that ends within :data:`PROGRESS_DELAY` draws nothing at all.
    """
    import asyncio  # noqa: PLC0415

    task = asyncio.ensure_future(work)
    if out is None or not out.err.is_terminal:
        return await task
    if not at_once:
        done, _ = await asyncio.wait({task}, timeout=PROGRESS_DELAY)
        if done:
            return task.result()
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=out.err,
        transient=True,
    )
    with progress:
        progress.add_task(description, total=None)
        return await task


def catalog(config: Any) -> Any:
    """The daemon's view of the roots (the store, Pi's, Claude Code's, Codex's, OpenCode's), built
    here to read them directly."""
    from ..service.catalog import Catalog  # noqa: PLC0415
    from ..store.listing import ListingCache  # noqa: PLC0415

    return Catalog(config.roots, ListingCache())


@contextlib.asynccontextmanager
async def daemon_or_none(args: argparse.Namespace, out: Output | None) -> AsyncIterator[Any]:
    """The daemon's client; ``None`` when ``--no-start`` was given and no daemon runs."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            client = await stack.enter_async_context(daemon_client(args))
        except CliError as exc:
            if not (getattr(args, "no_start", False) and exc.code == EXIT_UNREACHABLE):
                raise
            if out is not None:
                out.note("no daemon is running: reading the session files directly")
            client = None
        yield client


@contextlib.asynccontextmanager
async def open_source(
    args: argparse.Namespace, target: str, out: Output | None = None
) -> AsyncIterator[Source]:
    """A FILE path is read here; a session id is asked of the daemon (or, with ``--no-start``
    and no daemon, its file is found in the roots and read here)."""
    config = load_config(args)
    if looks_like_file(target):
        source = FileSource(os.path.expanduser(target), config, out=out)
    else:
        async with daemon_or_none(args, out) as client:
            if client is not None:
                yield DaemonSource(client, await resolve_session(client, target), out)
                return
        found = catalog(config)
        if wants_prefix_match(target):
            target = match_session_id(target, (x.info.id for x in found.list_all()))
        root, path = found.find(target)
        source = FileSource(path, config, session_id=target, root=root, out=out)
    await source.load()
    try:
        yield source
    finally:
        source.close()
