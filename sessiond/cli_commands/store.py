"""``store import`` / ``store export``: sessions between the local store and JetStream.

Both talk to the cluster of the config's ``[store.jetstream]`` directly (the daemon need not
run). ``import`` publishes Pi files (or, with ``--all``, every session file of the local
store) as sessions of the shared store; ``export`` writes a shared session as a plain Pi
file. See docs/scale-out.md.
"""

from __future__ import annotations

import argparse
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
    runner,
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "store",
        help="move sessions between the local store and a shared JetStream store",
        description="Import local Pi session files into the JetStream store of [store.jetstream], "
        "or export a shared session as a Pi file (docs/scale-out.md).",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    imp = actions.add_parser("import", help="publish Pi session files as sessions of the shared store")
    imp.add_argument("files", nargs="*", metavar="FILE", help="Pi session files (.jsonl)")
    imp.add_argument("--all", action="store_true", help="every session file of the local store")
    add_store_options(imp)
    add_json_option(imp)
    imp.set_defaults(handler=runner(cmd_import))
    exp = actions.add_parser("export", help="write a shared session as a Pi file")
    exp.add_argument("session", metavar="SESSION_ID")
    exp.add_argument("-o", "--output", metavar="FILE", help="where to write it (default: ./<id>.jsonl)")
    add_store_options(exp)
    add_json_option(exp)
    exp.set_defaults(handler=runner(cmd_export))


def _open_store(args: argparse.Namespace) -> Any:
    from ..store.backend import open_store  # noqa: PLC0415 - connects to the cluster

    config = load_config(args)
    return config, open_store("jetstream", config.layout.sessions_dir, config.jetstream)


async def cmd_import(args: argparse.Namespace, out: Output) -> int:
    import asyncio  # noqa: PLC0415

    from ..errors import SessiondError  # noqa: PLC0415

    if not args.files and not args.all:
        raise CliError("name the session files to import, or --all for the whole local store")

    def work() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from ..store.jetstream.transfer import import_file  # noqa: PLC0415

        config, store = _open_store(args)
        try:
            files = [Path(f) for f in args.files]
            if args.all:
                files += sorted(config.layout.sessions_dir.glob("*/*.jsonl"))
            done, failed = [], []
            for path in files:
                try:
                    done.append(import_file(store, path))
                except (SessiondError, OSError) as exc:
                    failed.append({"path": str(path), "message": getattr(exc, "message", str(exc))})
            return done, failed
        finally:
            store.close()

    done, failed = await asyncio.to_thread(work)
    if out.json:
        out.emit({"imported": done, "failed": failed})
    else:
        for item in done:
            out.show(f"imported {item['sessionId']} ({item['bytes']} bytes): {item['path']}")
        for item in failed:
            out.note(f"not imported: {item['path']}: {item['message']}")
    return EXIT_REFUSED if failed else EXIT_OK


async def cmd_export(args: argparse.Namespace, out: Output) -> int:
    import asyncio  # noqa: PLC0415

    target = Path(args.output or f"{args.session}.jsonl")

    def work() -> dict[str, Any]:
        from ..store.jetstream.transfer import export_session  # noqa: PLC0415

        _, store = _open_store(args)
        try:
            return export_session(store, args.session, target)
        finally:
            store.close()

    result = await asyncio.to_thread(work)
    if out.json:
        out.emit(result)
    else:
        out.show(f"exported {result['sessionId']} ({result['bytes']} bytes): {result['path']}")
    return EXIT_OK
