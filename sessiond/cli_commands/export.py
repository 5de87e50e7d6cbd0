"""``export``: write any readable session as a new native Pi session in the store.

Runs in this process (no daemon needed): the source is found in the roots, or given as a
FILE and sniffed as every command sniffs one (:func:`.sources.open_session_file`), and only
read; the new session is a new file in the store, which a running daemon lists like any
other. See :mod:`sessiond.store.export`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .base import (
    EXIT_OK,
    EXIT_REFUSED,
    CliError,
    Output,
    add_json_option,
    add_store_options,
    load_config,
    looks_like_file,
    match_session_id,
    path_problem,
    runner,
    wants_prefix_match,
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write a session (Claude Code, Codex, OpenCode, Pi) as a new Pi session in the store",
        description=(
            "Write the conversation SESSION's agent would resume with as a new native Pi session "
            "in sessiond's store, so that Pi or an agent using sessiond can continue, branch and "
            "compact it. SESSION is a session id from any root, or a FILE (a Claude Code "
            "transcript, a Codex rollout, <data>/opencode.db#<id>, a Pi session). The source is "
            "only read. A session exported before is not exported again unless --again is given "
            "(the list shows an export's source)."
        ),
    )
    add_store_options(p)
    add_json_option(p)
    p.add_argument("session", metavar="SESSION", help="a session id, or a session FILE")
    p.add_argument("--format", choices=("pi",), default="pi", help="the format written (pi)")
    p.add_argument("--leaf", metavar="ENTRY", help="export the context at this entry instead of the leaf")
    p.add_argument(
        "--again", action="store_true", help="export it even if the store holds an export of it already"
    )
    p.set_defaults(handler=runner(cmd_export))


def _open(target: str, config: Any) -> tuple[Any, dict[str, Any]]:
    from .sources import catalog as roots_catalog  # noqa: PLC0415
    from .sources import open_session_file  # noqa: PLC0415

    if looks_like_file(target) or "#" in os.path.basename(target):
        path = Path(os.path.expanduser(target))
        problem = path_problem(path)
        if problem is not None:
            raise CliError(problem)
        fmt, session = open_session_file(path)
        return session, {"format": fmt, "path": str(path.absolute())}
    catalog = roots_catalog(config)
    if wants_prefix_match(target):  # an id prefix, as every other command takes
        target = match_session_id(target, (x.info.id for x in catalog.list_all()))
    root, path = catalog.find(target)
    session = catalog.open(root, path, config.durability)
    return session, {"format": root.format, "root": root.name, "path": str(path)}


def _earlier_exports(config: Any, source_id: str, leaf: Any) -> list[str]:
    """The store's sessions that are exports of ``source_id`` at ``leaf`` (the same copy): the
    listing knows each session's source from its first entry, the entry itself its leaf."""
    from ..store.export import exported_leaf  # noqa: PLC0415
    from ..store.listing import list_sessions  # noqa: PLC0415

    return [
        str(i.id)
        for i in list_sessions(config.layout)
        if i.export_of == source_id and exported_leaf(str(i.path)) == leaf
    ]


async def cmd_export(args: argparse.Namespace, out: Output) -> int:
    import asyncio  # noqa: PLC0415

    from ..store.export import export_to_pi  # noqa: PLC0415

    config = load_config(args)
    earlier: list[str] = []

    def work() -> tuple[Any, Any, dict[str, Any]]:
        source, info = _open(args.session, config)
        try:
            leaf = args.leaf if args.leaf is not None else source.leaf_id
            earlier.extend(_earlier_exports(config, source.id, leaf))
            if earlier and not args.again:
                raise CliError(
                    f"{source.id} was exported already (at the same leaf), as {', '.join(earlier)}: "
                    "open that one, or give --again to write another copy",
                    EXIT_REFUSED,
                    sessionId=source.id,
                    exports=earlier,
                )
            if args.leaf is not None and args.leaf not in source.tree:
                from ..errors import EntryNotFoundError  # noqa: PLC0415

                raise EntryNotFoundError(args.leaf)
            leaf = args.leaf if args.leaf is not None else source.leaf_id
            kwargs = {} if args.leaf is None else {"leaf": args.leaf}
            exported = export_to_pi(
                source, config.layout.cwd_dir, source_info=info, durability=config.durability, **kwargs
            )
            return source, exported, {**info, "leafId": leaf}
        finally:
            source.close()

    try:
        source, exported, info = await asyncio.to_thread(work)
    except OSError as exc:
        raise CliError(f"cannot read {args.session}: {exc.strerror or exc}") from None
    result = {
        "sessionId": exported.id,
        "path": str(exported.path),
        "cwd": exported.cwd,
        "entryCount": exported.entry_count,
        "source": {**info, "sessionId": source.id},
        "earlierExports": earlier,
    }
    exported.close()
    if out.json:
        out.emit(result)
    else:
        out.show(f"exported {source.id} ({info['format']}) as {exported.id}: {result['path']}")
        if earlier:
            out.note(f"another copy: it was exported before as {', '.join(earlier)}")
    return EXIT_OK
