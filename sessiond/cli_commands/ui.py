"""``ui``: open the web session viewer the store's daemon serves (starting the daemon if needed)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from .base import (
    EXIT_OK,
    EXIT_UNREACHABLE,
    CliError,
    Output,
    add_daemon_options,
    call,
    daemon_client,
    load_config,
    runner,
)

INFO_WAIT = 0.5
"""Seconds to wait for ``ui.json``: the daemon writes it before it opens its socket, so it is there
when the connection is; the wait only covers a slow file system."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ui",
        help="open the web session viewer in a browser (the daemon serves it on loopback)",
        description=(
            "Start the daemon when none runs, then open its session viewer: the list of sessions "
            "of every root, each session's tree, context, usage and file history, live. The URL "
            "carries a one-time code in its fragment (never sent over the network), good for one "
            "page load within a minute; the store's long-lived token never leaves its file."
        ),
    )
    add_daemon_options(p)
    p.add_argument("session", nargs="?", metavar="SESSION", help="open this session directly")
    p.add_argument("--no-browser", action="store_true", help="print the URL instead of opening a browser")
    p.add_argument(
        "--new-token",
        action="store_true",
        help="first replace the store's access token (tcp.token): every page, code and TCP client "
        "that used the old one is disconnected",
    )
    p.set_defaults(handler=runner(cmd_ui))


def viewer_url(info: dict[str, Any], code: str, session: str | None = None) -> str:
    """The viewer's address with a one-time code in the fragment (which browsers never send)."""
    import urllib.parse  # noqa: PLC0415

    fragment = {"code": code}
    if session:
        fragment["session"] = session
    return str(info["url"]) + "#" + urllib.parse.urlencode(fragment)


async def find_viewer(run_dir: Path, wait: float) -> dict[str, Any] | None:
    import asyncio  # noqa: PLC0415

    from ..web.location import read_info  # noqa: PLC0415

    deadline = time.monotonic() + wait
    while True:
        info = read_info(run_dir)
        if info is not None or time.monotonic() >= deadline:
            return info
        await asyncio.sleep(0.05)


async def cmd_ui(args: argparse.Namespace, out: Output) -> int:
    import webbrowser  # noqa: PLC0415

    config = load_config(args)
    async with daemon_client(args, name="sessiond-ui") as client:
        # the daemon runs (it was started if needed), so its ui.json is there
        info = await find_viewer(config.run_dir, INFO_WAIT)
        minted = None
        if info is not None:
            # Not the token: the browser's command line is readable by every local user
            # for as long as it runs. A code is good once, for a minute.
            minted = await call(client, "daemon/viewerCode", {"newToken": bool(args.new_token)})
    if info is None:
        raise CliError(
            f"the daemon of the store {config.root} serves no viewer: it was started with --ui off, "
            f"[ui] enabled = false is set in the configuration, or its address was taken (see "
            f"{config.root / 'daemon.log'})",
            EXIT_UNREACHABLE,
        )
    assert minted is not None
    url = viewer_url(info, str(minted["code"]), args.session)
    if out.json:
        out.emit({"url": url, "viewer": info["url"], "pid": info.get("pid")})
        if not args.no_browser:
            webbrowser.open(url)
        return EXIT_OK
    opened = False if args.no_browser else webbrowser.open(url)
    if opened:
        out.note(f"opened the session viewer at {info['url']}")
    else:
        if not args.no_browser:
            out.note("no browser could be opened; open this URL:")
        print(url)
    return EXIT_OK
