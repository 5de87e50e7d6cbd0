"""Usage and cost across every agent (issue 27): ``stats/query``, ``stats/subscribe``,
``stats/unsubscribe``. The records, their counting rules and prices are in docs/usage.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import Params, Result, SessionId
from .base import Empty, EmptyResult, MethodSpec


class StatsTotals(Result):
    inputTokens: int = Field(description="Input tokens, without the cached part.")
    outputTokens: int = Field(description="Output tokens (reasoning included).")
    cacheReadTokens: int
    cacheCreationTokens: int = Field(description="Cache writes (5-minute and 1-hour together).")
    totalTokens: int = Field(description="The four above added.")
    cost: float | None = Field(
        description="USD: the agent's own cost where it recorded one, else the registry's or `[prices]`'s "
        "price; null when no record of the row has a price (unpriced, never 0)."
    )


class StatsRow(StatsTotals):
    period: str = Field(
        description="`YYYY-MM-DD` (daily; weekly: the week's Monday), `YYYY-MM` (monthly), the session id "
        "(session), the model (model)."
    )
    agent: str = Field(description="The root: `sessiond`, `pi`, `claude`, `codex` or `opencode`.")
    model: str | None = Field(description="The model; null when not broken down by model.")
    title: str | None = Field(None, description="groupBy session: the session's first prompt.")
    cwd: str | None = Field(None, description="groupBy session: the session's directory.")


class StatsIndexing(Result):
    done: int
    total: int


class StatsQueryParams(Params):
    groupBy: Literal["daily", "weekly", "monthly", "session", "model"] = "daily"
    agent: str | None = Field(None, max_length=64, description="Only this root's usage.")
    cwd: str | None = Field(None, max_length=4096, description="Only sessions in this directory or below.")
    since: str | None = Field(
        None, max_length=64, description="ISO 8601 date (from the day's start) or date-time."
    )
    until: str | None = Field(
        None, max_length=64, description="ISO 8601 date (to the day's end, inclusive) or date-time."
    )
    timezone: str | None = Field(
        None, max_length=64, description="IANA name the days are cut in; default the daemon's local zone."
    )
    breakdown: bool = Field(False, description="One row per model within each period.")
    sessionId: SessionId | None = Field(None, description="Only this session.")


class StatsQueryResult(Result):
    rows: list[StatsRow] = Field(description="By period, then agent, then model.")
    totals: StatsTotals
    pricesAsOf: str = Field(description="The date of the price data (`YYYY-MM-DD`).")
    indexing: StatsIndexing | None = Field(
        None, description="While the daemon's first read of every root runs: files read so far; else null."
    )


class StatsSubscribeParams(Params):
    sessionId: SessionId | None = Field(None, description="Also send this session's totals.")
    timezone: str | None = Field(None, max_length=64, description="The zone 'today' is cut in.")


class StatsUpdateResult(Result):
    today: StatsTotals = Field(description="Every agent's usage since local midnight.")
    sessionId: str | None = None
    session: StatsTotals | None = Field(None, description="The subscribed session's whole usage.")


_TOTALS = {
    "inputTokens": 8234,
    "outputTokens": 51933,
    "cacheReadTokens": 3647854,
    "cacheCreationTokens": 137976,
    "totalTokens": 3845997,
    "cost": 2.3932,
}

METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "stats/query",
            StatsQueryParams,
            StatsQueryResult,
            "Tokens and cost of every agent's sessions by day, week, month, session or model (what "
            "`sessiond stats` prints).",
            (C.INVALID_PARAMS, C.SESSION_NOT_FOUND),
            {"groupBy": "daily", "since": "2026-07-01", "timezone": "Europe/Berlin", "breakdown": True},
            {
                "rows": [
                    {"period": "2026-07-29", "agent": "claude", "model": "claude-sonnet-4-5", **_TOTALS}
                ],
                "totals": _TOTALS,
                "pricesAsOf": "2026-12-01",
                "indexing": None,
            },
        ),
        MethodSpec(
            "stats/subscribe",
            StatsSubscribeParams,
            StatsUpdateResult,
            'Send this connection `stats_update` (`session/update`, `sessionUpdate: "stats_update"`) as usage '
            "arrives, at most every 0.2 s: today's totals, and the named session's. Replaces an earlier "
            "subscription; the answer is the numbers now. The envelope's `sessionId` is the named session, "
            'or `""`.',
            (C.INVALID_PARAMS, C.SESSION_NOT_FOUND),
            {"sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001", "timezone": "Europe/Berlin"},
            {"today": _TOTALS, "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001", "session": _TOTALS},
        ),
        MethodSpec(
            "stats/unsubscribe",
            Empty,
            EmptyResult,
            "Stop `stats_update` to this connection.",
            (),
            {},
            {},
        ),
    ]
}
