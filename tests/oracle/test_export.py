"""Export to Pi, checked with Pi's own code: every fixture of every agent sessiond reads.

Each Codex, OpenCode and Claude Code fixture (``tests/fixtures``) is exported (the code path of
``sessiond export``) into a fresh store; pi-oracle (Pi 1.6.0's session code) opens every
exported file and builds its context. That context must have the same messages as sessiond's
view of the source: the same roles in the same order, the same texts (as ``inspect`` renders
them, unclipped), and the same tool-call pairing (each assistant's call ids followed by their
results, in order). Skipped when pi-oracle is not installed (``scripts/setup-oracle``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.inspection import _describe_message, open_agent_session
from sessiond.model.tokens import PI
from sessiond.store.claude import ClaudeSession
from sessiond.store.export import EXPORT_MARKER, export_to_pi
from sessiond.store.layout import StoreLayout
from sessiond.store.opencode import OpenCodeDatabase, OpenCodeJsonStore, db_session_path
from tests.conftest import CLAUDE_FIXTURES, FIXTURES, oracle_dir
from tests.oracle.pi import pi_results

ORACLE = oracle_dir()
pytestmark = [pytest.mark.oracle, pytest.mark.skipif(ORACLE is None, reason="pi-oracle is not installed")]


def sources(work: Path) -> Iterator[tuple[str, Any]]:
    for path in sorted((FIXTURES / "codex").rglob("rollout-*.jsonl")):
        yield f"codex/{path.stem[-12:]}", open_agent_session(path)
    for db in sorted((FIXTURES / "opencode").glob("*/opencode.db")):
        copy = work / "opencode" / db.parent.name
        copy.mkdir(parents=True)
        shutil.copyfile(db, copy / "opencode.db")
        for row in OpenCodeDatabase(copy / "opencode.db").session_rows():
            yield (
                f"opencode/{db.parent.name}/{row['id']}",
                open_agent_session(db_session_path(copy, row["id"])),
            )
    for file in OpenCodeJsonStore(FIXTURES / "opencode" / "json-store").session_files():
        yield f"opencode/json/{file.stem}", open_agent_session(file)
    for path in sorted(CLAUDE_FIXTURES.glob("*/*.jsonl")):
        yield f"claude/{path.parent.name}/{path.stem[:8]}", ClaudeSession.open(path)


def _described(messages: list[Any]) -> list[tuple[Any, Any]]:
    return [(d["role"], d.get("text")) for d in (_describe_message(m, lambda t: t, PI) for m in messages)]


def _pairing(messages: list[Any]) -> list[tuple[str, ...]]:
    """Per assistant message with calls: its call ids, then the result ids that follow it."""
    out: list[tuple[str, ...]] = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        calls = [
            b["id"] for b in m.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"
        ]
        if not calls:
            continue
        results = []
        for after in messages[i + 1 :]:
            if after.get("role") != "toolResult":
                break
            results.append(after["toolCallId"])
        out.append((*calls, "|", *results))
    return out


def test_pi_opens_every_export_with_the_context_of_its_source(tmp_path: Path) -> None:
    assert ORACLE is not None
    layout = StoreLayout(tmp_path / "store")
    cases = []
    for name, session in sources(tmp_path):
        exported = export_to_pi(session, layout.cwd_dir, source_info={"fixture": name})
        cases.append((name, session.context().messages, exported.path))
        exported.close()
    assert len(cases) >= 24  # 11 Codex, 6 OpenCode, 7 Claude Code
    results = pi_results(ORACLE, [c[2] for c in cases], "--full", "--raw")
    failures = []
    for (name, ours, path), pi in zip(cases, results, strict=True):
        assert "error" not in pi, f"{name}: Pi could not open {path}: {pi.get('error')}"
        first = json.loads(path.read_text().split("\n")[1])
        assert first["type"] == "custom" and first["customType"] == EXPORT_MARKER
        theirs = pi["context"]["messages"]
        mine = _described(ours)
        if [(t["role"], t.get("text")) for t in theirs] != mine:
            failures.append(f"{name}: roles/texts differ ({len(theirs)} vs {len(mine)} messages)")
            continue
        if _pairing(pi["context"]["raw"]) != _pairing(ours):
            failures.append(f"{name}: tool-call pairing differs")
    assert not failures, "\n".join(failures)
