"""The daemon itself: ``status`` (is one running for this store, and what is it doing) and ``stop``.

A daemon is known two ways: it answers on the store's socket (then ``daemon/status`` says
everything), and it holds the exclusive lock on ``<store>/daemon.lock``, whose content is its
pid. A daemon that holds the lock but does not answer (one serving a single client on
``--stdio``, or listening on another ``--socket``) is reported as such: it is running, and a
second ``serve`` for the store would fail.

Exit codes — ``status``: 0 a daemon runs and answered; 3 none runs for the store; 1 one holds the
store but does not answer on the socket. ``stop``: 0 it stopped (the lock is released, every
session flushed and closed); 3 none was running; 1 it did not stop within ``--timeout`` seconds
(or could not be signalled).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads inside the functions that draw (`sessiond --help` stays light)
    pass

from .base import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_UNREACHABLE,
    CliError,
    Output,
    add_json_option,
    add_store_options,
    initialize_params,
    load_config,
    runner,
)
from .render import one_line

STOP_TIMEOUT = 10.0
"""Seconds ``stop`` waits by default: the daemon answers what is in flight and flushes first."""
CONNECT_TIMEOUT = 5.0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "status",
        help="is a daemon running for the store? pid, version, uptime, socket, open sessions, clients",
        description=(
            "Report on the store's daemon: whether it runs, its pid, version and uptime, its store, "
            "socket and log, the sessions it holds open and the clients connected to it. Never starts "
            "one. Exit codes: 0 running, 3 not running, 1 running but not answering on the socket."
        ),
    )
    add_store_options(p)
    add_json_option(p)
    p.set_defaults(handler=runner(cmd_status))

    p = sub.add_parser(
        "stop",
        help="stop the store's daemon gracefully and wait until it has",
        description=(
            "Ask the store's daemon to stop (SIGTERM): it stops accepting clients, answers the requests "
            "in flight, flushes and closes every session and removes its socket. Waits until it has "
            "released the store. Exit codes: 0 stopped, 3 none was running, 1 it did not stop in time."
        ),
    )
    add_store_options(p)
    p.add_argument(
        "--timeout",
        type=float,
        default=STOP_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for it to stop (default {STOP_TIMEOUT:g})",
    )
    add_json_option(p)
    p.set_defaults(handler=runner(cmd_stop))


# ---------------------------------------------------------------------------- finding the daemon


def lock_holder(lock_path: Path) -> int | None:
    """The pid of the daemon holding the store's lock (0 when it did not say), or None if no
    process holds it. Only tests the lock: a shared lock taken and dropped at once."""
    try:
        f = open(lock_path)  # noqa: SIM115 (closed below; the lock must be tested on this descriptor)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            text = f.read().strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return None
    finally:
        f.close()


async def ask_status(socket: Path) -> dict[str, Any] | None:
    """``daemon/status`` of the daemon on ``socket``; None when nothing answers there.

    A daemon too old to know ``daemon/status`` still answers ``initialize``: then what that
    says (version) is returned, with ``partial`` set."""
    import asyncio  # noqa: PLC0415

    from sessiond_client.client import Client, RpcError  # noqa: PLC0415

    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(socket), limit=2**26), CONNECT_TIMEOUT
        )
    except (OSError, TimeoutError):
        return None
    client = Client(reader, writer)
    try:
        init = await client.request("initialize", initialize_params("sessiond-status"), timeout=15)
        await client.notify("initialized", {})
        try:
            status: dict[str, Any] = await client.request("daemon/status", {}, timeout=15)
        except RpcError:
            return {"version": init.get("serverInfo", {}).get("version"), "partial": True}
        return status
    except (OSError, TimeoutError, ConnectionError, RpcError):
        return None
    finally:
        with contextlib.suppress(Exception):
            await client.close()


# ---------------------------------------------------------------------------- status


def uptime(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


async def cmd_status(args: argparse.Namespace, out: Output) -> int:
    from rich.text import Text  # noqa: PLC0415

    config = load_config(args)
    base = {"store": str(config.root), "socket": str(config.socket)}
    status = await ask_status(config.socket)
    if status is not None:
        document = {"running": True, **base, **status}
        if out.json:
            out.emit(document)
        else:
            _print_status(out, document)
        return EXIT_OK
    holder = lock_holder(config.lock_path)
    if holder is None:
        if out.json:
            out.emit({"running": False, **base, "pid": None})
        else:
            out.show(f"sessiond is not running for the store {config.root}", markup=False)
            out.show(Text(f"(socket {config.socket}; start it with `sessiond serve`)", style="dim"))
        return EXIT_UNREACHABLE
    pid = holder or None
    message = (
        f"a daemon{f' (pid {pid})' if pid else ''} holds the store {config.root} but does not answer on "
        f"{config.socket}: it may serve one client on --stdio, or listen on another --socket"
    )
    if out.json:
        out.emit({"running": True, **base, "pid": pid, "answering": False, "message": message})
    else:
        print(f"sessiond status: {message}", file=sys.stderr)
    return EXIT_INTERNAL


def _memory_line(m: dict[str, Any]) -> str:
    """RSS, what is held parsed against the budget (by kind), evictions."""
    mib = 1024 * 1024
    parts = []
    if m.get("rssBytes"):
        parts.append(f"RSS {m['rssBytes'] / mib:.0f} MiB")
    kinds = ", ".join(f"{k} {v / mib:.1f}" for k, v in sorted((m.get("heldByKind") or {}).items()))
    held = f"{m.get('heldBytes', 0) / mib:.1f} of {m.get('budgetBytes', 0) / mib:.0f} MiB held parsed"
    parts.append(held + (f" ({kinds})" if kinds else ""))
    parts.append(f"{m.get('evictions', 0)} evictions")
    return "; ".join(parts)


def _print_status(out: Output, s: dict[str, Any]) -> None:
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    head = Text()
    head.append(f"sessiond {s.get('version') or '?'}", style="bold")
    head.append(" is running", style="bold green")
    facts = []
    if s.get("pid"):
        facts.append(f"pid {s['pid']}")
    if s.get("uptimeSeconds") is not None:
        facts.append(f"up {uptime(float(s['uptimeSeconds']))}")
    if facts:
        head.append(": " + ", ".join(facts))
    out.show(head)
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="dim", no_wrap=True)
    rows.add_column(overflow="fold")
    rows.add_row("store", str(s.get("store")))
    rows.add_row("socket", str(s.get("socket")))
    if s.get("tcp"):
        rows.add_row("tcp", str(s["tcp"]))
    rows.add_row("log", str(s.get("log") or "(not a file: a terminal or the service manager's journal)"))
    if s.get("partial"):
        rows.add_row("", "(this daemon does not report more: it predates `daemon/status`)")
        out.show(rows)
        return
    sessions = s.get("sessions") or []
    clients = s.get("clients") or []
    rows.add_row("sessions", f"{len(sessions)} open")
    rows.add_row("clients", f"{len(clients)} connected (this command included)")
    memory = s.get("memory")
    if isinstance(memory, dict):
        rows.add_row("memory", _memory_line(memory))
    out.show(rows)
    if sessions:
        table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
        for name in ("SESSION", "FORMAT", "ROOT", "SUBSCRIBERS", "PATH"):
            table.add_column(name, no_wrap=name != "PATH")
        for x in sessions:
            table.add_row(
                Text(str(x.get("sessionId")), style="cyan"),
                str(x.get("format")),
                str(x.get("root")) + (" (ro)" if x.get("readOnly") else ""),
                str(x.get("subscribers", 0)),
                str(x.get("path")),
            )
        out.show(table)
    if clients:
        table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
        for name in ("CLIENT", "NAME", "CONNECTION", "SINCE", "SUBSCRIBED"):
            table.add_column(name, no_wrap=True)
        for c in clients:
            name = " ".join(str(v) for v in (c.get("name"), c.get("version")) if v) or "-"
            if c.get("current"):
                name += " (this command)"
            table.add_row(
                f"#{c.get('id')}",
                one_line(name, 60),
                str(c.get("peer")),
                str(c.get("connectedAt")),
                str(len(c.get("subscriptions") or [])),
            )
        out.show(table)


# ---------------------------------------------------------------------------- stop


async def cmd_stop(args: argparse.Namespace, out: Output) -> int:
    import asyncio  # noqa: PLC0415

    if not args.timeout > 0:
        raise CliError("--timeout must be a number of seconds > 0")
    config = load_config(args)
    status = await ask_status(config.socket)
    holder = lock_holder(config.lock_path)
    pid = (status or {}).get("pid") or holder or None
    if status is None and holder is None:
        if out.json:
            out.emit({"stopped": False, "running": False, "store": str(config.root), "pid": None})
        else:
            out.note(f"sessiond is not running for the store {config.root}: nothing to stop")
        return EXIT_UNREACHABLE
    if not pid:
        raise CliError(
            f"a daemon holds the store {config.root} but its pid is unknown ({config.lock_path} is empty); "
            "stop it from where it was started",
            EXIT_INTERNAL,
        )
    try:
        os.kill(int(pid), signal.SIGTERM)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile
    except PermissionError:
        raise CliError(f"not allowed to signal the daemon (pid {pid})", EXIT_INTERNAL) from None
    started = time.monotonic()
    while lock_holder(config.lock_path) is not None:
        if time.monotonic() - started > args.timeout:
            raise CliError(
                f"sessiond (pid {pid}) did not stop within {args.timeout:g} s; it may still be "
                f"flushing (see its log), or `kill -9 {pid}` ends it at once (acknowledged entries "
                "are on disk either way)",
                EXIT_INTERNAL,
                pid=pid,
            )
        await asyncio.sleep(0.05)
    took = time.monotonic() - started
    if out.json:
        out.emit({"stopped": True, "running": False, "store": str(config.root), "pid": pid, "seconds": took})
    else:
        out.show(f"stopped sessiond (pid {pid}) for the store {config.root} in {took:.1f} s", markup=False)
    return EXIT_OK
