"""``sessiond stats``: the table with its totals row, ``--json`` exactly as ``stats/query``,
precise errors. It reads the records itself (no daemon)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson

from tests.conftest import FIXTURES

SESSIOND = Path(sys.executable).parent / "sessiond"


def setup(tmp_path: Path) -> dict[str, str]:
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(FIXTURES / "claude-code" / "ccl-2.1.17", projects / "p")
    unknown = {
        "type": "assistant",
        "sessionId": "s-unknown",
        "timestamp": "2026-01-23T18:00:00.000Z",
        "cwd": "/elsewhere",
        "message": {"id": "m1", "model": "my-local-model", "usage": {"input_tokens": 5, "output_tokens": 6}},
    }
    (projects / "p" / "s-unknown.jsonl").write_bytes(orjson.dumps(unknown) + b"\n")
    return {
        **os.environ,
        "SESSIOND_HOME": str(tmp_path / "store"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "codex"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "200",
    }


def stats(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SESSIOND), "stats", *args], check=False, env=env, capture_output=True, text=True, timeout=120
    )


def test_json_is_exactly_the_contracts_shape(tmp_path: Path) -> None:
    env = setup(tmp_path)
    done = stats(env, "daily", "--json", "--timezone", "UTC", "--breakdown")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"rows", "totals", "pricesAsOf"}
    row_keys = {"period", "agent", "model", "inputTokens", "outputTokens", "cacheReadTokens"}
    row_keys |= {"cacheCreationTokens", "totalTokens", "cost"}
    assert all(set(r) == row_keys for r in data["rows"])
    assert {r["model"] for r in data["rows"]} == {
        "claude-haiku-4-5-20251001",
        "claude-opus-4-5-20251101",
        "my-local-model",
    }
    unpriced = next(r for r in data["rows"] if r["model"] == "my-local-model")
    assert unpriced["cost"] is None and unpriced["totalTokens"] == 11
    assert data["totals"]["cacheReadTokens"] == 272977 and data["totals"]["cost"] > 0
    sessions = json.loads(stats(env, "session", "--json", "--cwd", "/elsewhere").stdout)
    assert [(r["period"], r["cwd"]) for r in sessions["rows"]] == [("s-unknown", "/elsewhere")]
    assert (tmp_path / "store" / "usage.sqlite3").stat().st_mode & 0o777 == 0o600


def test_the_table_has_a_totals_row_the_price_date_and_unpriced(tmp_path: Path) -> None:
    env = setup(tmp_path)
    done = stats(env, "--timezone", "UTC")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "prices as of 20" in out and "2026-01-23" in out
    assert "Total" in out and "$0.15" in out
    by_model = stats(env, "model", "--timezone", "UTC").stdout
    assert "unpriced" in by_model


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    env = setup(tmp_path)
    done = stats(env, "daily", "--timezone", "Nowhere/Zone")
    assert done.returncode == 2 and "Nowhere/Zone" in done.stderr and "Traceback" not in done.stderr
    done = stats(env, "daily", "--since", "last week", "--json")
    assert done.returncode == 2 and "since" in done.stderr
    assert json.loads(done.stdout)["error"]["message"].startswith("since")
    done = stats(env, "hourly")
    assert done.returncode == 2 and "invalid choice" in done.stderr
