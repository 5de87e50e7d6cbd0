"""The ``sessiond`` command. docs/cli.md is the reference; keep the two in step.

The commands that read and change sessions (``ls``, ``show``, ``tree``, ``context``, ``usage``,
``label``, ``fork``, ``compact``, ``rewind``, ``tail``, ``doctor``) live in
:mod:`sessiond.cli_commands`; ``inspect``, ``serve``, ``connect`` and ``gc`` are here.

A session id goes to the store's daemon, started when none runs; ``--no-start`` never starts
one, and then the read commands (``ls``, ``show``, ``tree``, ``context``, ``usage``) read the
files themselves while the others exit 3. A FILE argument is always read in-process. Every
command takes ``--json``: one JSON document on stdout, and on failure also
``{"error": {"message", "exitCode", ...}}`` there (usage errors included).

Exit codes: 0 success; 1 an unexpected internal error (a bug: please report it); 2 bad input
(an unknown session, a file that is not a session, an unknown entry id, a bad option or
configuration, a failed ``doctor`` check); 3 the daemon cannot be reached (``--no-start``, or
it could not be started); 4 a conflict or refusal (rewind left files alone, a read-only
session, a compaction already running); 130 interrupted. Two older codes keep their
documented meaning: ``serve`` exits 3 when a daemon already runs for the store, ``connect``
exits 4 when no daemon can be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .cli_commands import register as register_session_commands
from .cli_commands.base import (
    EXIT_INTERRUPTED,
    add_store_options,
    non_negative,
    not_a_session_message,
    path_problem,
    started_notice,
)

# Every import a command needs beyond argparse is made inside its handler (issue 30): `sessiond
# --help`, `ls` and `connect` must not pay for rich, pydantic, the inspection or the formats.
# tests/cli/test_startup_imports.py lists what each loads; benchmarks/startup.py times it.

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_RUNNING = 3
EXIT_UNAVAILABLE = 4


def _leaf(value: str) -> str:
    if not value:
        raise argparse.ArgumentTypeError("an entry id, or 'null' for no leaf")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error under ``--json`` also gives the ``{"error": ...}`` document,
    and an unknown option is named by the command it was given to.

    Plain argparse misleads there: ``sessiond --bogus`` and ``tree --bogus`` complain about the
    missing COMMAND or SESSION (the required check runs before unknown options are reported),
    and ``tree X --bogus`` hands the option up to the top-level parser, which prints its own
    usage. A subcommand's parser refuses its unknown options itself, and a "required" error
    names the unknown options first (they are usually why the required argument seems missing).
    """

    json_errors = False

    def __init__(self, *args: Any, root: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._root = root
        self._given: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(self._given, namespace)
        if extras and not self._root:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _unknown_options(self) -> list[str]:
        """The option-like arguments given to this parser that none of its options match."""
        unknown = []
        for arg in self._given:
            if arg == "--":
                break
            if len(arg) < 2 or not arg.startswith("-") or self._negative_number_matcher.match(arg):
                continue
            name = arg.split("=", 1)[0]
            known = self._option_string_actions
            if name in known or (name.startswith("--") and any(o.startswith(name) for o in known)):
                continue
            unknown.append(arg)
        return unknown

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):
            unknown = self._unknown_options()
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}"
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        if self.json_errors:
            print(json.dumps({"error": {"message": message, "exitCode": EXIT_BAD_INPUT}}, ensure_ascii=False))
        sys.exit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        root=True,
        prog="sessiond",
        description="A session daemon for coding agents: Pi-compatible session trees and context.",
    )
    parser.add_argument("--version", action="version", version=f"sessiond {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    register_session_commands(sub)

    p = sub.add_parser(
        "inspect",
        help="show what sessiond derives from session files (leaf, branch, context, tree, compaction)",
        description=(
            "Load session files and print, per file, a JSON object with the leaf, the selected branch, "
            "the context the model would see (with token estimates), the tree, and with --compaction "
            "the compaction that would run now. Keys match pi-oracle's output. Files are only read. "
            'Claude Code transcripts are recognised automatically ("format": "claude-code"): the '
            "branch is the chain `claude --resume` rebuilds, with a claudeCode section of diagnostics."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="session .jsonl files (Pi or Claude Code)")
    p.add_argument(
        "--leaf",
        type=_leaf,
        help="move the leaf to this entry id (a Claude Code uuid) first ('null' = no leaf)",
    )
    p.add_argument("--full", action="store_true", help="full message texts instead of 120-character previews")
    p.add_argument(
        "--compaction", action="store_true", help="also report token estimates and the compaction preparation"
    )
    p.add_argument(
        "--keep", type=non_negative, default=20000, metavar="N", help="keepRecentTokens (default 20000)"
    )
    p.add_argument(
        "--reserve", type=non_negative, default=16384, metavar="N", help="reserveTokens (default 16384)"
    )
    p.add_argument("--window", type=non_negative, metavar="N", help="context window, enables shouldCompact")
    p.add_argument(
        "--estimator",
        choices=("pi", "tiktoken"),
        default="pi",
        help="token estimator (default: pi, Pi's own numbers)",
    )
    p.add_argument("--jsonl", action="store_true", help="one compact JSON object per line")
    p.add_argument("--json", action="store_true", help="accepted for symmetry: the output is always JSON")
    p.set_defaults(handler=_cmd_inspect)

    p = sub.add_parser(
        "serve",
        help="run the daemon (Unix socket; --tcp for loopback TCP with a token; --stdio for one client)",
        description=(
            "Run sessiond for a store: the one writer of its sessions, serving JSON-RPC (LSP Content-Length "
            "or newline-delimited JSON) to any number of clients. One daemon per store."
        ),
    )
    add_store_options(p)
    p.add_argument(
        "--tcp", metavar="HOST:PORT", help="also listen on loopback TCP (clients need the token file)"
    )
    p.add_argument(
        "--stdio", action="store_true", help="serve one client on stdin/stdout instead of the socket"
    )
    p.add_argument(
        "--ui",
        metavar="HOST:PORT",
        help="where the web viewer listens (loopback; default from the config: 127.0.0.1:0), or 'off'",
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.add_argument(
        "--json",
        action="store_true",
        help="log one JSON object per line on stderr; a startup failure as JSON on stdout",
    )
    p.set_defaults(handler=_cmd_serve)

    p = sub.add_parser(
        "gc",
        help="show (and with --apply, remove) what the store no longer needs",
        description=(
            "File history of sessions that no longer exist goes to the store's trash; trash older "
            "than --keep-days is deleted. With the JetStream store, blobs of the object store that no "
            "session's file history names and that were stamped more than --grace-hours ago are "
            "deleted. Without --apply nothing is touched: the report says what would be."
        ),
    )
    add_store_options(p)
    p.add_argument("--apply", action="store_true", help="carry it out (default: only report)")
    p.add_argument(
        "--keep-days", type=float, default=30.0, metavar="N", help="keep trash this long (default 30)"
    )
    p.add_argument(
        "--grace-hours",
        type=float,
        default=24.0,
        metavar="H",
        help="JetStream store: keep unreferenced blobs stamped within H hours (default 24, at least 2)",
    )
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.set_defaults(handler=_cmd_gc)

    p = sub.add_parser(
        "connect",
        help="bridge stdio to the daemon's socket (what an editor spawns); starts the daemon if needed",
    )
    add_store_options(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="the stream is JSON-RPC either way; a failure to connect is reported as JSON on stdout",
    )
    p.set_defaults(handler=_cmd_connect)
    parser.set_defaults(root_parser=parser)  # `completion` describes the whole command line
    return parser


def _config(args: argparse.Namespace) -> Any:
    from .service.config import load_config  # noqa: PLC0415 (the daemon's imports stay out of inspect)

    return load_config(
        root=Path(args.store).expanduser() if args.store else None,
        socket=Path(args.socket).expanduser() if args.socket else None,
    )


def _json_log_formatter() -> Any:
    """``serve --json``: one JSON object per log record, for log collectors."""
    import logging  # noqa: PLC0415
    from datetime import UTC, datetime  # noqa: PLC0415

    class JsonLogFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            entry: dict[str, Any] = {
                "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
            }
            if record.exc_info:
                entry["exception"] = self.formatException(record.exc_info)
            return json.dumps(entry, ensure_ascii=False)

    return JsonLogFormatter()


def _fail(command: str, message: str, code: int, json_mode: bool) -> int:
    """One line on stderr; with ``--json`` also ``{"error": {...}}`` on stdout (the CLI's one error shape)."""
    print(f"sessiond {command}: {message}", file=sys.stderr)
    if json_mode:
        print(json.dumps({"error": {"message": message, "exitCode": code}}, ensure_ascii=False))
    return code


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging  # noqa: PLC0415

    from .errors import SessiondError  # noqa: PLC0415
    from .rpc.server import serve  # noqa: PLC0415

    handler = logging.StreamHandler(sys.stderr)
    if args.json:
        handler.setFormatter(_json_log_formatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), handlers=[handler])
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    # With --stdio, stdout is the client's JSON-RPC stream: nothing else may be written there.
    json_errors = args.json and not args.stdio
    try:
        config = _config(args)
        serve(config, tcp=args.tcp, stdio=args.stdio, ui=args.ui)
    except SessiondError as exc:
        code = EXIT_BAD_INPUT if "already running" not in exc.message else EXIT_RUNNING
        return _fail("serve", exc.message, code, json_errors)
    return EXIT_OK


def _cmd_connect(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from .errors import SessiondError  # noqa: PLC0415
    from .rpc.bridge import bridge  # noqa: PLC0415

    try:
        config = _config(args)
    except SessiondError as exc:
        return _fail("connect", exc.message, EXIT_BAD_INPUT, args.json)
    try:
        return asyncio.run(bridge(config, started_notice(config.root)))
    except SessiondError as exc:
        return _fail("connect", exc.message, EXIT_UNAVAILABLE, args.json)


def _cmd_inspect(args: argparse.Namespace) -> int:
    from .errors import NotASessionError, SessiondError  # noqa: PLC0415
    from .inspection import InspectOptions, inspect_file  # noqa: PLC0415
    from .model.js_json import stringify  # noqa: PLC0415

    options = InspectOptions(
        leaf=args.leaf,
        full=args.full,
        compaction=args.compaction,
        keep=args.keep,
        reserve=args.reserve,
        window=args.window,
        estimator=args.estimator,
    )
    results: list[dict[str, Any]] = []
    status = EXIT_OK
    for path in args.files:
        problem = path_problem(path)  # a FIFO would block the read forever; a directory deserves a word
        if problem is not None:
            print(f"sessiond inspect: {problem}", file=sys.stderr)
            results.append({"file": path, "error": problem})
            status = EXIT_BAD_INPUT
            continue
        try:
            results.append(inspect_file(path, options))
        except NotASessionError as exc:
            message = not_a_session_message(path, exc)
            print(f"sessiond inspect: {message}", file=sys.stderr)
            results.append({"file": path, "error": message})
            status = EXIT_BAD_INPUT
        except SessiondError as exc:
            print(f"sessiond inspect: {exc.message}", file=sys.stderr)
            results.append({"file": path, "error": exc.message})
            status = EXIT_BAD_INPUT
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"sessiond inspect: cannot read {path}: {reason}", file=sys.stderr)
            results.append({"file": path, "error": f"cannot read {path}: {reason}"})
            status = EXIT_BAD_INPUT
    if args.jsonl:
        text = "".join(stringify(r) + "\n" for r in results)
    else:
        text = stringify(results[0] if len(results) == 1 else results, indent=2) + "\n"
    sys.stdout.buffer.write(text.encode())
    sys.stdout.flush()
    return status


def _cmd_gc(args: argparse.Namespace) -> int:
    from .cli_commands.blob_gc import BlobCollection  # noqa: PLC0415
    from .errors import InvalidArgumentError, SessiondError  # noqa: PLC0415
    from .service.catalog import Catalog  # noqa: PLC0415
    from .store import gc  # noqa: PLC0415
    from .store.listing import ListingCache  # noqa: PLC0415

    try:
        config = _config(args)
    except SessiondError as exc:
        return _fail("gc", exc.message, EXIT_BAD_INPUT, args.json)
    catalog = Catalog(config.roots, ListingCache())

    def exists(session_id: str) -> bool:
        try:
            catalog.find(session_id)
        except SessiondError:
            return False
        return True

    report = gc.plan(config.layout, exists, args.keep_days)
    blobs: BlobCollection | None = None
    if config.store_backend == "jetstream":
        try:  # planned before anything changes: a cluster that cannot be read refuses the run
            blobs = BlobCollection(config.jetstream, args.grace_hours * 3600)
        except InvalidArgumentError as exc:
            return _fail("gc", f"--grace-hours: {exc.message}", EXIT_BAD_INPUT, args.json)
        except SessiondError as exc:
            return _fail("gc", exc.message, EXIT_UNAVAILABLE, args.json)
    try:
        if args.apply:
            if blobs is not None:
                blobs.apply()
            gc.apply(config.layout, report)
    finally:
        if blobs is not None:
            blobs.close()
    items = [i.as_json() for i in report.items] + (blobs.items() if blobs is not None else [])
    errors = report.errors + (blobs.errors() if blobs is not None else [])
    if args.json:
        out = report.as_json()
        out.update(items=items, bytes=sum(i["bytes"] for i in items), errors=errors)
        if blobs is not None:
            out["objects"] = blobs.plan.as_json()
        print(json.dumps(out, indent=2))
        return EXIT_OK if not errors else EXIT_INTERNAL
    verb = {
        "trash": "moved to trash" if args.apply else "would move to trash",
        "delete": "deleted" if args.apply else "would delete",
    }
    for item in items:
        where = item.get("path") or item["object"]
        print(f"{verb[item['action']]:>20}  {item['bytes'] / 1e6:9.1f} MB  {where}  ({item['reason']})")
    total = sum(i["bytes"] for i in items) / 1e6
    if not items:
        print("nothing to collect")
    elif not args.apply:
        print(f"{len(items)} item(s), {total:.1f} MB; run with --apply to carry it out")
    else:
        print(f"{len(items)} item(s), {total:.1f} MB collected")
    if blobs is not None:
        print(blobs.summary())
    for error in errors:
        print(f"sessiond gc: {error}", file=sys.stderr)
    return EXIT_OK if not errors else EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (``None``: this process's own, as the ``sessiond`` script and
    ``python -m sessiond`` call it) and return the exit code."""
    code = _run(argv)
    if argv is None:
        # The process exits next: what the command loaded is frozen out of the collector's sight,
        # so that the last collection at exit does not traverse it all (~0.1 s of CPU of a
        # command that imported the protocol's models; the tests run hundreds of commands).
        # Not for a call inside a longer-lived process (tests call main with arguments).
        import gc  # noqa: PLC0415 (not loaded for --help otherwise)

        gc.freeze()
    return code


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    _Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    from .errors import SessiondError  # noqa: PLC0415 (not before a command is chosen: --help)

    try:
        return int(args.handler(args))
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except SessiondError as exc:  # bad input or configuration that a command did not catch itself
        return _fail(args.command, exc.message, EXIT_BAD_INPUT, bool(getattr(args, "json", False)))
    except Exception as exc:  # a bug: one line for the user, no traceback
        print(f"sessiond: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
