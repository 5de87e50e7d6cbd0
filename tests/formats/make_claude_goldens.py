"""Write the committed expectations for the Claude Code reader: ``tests/golden/claude-code/<sample>.json``.

One JSON file per sample directory of ``tests/fixtures/claude-code``, holding a summary of every
transcript in it (the main file and its sub-agent files): load diagnostics, titles, the leaf and
the reconstructed chain, the messages (role and the fields that identify them), usage, the Pi
tree and the sub-agent links. ``tests/formats/test_claude_code.py`` recomputes the same summary
and compares; the numbers that matter were reviewed by hand (docs/claude-code.md, "Results on
the shipped samples") and are also asserted literally there.

Run after a deliberate change of behaviour, then review the diff::

    .venv/bin/python -m tests.formats.make_claude_goldens
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from sessiond.formats import claude_code as cc
from sessiond.model.tree import SessionTree
from sessiond.store import claude_files
from tests.conftest import CLAUDE_FIXTURES, GOLDEN

FIXTURES = CLAUDE_FIXTURES
OUT = GOLDEN / "claude-code"


def sample_dirs() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir())


def transcripts(sample: Path) -> list[Path]:
    return sorted(sample.rglob("*.jsonl"))


_KINDS = {"text": "x", "thinking": "k", "toolCall": "c"}


def _message_brief(source: str, m: dict[str, Any]) -> list[Any]:
    role = m["role"]
    if role == "assistant":
        calls = [b["id"] for b in m["content"] if b["type"] == "toolCall"]
        kinds = "".join(_KINDS.get(b["type"], "?") for b in m["content"])
        return [source, role, m["stopReason"], m["usage"]["totalTokens"], kinds, calls]
    if role == "toolResult":
        return [source, role, m["toolCallId"], m["toolName"], m["isError"], bool(m.get("details"))]
    content = m["content"]
    text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
    return [source, role, text[:60]]


def summarize(path: Path, sample: Path) -> dict[str, Any]:
    t = claude_files.load_transcript(path)
    r = cc.reconstruct(t)
    entries = cc.to_pi_entries(t)
    tree = SessionTree(entries)
    custom: dict[str, int] = {}
    roles: dict[str, int] = {}
    for e in entries:
        if e["type"] == "custom":
            custom[e["customType"]] = custom.get(e["customType"], 0) + 1
        else:
            roles[e["message"]["role"]] = roles.get(e["message"]["role"], 0) + 1
    diag = {k: v for k, v in r.diagnostics.items() if k != "preservedSegment"}
    out: dict[str, Any] = {
        "sniff": claude_files.is_claude_code_file(path),
        "sessionId": t.session_id,
        "agentId": t.agent_id,
        "version": t.version,
        "load": t.diagnostics.as_json(),
        "titles": t.titles.as_json(),
        "title": t.title(),
        "listing": cc.listing_fields(t),
        "leaf": r.leaf_uuid,
        "rule": r.rule,
        "chain": r.chain,
        "naiveChainLength": len(r.naive_chain),
        "diagnostics": diag,
        "messages": [_message_brief(s, m) for s, m in r.messages],
        "piEntries": {
            "count": len(entries),
            "roots": [e["id"] for e in entries if e["parentId"] is None],
            "orphans": tree.diagnostics().orphans,
            "roles": roles,
            "customTypes": custom,
        },
    }
    if not t.is_sidechain_file:
        out["subagents"] = [
            {**s.as_json(), "path": None if s.path is None else Path(s.path).relative_to(sample).as_posix()}
            for s in claude_files.find_subagents(path, t)
        ]
        session = cc.reconstruct(t, rule="session")
        out["sessionRule"] = {"leaf": session.leaf_uuid, "chainLength": len(session.chain)}
    return out


def sample_summary(sample: Path) -> dict[str, Any]:
    return {p.relative_to(sample).as_posix(): summarize(p, sample) for p in transcripts(sample)}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for sample in sample_dirs():
        target = OUT / f"{sample.name}.json"
        target.write_text(json.dumps(sample_summary(sample), indent=1, ensure_ascii=False) + "\n")
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
