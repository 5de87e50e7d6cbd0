"""What each MCP tool does: requests to the daemon, answers as text plus the same as data.

Every tool returns an :class:`Answer`: ``text`` is what the agent's model reads (short lines,
ids it can pass to the next tool, the commands a person would run), ``data`` the structured
twin for programs. Input rules beyond the schema's (an id prefix that names nothing, a start
past the end) raise :class:`~.link.ToolFailure` with a message that says what to do instead.
Nothing here writes to a session except ``handoff``, which creates a new one and only reads
its source.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final, Literal

from .link import DaemonLink, MethodMissing, ToolFailure
from .render import (
    Block,
    blocks_of_context,
    blocks_of_entries,
    clip,
    estimate_tokens,
    one_line,
    paginate,
)

AGENTS: Final = {
    "sessiond": "sessiond",
    "pi": "pi",
    "claude": "claude",
    "claude-code": "claude",
    "claude_code": "claude",
    "codex": "codex",
    "opencode": "opencode",
}
"""Agent names a model may use -> the daemon's root names."""

AGENT_LABELS: Final = {
    "sessiond": "sessiond",
    "pi": "Pi",
    "claude": "Claude Code",
    "codex": "Codex",
    "opencode": "OpenCode",
}

MIN_PREFIX: Final = 4
"""The shortest id prefix accepted, as on the command line."""

What = Literal["context", "branch", "entries"]


@dataclass
class Answer:
    """A tool's answer: text for the model, data for programs."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------- shared


def root_of(agent: str | None) -> str | None:
    if agent is None or agent == "":
        return None
    root = AGENTS.get(agent.strip().lower())
    if root is None:
        raise ToolFailure(f"unknown agent {agent!r}: use one of sessiond, pi, claude, codex, opencode")
    return root


def parse_when(value: str | None, name: str, *, end: bool = False) -> datetime | None:
    """An ISO date or date-time (or today/yesterday) as an aware UTC time; a date given as the
    end of a range means the end of that day."""
    if value is None or value == "":
        return None
    text = value.strip().lower()
    today = datetime.now(UTC).date()
    day: date | None = None
    if text == "today":
        day = today
    elif text == "yesterday":
        day = today - timedelta(days=1)
    if day is None:
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ToolFailure(f"{name}: {value!r} is not an ISO date (2026-12-01) or date-time") from None
        if len(value.strip()) <= 10:
            day = parsed.date()
        else:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start + timedelta(days=1) - timedelta(microseconds=1) if end else start


def _iso_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def short_time(value: Any) -> str:
    parsed = _iso_time(value)
    return parsed.strftime("%Y-%m-%d %H:%M") if parsed else "?"


def title_of(row: Mapping[str, Any]) -> str:
    """A session's title in one short line: its name, else its first message's first line."""
    for key in ("title", "firstMessage"):
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            first = next((line for line in value.splitlines() if line.strip()), value)
            return one_line(first, 80)
    return "(untitled)"


async def resolve(link: DaemonLink, session: str) -> str:
    """The full id ``session`` names: itself, or the one id it is a prefix of (any root)."""
    target = session.strip()
    if not target:
        raise ToolFailure("id: give a session id (or the first characters of one)")
    if re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", target):
        return target
    if len(target) < MIN_PREFIX:
        return target
    matches: list[str] = []
    params: dict[str, Any] = {"limit": 1000}
    while True:
        page = await link.call("session/list", params)
        for row in page["sessions"]:
            sid = row["sessionId"]
            if sid == target:
                return target
            if sid.startswith(target):
                matches.append(sid)
        if not page.get("nextCursor"):
            break
        params["cursor"] = page["nextCursor"]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ToolFailure(
            f"id {target!r} is ambiguous: {len(matches)} sessions start with it "
            f"({', '.join(sorted(matches)[:5])}…); give more of the id"
        )
    return target


async def _stats(link: DaemonLink, params: dict[str, Any]) -> dict[str, Any] | None:
    """``stats/query``'s answer, or None from a daemon that has no usage records."""
    try:
        result = await link.call("stats/query", params)
    except MethodMissing:
        return None
    return result if isinstance(result, dict) else None


def _tokens(n: Any) -> str:
    if not isinstance(n, int):
        return "?"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    return f"{n:,}"


def _cost(value: Any) -> str:
    return f"${value:,.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else "unpriced"


# ---------------------------------------------------------------------------- list_sessions


async def list_sessions(
    link: DaemonLink,
    *,
    agent: str | None,
    cwd: str | None,
    all_projects: bool,
    since: str | None,
    limit: int,
) -> Answer:
    root = root_of(agent)
    project = None if all_projects else (cwd or os.getcwd())
    after = parse_when(since, "since")
    params: dict[str, Any] = {"limit": min(1000, max(limit, 50))}
    if root:
        params["root"] = root
    if project:
        params["cwd"] = project
    rows: list[dict[str, Any]] = []
    while len(rows) < limit:
        page = await link.call("session/list", params)
        done = False
        for row in page["sessions"]:
            stamp = _iso_time(row.get("updatedAt") or row.get("createdAt"))
            if after is not None and (stamp is None or stamp < after):
                done = True  # newest first: the rest are older still
                break
            rows.append(row)
            if len(rows) >= limit:
                break
        if done or not page.get("nextCursor"):
            break
        params["cursor"] = page["nextCursor"]
    usage: dict[str, dict[str, Any]] = {}
    if rows:
        query: dict[str, Any] = {"groupBy": "session"}
        if root:
            query["agent"] = root
        if project:
            query["cwd"] = project
        stats = await _stats(link, query)
        for item in (stats or {}).get("rows", []):
            if isinstance(item, dict) and isinstance(item.get("period"), str):
                usage[item["period"]] = item
    where = f"in {project}" if project else "in every project"
    if not rows:
        hint = "" if all_projects else " (all_projects=true lists every project)"
        return Answer(f"No sessions {where}{hint}.", {"sessions": []})
    lines = [f"{len(rows)} session(s) {where}, newest first:"]
    out: list[dict[str, Any]] = []
    for row in rows:
        sid = row["sessionId"]
        label = AGENT_LABELS.get(str(row.get("root")), str(row.get("root")))
        spent = usage.get(sid)
        spent_text = (
            f" · {_tokens(spent.get('totalTokens'))} tokens, {_cost(spent.get('cost'))}" if spent else ""
        )
        lines.append(
            f"- {sid} · {label} · {title_of(row)}\n  {row.get('cwd')} · last active "
            f"{short_time(row.get('updatedAt') or row.get('createdAt'))} · {row.get('messageCount')} messages"
            f"{spent_text}"
        )
        out.append(
            {
                "id": sid,
                "agent": row.get("root"),
                "title": title_of(row),
                "cwd": row.get("cwd"),
                "lastActivity": row.get("updatedAt") or row.get("createdAt"),
                "messageCount": row.get("messageCount"),
                "usage": spent,
            }
        )
    return Answer("\n".join(lines), {"sessions": out})


# ---------------------------------------------------------------------------- search_sessions


def marked(snippet: str) -> str:
    """The search snippet's match markers (U+0002 … U+0003) as «…» for a reading model."""
    return snippet.replace("\x02", "«").replace("\x03", "»")


async def search_sessions(link: DaemonLink, params: dict[str, Any]) -> Answer:
    query = {k: v for k, v in params.items() if v is not None and v != ""}
    if "agent" in query:
        query["agent"] = root_of(query["agent"])
    try:
        result = await link.call("search/query", query)
    except MethodMissing:
        raise ToolFailure(
            "this sessiond daemon has no search index (search/query); update and restart it"
        ) from None
    hits = result.get("hits") or []
    # Some clients (Claude Code) hand the model the structured content instead of the text: it
    # carries the same readable markers, never the wire's control characters.
    data = {**result, "hits": [{**h, "snippet": marked(str(h.get("snippet") or ""))} for h in hits]}
    if not hits:
        text = f"No match for {params['query']!r}."
        if result.get("indexing"):
            progress = result["indexing"]
            text += (
                f" (The index is still being built: {progress.get('done')}/{progress.get('total')} sessions.)"
            )
        return Answer(text, data)
    lines = [f"{result.get('total', len(hits))} match(es) for {params['query']!r}:"]
    resumes: dict[str, str] = {}
    for i, hit in enumerate(hits, 1):
        label = AGENT_LABELS.get(str(hit.get("agent")), str(hit.get("agent")))
        branch = "" if hit.get("onBranch", True) else " (on an abandoned branch)"
        lines.append(
            f"{i}. {short_time(hit.get('timestamp'))} · {label} · {one_line(str(hit.get('title') or ''), 60)}"
            f"\n   session {hit.get('sessionId')} · entry {hit.get('entryId')} · {hit.get('role')}{branch}"
            f" · {hit.get('cwd')}\n   {one_line(marked(str(hit.get('snippet') or '')), 300)}"
        )
        if isinstance(hit.get("resume"), str):
            resumes.setdefault(str(hit.get("sessionId")), hit["resume"])
    if resumes:
        lines.append("To resume: " + "; ".join(f"{sid[:8]}: `{cmd}`" for sid, cmd in resumes.items()))
    if result.get("nextCursor"):
        lines.append(f"More results: call again with cursor={result['nextCursor']!r}.")
    lines.append("Read one with read_session(id=..., around=ENTRY_ID).")
    return Answer("\n".join(lines), data)


# ---------------------------------------------------------------------------- read_session


async def _session_row(link: DaemonLink, sid: str) -> dict[str, Any]:
    loaded = await link.call("session/load", {"sessionId": sid})
    return loaded if isinstance(loaded, dict) else {}


async def _blocks(link: DaemonLink, sid: str, what: What, start: int, budget: int) -> tuple[list[Block], int]:
    """The numbered items of ``what`` from ``start`` on (enough of them to fill ``budget``),
    and how many there are in all."""
    if what == "context":
        ctx = await link.call("context/get", {"sessionId": sid})
        return blocks_of_context(ctx["messages"]), len(ctx["messages"])
    if what == "branch":
        branch = await link.call("tree/branch", {"sessionId": sid, "full": True})
        entries = branch.get("entries") or []
        return blocks_of_entries(entries), len(entries)
    blocks: list[Block] = []
    offset, total, chars = start, 0, 0
    while True:
        page = await link.call("session/entries", {"sessionId": sid, "offset": offset, "limit": 200})
        total = int(page["total"])
        got = blocks_of_entries(page["entries"], offset)
        blocks += got
        chars += sum(len(b.text) for b in got)
        if page.get("nextOffset") is None or chars > budget * 4 + 4000:
            break
        offset = int(page["nextOffset"])
    return blocks, total


async def _index_of(link: DaemonLink, sid: str, what: What, entry_id: str) -> int:
    if what == "entries":
        offset = 0
        while True:
            page = await link.call("session/entries", {"sessionId": sid, "offset": offset, "limit": 1000})
            for i, entry in enumerate(page["entries"], offset):
                if entry.get("id") == entry_id:
                    return i
            if page.get("nextOffset") is None:
                break
            offset = int(page["nextOffset"])
    else:
        blocks, _ = await _blocks(link, sid, what, 0, 1 << 30)
        for block in blocks:
            if block.entry_id == entry_id:
                return block.index
    raise ToolFailure(
        f"around: entry {entry_id!r} is not in this session's {what}"
        + ("" if what == "entries" else " (try what='entries': it holds every entry, off-branch too)")
    )


async def read_session(
    link: DaemonLink, *, session: str, what: What, start: int | None, around: str | None, budget: int
) -> Answer:
    sid = await resolve(link, session)
    info = await _session_row(link, sid)
    if around is not None and start is not None:
        raise ToolFailure("give either start or around, not both")
    first = start or 0
    if around is not None:
        first = max(0, await _index_of(link, sid, what, around) - 2)
    blocks, total = await _blocks(link, sid, what, first, budget)
    if total and first >= total:
        raise ToolFailure(
            f"start: {first} is past the end ({total} items in this session's {what}; 0–{total - 1})"
        )
    blocks = [b for b in blocks if b.index >= first]
    agent = AGENT_LABELS.get(str(info.get("root")), str(info.get("root")))
    name = f" · {info['name']}" if info.get("name") else ""
    header = (
        f"Session {sid} · {agent}{name} · {info.get('cwd')}\n"
        f"{what}: {total} items (numbered from 0), showing from {first}; budget {budget} tokens"
    )
    page = paginate(blocks, total=total, budget=budget, header=header)
    data = {
        "sessionId": sid,
        "what": what,
        "start": first,
        "end": page.last,
        "total": total,
        "nextStart": page.next_index,
        "tokens": page.tokens,
        "agent": info.get("root"),
        "cwd": info.get("cwd"),
    }
    return Answer(page.text, data)


async def session_text(link: DaemonLink, session: str, budget: int) -> str:
    """The context of a session as text (the ``session://`` resource)."""
    answer = await read_session(link, session=session, what="context", start=None, around=None, budget=budget)
    return answer.text


# ---------------------------------------------------------------------------- session_usage

PERIODS: Final = ("today", "yesterday", "week", "month")


async def session_usage(link: DaemonLink, *, session: str | None, period: str | None) -> Answer:
    if session:
        sid = await resolve(link, session)
        usage = await link.call("context/usage", {"sessionId": sid})
        if usage.get("size"):
            pct = f" ({usage['percent']:.1f}%)" if isinstance(usage.get("percent"), int | float) else ""
            ctx_line = f"context: {_tokens(usage.get('used'))} of {_tokens(usage['size'])} tokens{pct}"
        else:
            ctx_line = f"context: {_tokens(usage.get('used'))} tokens (the model's window is unknown)"
        model = usage.get("model")
        if isinstance(model, dict) and model.get("modelId"):
            ctx_line += f" · model {model.get('modelId')}"
        stats = await _stats(link, {"groupBy": "model", "sessionId": sid})
        lines = [f"Session {sid}", ctx_line]
        if stats is not None:
            lines += _usage_rows(stats, "model")
        return Answer("\n".join(lines), {"sessionId": sid, "context": usage, "stats": stats})
    span = (period or "today").strip().lower()
    today = datetime.now().astimezone().date()
    if span == "today":
        since, until = today, today
    elif span == "yesterday":
        since = until = today - timedelta(days=1)
    elif span == "week":
        since, until = today - timedelta(days=6), today
    elif span == "month":
        since, until = today - timedelta(days=29), today
    else:
        try:
            since = until = date.fromisoformat(span)
        except ValueError:
            raise ToolFailure(
                f"period: {period!r} is not today, yesterday, week, month or a date (2026-12-01)"
            ) from None
    params = {"groupBy": "daily", "since": since.isoformat(), "until": until.isoformat(), "breakdown": True}
    stats = await _stats(link, params)
    if stats is None:
        raise ToolFailure("this sessiond daemon keeps no usage records (stats/query); update and restart it")
    lines = [f"Usage {since.isoformat()}" + ("" if since == until else f" to {until.isoformat()}")]
    lines += _usage_rows(stats, "period")
    return Answer("\n".join(lines), {"period": span, "stats": stats})


def _usage_rows(stats: Mapping[str, Any], key: str) -> list[str]:
    lines: list[str] = []
    rows = [row for row in stats.get("rows") or [] if isinstance(row, Mapping)]
    if not rows:
        return ["no usage recorded"]
    for row in rows:
        parts = [str(row[k]) for k in (key, "agent", "model") if row.get(k)]
        label = " · ".join(dict.fromkeys(parts))  # groupBy model: the period is the model
        lines.append(
            f"- {label}: in {_tokens(row.get('inputTokens'))}, out {_tokens(row.get('outputTokens'))}, "
            f"cache read {_tokens(row.get('cacheReadTokens'))}, "
            f"cache write {_tokens(row.get('cacheCreationTokens'))}"
            f" · {_cost(row.get('cost'))}"
        )
    totals = stats.get("totals")
    if isinstance(totals, Mapping):
        lines.append(f"total: {_tokens(totals.get('totalTokens'))} tokens · {_cost(totals.get('cost'))}")
    if stats.get("pricesAsOf"):
        lines.append(f"(prices as of {stats['pricesAsOf']}; 'unpriced' = a model without a known price)")
    return lines


# ---------------------------------------------------------------------------- file_changes


MAX_CHECKPOINTS: Final = 60
"""Checkpoints whose changed files ``file_changes`` works out (one diff request each)."""


def _states(diff: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A diff's per-file states: at its checkpoint (``from``) and on disk now (``to``)."""
    before: dict[str, Any] = {}
    now: dict[str, Any] = {}
    for f in diff.get("files") or []:
        if isinstance(f, Mapping) and isinstance(f.get("path"), str):
            before[f["path"]] = f.get("from")
            now[f["path"]] = f.get("to")
    return before, now


async def changed_per_checkpoint(
    link: DaemonLink, sid: str, checkpoints: Sequence[Mapping[str, Any]]
) -> list[list[str]]:
    """For each checkpoint, the files that changed between it and the next one (the last: and
    the disk now). A checkpoint holds the files as they were before its prompt, so what changed
    between two checkpoints is what the first prompt's turn changed."""
    states: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for c in checkpoints:
        diff = await link.call("fileHistory/diff", {"sessionId": sid, "messageId": c["messageId"]})
        states.append(_states(diff))
    out: list[list[str]] = []
    for i, (before, now) in enumerate(states):
        after = states[i + 1][0] if i + 1 < len(states) else now
        out.append(sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)))
    return out


async def file_changes(
    link: DaemonLink, *, session: str, diffs: bool, checkpoint: str | None, budget: int
) -> Answer:
    sid = await resolve(link, session)
    listing = await link.call("fileHistory/list", {"sessionId": sid})
    checkpoints = [c for c in listing.get("checkpoints") or [] if isinstance(c, dict) and c.get("messageId")]
    if checkpoint is not None and not any(c.get("messageId") == checkpoint for c in checkpoints):
        raise ToolFailure(
            f"checkpoint: {checkpoint!r} is not a checkpoint of this session (list them without it)"
        )
    if not checkpoints:
        return Answer(
            f"Session {sid} has no file-history checkpoints (its agent recorded no file backups).",
            {"sessionId": sid, "checkpoints": []},
        )
    recent = checkpoints[-MAX_CHECKPOINTS:]
    changed = await changed_per_checkpoint(link, sid, recent)
    skipped = len(checkpoints) - len(recent)
    lines = [
        f"Session {sid}: {len(checkpoints)} checkpoint(s), one per prompt, oldest first; "
        "files: what that prompt's turn changed" + (f" (the first {skipped} left out)" if skipped else "")
    ]
    rows: list[dict[str, Any]] = []
    for c, files in zip(recent, changed, strict=True):
        rows.append({**c, "changedFiles": files})
        if checkpoint is not None and c.get("messageId") != checkpoint:
            continue
        prompt = one_line(str(c.get("prompt") or ""), 100)
        lines.append(f"- {c.get('messageId')} · {short_time(c.get('timestamp'))} · {prompt!r}")
        lines.append(
            "  files: " + (", ".join(files[:30]) + (" …" if len(files) > 30 else "") if files else "(none)")
        )
    data: dict[str, Any] = {"sessionId": sid, "checkpoints": rows, "tracked": listing.get("tracked")}
    text = "\n".join(lines)
    if estimate_tokens(text) > budget:
        text = clip(text, budget * 4 - 200)
    if not diffs:
        return Answer(text, data)
    target = checkpoint or str(checkpoints[0]["messageId"])
    diff = await link.call("fileHistory/diff", {"sessionId": sid, "messageId": target})
    data["diff"] = diff
    text += f"\n\nChanges since checkpoint {target} (the files then → the files on disk now):"
    for f in diff.get("files") or []:
        if not f.get("changed"):
            continue
        body = f.get("diff") or f"({f.get('error') or 'binary or too large: sizes only'})"
        piece = f"\n{f.get('path')} (+{f.get('added')} −{f.get('removed')})\n{body}"
        if estimate_tokens(text + piece) > budget - 30:
            text += f"\n[… more diffs left out to stay within {budget} tokens; ask for one checkpoint]"
            break
        text += piece
    return Answer(text, data)


# ---------------------------------------------------------------------------- handoff


def _last_text(messages: Sequence[Mapping[str, Any]], role: str) -> str | None:
    for item in reversed(messages):
        message = item.get("message")
        if isinstance(message, Mapping) and message.get("role") == role:
            content = message.get("content")
            if isinstance(content, str) and content.strip():
                return content
            if isinstance(content, list):
                texts = [b.get("text") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
                joined = "\n".join(t for t in texts if isinstance(t, str) and t.strip())
                if joined:
                    return joined
    return None


def _edited_paths(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Files the conversation's tool calls wrote (Write, Edit, apply_patch), in first-seen order."""
    seen: dict[str, None] = {}
    for item in messages:
        message = item.get("message")
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            if not isinstance(block, Mapping) or block.get("type") != "toolCall":
                continue
            name = str(block.get("name") or "").lower()
            args = block.get("arguments")
            if not isinstance(args, Mapping):
                continue
            if any(w in name for w in ("write", "edit", "patch", "notebook")):
                for key in ("file_path", "path", "filePath", "notebook_path"):
                    if isinstance(args.get(key), str):
                        seen.setdefault(args[key], None)
                patch = args.get("input") or args.get("patch")
                if isinstance(patch, str):
                    for match in re.finditer(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", patch, re.M):
                        seen.setdefault(match.group(1).strip(), None)
    return list(seen)


async def handoff(link: DaemonLink, *, session: str) -> Answer:
    sid = await resolve(link, session)
    info = await _session_row(link, sid)
    leaf = info.get("leafId")
    if not leaf:
        raise ToolFailure(f"session {sid} has no entries yet: nothing to hand off")
    ctx = await link.call("context/get", {"sessionId": sid})
    messages = ctx.get("messages") or []
    first_prompt = next(
        (_last_text([m], "user") for m in messages if _last_text([m], "user")),
        None,
    )
    exported = await link.call("session/export", {"sessionId": sid}, retry=False)
    new_id, new_path = exported["sessionId"], exported["path"]
    files = _edited_paths(messages)
    with_history = False
    try:
        listing = await link.call("fileHistory/list", {"sessionId": sid})
        checkpoints = [
            c for c in listing.get("checkpoints") or [] if isinstance(c, dict) and c.get("messageId")
        ]
        for changed in await changed_per_checkpoint(link, sid, checkpoints[-MAX_CHECKPOINTS:]):
            for f in changed:
                if f not in files:
                    files.append(f)
                    with_history = True
    except ToolFailure:
        pass
    title = info.get("name") or (one_line(first_prompt, 80) if first_prompt else "(untitled)")
    agent = AGENT_LABELS.get(str(info.get("root")), str(info.get("root")))
    last_user = _last_text(messages, "user")
    last_answer = _last_text(messages, "assistant")
    lines = [
        f"# Handoff: {title}",
        f"From {agent} session {sid} in {info.get('cwd')} ({len(messages)} messages in context).",
        "",
        "## First prompt",
        clip(first_prompt or "(none)", 1500),
        "",
        "## Last exchange",
        "User: " + clip(last_user or "(none)", 1500),
        "",
        "Assistant: " + clip(last_answer or "(none)", 2500),
        "",
        "## Files changed",
        *([f"- {f}" for f in files[:50]] or ["(none recorded)"]),
        "",
        "## Continue",
        (
            f"The conversation was copied into Pi session {new_id} earlier (the same leaf; reused)"
            if exported.get("existing")
            else f"The conversation was copied into a new Pi session {new_id} (the source was only read):"
        ),
        f"- Pi: `cd {info.get('cwd')} && pi --session {new_path}`",
        f"- read it: `sessiond context {new_id}` · its tree: `sessiond tree {new_id}`",
    ]
    data = {
        "source": sid,
        "sessionId": new_id,
        "path": new_path,
        "title": title,
        "firstPrompt": first_prompt,
        "lastUser": last_user,
        "lastAssistant": last_answer,
        "files": files,
        "filesFromHistory": with_history,
        "reused": bool(exported.get("existing")),
        "cwd": info.get("cwd"),
    }
    return Answer("\n".join(lines), data)
