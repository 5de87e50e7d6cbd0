"""``rewind``: put the files a session tracked back to a checkpoint, after showing what will happen.

The plan is the daemon's own dry run (the same checks the real run makes), with the diff
since the checkpoint; then a confirmation (``--yes`` skips it; without a terminal to ask on
the command refuses). Files the plan leaves alone (someone else's edits: conflicts; paths it
may never write: refused) make the exit code 4, and so does a rewind refused as a whole (the
session's directory is not the one its file history was recorded in).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads inside the functions that draw (`sessiond --help` stays light)
    from rich.table import Table
    from rich.text import Text

from .base import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    CliError,
    Output,
    add_session_command,
    call,
    daemon_client,
    resolve_session,
    runner,
)
from .render import clip_lines

_PATH_REFUSED = -32028

STATUS_STYLES = {
    "ok": "green",
    "forced": "yellow",
    "conflict": "bold red",
    "refused": "bold red",
    "failed": "red",
}


def register(sub: Any) -> None:
    p = add_session_command(
        sub,
        "rewind",
        help="restore the files a session changed to a checkpoint (preview, then confirm)",
        description=(
            "Put every file the session tracked back to its state at MESSAGE (a user prompt with a "
            "file-history checkpoint, or the undo id an earlier rewind printed). The plan and the "
            "diff since the checkpoint are shown first; then it asks, unless --yes. Files changed "
            "by someone else since are conflicts and are left alone unless --force; paths outside "
            "the session's cwd and roots, or through symlinks, are never written."
        ),
    )
    p.add_argument("message", metavar="MESSAGE", help="the checkpoint's prompt entry id (or an undo id)")
    p.add_argument("--dry-run", action="store_true", help="only show the plan")
    p.add_argument("--force", action="store_true", help="also overwrite files someone else changed")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument(
        "--conversation", action="store_true", help="also move the session's leaf to before that prompt"
    )
    p.add_argument("--no-diff", action="store_true", help="do not print the diff in the preview")
    p.add_argument(
        "--diff-lines", type=int, default=40, metavar="N", help="diff lines shown per file (default 40)"
    )
    p.set_defaults(handler=runner(cmd_rewind))


def _stdin_interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _ask(out: Output, question: str) -> bool:
    out.err.print(question, end="", markup=False)
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _plan_table(plan: dict[str, Any]) -> Table:
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("FILE", no_wrap=True)
    table.add_column("ACTION", no_wrap=True)
    table.add_column("STATUS", no_wrap=True)
    table.add_column("WHY", overflow="fold")
    for f in plan.get("files", []):
        status = str(f.get("status", ""))
        table.add_row(
            str(f.get("path", "")),
            str(f.get("action", "")),
            Text(status, style=STATUS_STYLES.get(status, "")),
            str(f.get("reason") or ""),
        )
    return table


def _diff_text(diff: dict[str, Any], max_lines: int) -> Text:
    from rich.text import Text  # noqa: PLC0415

    out = Text()
    for f in diff.get("files", []):
        header = f"{f.get('path')}  +{f.get('added', 0)} -{f.get('removed', 0)}"
        if f.get("binary"):
            header += "  (binary)"
        out.append(header + "\n", style="bold")
        body = f.get("diff")
        if not body:
            if f.get("tooLarge"):
                out.append("  (too large to diff)\n", style="dim")
            continue
        shown, hidden = clip_lines(str(body), max_lines)
        for line in shown.split("\n"):
            style = (
                "green"
                if line.startswith("+") and not line.startswith("+++")
                else "red"
                if line.startswith("-") and not line.startswith("---")
                else "cyan"
                if line.startswith("@@")
                else "dim"
            )
            out.append("  " + line + "\n", style=style)
        if hidden:
            out.append(f"  … {hidden} more lines\n", style="dim")
    return out


def _pending(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Files the run would change."""
    return [f for f in plan.get("files", []) if f.get("action") not in (None, "none")]


def _code(result: dict[str, Any]) -> int:
    if result.get("conflicts") or result.get("refused"):
        return EXIT_REFUSED
    if any(f.get("status") == "failed" for f in result.get("files", [])):
        return EXIT_INTERNAL
    return EXIT_OK


async def cmd_rewind(args: argparse.Namespace, out: Output) -> int:
    from rich.text import Text  # noqa: PLC0415

    if args.diff_lines < 0:
        raise CliError("--diff-lines must not be negative", EXIT_USAGE)
    if out.json and not (args.yes or args.dry_run):
        raise CliError("--json needs --yes (rewind without asking) or --dry-run (only the plan)", EXIT_USAGE)
    async with daemon_client(args) as client:
        args.session = await resolve_session(client, args.session)
        base = {"sessionId": args.session, "messageId": args.message, "force": args.force}
        try:
            plan = await call(client, "fileHistory/rewind", {**base, "dryRun": True}, timeout=300)
        except CliError as exc:
            if exc.data.get("rpcCode") == _PATH_REFUSED:
                # The session's directory is not the one the history was recorded in: a refusal
                # of the whole rewind, like a refused file (exit 4), not a mistake in the input.
                exc.code = EXIT_REFUSED
            raise
        diff: dict[str, Any] | None = None
        if not args.no_diff:
            try:
                ref = {"sessionId": args.session, "messageId": args.message}
                diff = await call(client, "fileHistory/diff", ref, timeout=300)
            except CliError:
                diff = None  # an undo id has no diff to show; the plan still says what happens
        document: dict[str, Any] = {
            "sessionId": args.session,
            "messageId": args.message,
            "plan": plan,
            "diff": diff,
            "result": None,
        }
        pending = _pending(plan)
        if not out.json:
            _print_preview(out, args, plan, diff, pending)
        if args.dry_run or not pending:
            if out.json:
                out.emit(document)
            elif not pending:
                out.show("Nothing to rewind: the tracked files are already as at that checkpoint.")
            return _code(plan)
        if not args.yes:
            if not _stdin_interactive():
                raise CliError(
                    "not rewinding: stdin is not a terminal to confirm on; pass --yes to rewind "
                    "without asking (or --dry-run for the plan only)",
                    EXIT_USAGE,
                )
            if not _ask(out, f"Rewind {len(pending)} file(s) to {args.message}? [y/N] "):
                out.show("Not rewound; the files were left alone.")
                return EXIT_REFUSED
        params = {**base, "dryRun": False, "conversation": args.conversation}
        result = await call(client, "fileHistory/rewind", params, timeout=None)
    document["result"] = result
    if out.json:
        out.emit(document)
        return _code(result)
    out.show(_plan_table(result))
    line = Text()
    written, deleted = result.get("written", 0), result.get("deleted", 0)
    line.append(f"Rewound: {written} written, {deleted} deleted", style="bold")
    if result.get("conflicts"):
        line.append(f", {result['conflicts']} conflict(s) left alone", style="bold red")
    if result.get("refused"):
        line.append(f", {result['refused']} refused", style="bold red")
    out.show(line)
    if result.get("undoId"):
        out.show(f"Undo with: sessiond rewind {args.session} {result['undoId']}", markup=False)
    if result.get("editorText"):
        out.show(Text(f"The prompt, to edit and re-send: {result['editorText']}", style="dim"))
    return _code(result)


def _print_preview(
    out: Output,
    args: argparse.Namespace,
    plan: dict[str, Any],
    diff: dict[str, Any] | None,
    pending: list[Any],
) -> None:
    from rich.text import Text  # noqa: PLC0415

    title = f"Rewind plan for {args.session} to {args.message}" + (" (dry run)" if args.dry_run else "")
    out.show(Text(title, style="bold"))
    if plan.get("files"):
        out.show(_plan_table(plan))
    else:
        out.show(Text("no tracked files", style="dim"))
    summary = Text()
    summary.append(f"{len(pending)} file(s) to change")
    if plan.get("conflicts"):
        summary.append(
            f", {plan['conflicts']} conflict(s) (changed by someone else; left alone"
            + (")" if not args.force else ", overwritten with --force)"),
            style="bold red",
        )
    if plan.get("refused"):
        summary.append(f", {plan['refused']} refused (never written)", style="bold red")
    out.show(summary)
    if diff and diff.get("files") and args.diff_lines:
        out.show(Text("Changes since the checkpoint (what the rewind undoes, but conflicts):", style="bold"))
        out.show(_diff_text(diff, args.diff_lines), end="")
