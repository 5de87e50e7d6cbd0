"""Reports over the usage records: by day, week, month, session or model (``stats/query``).

Records are summed in SQLite by 15-minute bucket (every time zone's offset is a multiple of
15 minutes), agent and model; the buckets are then put in their local day in the asked time
zone. A row's ``cost`` adds the agent's own cost where it recorded one, else the price of the
registry or ``[prices]``; it is ``None`` (unpriced) when none of its records has a price, and
an unpriced model adds nothing to a priced row's cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, Final, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidArgumentError
from .index import BUCKET_MS, UsageIndex

GroupBy = Literal["daily", "weekly", "monthly", "session", "model"]
GROUPS: Final = ("daily", "weekly", "monthly", "session", "model")
TOKEN_FIELDS: Final = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")


@dataclass(frozen=True, slots=True)
class Query:
    group_by: str = "daily"
    agent: str | None = None
    cwd: str | None = None
    since: str | None = None
    until: str | None = None
    timezone: str | None = None
    breakdown: bool = False
    session_id: str | None = None


def zone(name: str | None) -> tzinfo:
    """An IANA time zone (``None``: the local one)."""
    if name is None:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgumentError(f"unknown time zone {name!r}", field="timezone") from None


def bound(value: str | None, tz: tzinfo, field: str, end: bool) -> int | None:
    """An ISO date (the whole day in ``tz``: its start, or for ``until`` its end) or datetime -> ms."""
    if value is None:
        return None
    text = value.strip()
    try:
        if len(text) in (8, 10) and "T" not in text and " " not in text:
            day = date.fromisoformat(text if len(text) == 10 else f"{text[:4]}-{text[4:6]}-{text[6:]}")
            moment = datetime.combine(day + timedelta(days=1) if end else day, time(), tz)
            return int(moment.timestamp() * 1000) - (1 if end else 0)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(
            f"{field} must be an ISO 8601 date or date-time, not {value!r}", field=field
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return int(moment.timestamp() * 1000)


def empty_totals() -> dict[str, Any]:
    return dict.fromkeys(TOKEN_FIELDS, 0) | {"totalTokens": 0, "cost": None}


def _add(into: dict[str, Any], i: int, o: int, cr: int, cc: int, cost: float | None, priced: int) -> None:
    into["inputTokens"] += i
    into["outputTokens"] += o
    into["cacheReadTokens"] += cr
    into["cacheCreationTokens"] += cc
    into["totalTokens"] += i + o + cr + cc
    if priced:
        into["cost"] = (into["cost"] or 0.0) + (cost or 0.0)


def run(index: UsageIndex, q: Query) -> dict[str, Any]:
    """``{"rows": [...], "totals": {...}, "pricesAsOf": "YYYY-MM-DD"}`` for a query."""
    if q.group_by not in GROUPS:
        raise InvalidArgumentError(f"groupBy must be one of {', '.join(GROUPS)}", field="groupBy")
    tz = zone(q.timezone)
    since = bound(q.since, tz, "since", end=False)
    until = bound(q.until, tz, "until", end=True)
    by_time = q.group_by not in ("session", "model")
    aligned = all(b is None or (b + (1 if b is until else 0)) % BUCKET_MS == 0 for b in (since, until))
    if by_time and q.cwd is None and q.session_id is None and aligned:
        with index._lock:  # the sums by 15 minutes, summed again by local period in SQLite
            rows = _by_period(index, q, tz, since, until)
        grouped = [(str(key), agent, model, rest) for key, agent, model, *rest in rows]
    elif by_time:
        sql, args = _from_records(q, since, until)
        with index._lock:
            rows = index.db.execute(sql, args).fetchall()
        label = _labeller(q.group_by, tz)
        grouped = [(label(key), agent, model, rest) for key, agent, model, *rest in rows]
    else:
        sql, args = _from_records(q, since, until)
        with index._lock:
            rows = index.db.execute(sql, args).fetchall()
        grouped = [(str(key), agent, model, rest) for key, agent, model, *rest in rows]
    out = _rows(grouped, q.breakdown or q.group_by == "model")
    if q.group_by == "session":
        _describe_sessions(index, out)
    totals = empty_totals()
    for row in out:
        _add(
            totals,
            row["inputTokens"],
            row["outputTokens"],
            row["cacheReadTokens"],
            row["cacheCreationTokens"],
            row["cost"],
            row["cost"] is not None,
        )
    if not out:
        totals["cost"] = 0.0  # nothing was spent; "unpriced" (None) means responses without a price
    return {"rows": out, "totals": totals, "pricesAsOf": index.prices_as_of}


def _by_period(index: UsageIndex, q: Query, tz: tzinfo, since: int | None, until: int | None) -> list[Any]:
    """Sum the 15-minute buckets by local day, week or month inside SQLite: a temporary table
    holds each local day's first and last bucket and its period's label (a few hundred rows a
    year, DST included), joined on the buckets' key range (``CROSS JOIN``: the periods outside,
    so each is a range of the buckets' primary key) — Python sees one row per period, agent and
    model, not every bucket."""
    db = index.db
    lo, hi = db.execute("SELECT min(bucket), max(bucket) FROM buckets").fetchone()
    if lo is None:
        return []
    if since is not None:
        lo = max(lo, since // BUCKET_MS)
    if until is not None:
        hi = min(hi, until // BUCKET_MS)
    if lo > hi:
        return []
    label = _labeller(q.group_by, tz)
    day = datetime.fromtimestamp(lo * BUCKET_MS / 1000, tz).date()
    last = datetime.fromtimestamp(hi * BUCKET_MS / 1000, tz).date()
    days: list[tuple[str, int, int]] = []
    while day <= last:
        start = int(datetime.combine(day, time(), tz).timestamp() * 1000) // BUCKET_MS
        following = int(datetime.combine(day + timedelta(days=1), time(), tz).timestamp() * 1000) // BUCKET_MS
        days.append((label(start), max(start, lo), min(following - 1, hi)))
        day += timedelta(days=1)
    db.execute("CREATE TEMP TABLE IF NOT EXISTS periods(label TEXT NOT NULL, lo INTEGER, hi INTEGER)")
    db.execute("DELETE FROM periods")
    db.executemany("INSERT INTO periods VALUES(?, ?, ?)", days)
    where, args = "", []
    if q.agent is not None:
        where, args = " AND b.agent = ?", [q.agent]
    return db.execute(
        "SELECT p.label, b.agent, b.model, sum(b.input), sum(b.output), sum(b.cache_read),"
        " sum(b.cache_creation), sum(b.cost), sum(b.priced) FROM periods p CROSS JOIN buckets b"
        f" ON b.bucket BETWEEN p.lo AND p.hi{where} GROUP BY p.label, b.agent, b.model",
        args,
    ).fetchall()


def _from_records(q: Query, since: int | None, until: int | None) -> tuple[str, list[Any]]:
    where: list[str] = ["1 = 1"]
    args: list[Any] = []
    if since is not None:
        where.append("r.ts >= ?")
        args.append(since)
    if until is not None:
        where.append("r.ts <= ?")
        args.append(until)
    if q.agent is not None:
        where.append("r.agent = ?")
        args.append(q.agent)
    if q.session_id is not None:
        where.append("r.session_id = ?")
        args.append(q.session_id)
    join = ""
    if q.cwd is not None:
        cwd = q.cwd.rstrip("/") or "/"
        join = " JOIN sessions s ON s.agent = r.agent AND s.session_id = r.session_id"
        where.append("(s.cwd = ? OR substr(s.cwd, 1, ?) = ?)")
        args += [cwd, len(cwd) + 1, cwd + "/"]
    key = {"session": "r.session_id", "model": "r.model"}.get(q.group_by, f"r.ts / {BUCKET_MS}")
    cost = "coalesce(r.agent_cost, r.calc_cost)"
    sql = (
        f"SELECT {key}, r.agent, r.model, sum(r.input), sum(r.output), sum(r.cache_read),"
        f" sum(r.cache_creation), sum({cost}), count({cost}) FROM records r{join}"
        f" WHERE {' AND '.join(where)} GROUP BY {key}, r.agent, r.model"
    )
    return sql, args


def _labeller(group_by: str, tz: tzinfo) -> Any:
    cache: dict[int, str] = {}

    def label(bucket: int) -> str:
        found = cache.get(bucket)
        if found is None:
            day = datetime.fromtimestamp(bucket * BUCKET_MS / 1000, tz).date()
            if group_by == "weekly":
                found = (day - timedelta(days=day.weekday())).isoformat()
            elif group_by == "monthly":
                found = day.isoformat()[:7]
            else:
                found = day.isoformat()
            cache[bucket] = found
        return found

    return label


def _rows(grouped: Iterable[tuple[str, str, str, list[Any]]], by_model: bool) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for period, agent, model, (i, o, cr, cc, cost, priced) in grouped:
        key = (period, agent, model if by_model else None)
        row = merged.get(key)
        if row is None:
            row = merged[key] = {"period": period, "agent": agent, "model": key[2], **empty_totals()}
        _add(row, i or 0, o or 0, cr or 0, cc or 0, cost, priced)
    return [merged[k] for k in sorted(merged, key=lambda k: (k[0], k[1], k[2] or ""))]


def _describe_sessions(index: UsageIndex, rows: list[dict[str, Any]]) -> None:
    wanted = {(r["agent"], r["period"]) for r in rows}
    found: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    with index._lock:
        for agent, sid, cwd, title in index.db.execute("SELECT agent, session_id, cwd, title FROM sessions"):
            if (agent, sid) in wanted:
                found[agent, sid] = (cwd, title)
    for row in rows:
        cwd, title = found.get((row["agent"], row["period"]), (None, None))
        row["title"] = title
        row["cwd"] = cwd


def today_totals(index: UsageIndex, tz: tzinfo, session_id: str | None = None) -> dict[str, Any]:
    """Today's totals in ``tz`` (of one session when given): what ``stats_update`` carries."""
    start = datetime.combine(datetime.now(tz).date(), time(), tz)
    where = "ts >= ?"
    args: list[Any] = [int(start.timestamp() * 1000)]
    if session_id is not None:
        where, args = "session_id = ?", [session_id]
    cost = "coalesce(agent_cost, calc_cost)"
    with index._lock:
        row = index.db.execute(
            "SELECT sum(input), sum(output), sum(cache_read), sum(cache_creation),"
            f" sum({cost}), count({cost}), count(*) FROM records WHERE {where}",
            args,
        ).fetchone()
    totals = empty_totals()
    i, o, cr, cc, c, priced, responses = row
    _add(totals, i or 0, o or 0, cr or 0, cc or 0, c, priced)
    if not responses:
        totals["cost"] = 0.0  # nothing was spent (None would say "unpriced": the editor showed "$?")
    return totals
