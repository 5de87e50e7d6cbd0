"""Changing sessions through the daemon: ``label``, ``fork``, ``compact``."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads inside the functions that draw (`sessiond --help` stays light)
    pass

from .base import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Output,
    add_session_command,
    call,
    daemon_client,
    non_negative,
    resolve_session,
    runner,
)
from .render import one_line, tokens


def register(sub: Any) -> None:
    p = add_session_command(
        sub,
        "label",
        help="set (or with --clear remove) the label of an entry",
        description="Label an entry of a session (a bookmark shown by `tree`); --clear removes it.",
    )
    p.add_argument("entry", metavar="ENTRY", help="the entry to label")
    p.add_argument("label", metavar="LABEL", nargs="?", help="the label text")
    p.add_argument("--clear", action="store_true", help="remove the entry's label")
    p.set_defaults(handler=runner(cmd_label))

    p = add_session_command(
        sub,
        "fork",
        help="fork a session before a user message (or with --at, clone it up to an entry)",
        description=(
            "Create a new session from this one. Default: fork before ENTRY, a user message (the new "
            "session ends at its parent, and the message's text is printed to re-send). --at: clone "
            "the path up to and including ENTRY."
        ),
    )
    p.add_argument("entry", metavar="ENTRY", help="the entry to fork at")
    p.add_argument("--at", action="store_true", help="clone up to and including ENTRY")
    p.set_defaults(handler=runner(cmd_fork))

    p = add_session_command(
        sub,
        "compact",
        help="compact a session now (progress bar while the summarizer works)",
        description=(
            "Summarise the older part of the current branch into a compaction checkpoint, keeping "
            "the recent part verbatim. The summarizer is chosen by the daemon (auto: a connected "
            "agent, else the configured command/http one, else the built-in extractive one)."
        ),
    )
    p.add_argument("--instructions", metavar="TEXT", help="extra focus for the summary")
    p.add_argument(
        "--summarizer",
        choices=("auto", "client", "command", "http", "extractive"),
        default="auto",
        help="which summarizer (default auto)",
    )
    p.add_argument("--keep", type=non_negative, metavar="N", help="keep about N recent tokens verbatim")
    p.add_argument("--reserve", type=non_negative, metavar="N", help="reserveTokens for this run")
    p.set_defaults(handler=runner(cmd_compact))


# ---------------------------------------------------------------------------- label


async def cmd_label(args: argparse.Namespace, out: Output) -> int:
    if args.clear and args.label is not None:
        raise CliError("give a LABEL or --clear, not both", EXIT_USAGE)
    if not args.clear and not args.label:
        raise CliError("a LABEL is required (or --clear to remove the label)", EXIT_USAGE)
    label = None if args.clear else args.label
    async with daemon_client(args) as client:
        args.session = await resolve_session(client, args.session)
        result = await call(
            client, "tree/label", {"sessionId": args.session, "entryId": args.entry, "label": label}
        )
    if out.json:
        out.emit(
            {
                "sessionId": args.session,
                "entryId": args.entry,
                "label": label,
                "labelEntryId": result["entryId"],
            }
        )
        return EXIT_OK
    if label is None:
        out.show(f"Cleared the label of {args.entry}", markup=False)
    else:
        out.show(f"Labelled {args.entry} {label!r}", markup=False)
    return EXIT_OK


# ---------------------------------------------------------------------------- fork


async def cmd_fork(args: argparse.Namespace, out: Output) -> int:
    from rich.text import Text  # noqa: PLC0415

    position = "at" if args.at else "before"
    async with daemon_client(args) as client:
        args.session = await resolve_session(client, args.session)
        try:
            result = await call(
                client,
                "session/fork",
                {"sessionId": args.session, "entryId": args.entry, "position": position},
                timeout=300,
            )
        except CliError as exc:
            if position == "before" and exc.data.get("field") == "entryId":
                what = await _entry_kind(client, args.session, args.entry)
                if what is not None:
                    raise CliError(
                        f"{args.entry} is {what}: `fork` starts a new session before a user message "
                        f"(to send it again differently). To copy the session up to and including "
                        f"{args.entry}, use: sessiond fork --at {args.session} {args.entry}",
                        EXIT_USAGE,
                        **exc.data,
                    ) from None
            raise
    if out.json:
        out.emit({"sourceSessionId": args.session, "entryId": args.entry, "position": position, **result})
        return EXIT_OK
    verb = "Cloned" if args.at else "Forked"
    out.show(Text.assemble(f"{verb} into ", (result["sessionId"], "bold cyan")))
    out.show(Text(f"  file: {result['path']}", style="dim"))
    out.show(Text(f"  leaf: {result.get('leafId')}", style="dim"))
    if not result.get("saved"):
        out.show(Text("  (no file yet: it is written with the first message)", style="dim"))
    if result.get("selectedText"):
        out.show(Text(f"  the prompt to re-send: {one_line(result['selectedText'], 200)}"))
    return EXIT_OK


async def _entry_kind(client: Any, session_id: str, entry_id: str) -> str | None:
    """What an entry is, in words (``an assistant message``, ``a compaction entry``); None if
    the session has no such entry (the daemon's error stands then)."""
    try:
        tree = await call(client, "tree/get", {"sessionId": session_id}, timeout=300)
    except CliError:
        return None
    node = next((n for n in tree.get("nodes", []) if n.get("id") == entry_id), None)
    if node is None:
        return None
    kind = str(node.get("type") or "unknown")
    if kind == "message":
        role = str(node.get("role") or "unknown")
        words = {"toolResult": "tool result", "bashExecution": "bash execution"}.get(role, role)
        noun = f"{words} message"
    else:
        noun = f"{kind.replace('_', ' ')} entry"
    return ("an " if noun[0] in "aeiou" else "a ") + noun


# ---------------------------------------------------------------------------- compact


async def cmd_compact(args: argparse.Namespace, out: Output) -> int:
    import asyncio  # noqa: PLC0415

    from rich.progress import (  # noqa: PLC0415 (only compact draws a progress bar)
        BarColumn,
        Progress,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text  # noqa: PLC0415

    token = f"sessiond-cli-compact-{os.getpid()}"
    params: dict[str, Any] = {
        "reason": "manual",
        "summarizer": args.summarizer,
        "workDoneToken": token,
    }
    if args.instructions:
        params["customInstructions"] = args.instructions
    if args.keep is not None:
        params["keepRecentTokens"] = args.keep
    if args.reserve is not None:
        params["reserveTokens"] = args.reserve
    show_progress = not out.json and out.err.is_terminal
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=out.err,
        transient=True,
        disable=not show_progress,
    )
    async with daemon_client(args) as client:
        args.session = params["sessionId"] = await resolve_session(client, args.session)
        await call(client, "session/load", {"sessionId": args.session, "subscribe": True})
        with progress:
            task = progress.add_task("Compacting", total=100)

            async def follow() -> None:
                while True:
                    method, payload = await client.notification(timeout=None)
                    if method == "$/progress" and isinstance(payload, dict) and payload.get("token") == token:
                        value = payload.get("value") or {}
                        changes: dict[str, Any] = {}
                        if value.get("message"):
                            changes["description"] = value["message"]
                        if value.get("percentage") is not None:
                            changes["completed"] = value["percentage"]
                        if value.get("kind") == "end":
                            changes["completed"] = 100
                        progress.update(task, **changes)
                    elif method == "session/update" and isinstance(payload, dict):
                        update = payload.get("update") or {}
                        if update.get("sessionUpdate") == "compaction_update" and update.get("status") in (
                            "failed",
                            "cancelled",
                        ):
                            progress.update(task, description=f"compaction {update['status']}")

            follower = asyncio.ensure_future(follow())
            try:
                result = await call(client, "compaction/run", params, timeout=None)
            except CliError as exc:
                if exc.data.get("rpcCode") == -32024:  # NOTHING_TO_COMPACT: not a failure
                    return _nothing_to_compact(out, args.session, exc)
                raise
            finally:
                follower.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await follower
            progress.update(task, completed=100)
    if out.json:
        out.emit({"sessionId": args.session, "compacted": True, **result})
        return EXIT_OK
    line = Text()
    line.append("Compacted ", style="bold")
    line.append(f"{tokens(result.get('tokensBefore'))} → {tokens(result.get('tokensAfter'))} tokens")
    line.append(f" (summarizer {result.get('summarizer') or '?'})", style="dim")
    out.show(line)
    kept = result.get("firstKeptEntryId")
    out.show(Text(f"  checkpoint {result['entryId']}, kept from {kept}", "dim"))
    out.show(Text(f"  summary: {one_line(result.get('summary') or '', 160)}", "dim"))
    return EXIT_OK


def _nothing_to_compact(out: Output, session_id: str, exc: CliError) -> int:
    reason = exc.data.get("reason")
    if out.json:
        out.emit({"sessionId": session_id, "compacted": False, "reason": reason, "message": exc.message})
    else:
        text = (
            exc.message
            if exc.message.lower().startswith("nothing to compact")
            else f"Nothing to compact: {exc.message}"
        )
        out.show(text, markup=False)
    return EXIT_OK
