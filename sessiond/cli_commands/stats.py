"""``stats``: tokens and cost of every agent's sessions by day, week, month, session or model.

Reads the usage records beside the store (``usage.sqlite3``, shared with the daemon) after
bringing them up to date itself — the first time every session file of every root is read (a
progress bar on a terminal), later only what changed — so it needs no daemon. ``--json``
prints what ``stats/query`` answers: ``{"rows": [...], "totals": {...}, "pricesAsOf"}``.
"""

from __future__ import annotations

import argparse
from typing import Any

from .base import EXIT_OK, Output, add_json_option, add_store_options, load_config, runner

GROUPS = ("daily", "weekly", "monthly", "session", "model")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="tokens and cost of every agent's sessions by day, week, month, session or model",
        description=(
            "Usage and cost of every session of every root (sessiond's store, Pi, Claude Code, Codex, "
            "OpenCode), like ccusage: a table with a totals row, or --json. Prices come from the "
            "genai-prices registry (its date is shown) or [prices] in the config; an unknown model is "
            "'unpriced', never $0. Counting rules: docs/usage.md."
        ),
    )
    p.add_argument("group", choices=GROUPS, nargs="?", default="daily", help="how to group (daily)")
    p.add_argument("--agent", metavar="A", help="only this root: sessiond, pi, claude, codex, opencode")
    p.add_argument("--cwd", metavar="DIR", help="only sessions in this directory or below")
    p.add_argument("--since", metavar="DATE", help="from this day (YYYY-MM-DD) or ISO date-time")
    p.add_argument("--until", metavar="DATE", help="to this day, inclusive, or ISO date-time")
    p.add_argument("--timezone", metavar="TZ", help="IANA time zone the days are cut in (default local)")
    p.add_argument("--breakdown", action="store_true", help="one row per model within each period")
    add_store_options(p)
    add_json_option(p)
    p.set_defaults(handler=runner(cmd_stats))


async def cmd_stats(args: argparse.Namespace, out: Output) -> int:
    import os  # noqa: PLC0415

    from ..service.usage import open_index  # noqa: PLC0415
    from ..usage.report import Query, run  # noqa: PLC0415

    config = load_config(args)
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else None
    index = open_index(config)
    try:
        _refresh(index, out, os.cpu_count() or 1)
        base = Query(args.group, args.agent, cwd, args.since, args.until, args.timezone, args.breakdown)
        if out.json:
            out.emit(run(index, base))
            return EXIT_OK
        detailed = run(index, Query(**{**_fields(base), "breakdown": True}))
    finally:
        index.close()
    out.show(_table(detailed, args.group, args.breakdown))
    return EXIT_OK


def _fields(q: Any) -> dict[str, Any]:
    return {name: getattr(q, name) for name in q.__slots__}


def _refresh(index: Any, out: Output, workers: int) -> None:
    """Bring the records up to date; a progress bar on a terminal when many files are read."""
    if out.json or not out.err.is_terminal:
        index.refresh(workers=workers)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn  # noqa: PLC0415

    columns = (TextColumn("reading session files"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=out.err, transient=True) as bar:
        task = bar.add_task("read", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        index.refresh(report, workers=workers)


def _money(cost: Any) -> str:
    return "unpriced" if cost is None else f"${cost:,.2f}"


def _table(result: dict[str, Any], group: str, breakdown: bool) -> Any:
    """Rows by period and agent, the models used in each (or a row per model), a totals row."""
    from rich.table import Table  # noqa: PLC0415

    from .render import tokens  # noqa: PLC0415

    first = {"session": "Session", "model": "Model"}.get(group, group.capitalize().removesuffix("ly"))
    if group == "daily":
        first = "Date"
    table = Table(title=f"Usage and cost (prices as of {result['pricesAsOf']})", title_justify="left")
    for name, justify in [
        (first, "left"),
        ("Agent", "left"),
        ("Models", "left"),
        ("Input", "right"),
        ("Output", "right"),
        ("Cache read", "right"),
        ("Cache write", "right"),
        ("Total", "right"),
        ("Cost", "right"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in result["rows"]:
        groups.setdefault((row["period"], row["agent"]), []).append(row)

    def numbers(r: dict[str, Any]) -> list[str]:
        keys = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens", "totalTokens")
        return [tokens(r[k]) for k in keys] + [_money(r["cost"])]

    for (period, agent), rows in groups.items():
        label = period
        if group == "session" and rows[0].get("title"):
            label = f"{period[:8]} {rows[0]['title'][:40]}"
        if breakdown or group == "model":
            for n, r in enumerate(rows):
                first_cells = (label, agent) if n == 0 else ("", "")
                table.add_row(*first_cells, r["model"] or "-", *numbers(r))
            continue
        summed: dict[str, Any] = {k: sum(r[k] for r in rows) for k in _TOKEN_KEYS}
        costs = [r["cost"] for r in rows if r["cost"] is not None]
        summed["cost"] = sum(costs) if costs else None
        models = ", ".join(sorted({r["model"] for r in rows if r["model"]}))
        table.add_row(label, agent, models, *numbers(summed))
    table.add_section()
    table.add_row("Total", "", "", *numbers(result["totals"]), style="bold")
    return table


_TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens", "totalTokens")
