"""``compaction/prepare`` against Pi's own ``prepareCompaction`` + ``serializeConversation``.

Sessions are generated now (fresh seeds, some mutated), plus the real Pi fixtures; Pi's code
runs on each file (``pi_prepare.mjs``) and sessiond must give the same first kept entry,
split-turn flag, ``tokensBefore``, previous summary, messages to summarise (in full), turn
prefix, serialized texts and file lists. A second test goes through the real daemon: the
method's answer equals Pi's, and a checkpoint committed through the daemon opens in Pi with
the same context as sessiond's.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiond.compaction.prepare import CompactionSettings, NoCompaction
from sessiond.compaction.summary import assemble, describe_preparation
from sessiond.formats.pi import load_session
from sessiond.model.tree import SessionTree
from sessiond.store.session import Session
from sessiond_client import Client
from tests.conftest import PI_FIXTURES, REPO, oracle_dir
from tests.harness.daemon import start_daemon
from tests.oracle.compare import differences
from tests.oracle.generate_sessions import generate
from tests.oracle.mutations import mutate
from tests.oracle.pi import pi_result

ORACLE = oracle_dir()
pytestmark = [pytest.mark.oracle, pytest.mark.skipif(ORACLE is None, reason="pi-oracle is not installed")]

SEED = int(os.environ.get("SESSIOND_LIVE_SEED", "910001"))
COUNT = int(os.environ.get("SESSIOND_LIVE_COUNT", "60"))
MUTATED = 40
COMPARED = (
    "firstKeptEntryId",
    "isSplitTurn",
    "previousSummary",
    "messagesToSummarize",
    "turnPrefixMessages",
    "conversation",
    "turnPrefix",
    "readFiles",
    "modifiedFiles",
    "fileOps",
)


def pi_prepare(files: list[Path], keep: int, reserve: int = 16384) -> list[dict[str, Any]]:
    assert ORACLE is not None
    proc = subprocess.run(
        [
            "node",
            str(REPO / "tests" / "oracle" / "pi_prepare.mjs"),
            str(keep),
            str(reserve),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
        timeout=600,
        env={**os.environ, "PI_ORACLE_DIR": str(ORACLE)},
    )
    return [json.loads(line) for line in proc.stdout.split("\n") if line]


def cases(directory: Path) -> list[Path]:
    files: list[Path] = []
    for i in range(COUNT):
        path = directory / f"gen-{SEED + i}.jsonl"
        path.write_bytes(generate(random.Random(SEED + i), i).encode())
        files.append(path)
    for i in range(MUTATED):
        rng = random.Random(SEED + COUNT + i)
        path = directory / f"mutated-{SEED + COUNT + i}.jsonl"
        path.write_bytes(mutate(generate(random.Random(SEED + COUNT + i), i), rng).encode())
        if not SessionTree(load_session(path).entries).diagnostics().cycles:
            files.append(path)
    for fixture in sorted(PI_FIXTURES.glob("*.jsonl")):
        target = directory / fixture.name
        shutil.copyfile(fixture, target)
        # v1 files get random ids when migrated: migrate once, give both the same file.
        Session.open(target).close()
        files.append(target)
    return files


def ours(path: Path, keep: int) -> dict[str, Any]:
    copy = path.with_suffix(".sessiond.jsonl")
    shutil.copyfile(path, copy)
    with Session.open(copy) as session:
        prep = session.prepare_compaction(CompactionSettings(True, 16384, keep))
    if isinstance(prep, NoCompaction):
        return {"prepared": False}
    described = describe_preparation(prep, None, 1000)
    _, details = assemble(prep, "", None)
    suffix = assemble(prep, "", None)[0] if not prep.is_split_turn or not prep.turn_prefix_messages else ""
    return {"prepared": True, **described, "details": details, "suffix": suffix, "tokens": prep.tokens_before}


@pytest.mark.parametrize("keep", [300, 2000, 8000])
def test_prepare_matches_pi(keep: int, tmp_path: Path) -> None:
    files = cases(tmp_path)
    expected = pi_prepare(files, keep)
    failures: list[str] = []
    prepared = split = previous = 0
    for path, pi in zip(files, expected, strict=True):
        if "error" in pi:
            continue  # Pi itself could not load this file
        mine = ours(path, keep)
        if mine["prepared"] != pi["prepared"]:
            failures.append(f"{path.name}: prepared {mine['prepared']} vs Pi {pi['prepared']}")
            continue
        if not pi["prepared"]:
            continue
        prepared += 1
        split += pi["isSplitTurn"]
        previous += pi["previousSummary"] is not None
        diffs = differences({k: mine[k] for k in COMPARED}, {k: pi[k] for k in COMPARED})
        if mine["tokens"] != pi["tokensBefore"] and not (
            mine["tokens"] != mine["tokens"] and pi["tokensBefore"] is None
        ):
            diffs.append(f"tokensBefore: {mine['tokens']} vs Pi {pi['tokensBefore']}")
        if mine["details"] != {"readFiles": pi["readFiles"], "modifiedFiles": pi["modifiedFiles"]}:
            diffs.append("details differ from Pi's file lists")
        if mine["suffix"] and mine["suffix"] != pi["fileSuffix"]:
            diffs.append(f"file suffix {mine['suffix']!r} vs Pi {pi['fileSuffix']!r}")
        if diffs:
            failures.append(f"{path.name}:\n  " + "\n  ".join(diffs))
    assert prepared >= 5 and split >= 1 and previous >= 1, (prepared, split, previous)
    assert not failures, f"{len(failures)} files differ from Pi:\n" + "\n".join(failures[:8])


def _into_store(store: Path, source: Path) -> str:
    """Place a session file in the daemon's store under a fresh id (as sessiond would name it)."""
    lines = source.read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    header["id"] = str(uuid.uuid4())
    lines[0] = json.dumps(header, separators=(",", ":"), ensure_ascii=False)
    directory = store / "sessions" / "--work-proj--"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"2026-01-01T00-00-00-000Z_{header['id']}.jsonl").write_text(
        "\n".join(lines), encoding="utf-8"
    )
    return str(header["id"])


def pi_context(path: Path) -> list[Any]:
    assert ORACLE is not None
    result = pi_result(ORACLE, path, "--raw")
    assert "error" not in result, result["error"]
    return list(result["context"]["raw"])


@pytest.mark.anyio
async def test_daemon_prepare_and_commit_match_pi(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    sources = cases(tmp_path / "cases")[:COUNT]
    expected = pi_prepare(sources, 300)
    chosen = [(s, pi) for s, pi in zip(sources, expected, strict=True) if pi.get("prepared")][:6]
    assert len(chosen) >= 3
    daemon = start_daemon(tmp_path / "daemon")
    try:
        client = await Client.connect_unix(daemon.socket)
        await client.initialize("pi-differential")
        for source, pi in chosen:
            sid = _into_store(daemon.store, source)
            prepared = await client.request("compaction/prepare", {"sessionId": sid, "keepRecentTokens": 300})
            diffs = differences({k: prepared[k] for k in COMPARED}, {k: pi[k] for k in COMPARED})
            assert not diffs, f"{source.name}: " + "; ".join(diffs)
            committed = await client.request(
                "compaction/commit",
                {
                    "sessionId": sid,
                    "preparationId": prepared["preparationId"],
                    "summary": "## Goal\nCheckpoint written through sessiond.",
                    "firstKeptEntryId": prepared["firstKeptEntryId"],
                    "tokensBefore": prepared["tokensBefore"],
                },
            )
            loaded = await client.request("session/load", {"sessionId": sid})
            context = await client.request("context/get", {"sessionId": sid})
            theirs = pi_context(Path(loaded["path"]))
            mine = [m["message"] for m in context["messages"]]
            assert "compactionSummary" in [m["role"] for m in mine]
            assert committed["entryId"] in [m["entryId"] for m in context["messages"]]
            assert not differences({"messages": mine}, {"messages": theirs}), source.name
        await client.close()
    finally:
        assert daemon.stop() == 0
