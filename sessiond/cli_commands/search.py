"""``sessiond search``: full-text search across every session of every agent, through the daemon.

One line per hit (date, agent, project, title, the snippet with the matched words in bold),
then the command that resumes each session found, in its own agent. ``--json`` prints the hits
as the daemon gave them. While the daemon builds its index for the first time (or after
``--rebuild``) a progress bar on stderr follows the build (``$/progress``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from .base import EXIT_OK, CliError, Output, add_daemon_options, call, daemon_client, runner

START, END = "\x02", "\x03"
ROLES = (
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "compactionSummary",
    "branchSummary",
    "session",
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "search",
        help="find sessions by what was said in them, across every agent",
        description=(
            "Full-text search over every session (sessiond's, Pi's, Claude Code's, Codex's): words, \"a "
            'phrase", prefix*, -excluded; --substring for pieces of code. See docs/search.md.'
        ),
    )
    add_daemon_options(p)
    p.add_argument("query", metavar="QUERY", help="what to look for (quote it for the shell)")
    p.add_argument(
        "--agent", metavar="A", help="only this agent's sessions (pi, claude-code, codex, or a root)"
    )
    p.add_argument("--cwd", metavar="DIR", help="only sessions of this project directory (or below)")
    p.add_argument("--since", metavar="DATE", help="only entries from this date or date-time on")
    p.add_argument("--until", metavar="DATE", help="only entries up to this date (included) or date-time")
    p.add_argument("--role", metavar="R", choices=ROLES, help="only texts of this role")
    p.add_argument("--session", metavar="ID", help="only this session")
    p.add_argument("--substring", action="store_true", help="QUERY is a literal piece of text (code)")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="hits to show (1-200, default 20)")
    p.add_argument("--rebuild", action="store_true", help="rebuild the index from the sessions first")
    p.set_defaults(handler=runner(cmd_search))


def _params(args: argparse.Namespace, token: str) -> dict[str, Any]:
    if not 1 <= args.limit <= 200:
        raise CliError("--limit must be between 1 and 200", 2)
    params: dict[str, Any] = {"query": args.query, "limit": args.limit, "workDoneToken": token}
    if args.substring:
        params["mode"] = "substring"
    for name in ("agent", "since", "until", "role"):
        if getattr(args, name):
            params[name] = getattr(args, name)
    if args.cwd:
        params["cwd"] = os.path.abspath(os.path.expanduser(args.cwd))
    if args.session:
        params["sessionId"] = args.session
    if args.rebuild:
        params["rebuild"] = True
    return params


async def cmd_search(args: argparse.Namespace, out: Output) -> int:
    import asyncio  # noqa: PLC0415

    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn  # noqa: PLC0415

    token = f"sessiond-cli-search-{os.getpid()}"
    params = _params(args, token)
    progress = Progress(
        TextColumn("indexing sessions"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.description}"),
        console=out.err,
        transient=True,
        disable=out.json or not out.err.is_terminal,
    )
    async with daemon_client(args) as client:
        with progress:
            task = progress.add_task("", total=100, visible=False)

            async def follow() -> None:
                while True:
                    method, payload = await client.notification(timeout=None)
                    if method == "$/progress" and isinstance(payload, dict) and payload.get("token") == token:
                        value = payload.get("value") or {}
                        if value.get("percentage") is not None:
                            progress.update(
                                task,
                                visible=True,
                                completed=value["percentage"],
                                description=str(value.get("message") or ""),
                            )

            follower = asyncio.ensure_future(follow())
            try:
                result = await call(client, "search/query", params, timeout=None)
            finally:
                follower.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await follower
    hits = result.get("hits") or []
    if out.json:
        out.emit(
            {
                "hits": [
                    {
                        k: h.get(k)
                        for k in (
                            "sessionId",
                            "entryId",
                            "agent",
                            "cwd",
                            "timestamp",
                            "role",
                            "title",
                            "snippet",
                            "resume",
                        )
                    }
                    for h in hits
                ],
                "total": result.get("total", 0),
                "nextCursor": result.get("nextCursor"),
            }
        )
        return EXIT_OK
    _show(out, hits, int(result.get("total") or 0))
    return EXIT_OK


def highlighted(snippet: str) -> Any:
    """The snippet as rich text: the marked spans bold, the markers gone."""
    from rich.text import Text  # noqa: PLC0415

    text = Text()
    rest = " ".join(snippet.split())
    while rest:
        start = rest.find(START)
        if start < 0:
            text.append(rest)
            break
        end = rest.find(END, start)
        end = len(rest) if end < 0 else end
        text.append(rest[:start])
        text.append(rest[start + 1 : end], style="bold yellow")
        rest = rest[end + 1 :]
    return text


def _show(out: Output, hits: list[dict[str, Any]], total: int) -> None:
    from rich.text import Text  # noqa: PLC0415

    if not hits:
        out.show("No match.", markup=False)
        return
    resumes: dict[str, str | None] = {}
    for h in hits:
        line = Text()
        line.append((h.get("timestamp") or "")[:16].replace("T", " ").ljust(17), style="dim")
        line.append(f"{h.get('agent', '')[:11]:<12}", style="cyan")
        project = os.path.basename(str(h.get("cwd") or "").rstrip("/")) or "-"
        line.append(f"{project[:16]:<17}", style="green")
        title = " ".join(str(h.get("title") or "").split())
        line.append(f"{title[:30]:<31}", style="bold")
        line.append_text(highlighted(str(h.get("snippet") or "")))
        out.show(line)
        resumes.setdefault(str(h.get("sessionId")), h.get("resume"))
    more = f" (of {total}{'+' if total >= 1000 else ''})" if total > len(hits) else ""
    out.show(Text(f"\n{len(hits)} hits{more}. Resume:", style="dim"))
    for session_id, command in resumes.items():
        out.show(Text(f"  {command or f'(no agent resumes {session_id})'}"))
