"""The soak script in CI: 30 s of the full workload against the real daemon, verdicts only.

``benchmarks.soak`` is a benchmark (the 10-minute run is documented in docs/soak.md); here it
runs for 30 s in a subprocess with the same 32 logical clients and its correctness verdicts are
asserted: nothing lost or duplicated, files load, subscribers saw file order, the external
writer's lines are visible, the daemon stayed up and stopped cleanly, RSS did not grow. Latency
numbers are printed by the script but never asserted (2 shared cores). A second test feeds the
script's checker damaged files, so that a checker that always says "fine" would fail here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_soak_30_seconds(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.soak",
            "--duration",
            "30",
            "--clients",
            "32",
            "--json",
            "--tmp",
            str(tmp_path),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard: 30 s of workload, then start-up and checks on a loaded machine
        cwd=REPO,
    )
    assert proc.stdout.strip(), proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    failed = {name: v for name, v in report["verdicts"].items() if not v["ok"]}
    assert not failed, json.dumps(
        {"failed": failed, "problems": report["verify"]["problems"][:20], "errors": report["totals"]},
        indent=1,
    )
    assert proc.returncode == 0
    # The workload really ran: every kind of work happened and was checked.
    verify = report["verify"]
    assert verify["ackedByDurability"].get("buffered", 0) > 0
    assert verify["ackedByDurability"].get("fsync", 0) > 0
    assert report["totals"]["outcomes"].get("compaction ok", 0) >= 1
    assert verify["externalWritten"] > 0 and verify["externalAnnounced"]
    assert verify["updatesSeen"] > verify["externalWritten"]
    assert report["config"]["clients"] == 32 and sum(report["config"]["roles"].values()) == 32
    ops = report["totals"]["ops"]
    for op in ("append/buffered", "append/fsync", "context/get", "context/usage", "compaction/run"):
        assert ops[op]["n"] > 0, op


def write_session(path: Path, session_id: str, entries: list[tuple[str, str | None]]) -> None:
    """A Pi v3 file: header and one user message per (id, nonce); ``nonce`` None: no nonce."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/x",
        }
    ]
    parent = None
    for eid, nonce in entries:
        text = f"[soak {nonce}] hello" if nonce else "hello"
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
            }
        )
        parent = eid
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def result(
    acked: list[tuple[str, str]], seen: list[str | None], refused: list[str] | None = None
) -> dict[str, Any]:
    return {
        "acked": [{"sessionId": "s1", "ids": [i], "nonces": [n], "durability": "buffered"} for i, n in acked],
        "refused": refused or [],
        "unacked": [],
        "seen": [
            {"client": 1, "role": "subscriber", "sessionId": "s1", "ids": seen, "kinds": {}, "external": 0},
            {"client": 1000, "role": "pinned", "sessionId": "pi", "ids": ["p1"], "kinds": {}, "external": 1},
        ],
    }


def test_the_checker_catches_lost_duplicated_reordered_and_refused_entries(tmp_path: Path) -> None:
    from benchmarks import soak  # noqa: PLC0415

    soak.PI_SESSION_ID = "pi"
    pi = tmp_path / "pi.jsonl"
    write_session(pi, "pi", [("p0", None), ("p1", None)])
    store = tmp_path / "store"
    good = store / "sessions" / "--x--" / "s1.jsonl"
    write_session(good, "s1", [("a", "c1-1.0"), ("b", "c1-2.0"), ("c", "c1-3.0")])
    acked = [("a", "c1-1.0"), ("b", "c1-2.0"), ("c", "c1-3.0")]

    clean = soak.verify_files(store, pi, [result(acked, ["a", "b", "c"])], ["p1"])
    assert clean["problems"] == []
    assert (clean["lost"], clean["duplicated"], clean["subscriberOrderProblems"]) == (0, 0, 0)
    assert clean["externalInFile"] and clean["externalAnnounced"]

    # An acknowledged entry missing from the file, one written twice, updates out of order,
    # a refused append that was written anyway, an external line never announced.
    write_session(good, "s1", [("a", "c1-1.0"), ("c", "c1-3.0"), ("c", "c1-3.0"), ("d", "c1-4.0")])
    with good.open("a") as f:
        f.write('{"type": "message", "id": "torn"')
    bad = soak.verify_files(store, pi, [result(acked, ["c", "a"], refused=["c1-4.0"])], ["p1", "p2"])
    assert bad["lost"] == 2  # b is gone, c is there twice
    assert bad["duplicated"] >= 1
    assert bad["subscriberOrderProblems"] == 1
    assert bad["refusedWritten"] == 1
    assert not bad["externalInFile"] and not bad["externalAnnounced"]
    assert any("newline" in p for p in bad["problems"])
    assert any("loader" in p for p in bad["problems"])
