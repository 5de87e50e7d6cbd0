"""``tree/navigate`` against Pi's own code: the persisted leaf marker changes no Pi-derived view.

Pi's ``/tree`` moves the leaf in memory; sessiond persists the move as a ``sessiond.leaf``
entry below the target (issue 14 item 9). For generated sessions (compactions among them)
and targets that are compactions or assistant messages, Pi navigates (``branch``) and
sessiond navigates through the real daemon; then both are asked what Pi derives from the
branch — the context (messages and context entries), the usage estimate and
``prepareCompaction`` (already compacted, or where it would cut) — right after the move,
and again after the same two messages are appended below the target (where the marker sits
between the target and what follows, in sessiond's file only).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.pi import load_session
from sessiond.model import entries as E
from sessiond.model.js import date_ms
from sessiond_client import Client
from tests.builders import assistant, user
from tests.conftest import REPO, oracle_dir
from tests.oracle.compare import differences
from tests.oracle.generate_sessions import generate
from tests.oracle.test_compaction_prepare import _into_store
from tests.rpc.conftest import start_daemon

ORACLE = oracle_dir()
pytestmark = [pytest.mark.oracle, pytest.mark.skipif(ORACLE is None, reason="pi-oracle is not installed")]

SEED = int(os.environ.get("SESSIOND_LIVE_SEED", "930001"))
COUNT = int(os.environ.get("SESSIOND_NAVIGATE_COUNT", "40"))
KEEP = 300
RESERVE = 16384
APPEND = [
    {**user("and now? " + "q" * 600), "timestamp": 1_900_000_000_000},
    {
        **assistant("here is what follows " + "a" * 600, total=0),
        "timestamp": 1_900_000_001_000,
    },
]


def targets(path: Path, rng: random.Random) -> list[str]:
    """Compactions and an assistant message: targets Pi's ``/tree`` leaves the leaf on."""
    loaded = load_session(path)
    if not E.is_valid_header(json_line(path)):
        return []  # (robustness cases with junk before the header: not a session to navigate)
    entries = [e for e in loaded.entries if type(e) is dict]
    if any(
        type(e.get("timestamp")) is str and date_ms(e["timestamp"]) != date_ms(e["timestamp"])
        for e in entries
    ):
        # V8 reads some free-form dates ("0" is 2000-01-01) that sessiond reads as invalid, a
        # documented difference (model/js.py ``date_ms``) this test is not about.
        return []
    counts = Counter(e.get("id") for e in entries)
    unique = [e for e in entries if type(e.get("id")) is str and counts[e["id"]] == 1]
    compactions = [e["id"] for e in unique if e.get("type") == E.COMPACTION]
    answers = [e["id"] for e in unique if E.message_role(e) == "assistant"]
    return compactions[-2:] + rng.sample(answers, min(1, len(answers)))


def json_line(path: Path) -> Any:
    first = path.read_bytes().split(b"\n", 1)[0]
    try:
        return json.loads(first)
    except ValueError:
        return None


def pi_navigate(path: Path, chosen: list[str], work: Path) -> list[dict[str, Any]]:
    assert ORACLE is not None
    spec = work / f"{path.stem}.spec.json"
    spec.write_text(
        json.dumps({"file": str(path), "targets": chosen, "keep": KEEP, "reserve": RESERVE, "append": APPEND})
    )
    proc = subprocess.run(
        ["node", str(REPO / "tests" / "oracle" / "pi_navigate.mjs"), str(spec)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
        timeout=600,
        env={**os.environ, "PI_ORACLE_DIR": str(ORACLE)},
    )
    return [json.loads(line) for line in proc.stdout.split("\n") if line]


async def ours(client: Client, sid: str, pi: dict[str, Any]) -> dict[str, Any]:
    """What sessiond answers, in the shape of ``pi_navigate.mjs``'s views."""
    context = await client.request("context/get", {"sessionId": sid})
    usage = await client.request("context/usage", {"sessionId": sid})
    prep = await client.request(
        "compaction/prepare", {"sessionId": sid, "keepRecentTokens": KEEP, "reserveTokens": RESERVE}
    )
    out: dict[str, Any] = {
        "context": [m["message"] for m in context["messages"]],
        "contextEntryIds": context["entryIds"],
        "tokens": usage["used"],
        "prepared": prep["prepared"],
        "reason": prep.get("reason"),
    }
    if prep["prepared"]:
        branch = await client.request("tree/branch", {"sessionId": sid, "full": True})
        kept = next(e for e in branch["entries"] if e["id"] == prep["firstKeptEntryId"])
        out.update(
            firstKeptMessage=kept.get("message"),
            isSplitTurn=prep["isSplitTurn"],
            tokensBefore=prep["tokensBefore"],
            messagesToSummarize=prep["messagesToSummarize"],
        )
        if pi["firstKeptEntryId"] in {e["id"] for e in branch["entries"]}:
            out["firstKeptEntryId"] = prep["firstKeptEntryId"]  # same ids before the target
    return out


def compare(mine: dict[str, Any], pi: dict[str, Any], where: str) -> list[str]:
    theirs: dict[str, Any] = {
        "context": pi["context"],
        "contextEntryIds": pi["contextEntryIds"],
        "tokens": None if pi["tokens"] is None else int(pi["tokens"]),
        "prepared": pi["prepared"],
        "reason": pi["reason"],
    }
    if pi["prepared"] and mine["prepared"]:
        for name in ("firstKeptMessage", "isSplitTurn", "tokensBefore", "messagesToSummarize"):
            theirs[name] = pi[name]
        if "firstKeptEntryId" in mine:
            theirs["firstKeptEntryId"] = pi["firstKeptEntryId"]
    ours: dict[str, Any] = {name: mine.get(name) for name in theirs}
    if where == "appended":
        # The two appended entries have fresh ids on each side (they are the last two).
        ours["contextEntryIds"] = ours["contextEntryIds"][:-2] + ["appended"] * 2
        theirs["contextEntryIds"] = theirs["contextEntryIds"][:-2] + ["appended"] * 2
    return [f"{where}: {d}" for d in differences(ours, theirs)]


@pytest.mark.anyio
async def test_navigate_changes_no_pi_derived_view(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    rng = random.Random(SEED)
    plans: list[tuple[Path, list[dict[str, Any]]]] = []
    for i in range(COUNT):
        path = cases / f"gen-{SEED + i}.jsonl"
        path.write_bytes(generate(random.Random(SEED + i), i).encode())
        chosen = targets(path, rng)
        if chosen:
            answers = [a for a in pi_navigate(path, chosen, tmp_path) if "error" not in a]
            plans.append((path, answers))
    daemon = start_daemon(tmp_path / "daemon")
    failures: list[str] = []
    compacted = appended_prepared = 0
    try:
        client = await Client.connect_unix(daemon.socket)
        await client.initialize("pi-navigate-differential")
        for path, answers in plans:
            for pi in answers:
                sid = _into_store(daemon.store, path)
                moved = await client.request("tree/navigate", {"sessionId": sid, "targetId": pi["target"]})
                assert moved["moved"] is False or moved["markerEntryId"] == moved["leafId"]
                diffs = compare(await ours(client, sid, pi["navigated"]), pi["navigated"], "navigated")
                await client.request(
                    "session/append",
                    {"sessionId": sid, "entries": [{"type": "message", "message": m} for m in APPEND]},
                )
                diffs += compare(await ours(client, sid, pi["appended"]), pi["appended"], "appended")
                if diffs:
                    failures.append(f"{path.name} -> {pi['target']}:\n  " + "\n  ".join(diffs[:6]))
                compacted += pi["navigated"]["reason"] == "already_compacted"
                appended_prepared += pi["appended"]["prepared"]
        await client.close()
    finally:
        assert daemon.stop() == 0
    assert compacted >= 3 and appended_prepared >= 3, (compacted, appended_prepared)
    assert not failures, f"{len(failures)} navigations differ from Pi:\n" + "\n".join(failures[:8])
