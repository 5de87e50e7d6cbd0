"""``doctor``: check the setup and say what is wrong and how to fix it.

Never starts the daemon and never changes anything. Each check is ``ok``, ``warn`` (works,
but worth knowing) or ``fail`` (something to fix); any ``fail`` makes the exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads inside the functions that draw (`sessiond --help` stays light)
    pass

from .. import __version__
from .base import (
    EXIT_OK,
    EXIT_USAGE,
    Output,
    add_json_option,
    add_store_options,
    load_config,
    runner,
)

STATUS_STYLES = {"ok": "green", "warn": "yellow", "fail": "bold red"}
PRIVATE = 0o700


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the setup: daemon, store permissions, versions, file watching, summarizer, roots",
        description=(
            "Check what sessiond needs and print one line per check (ok / warn / fail). It never "
            "starts the daemon and changes nothing. Exit code 2 when a check failed."
        ),
    )
    add_store_options(p)
    add_json_option(p)
    p.set_defaults(handler=runner(cmd_doctor))


class Checks:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, name: str, status: str, detail: str, **data: Any) -> None:
        self.items.append({"name": name, "status": status, "detail": detail, **data})

    @property
    def failed(self) -> bool:
        return any(c["status"] == "fail" for c in self.items)


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def _check_private_dir(
    checks: Checks, name: str, path: Path, what: str, *, missing: str, may_be_shared: bool = False
) -> None:
    """``may_be_shared``: a directory with the sticky bit (``/tmp``) is a warning, not a failure
    with "chmod 700" as the advice — that would take it away from every other user; what is in
    it stays private by its own mode (the daemon leaves such a directory as it is)."""
    mode = _mode(path)
    if mode is None:
        detail = f"{path} does not exist yet ({missing})"
        checks.add(name, "warn", detail, path=str(path), exists=False, mode=None)
        return
    owner_ok = path.stat().st_uid == os.getuid()
    data = {"path": str(path), "exists": True, "mode": f"{mode:04o}"}
    if may_be_shared and mode & stat.S_ISVTX:
        detail = (
            f"{path} is shared ({mode:04o}): what sessiond puts there stays private by its own mode, "
            "but a directory of its own is safer (another user could take the socket's name first)"
        )
        checks.add(name, "warn", detail, **data)
    elif not owner_ok:
        checks.add(name, "fail", f"{path} belongs to another user", **data)
    elif mode & 0o077:
        detail = f"{path} is {mode:04o}: {what} must be private; run chmod 700 {path}"
        checks.add(name, "fail", detail, **data)
    else:
        checks.add(name, "ok", f"{path} ({mode:04o})", **data)


async def _probe_daemon(socket: Path) -> tuple[str, str, dict[str, Any]]:
    """(status, detail, data) of the daemon behind ``socket``, without starting one."""
    import asyncio  # noqa: PLC0415

    from sessiond_client.client import Client  # noqa: PLC0415

    if not socket.exists():
        return "warn", f"no daemon is running (no socket at {socket}); commands start one when needed", {}
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(socket)), 5)
    except (ConnectionRefusedError, FileNotFoundError):
        return "warn", f"{socket} exists but nobody listens (a stale socket; the next daemon replaces it)", {}
    except (OSError, TimeoutError) as exc:
        return "fail", f"cannot connect to {socket}: {exc}", {}
    client = Client(reader, writer)
    try:
        params = {"protocolVersion": 1, "clientInfo": {"name": "sessiond-doctor", "version": __version__}}
        result = await client.request("initialize", params, timeout=5)
    except Exception as exc:
        return "fail", f"the daemon at {socket} did not answer initialize: {exc}", {}
    finally:
        await client.close()
    info = result.get("serverInfo") or {}
    data = {"daemonVersion": info.get("version"), "protocolVersion": result.get("protocolVersion")}
    return "ok", f"reachable at {socket}", data


def _watcher(checks: Checks, config: Any) -> None:
    watch = config.watch
    if not watch.enabled:
        checks.add("watcher", "warn", "following is off ([watch] enabled = false)", backend=None)
        return
    own = (
        f"the store is stat-polled every {watch.own_poll_interval:g} s"
        if watch.own_poll_interval > 0
        else "the store uses kernel watches too (own_poll_interval = 0)"
    )
    if os.environ.get("SESSIOND_WATCH_POLL", "").strip().lower() in {"1", "true", "yes", "on"}:
        checks.add("watcher", "ok", f"polling (SESSIOND_WATCH_POLL is set); {own}", backend="polling")
        return
    if watch.poll_interval > 0:
        detail = f"polling every {watch.poll_interval:g} s ([watch] poll_interval); {own}"
        checks.add("watcher", "ok", detail, backend="polling")
        return
    try:
        importlib.import_module("watchfiles._rust_notify")
        main = importlib.import_module("watchfiles.main")
        version = getattr(importlib.import_module("watchfiles"), "__version__", "?")
    except ImportError as exc:
        detail = f"watchfiles is not importable ({exc}): polling instead; {own}"
        checks.add("watcher", "warn", detail, backend="polling")
        return
    try:
        force = bool(main._default_force_polling(None))
    except Exception:
        force = False
    if force:
        checks.add(
            "watcher",
            "warn",
            f"watchfiles {version} would poll here (WSL or WATCHFILES_FORCE_POLLING): polling; {own}",
            backend="polling",
        )
        return
    limit = Path("/proc/sys/fs/inotify/max_user_watches")
    extra = ""
    if limit.exists():
        try:
            extra = f", max_user_watches {int(limit.read_text().strip()):,}"
        except (OSError, ValueError):
            extra = ""
    backend = "inotify" if sys.platform.startswith("linux") else "native"
    checks.add("watcher", "ok", f"{backend} via watchfiles {version}{extra}; {own}", backend=backend)


def _summarizer(checks: Checks, config: Any) -> None:
    import shutil  # noqa: PLC0415

    choice = config.compaction.summarizer
    command, http = config.summarizer.command, config.summarizer.http
    configured = []
    status, notes = "ok", []
    if command is not None:
        exe = command.argv[0]
        found = shutil.which(exe) if os.sep not in exe else (exe if os.access(exe, os.X_OK) else None)
        if found:
            configured.append(f"command {' '.join(command.argv)}")
        else:
            status = "fail"
            notes.append(f"[summarizer.command] {exe!r} is not an executable on PATH")
    if http is not None:
        configured.append(f"http {http.base_url} model {http.model}")
        if http.api_key_env and not os.environ.get(http.api_key_env):
            status = "warn" if status == "ok" else status
            notes.append(f"${http.api_key_env} is not set in this environment (the daemon's may differ)")
    if choice == "command" and command is None:
        status, notes = "fail", [*notes, "summarizer = 'command' but no [summarizer.command] is configured"]
    if choice == "http" and http is None:
        status, notes = "fail", [*notes, "summarizer = 'http' but no [summarizer.http] is configured"]
    if choice == "client":
        notes.append("summarizer = 'client': compaction needs a connected agent that summarises")
    available = "; ".join(configured) if configured else "only the built-in extractive one"
    detail = f"default {choice}; {available}"
    if notes:
        detail += " — " + "; ".join(notes)
    checks.add(
        "summarizer",
        status,
        detail,
        default=choice,
        command=list(command.argv) if command else None,
        http={"baseUrl": http.base_url, "model": http.model, "apiKeyEnv": http.api_key_env} if http else None,
    )


def _roots(checks: Checks, config: Any) -> None:
    for root in config.roots:
        exists = root.path.is_dir()
        access = "read-write" if root.writable else "read-only"
        where = f"{root.path}" + ("" if exists else " (absent: nothing to serve yet)")
        checks.add(
            f"root {root.name}",
            "ok",
            f"{where}, {root.format}, {access}",
            root=root.name,
            path=str(root.path),
            exists=exists,
            format=root.format,
            writable=root.writable,
        )
        if exists and root.format == "pi":
            _session_files(checks, root)
    for path in config.file_history_roots:
        exists = path.is_dir()
        checks.add(
            "file-history root",
            "ok" if exists else "warn",
            f"{path}" + ("" if exists else " does not exist ([file_history] roots)"),
            path=str(path),
            exists=exists,
        )


MAX_NAMED_FILES = 20
"""How many unreadable or damaged files ``doctor`` names per root (the counts are exact)."""


def _session_files(checks: Checks, root: Any) -> None:
    """A Pi-format root's files that are not sessions (empty, garbage, unreadable) and sessions
    with lines every reader skips: listed here, since the list (like Pi's) leaves the first
    out and the second are loaded without a word."""
    from ..store.listing import list_sessions_in  # noqa: PLC0415

    listed = {info.path: info for info in list_sessions_in(root.path)}
    unreadable: list[dict[str, Any]] = []
    for directory in sorted(root.path.glob("--*--")):
        for path in sorted(directory.glob("*.jsonl")):
            if str(path) in listed:
                continue
            try:
                size = path.stat().st_size
                reason = "empty" if size == 0 else "not a session (no header line)"
            except OSError as exc:
                reason = f"cannot be read: {exc.strerror or exc}"
            unreadable.append({"path": str(path), "reason": reason})
    damaged = [
        {"path": info.path, "sessionId": info.id, "badLines": info.bad_lines}
        for info in listed.values()
        if info.bad_lines
    ]
    name = f"files {root.name}"
    if not unreadable and not damaged:
        count = f"{len(listed)} session{'' if len(listed) == 1 else 's'}"
        checks.add(name, "ok", f"{count}, every line readable", unreadable=[], damaged=[])
        return
    parts = []
    if unreadable:
        parts.append(f"{len(unreadable)} unreadable file{'s' if len(unreadable) > 1 else ''} (not listed)")
    if damaged:
        lines = sum(d["badLines"] for d in damaged)
        parts.append(
            f"{len(damaged)} session{'s' if len(damaged) > 1 else ''} with {lines} bad "
            f"line{'s' if lines > 1 else ''} (skipped)"
        )
    named = [f"{u['path']}: {u['reason']}" for u in unreadable[:MAX_NAMED_FILES]]
    named += [f"{d['path']}: {d['badLines']} bad lines" for d in damaged[:MAX_NAMED_FILES]]
    checks.add(
        name,
        "warn",
        "; ".join(parts) + ": " + "; ".join(named),
        unreadable=unreadable,
        damaged=damaged,
    )


async def cmd_doctor(args: argparse.Namespace, out: Output) -> int:
    import platform  # noqa: PLC0415

    from sessiond_protocol import PROTOCOL_VERSION  # noqa: PLC0415

    checks = Checks()
    checks.add(
        "cli",
        "ok",
        f"sessiond {__version__}, Python {platform.python_version()}, protocol {PROTOCOL_VERSION}",
        version=__version__,
        protocolVersion=PROTOCOL_VERSION,
    )
    try:
        config = load_config(args)
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc)
        checks.add("config", "fail", message)
        return _report(out, checks)
    source = str(config.config_file) if config.config_file else "none (built-in defaults)"
    file = str(config.config_file) if config.config_file else None
    checks.add("config", "ok", f"config file: {source}", file=file)
    _check_private_dir(checks, "store", config.root, "the store", missing="created when the daemon starts")
    _check_private_dir(
        checks,
        "socket dir",
        config.run_dir,
        "the socket's directory",
        missing="created by the daemon",
        may_be_shared=True,
    )
    status, detail, data = await _probe_daemon(config.socket)
    checks.add("daemon", status, detail, socket=str(config.socket), reachable=bool(data), **data)
    if data:
        version = data.get("daemonVersion")
        if version == __version__:
            checks.add("daemon version", "ok", f"{version} (same as the CLI)")
        else:
            checks.add(
                "daemon version",
                "warn",
                f"the daemon runs {version}, this CLI is {__version__}: restart the daemon to update it",
            )
        proto = data.get("protocolVersion")
        if proto == PROTOCOL_VERSION:
            checks.add("protocol", "ok", f"protocol {proto}")
        else:
            checks.add("protocol", "fail", f"the daemon speaks protocol {proto}, this CLI {PROTOCOL_VERSION}")
    _watcher(checks, config)
    _summarizer(checks, config)
    _roots(checks, config)
    return _report(out, checks)


def _report(out: Output, checks: Checks) -> int:
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    code = EXIT_USAGE if checks.failed else EXIT_OK
    if out.json:
        out.emit({"ok": not checks.failed, "checks": checks.items})
        return code
    table = Table(box=None, pad_edge=False, show_header=False, show_edge=False)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, style="bold")
    table.add_column(overflow="fold")
    for c in checks.items:
        table.add_row(Text(c["status"], style=STATUS_STYLES.get(c["status"], "")), c["name"], c["detail"])
    out.show(table)
    if checks.failed:
        out.show(Text("Some checks failed.", style="bold red"))
    return code
