"""The differential test of the usage records against ccusage itself (issue 27).

ccusage 20.0.24 (``scripts/setup-ccusage``) runs with ``--offline --json -z UTC`` on a copy of
every Claude Code and Codex fixture (``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME`` point at the copy);
sessiond reads the same copy. Token totals per day and model, and per session and model, must
be equal exactly; costs within 1% unless docs/usage.md explains the difference (a price table
difference is a reason; a counting difference is a defect).

Sessions are named differently: ccusage names a Codex session by its file's path under
``sessions/`` and a Claude Code 2.0 ``agent-*.jsonl`` beside the sessions by the file, sessiond
by the rollout's id and by the parent session the agent file names (its work is the parent's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.usage.index import Source, UsageIndex
from sessiond.usage.prices import PriceBook
from sessiond.usage.report import Query, run
from tests.conftest import FIXTURES, REPO

CCUSAGE = REPO / ".cache" / "ccusage" / "node_modules" / "ccusage" / "src" / "cli.js"
NATIVE = REPO / ".cache" / "ccusage" / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"

pytestmark = pytest.mark.skipif(
    not (CCUSAGE.is_file() and NATIVE.is_file() and shutil.which("node")),
    reason="ccusage 20.0.24 is not installed (scripts/setup-ccusage; needs npm and Linux x86-64)",
)

COST_EXPLAINED: dict[tuple[str, str], str] = {
    # (agent, model) -> the reason in docs/usage.md ("Differences from ccusage").
}
"""Cost differences over 1% that docs/usage.md explains (price tables, not counting)."""

SESSIONS_EXPLAINED: dict[tuple[str, str], str] = {
    ("codex", "01a245a8-d048-78f1-95c1-571248d3902f"): (
        "a Codex 0.169 `codex exec fork` (paginated history: nothing of the parent is replayed) whose "
        "own resumed turn made two model calls; ccusage 20.0.24 leaves the fork out entirely, sessiond "
        "counts its calls (docs/usage.md, Compared with ccusage)"
    ),
}
"""Sessions ccusage does not count and sessiond does, each explained in docs/usage.md: their
usage is taken out of sessiond's numbers before comparing, and everything else must be equal."""

Tokens = tuple[int, int, int, int]


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("ccusage")
    projects = base / "claude" / "projects"
    for fixture in sorted((FIXTURES / "claude-code").iterdir()):
        if fixture.is_dir():
            shutil.copytree(fixture, projects / fixture.name)
    sessions = base / "codex" / "sessions"
    for rollout in sorted((FIXTURES / "codex").rglob("rollout-*.jsonl")):
        if "archived_sessions" in rollout.parts:
            continue  # ccusage reads sessions/ only
        target = sessions / rollout.relative_to(FIXTURES / "codex")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(rollout, target)
    return {"claude": base / "claude", "codex": base / "codex", "db": base / "usage.sqlite3"}


def ccusage(agent: str, report: str, homes: dict[str, Path]) -> dict[str, Any]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(homes["claude"].parent),
        "TZ": "UTC",
        "CLAUDE_CONFIG_DIR": str(homes["claude"]),
        "CODEX_HOME": str(homes["codex"]),
        "NO_COLOR": "1",
    }
    argv = ["node", str(CCUSAGE), agent, report, "--offline", "--json", "-z", "UTC"]
    if agent == "claude":
        argv.append("--breakdown")
    done = subprocess.run(argv, env=env, capture_output=True, timeout=120, check=True)
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.fixture(scope="module")
def ours(homes: dict[str, Path]) -> UsageIndex:
    sources = [
        Source("claude", "claude-code", homes["claude"] / "projects"),
        Source("codex", "codex", homes["codex"]),
    ]
    index = UsageIndex(homes["db"], sources, PriceBook())
    index.refresh()
    return index


def their_breakdowns(agent: str, entry: dict[str, Any]) -> dict[str, tuple[Tokens, float | None]]:
    """ccusage's per-model numbers of one row: Claude's ``modelBreakdowns`` (with cost), Codex's
    ``models`` (tokens; the cost only when the row has one model)."""
    out: dict[str, tuple[Tokens, float | None]] = {}
    if agent == "claude":
        for m in entry["modelBreakdowns"]:
            tokens = (m["inputTokens"], m["outputTokens"], m["cacheReadTokens"], m["cacheCreationTokens"])
            out[m["modelName"]] = (tokens, m["cost"])
    else:
        models = entry["models"]
        for name, m in models.items():
            tokens = (m["inputTokens"], m["outputTokens"], m["cacheReadTokens"], m["cacheCreationTokens"])
            out[name] = (tokens, entry["costUSD"] if len(models) == 1 else None)
    return out


Rows = dict[tuple[str, str], tuple[Tokens, float | None]]


def our_rows(index: UsageIndex, agent: str, group_by: str) -> Rows:
    """sessiond's numbers, without the sessions ccusage is known not to count."""
    out: Rows = {}
    for r in run(index, Query(group_by=group_by, agent=agent, timezone="UTC", breakdown=True))["rows"]:
        tokens = (r["inputTokens"], r["outputTokens"], r["cacheReadTokens"], r["cacheCreationTokens"])
        out[r["period"], r["model"]] = (tokens, r["cost"])
    for (where, sid), _reason in SESSIONS_EXPLAINED.items():
        if where != agent:
            continue
        query = Query(group_by=group_by, agent=agent, timezone="UTC", breakdown=True, session_id=sid)
        own = run(index, query)["rows"]
        assert own, f"{sid}: the explained session has usage here"
        for r in own:
            key = (r["period"], r["model"])
            tokens = (r["inputTokens"], r["outputTokens"], r["cacheReadTokens"], r["cacheCreationTokens"])
            before, cost = out.pop(key)
            rest = (
                before[0] - tokens[0],
                before[1] - tokens[1],
                before[2] - tokens[2],
                before[3] - tokens[3],
            )
            if any(rest):
                out[key] = (rest, None if cost is None or r["cost"] is None else cost - r["cost"])
    return out


def session_name(agent: str, entry: dict[str, Any], homes: dict[str, Path]) -> str:
    """ccusage's session -> sessiond's id for it (see the module's docstring)."""
    sid = str(entry["sessionId"])
    if agent == "codex":
        return "-".join(sid.rsplit("/", 1)[-1].split("-")[-5:])
    if sid.startswith("agent-"):
        path = next((homes["claude"] / "projects").rglob(f"{sid}.jsonl"))
        for raw in path.read_bytes().splitlines():
            named = orjson.loads(raw).get("sessionId")
            if named:
                return str(named)
    return sid


def compare(
    theirs: dict[tuple[str, str], tuple[Tokens, float | None]],
    ours: dict[tuple[str, str], tuple[Tokens, float | None]],
    agent: str,
) -> None:
    assert {k: v[0] for k, v in ours.items()} == {k: v[0] for k, v in theirs.items()}
    for key, (_, their_cost) in theirs.items():
        our_cost = ours[key][1]
        if their_cost is None or (agent, key[1]) in COST_EXPLAINED:
            continue
        assert our_cost is not None, f"{key}: unpriced here, ${their_cost:.4f} in ccusage"
        assert our_cost == pytest.approx(their_cost, rel=0.01), f"{agent} {key}"


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_daily_token_totals_per_model_equal_ccusages(
    agent: str, homes: dict[str, Path], ours: UsageIndex
) -> None:
    theirs: dict[tuple[str, str], tuple[Tokens, float | None]] = {}
    for day in ccusage(agent, "daily", homes)["daily"]:
        for model, numbers in their_breakdowns(agent, day).items():
            theirs[_iso_day(day["date"]), model] = numbers
    assert theirs, "ccusage found usage in the fixtures"
    compare(theirs, our_rows(ours, agent, "daily"), agent)


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_per_session_token_totals_per_model_equal_ccusages(
    agent: str, homes: dict[str, Path], ours: UsageIndex
) -> None:
    theirs: dict[tuple[str, str], tuple[Tokens, float | None]] = defaultdict(lambda: ((0, 0, 0, 0), 0.0))
    for entry in ccusage(agent, "session", homes)["sessions"]:
        for model, numbers in their_breakdowns(agent, entry).items():
            theirs[session_name(agent, entry, homes), model] = numbers
    assert theirs
    compare(dict(theirs), our_rows(ours, agent, "session"), agent)


def _iso_day(value: str) -> str:
    """ccusage's ``date`` (``2026-01-23``, or ``Jan 23, 2026`` in some builds) as ISO."""
    if len(value) == 10 and value[4] == "-":
        return value
    from datetime import datetime  # noqa: PLC0415

    return datetime.strptime(value, "%b %d, %Y").date().isoformat()
