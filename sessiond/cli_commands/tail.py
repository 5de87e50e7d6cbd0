"""``tail``: the last entries of a session, and with ``-f`` everything that happens to it live."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads inside the functions that draw (`sessiond --help` stays light)
    from rich.text import Text

from .base import (
    EXIT_OK,
    Output,
    add_session_command,
    call,
    daemon_client,
    non_negative,
    resolve_session,
    runner,
)
from .render import ROLE_STYLES, message_preview, one_line, tokens, when


def register(sub: Any) -> None:
    p = add_session_command(
        sub,
        "tail",
        help="the last entries of a session; with -f, follow it live until Ctrl-C",
        description=(
            "Print the last N entries (file order), one line each. With -f, keep going: new "
            "entries (also those other programs append), usage, compaction, label and name "
            "changes and external rewrites are printed as they arrive, until Ctrl-C. With --json, "
            "one JSON object per line."
        ),
    )
    p.add_argument("-f", "--follow", action="store_true", help="keep printing updates until Ctrl-C")
    p.add_argument(
        "-n", "--lines", type=non_negative, default=10, metavar="N", help="entries printed first (default 10)"
    )
    p.add_argument("--width", type=non_negative, default=100, metavar="N", help="preview length (100)")
    p.set_defaults(handler=runner(cmd_tail))


def entry_line(entry: dict[str, Any], width: int, external: bool = False) -> Text:
    from rich.text import Text  # noqa: PLC0415

    from ..model.preview import entry_preview  # noqa: PLC0415

    t = entry.get("type")
    message = entry.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    line = Text()
    line.append(when(entry.get("timestamp"), seconds=True) or "-", style="dim")
    line.append("  ")
    line.append(str(entry.get("id")), style="cyan")
    line.append("  ")
    if t == "message" and role:
        line.append(f"{role:<12}", style=ROLE_STYLES.get(str(role), "bold"))
        preview = message_preview(message, width)
    else:
        kind = {"compaction": "⟳ compaction", "branch_summary": "↳ branch summary"}.get(str(t), str(t))
        line.append(f"{kind:<12}", style="bold magenta" if t in ("compaction", "branch_summary") else "dim")
        preview = one_line(entry_preview(entry, 400), width)
    line.append(" ")
    line.append(preview)
    if external:
        line.append("  (external)", style="dim italic")
    return line


def update_line(update: dict[str, Any]) -> Text | None:
    from rich.text import Text  # noqa: PLC0415

    kind = update.get("sessionUpdate")
    line = Text()
    if kind == "usage_update":
        used, size, percent = update.get("used"), update.get("size"), update.get("percent")
        text = f"· usage {tokens(used)}/{tokens(size) if size else '?'}"
        if percent is not None:
            text += f" ({percent}%)"
        line.append(text + f", {update.get('source')}", style="dim")
    elif kind == "compaction_update":
        text = f"⟳ compaction {update.get('status')} ({update.get('reason')})"
        if update.get("status") == "completed":
            text += f": {tokens(update.get('tokensBefore'))} → {tokens(update.get('tokensAfter'))} tokens"
        if update.get("error"):
            text += f": {update['error']}"
        line.append(text, style="bold magenta")
    elif kind == "external_change":
        line.append(
            f"⚠ the file was {update.get('reason')} by another program: "
            f"{update.get('previousEntryCount')} → {update.get('entryCount')} entries, "
            f"leaf {update.get('leafId')}",
            style="bold yellow",
        )
    elif kind == "leaf_changed":
        line.append(f"· leaf {update.get('previousLeafId')} → {update.get('leafId')}", style="dim")
    elif kind == "label_update":
        label = update.get("label")
        target = update.get("entryId")
        text = f"label {one_line(str(label), 200)!r} on {target}" if label else f"label cleared on {target}"
        line.append("· " + text, style="yellow")
    elif kind == "session_info_update":
        line.append(f"· named {one_line(str(update.get('title')), 200)!r}", style="dim")
    elif kind == "file_history_update":
        paths = ", ".join(update.get("paths") or [])
        line.append(f"· file history {update.get('event')} {paths}".rstrip(), style="dim")
    elif kind == "resync_required":
        line.append(f"⚠ updates were dropped ({update.get('reason')}); re-reading", style="bold yellow")
    else:
        return None
    return line


class _Printer:
    def __init__(self, out: Output, session_id: str, width: int) -> None:
        self.out = out
        self.session_id = session_id
        self.width = width

    def entry(self, entry: dict[str, Any], external: bool = False) -> None:
        if self.out.json:
            line = {"sessionId": self.session_id, "kind": "entry", "external": external, "entry": entry}
            self.out.emit(line, compact=True)
        else:
            self.out.show(entry_line(entry, self.width, external))
            self.out.out.file.flush()

    def update(self, update: dict[str, Any]) -> None:
        if self.out.json:
            self.out.emit({"sessionId": self.session_id, "kind": "update", "update": update}, compact=True)
            return
        line = update_line(update)
        if line is not None:
            self.out.show(line)
            self.out.out.file.flush()


async def _entries_after(
    client: Any, session_id: str, after: str | None, offset: int
) -> list[dict[str, Any]]:
    """Every entry after ``after`` (or from ``offset``), in file order, a page at a time."""
    out: list[dict[str, Any]] = []
    params: dict[str, Any] = {"sessionId": session_id, "limit": 5000}
    if after is not None:
        params["afterId"] = after
    else:
        params["offset"] = offset
    while True:
        page = await call(client, "session/entries", params)
        out += page["entries"]
        if page.get("nextOffset") is None:
            return out
        params.pop("afterId", None)
        params["offset"] = page["nextOffset"]


async def cmd_tail(args: argparse.Namespace, out: Output) -> int:
    async with daemon_client(args) as client:
        sid = await resolve_session(client, args.session)
        printer = _Printer(out, sid, args.width)
        await call(client, "session/load", {"sessionId": sid, "subscribe": args.follow})
        first = await call(client, "session/entries", {"sessionId": sid, "limit": 1})
        total = int(first["total"])
        start = max(0, total - args.lines)
        last = await _entries_after(client, sid, None, start) if args.lines else []
        for entry in last:
            printer.entry(entry)
        if not args.follow:
            return EXIT_OK
        last_id: str | None = last[-1].get("id") if last else None
        if last_id is None and total:
            tail = await call(client, "session/entries", {"sessionId": sid, "offset": total - 1, "limit": 1})
            last_id = tail["entries"][-1].get("id") if tail["entries"] else None
        out.note(f"following {sid} (Ctrl-C to stop)")
        async for update in client.updates(sid):
            kind = update.get("sessionUpdate")
            if kind == "entries_appended":
                new = await _entries_after(client, sid, last_id, 0)
                wanted = set(update.get("entryIds") or [])
                for entry in new:
                    printer.entry(entry, external=bool(update.get("external")) and entry.get("id") in wanted)
                if new:
                    last_id = new[-1].get("id")
            elif kind in ("external_change", "resync_required"):
                printer.update(update)
                count = await call(client, "session/entries", {"sessionId": sid, "limit": 1})
                total = int(count["total"])
                tail = await call(
                    client, "session/entries", {"sessionId": sid, "offset": max(0, total - 1), "limit": 1}
                )
                last_id = tail["entries"][-1].get("id") if tail["entries"] else None
            else:
                printer.update(update)
    return EXIT_OK
