"""Reading sessions: ``ls``, ``show``, ``tree``, ``context``, ``usage``.

``show``, ``tree``, ``context`` and ``usage`` take a session id (asked of the daemon) or a
FILE path (read here, no daemon needed).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads inside the functions that draw (`sessiond --help` stays light)
    from rich.text import Text
    from rich.tree import Tree

from .base import (
    EXIT_OK,
    Output,
    add_daemon_options,
    add_session_command,
    call,
    load_config,
    non_negative,
    positive,
    runner,
    skipped_lines_warning,
)
from .render import (
    ROLE_STYLES,
    ShowOptions,
    entry_blocks,
    markdown_document,
    message_preview,
    one_line,
    print_lines,
    rich_blocks,
    tokens,
    when,
)
from .sources import Source, catalog, daemon_or_none, open_source

NO_MESSAGES = "(no messages)"
"""A list row's ``firstMessage`` when the session has no prompt (Pi's placeholder)."""
SUMMARY_ROLES = {"compactionSummary": "⟳ compaction summary", "branchSummary": "↳ branch summary"}
SESSION_HELP = (
    "a session id, or a session FILE (Pi, Claude Code, a Codex rollout, <data>/opencode.db#<id>) "
    "read without the daemon"
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ls",
        help="list sessions (every root: the store, Pi's, Claude Code's, Codex's, OpenCode's), newest first",
        description="List sessions, newest first: id, title, cwd, updated, messages, format, root.",
    )
    add_daemon_options(p)
    p.add_argument("--cwd", metavar="DIR", help="only the sessions of this working directory")
    p.add_argument("--root", choices=("sessiond", "pi", "claude", "codex", "opencode"), help="only this root")
    p.add_argument(
        "--format", choices=("pi", "claude-code", "codex", "opencode"), dest="fmt", help="only this format"
    )
    p.add_argument("--limit", type=positive, default=50, metavar="N", help="at most N sessions (default 50)")
    p.add_argument("--all", action="store_true", help="every session (no limit)")
    p.set_defaults(handler=runner(cmd_ls))

    p = add_session_command(
        sub,
        "show",
        help="the current branch as readable text (Markdown when piped)",
        description=(
            "Print the current branch, root to leaf: each message with its role, text, tool calls "
            "summarised, tool results clipped, compaction and branch summaries marked. On a terminal "
            "it is rendered; piped (or with --markdown) it is a Markdown document."
        ),
        session_help=SESSION_HELP,
    )
    p.add_argument("--leaf", metavar="ENTRY", help="show the branch ending at this entry instead")
    p.add_argument("--full", action="store_true", help="tool results and summaries unclipped")
    p.add_argument("--thinking", action="store_true", help="include thinking blocks")
    p.add_argument("--all", action="store_true", help="also entries that carry no conversation (custom...)")
    p.add_argument("--markdown", action="store_true", help="raw Markdown even on a terminal")
    p.set_defaults(handler=runner(cmd_show))

    p = add_session_command(
        sub,
        "tree",
        help="the whole session tree: branches, labels, the current leaf, compactions",
        description=(
            "Draw every entry of the session as a tree. A straight run of entries stays at one "
            "level; each branch point indents its branches. The current branch is bold, the leaf "
            "marked ◀ leaf, labels shown in [brackets], compactions ⟳ and branch summaries ↳."
        ),
        session_help=SESSION_HELP,
    )
    p.add_argument("--width", type=positive, default=70, metavar="N", help="preview length (default 70)")
    p.set_defaults(handler=runner(cmd_tree))

    p = add_session_command(
        sub,
        "context",
        help="what the model will see, with per-message token estimates and a total",
        description=(
            "The messages the model is sent for the current branch (after compaction and context "
            "edits), each with its token estimate, and the total."
        ),
        session_help=SESSION_HELP,
    )
    p.add_argument("--leaf", metavar="ENTRY", help="the context of the branch ending at this entry")
    p.add_argument(
        "--estimator", choices=("pi", "tiktoken"), help="token estimator (default: the daemon's setting)"
    )
    p.add_argument("--full", action="store_true", help="with --json: include each message whole")
    p.add_argument("--width", type=non_negative, default=80, metavar="N", help="preview length (default 80)")
    p.set_defaults(handler=runner(cmd_context))

    p = add_session_command(
        sub,
        "usage",
        help="how full the context window is: used / size, percent and where the number comes from",
        session_help=SESSION_HELP,
    )
    p.set_defaults(handler=runner(cmd_usage))


# ---------------------------------------------------------------------------- ls


def session_title(row: dict[str, Any]) -> str | None:
    """A session's title, one rule for ``ls``, ``tree``, ``show`` (and the viewer and the
    extension, which read the same fields): its ``name`` (``title`` in a ``session/list`` row),
    else its ``firstMessage`` — the first prompt a person typed, injected context skipped —
    else None."""
    name = row.get("name") if "name" in row else row.get("title")
    if name:
        return str(name)
    first = row.get("firstMessage")
    return str(first) if first and first != NO_MESSAGES else None


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


async def cmd_ls(args: argparse.Namespace, out: Output) -> int:
    limit = None if args.all else args.limit
    params: dict[str, Any] = {}
    if args.cwd:
        params["cwd"] = os.path.abspath(os.path.expanduser(args.cwd))
    if args.root:
        params["root"] = args.root
    if args.fmt:
        params["format"] = args.fmt
    sessions: list[dict[str, Any]] = []
    next_cursor = None
    async with daemon_or_none(args, out) as client:
        if client is None:
            sessions, next_cursor = _list_directly(args, params, limit)
        while client is not None:
            page = 1000 if limit is None else min(1000, limit - len(sessions))
            result = await call(client, "session/list", {**params, "limit": page}, timeout=300)
            sessions += result["sessions"]
            next_cursor = result.get("nextCursor")
            if next_cursor is None or (limit is not None and len(sessions) >= limit):
                break
            params["cursor"] = next_cursor
    if out.json:
        out.emit({"sessions": sessions, "nextCursor": next_cursor})
        return EXIT_OK
    if not sessions:
        out.note("no sessions")
        return EXIT_OK
    from rich.table import Table  # noqa: PLC0415 (not for --json)
    from rich.text import Text  # noqa: PLC0415

    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("ID", no_wrap=True, style="cyan")
    table.add_column("TITLE", overflow="ellipsis", no_wrap=True, max_width=50)
    table.add_column("CWD", overflow="ellipsis", no_wrap=True, max_width=40)
    table.add_column("UPDATED", no_wrap=True)
    table.add_column("MSGS", justify="right", no_wrap=True)
    table.add_column("FORMAT", no_wrap=True)
    table.add_column("ROOT", no_wrap=True)
    for s in sessions:
        title = Text()
        if s.get("parentSession"):
            title.append("⑂ ", style="bold blue")  # a fork: --json's parentSession is its source
        if s.get("title"):
            title.append(one_line(s["title"], 48))
        else:
            title.append(one_line(session_title(s) or s.get("firstMessage") or "", 48), "dim")
        table.add_row(
            s["sessionId"],
            title,
            _home(s["cwd"]),
            when(s.get("updatedAt")),
            str(s.get("messageCount", "")),
            s.get("format", "pi"),
            s.get("root", "sessiond")
            + (" (ro)" if s.get("readOnly") else "")
            + (f" (export of {s['exportOf'][:8]})" if s.get("exportOf") else ""),
        )
    out.show(table)
    if next_cursor is not None:
        out.note("… more sessions: --limit N or --all")
    return EXIT_OK


def _list_directly(
    args: argparse.Namespace, params: dict[str, Any], limit: int | None
) -> tuple[list[dict[str, Any]], str | None]:
    """``session/list`` computed here from the roots (``--no-start`` and no daemon running)."""
    from ..service import views  # noqa: PLC0415
    from ..service.results import wire  # noqa: PLC0415

    listed = catalog(load_config(args)).list_all(params.get("cwd"), params.get("root"), params.get("format"))
    page = wire(views.page(listed, None, limit))
    return page["sessions"], page["nextCursor"]


# ---------------------------------------------------------------------------- show


async def cmd_show(args: argparse.Namespace, out: Output) -> int:
    opts = ShowOptions(full=args.full, thinking=args.thinking, all_entries=args.all)
    async with open_source(args, args.session, out) as source:
        info = await source.describe()
        branch = await source.branch(args.leaf)
    warning = skipped_lines_warning(info)
    if warning is not None:
        out.warn(warning)
    entries = branch.get("entries") or []
    if out.json:
        out.emit(
            {
                source.key: source.label,
                "sessionId": info["sessionId"],
                "name": info.get("name"),
                "cwd": info.get("cwd"),
                "format": info.get("format"),
                "leafId": args.leaf or info.get("leafId"),
                "entryIds": branch["entryIds"],
                "entries": entries,
            }
        )
        return EXIT_OK
    blocks = [b for e in entries for b in entry_blocks(e, opts)]
    titled = session_title(info)
    heading = (
        (one_line(titled, 200) if titled else None)
        or _first_prompt(entries)
        or f"Session {info['sessionId']}"
    )
    leaf = args.leaf or info.get("leafId")
    meta = [
        str(info["sessionId"]),
        _home(str(info.get("cwd") or "")),
        str(info.get("format", "pi")),
        f"leaf {leaf}",
        f"{len(entries)} entries on the branch",
    ]
    if info.get("messageCount") is not None:
        meta.insert(4, f"{info['messageCount']} messages")
    if out.interactive and not args.markdown:
        print_lines(out.out, rich_blocks(heading, meta, blocks))
    else:
        out.out.file.write(markdown_document(heading, meta, blocks))
        out.out.file.flush()
    return EXIT_OK


def _first_prompt(entries: list[Any]) -> str | None:
    """The first user message's text on the branch, on one line (the title of a session with no name)."""
    for entry in entries:
        message = entry.get("message") if isinstance(entry, dict) else None
        if isinstance(message, dict) and message.get("role") == "user":
            text = one_line(message_preview(message, 100), 100)
            if text:
                return text
    return None


# ---------------------------------------------------------------------------- tree


def branch_ids(nodes: list[dict[str, Any]], leaf: Any) -> list[str]:
    """Root -> leaf, following parentId (cycle-safe)."""
    parent = {n["id"]: n.get("parentId") for n in nodes}
    path: list[str] = []
    seen: set[str] = set()
    current = leaf
    while current is not None and current in parent and current not in seen:
        seen.add(current)
        path.append(current)
        current = parent[current]
    path.reverse()
    return path


TYPE_NAMES = {"model_change": "model", "custom_message": "custom message"}
SELF_DESCRIBING = {"label", "session_info", "thinking_level_change", "context_edit", "usage"}
"""Entry types whose preview already says what they are (``label a1: x``, ``name: y``...)."""


CLAUDE_COMPACTION = "claude-code.system/compact_boundary"
"""How a Claude Code ``/compact`` boundary shows up in the tree (a custom entry starting a new root)."""


def _node_text(node: dict[str, Any], on_branch: bool, is_leaf: bool, width: int, branches: int = 0) -> Text:
    from rich.text import Text  # noqa: PLC0415

    t = node.get("type")
    role = node.get("role")
    text = Text()
    text.append(str(node["id"]), style="cyan" if on_branch else "dim cyan")
    text.append(" ")
    preview = one_line(str(node.get("preview") or ""), width)
    if t == "compaction":
        text.append("⟳ compaction", style="bold magenta")
    elif t == "custom" and preview == CLAUDE_COMPACTION:
        text.append("⟳ compaction", style="bold magenta")
        preview = "Claude Code /compact boundary"
    elif t == "branch_summary":
        text.append("↳ branch summary", style="bold magenta")
    elif t == "message" and role:
        text.append(str(role), style=ROLE_STYLES.get(str(role), "bold") if on_branch else "dim")
    elif t in TYPE_NAMES:
        text.append(TYPE_NAMES[str(t)], style="dim italic")
    elif t not in SELF_DESCRIBING:
        text.append(str(t), style="dim italic")
    if preview:
        if t in SELF_DESCRIBING:
            text.append(preview, style="dim italic")
        else:
            text.append(": " if t in ("message", "compaction", "branch_summary", "custom") else " ")
            text.append(preview, style="" if on_branch else "dim")
    if node.get("label"):
        text.append(f" [{one_line(str(node['label']), 80)}]", style="bold yellow")
    if branches > 1:
        text.append(f" ⑂{branches}", style="bold blue")
    if is_leaf:
        text.append(" ◀ leaf", style="bold reverse")
    return text


def _subtree_sizes(
    nodes: list[dict[str, Any]], children: dict[Any, list[dict[str, Any]]], roots: list[dict[str, Any]]
) -> dict[Any, int]:
    """Entries below and including each node (iterative: sessions can be 100,000 entries deep)."""
    size: dict[Any, int] = {}
    order: list[Any] = []
    seen: set[Any] = set()
    stack = [r["id"] for r in roots]
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        order.append(nid)
        stack.extend(k["id"] for k in children.get(nid, []))
    for nid in reversed(order):
        size[nid] = 1 + sum(size.get(k["id"], 0) for k in children.get(nid, []) if k["id"] in size)
    return size


def build_tree(
    title: str, nodes: list[dict[str, Any]], leaf: Any, width: int, branch: list[str] | None = None
) -> Tree:
    """Draw the tree so that the current branch reads straight down.

    A straight run of entries stays at one level. At a branch point (marked ``⑂N``) the
    branches that do not hold the current leaf hang below it, each nested under its own first
    entry, and the current branch carries on at the same level — so however many times a
    session branched (Claude Code branches at every parallel tool call), the path to the leaf
    is one column and only side branches indent. Inside a side branch (or with no leaf) its
    largest sub-branch carries on the same way.

    ``branch`` is the session's own branch (what ``show`` prints), highlighted; it defaults to
    the parentId path to the leaf. The two differ for Claude Code, whose resume rule also takes
    parallel tool results that hang off an earlier assistant record — those stay where their
    parentId puts them, highlighted.
    """
    from rich.text import Text  # noqa: PLC0415
    from rich.tree import Tree  # noqa: PLC0415

    ids = {n["id"] for n in nodes}
    children: dict[Any, list[dict[str, Any]]] = {}
    roots: list[dict[str, Any]] = []
    for n in nodes:
        parent = n.get("parentId")
        if parent is None or parent not in ids or parent == n["id"]:
            roots.append(n)
        else:
            children.setdefault(parent, []).append(n)
    path = set(branch_ids(nodes, leaf))
    on_branch = path if branch is None else set(branch)
    size = _subtree_sizes(nodes, children, roots)
    top = Tree(Text(title, style="bold"), guide_style="dim")
    visited: set[Any] = set()
    # Work items: (container, first node of a run, whether the run nests under its first node).
    work: list[tuple[Tree, dict[str, Any], bool]] = [
        (top, r, len(roots) > 1 and r["id"] not in path) for r in reversed(roots)
    ]
    while work:
        container, node, nest = work.pop()
        while node["id"] not in visited:
            visited.add(node["id"])
            kids = children.get(node["id"], [])
            text = _node_text(node, node["id"] in on_branch, node["id"] == leaf, width, len(kids))
            item = container.add(text)
            if nest:
                container, nest = item, False
            if len(kids) == 1:
                node = kids[0]
                continue
            main = next((k for k in kids if k["id"] in path), None)
            if main is None and kids:
                main = max(reversed(kids), key=lambda k: size.get(k["id"], 1))
            # Side branches (in file order) nest under the branch point, each under its first entry.
            for kid in reversed(kids):
                if kid is not main:
                    work.append((item, kid, True))
            if main is None:
                break
            node = main  # the current (or largest) branch carries on at this level
    stray = [n for n in nodes if n["id"] not in visited]
    if stray:
        cycle = top.add(Text(f"{len(stray)} entries in a parent cycle (not reachable from a root)", "red"))
        for n in stray:
            cycle.add(_node_text(n, False, n["id"] == leaf, width))
    return top


async def cmd_tree(args: argparse.Namespace, out: Output) -> int:
    async with open_source(args, args.session, out) as source:
        info = await source.describe()
        result = await source.tree()
        branch = (await source.branch(None, full=False))["entryIds"]
    warning = skipped_lines_warning(info)
    if warning is not None:
        out.warn(warning)
    nodes = result["nodes"]
    leaf = result.get("leafId")
    if out.json:
        out.emit(
            {
                source.key: source.label,
                "sessionId": info["sessionId"],
                "leafId": leaf,
                "branchIds": branch,
                "nodes": nodes,
            }
        )
        return EXIT_OK
    # ls's TITLE, by the same rule (session_title): the name, else the list's first prompt.
    named = session_title(info) or next(
        (n.get("preview") for n in nodes if n.get("role") == "user" and n.get("preview")), None
    )
    counts = f"{len(nodes)} entries"
    if info.get("messageCount") is not None:
        counts = f"{info['messageCount']} messages, {counts}"
    title = f"{one_line(str(named or info['sessionId']), 200)}  ({counts})"
    out.show(build_tree(title, nodes, leaf, args.width, branch))
    return EXIT_OK


# ---------------------------------------------------------------------------- context


async def _estimator_name(source: Source, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    usage = await source.usage()
    return (args.estimator or usage.get("estimator") or "pi"), usage


async def cmd_context(args: argparse.Namespace, out: Output) -> int:
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    from ..model.tokens import get_estimator  # noqa: PLC0415

    async with open_source(args, args.session, out) as source:
        info = await source.describe()
        context = await source.context(args.leaf)
        name, usage = await _estimator_name(source, args)
    estimator = get_estimator(name)
    rows = []
    total = 0
    for i, item in enumerate(context["messages"]):
        message = item["message"]
        n = int(estimator.message_tokens(message))
        total += n
        row: dict[str, Any] = {
            "index": i,
            "entryId": item["entryId"],
            "role": message.get("role") if isinstance(message, dict) else None,
            "tokens": n,
            "preview": message_preview(message, 120),
        }
        if args.full:
            row["message"] = message
        rows.append(row)
    if out.json:
        out.emit(
            {
                source.key: source.label,
                "sessionId": info["sessionId"],
                "leafId": args.leaf or info.get("leafId"),
                "estimator": name,
                "model": context.get("model"),
                "thinkingLevel": context.get("thinkingLevel"),
                "entryIds": context.get("entryIds", []),
                "messages": rows,
                "totalTokens": total,
                "usage": None if args.leaf else usage,
            }
        )
        return EXIT_OK
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("ENTRY", style="cyan", no_wrap=True)
    table.add_column("ROLE", no_wrap=True)
    table.add_column("TOKENS", justify="right", no_wrap=True)
    table.add_column("TEXT", overflow="ellipsis", no_wrap=True)
    for row in rows:
        role = str(row["role"])
        shown = SUMMARY_ROLES.get(role, role)
        table.add_row(
            str(row["index"]),
            str(row["entryId"]),
            Text(shown, style=ROLE_STYLES.get(role, "")),
            tokens(row["tokens"]),
            one_line(row["preview"], args.width) if args.width else "",
        )
    out.show(table)
    model = context.get("model")
    model_text = "unknown model"
    if isinstance(model, dict):
        model_text = f"{model.get('provider')}/{model.get('modelId')}"
    summary = Text()
    summary.append(f"total ≈ {total:,} tokens", style="bold")
    summary.append(f" in {len(rows)} messages (estimator {name}) · {model_text}")
    if context.get("thinkingLevel"):
        summary.append(f" · thinking {context['thinkingLevel']}")
    out.show(summary)
    if not args.leaf and usage.get("used") is not None:
        out.show(Text(f"usage: {_usage_line(usage)}", style="dim"))
    return EXIT_OK


# ---------------------------------------------------------------------------- usage


def _usage_line(usage: dict[str, Any]) -> str:
    used, size, percent = usage.get("used"), usage.get("size"), usage.get("percent")
    line = f"{tokens(used)} / {tokens(size) if size else '? (unknown window)'} tokens"
    if percent is not None:
        line += f" ({percent}%)"
    return line + f", source {usage.get('source')}"


def gauge(percent: float | None, width: int = 30) -> Text:
    """A bar that reads in plain text too: █ used, ░ free."""
    from rich.text import Text  # noqa: PLC0415

    if percent is None:
        return Text("░" * width, style="dim")
    filled = max(0, min(width, round(width * percent / 100)))
    style = "green" if percent < 60 else "yellow" if percent < 85 else "red"
    bar = Text()
    bar.append("█" * filled, style=style)
    bar.append("░" * (width - filled), style="dim")
    return bar


async def cmd_usage(args: argparse.Namespace, out: Output) -> int:
    from rich.text import Text  # noqa: PLC0415

    async with open_source(args, args.session, out) as source:
        info = await source.describe()
        usage = await source.usage()
    if out.json:
        out.emit({source.key: source.label, "sessionId": info["sessionId"], **usage})
        return EXIT_OK
    line = Text()
    line.append_text(gauge(usage.get("percent")))
    line.append(" ")
    line.append(_usage_line(usage), style="bold")
    out.show(line)
    details = []
    if usage.get("source") == "api":
        details.append("the provider's last reported usage")
    elif usage.get("source") == "estimate":
        if usage.get("usageTokens"):
            details.append(
                f"{tokens(usage.get('usageTokens'))} reported by the provider"
                f" + {tokens(usage.get('trailingTokens'))} estimated since"
            )
        else:
            details.append("estimated (no provider usage on the branch)")
    else:
        details.append("empty context")
    details.append(f"estimator {usage.get('estimator')}")
    model = usage.get("model")
    if isinstance(model, dict):
        details.append(f"model {model.get('provider')}/{model.get('modelId')}")
    if not usage.get("size"):
        details.append("context window unknown: set it with [context_windows] or session/configure")
    out.show(Text(" · ".join(details), style="dim"))
    return EXIT_OK
