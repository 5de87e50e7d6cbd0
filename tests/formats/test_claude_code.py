"""The Claude Code transcript reader (docs/claude-code.md) on real and synthetic files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.errors import EntryNotFoundError
from sessiond.formats import claude_code as cc
from sessiond.model.tree import SessionTree
from sessiond.store import claude_files
from tests.conftest import FIXTURES as ALL_FIXTURES
from tests.conftest import GOLDEN, PI_FIXTURES
from tests.formats.make_claude_goldens import FIXTURES, sample_dirs, sample_summary

H1 = "ccv-1.0.98/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
H5 = "ah-2.0.76/6f2580aa-3095-45b7-8d4e-dd8cac7eeffe.jsonl"
H6 = "abp-2.0.76/agent-a0294d5.jsonl"
H7 = "ccl-2.1.17/29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl"
H7_AGENT = "ccl-2.1.17/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl"
H9 = "spotter-2.1.39/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
H9_AGENT = "spotter-2.1.39/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl"
H9_COMPACT = "spotter-2.1.39/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl"
H10 = "ccl-2.1.42/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
H11 = "ccl-2.1.114/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"


def load(rel: str) -> cc.ClaudeTranscript:
    return claude_files.load_transcript(FIXTURES / rel)


def all_transcripts() -> list[str]:
    if not FIXTURES.is_dir():
        return []
    return sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.jsonl"))


# --------------------------------------------------------------------------- helpers


def check_pairing(messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Every tool call is answered exactly once, right after its assistant message; no stray results."""
    seen_calls: set[str] = set()
    pending: list[str] = []
    for _, m in messages:
        role = m["role"]
        if role == "assistant":
            assert not pending, f"calls without results: {pending}"
            pending = [b["id"] for b in m["content"] if b["type"] == "toolCall"]
            assert not seen_calls & set(pending), "a tool_use id appears twice"
            seen_calls.update(pending)
        elif role == "toolResult":
            assert (pending and m["toolCallId"] == pending[0]) or m["toolCallId"] in pending
            pending.remove(m["toolCallId"])
        else:
            assert not pending, f"a {role} message between a call and its result"
    assert not pending


def api_usage_from_file(t: cc.ClaudeTranscript, r: cc.Reconstruction) -> tuple[int, int | None]:
    """Usage per API message computed independently: group the chain's assistant entries (after
    the context start) by message.id, take the field-wise max, sum the totals."""
    start = r.chain.index(r.diagnostics["contextStart"]) if r.diagnostics["contextStart"] else 0
    groups: dict[str, list[int]] = {}
    order: list[str] = []
    for u in r.chain[start:]:
        e = t.chain[u]
        if e["type"] != "assistant":
            continue
        mid = e["message"].get("id") or u
        usage = e["message"].get("usage") or {}
        fields = [
            usage.get(k) or 0
            for k in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            )
        ]
        if mid not in groups:
            order.append(mid)
            groups[mid] = fields
        else:
            groups[mid] = [max(a, b) for a, b in zip(groups[mid], fields, strict=True)]
    totals = [sum(groups[mid]) for mid in order]
    return sum(totals), (totals[-1] if totals else None)


# --------------------------------------------------------------------------- real transcripts


@pytest.mark.parametrize("sample", [p.name for p in sample_dirs()])
def test_goldens(sample: str) -> None:
    golden = GOLDEN / "claude-code" / f"{sample}.json"
    expected = json.loads(golden.read_text())
    actual = json.loads(json.dumps(sample_summary(FIXTURES / sample)))
    assert actual.keys() == expected.keys()
    for name in expected:
        assert actual[name] == expected[name], f"{sample}/{name} differs from {golden}"


@pytest.mark.parametrize("rel", all_transcripts())
def test_every_transcript_reconstructs_to_a_valid_request(rel: str) -> None:
    assert claude_files.is_claude_code_file(FIXTURES / rel)
    t = load(rel)
    r = cc.reconstruct(t)
    assert r.leaf_uuid is not None and r.chain[-1] == r.leaf_uuid
    assert len(set(r.chain)) == len(r.chain)
    assert r.diagnostics["unpairedAfter"] == 0
    assert r.diagnostics["syntheticToolResults"] == 0
    check_pairing(r.messages)
    # usage is counted once per API message
    total, last = api_usage_from_file(t, r)
    assert r.diagnostics["usageTotalTokensSum"] == total
    assert r.diagnostics["lastAssistantTotalTokens"] == last
    assistants = [m for _, m in r.messages if m["role"] == "assistant"]
    assert sum(m["usage"]["totalTokens"] for m in assistants) == total
    # the Pi tree holds every message entry of every branch, under the Claude Code uuids
    entries = cc.to_pi_entries(t)
    assert [e["id"] for e in entries] == [u for u, e in t.chain.items() if e["type"] != "progress"]
    tree = SessionTree(entries)
    assert len(tree) == len(entries)
    assert all(u in tree for u in r.chain)


# The table of docs/claude-code.md ("Results on the shipped samples"), reviewed by hand.
# "naive" = the plain parent walk from the leaf, "chain" = after orphan recovery. An earlier
# prototype picked the newest entry of *any* type as the leaf (the "session" rule); where the
# file ends in childless system entries the resume-file rule (the default) stops at the last
# user/assistant entry instead.
TABLE_12_1 = [
    # rel, naive, chain, unpaired before, unpaired after, recovered
    (H7_AGENT, 38, 59, 9, 0, 21),
    (H9, 243, 249, 4, 0, 6),
    (H9_AGENT, 13, 28, 3, 0, 15),
    (H11, 146, 156, 2, 0, 10),
    (H10, 28, 28, 0, 0, 0),
    (H1, 32, 32, 0, 0, 0),
    (H6, 95, 95, 0, 0, 0),
    (H5, 73, 75, 0, 0, 2),  # message.id grouping pulls in the non-streamed retry copy
]


@pytest.mark.parametrize(("rel", "naive", "chain", "before", "after", "recovered"), TABLE_12_1)
def test_chain_lengths_and_unpaired_tool_calls(
    rel: str, naive: int, chain: int, before: int, after: int, recovered: int
) -> None:
    r = cc.reconstruct(load(rel))
    d = r.diagnostics
    assert (len(r.naive_chain), len(r.chain)) == (naive, chain)
    assert (d["unpairedBefore"], d["unpairedAfter"], d["orphansRecovered"]) == (before, after, recovered)


def test_h9_with_the_notes_leaf_rule_gives_the_notes_numbers() -> None:
    t = load(H9)
    session = cc.reconstruct(t, rule="session")
    assert (len(session.naive_chain), len(session.chain)) == (245, 251)
    assert [t.chain[u].get("subtype") for u in session.chain[-2:]] == ["stop_hook_summary", "turn_duration"]
    resume = cc.reconstruct(t)
    assert session.chain[:-2] == resume.chain
    assert t.chain[resume.leaf_uuid or ""]["type"] == "assistant"


def test_compact_boundary_2_1_39() -> None:
    t = load(H9)
    r = cc.reconstruct(t)
    boundary = "434dc859-6299-4713-8613-d28662692f06"
    assert r.chain[0] == boundary  # the boundary is a root
    assert r.chain[1] == "94000b8f-fa9f-4b7b-8d81-cdc73aa8a085"  # the compact summary follows it
    assert r.diagnostics["contextStart"] == "94000b8f-fa9f-4b7b-8d81-cdc73aa8a085"
    first_source, first = r.messages[0]
    assert first_source == "94000b8f-fa9f-4b7b-8d81-cdc73aa8a085" and first["role"] == "user"
    assert first["content"].startswith("This session is being continued from a previous conversation")
    assert "23b73f9a-2123-4b8e-81a2-b98378c7498f" not in r.chain  # pre-compact history is not loaded
    (report,) = r.diagnostics["compactBoundaries"]
    assert report["trigger"] == "manual" and report["preTokens"] == 142431 and report["onChain"]
    assert report["logicalParentPresent"] and not report["preservedSegment"]
    assert r.diagnostics["preservedSegment"] is None
    # the tree keeps both parts: the pre-compact root and the boundary
    tree = SessionTree(cc.to_pi_entries(t))
    assert [n.entry["id"] for n in tree.tree()] == ["858a6db7-6721-4caa-b306-39ec1f17cbf1", boundary]
    entry = tree.get(boundary)
    assert entry is not None
    assert entry["customType"] == "claude-code.system/compact_boundary"
    assert entry["data"]["compactMetadata"] == {"trigger": "manual", "preTokens": 142431}
    # the last assistant's usage is Claude's real context size
    assert r.diagnostics["lastAssistantTotalTokens"] == 102169
    # the compaction worker is linked to the boundary
    links = {s.agent_id: s for s in claude_files.find_subagents(FIXTURES / H9, t)}
    worker = links["acompact-946d2b"]
    assert (worker.kind, worker.parent_entry_uuid, worker.linked_by) == (
        "compaction",
        boundary,
        "logicalParentUuid",
    )
    task = links["aac57f5"]
    assert task.tool_use_id == "toolu_01Hf8v1Za7y4af8VUwSR4CXU" and task.entry_count == 28
    assert task.parent_entry_uuid == "24b8374b-624a-4785-9c90-f9d37d12f162"


def test_compaction_worker_missing_parent_is_by_design() -> None:
    r = cc.reconstruct(load(H9_COMPACT))
    assert r.rule == "agent" and len(r.chain) == 2
    (missing,) = r.diagnostics["missingParents"]
    assert missing["parentUuid"] == "23b73f9a-2123-4b8e-81a2-b98378c7498f" and missing["expected"] is True


def test_rewind_fork_2_1_42_resolves_to_the_newer_branch() -> None:
    t = load(H10)
    r = cc.reconstruct(t)
    fork = "eb84e3ee-fc54-4fe4-ad76-badc5ebb4671"
    old, new = "5270777a-1975-4e8a-9cad-b36280ae0ec5", "9edc38e6-0ac0-42c0-b911-e24611af2a5b"
    assert len(r.chain) == 28 and len([e for e in t.chain.values() if e["type"] != "progress"]) == 41
    assert fork in r.chain and new in r.chain and old not in r.chain
    assert r.chain.index(new) == r.chain.index(fork) + 1
    tree = SessionTree(cc.to_pi_entries(t))
    assert [c["id"] for c in tree.children(fork)] == [old, new]
    # the abandoned branch is still reachable with an explicit leaf
    alt = cc.reconstruct(t, leaf="2f4668dd-c177-455f-81c1-caa947d43e73")
    assert alt.rule == "explicit" and old in alt.chain and new not in alt.chain
    assert alt.chain[-1] == "2f4668dd-c177-455f-81c1-caa947d43e73"


def test_subagents_2_1_114_nested_layout() -> None:
    t = load(H11)
    links = claude_files.find_subagents(FIXTURES / H11, t)
    assert len(links) == 6 and {s.layout for s in links} == {"nested"}
    by_result = {}
    for e in t.chain.values():
        tur = e.get("toolUseResult")
        if isinstance(tur, dict) and "agentId" in tur:
            by_result[tur["agentId"]] = e["message"]["content"][0]["tool_use_id"]
    for s in links:
        assert s.linked_by == "toolUseResult" and s.tool_use_id == by_result[s.agent_id]
        assert s.path is not None and Path(s.path).name == f"agent-{s.agent_id}.jsonl"
        assert s.agent_type == "general-purpose" and s.description
        assert s.entry_count == len(claude_files.load_transcript(s.path).chain)
        piece = t.chain[s.parent_entry_uuid or ""]
        assert piece["message"]["content"][0]["id"] == s.tool_use_id
    described = {s.agent_id: s.description for s in links}
    assert described["a4ca7529859c158c2"] == "Research Claude Code plan mode"


def test_subagents_2_1_17() -> None:
    t = load(H7)
    (link,) = claude_files.find_subagents(FIXTURES / H7, t)
    assert (link.agent_id, link.layout, link.entry_count) == ("a2271d1", "nested", 59)
    assert link.tool_use_id is not None and link.tool_use_id.endswith("bcxeWi")
    assert link.parent_entry_uuid == "5678510b-1f74-4e58-bd42-0daa684a5d00"


def test_subagents_2_0_76_flat_layout(tmp_path: Path) -> None:
    # abp: a real flat sub-agent file; its main session is not shipped, so write a minimal one.
    agent_src = FIXTURES / H6
    first = orjson.loads(agent_src.read_bytes().split(b"\n", 1)[0])
    session = first["sessionId"]
    shutil.copy(agent_src, tmp_path / agent_src.name)
    main = tmp_path / f"{session}.jsonl"
    b = Builder(session)
    b.user("u1", None, "evaluate")
    b.assistant("a1", "u1", [tool_use("toolu_task", "Task", {"prompt": first["message"]["content"]})], "m1")
    b.tool_result(
        "r1", "a1", "toolu_task", "done", toolUseResult={"agentId": "a0294d5", "status": "completed"}
    )
    main.write_bytes(b.data())
    t = claude_files.load_transcript(main)
    (link,) = claude_files.find_subagents(main, t)
    assert (link.layout, link.agent_id, link.tool_use_id, link.parent_entry_uuid) == (
        "flat",
        "a0294d5",
        "toolu_task",
        "a1",
    )
    assert link.entry_count == 95 and link.linked_by == "toolUseResult"
    # a sibling agent file of another session is not ours
    other = tmp_path / "agent-bbbbbbb.jsonl"
    other.write_bytes(agent_src.read_bytes().replace(session.encode(), b"another-session"))
    assert [s.agent_id for s in claude_files.find_subagents(main, t)] == ["a0294d5"]


def test_subagents_2_0_76_main_file_links_flat_agents(tmp_path: Path) -> None:
    # ah: the real main file names its agents in toolUseResult.agentId; give one of them a file.
    shutil.copy(FIXTURES / H5, tmp_path / Path(H5).name)
    main = tmp_path / Path(H5).name
    t = claude_files.load_transcript(main)
    agent = (FIXTURES / H6).read_bytes()
    first = orjson.loads(agent.split(b"\n", 1)[0])
    agent = agent.replace(first["sessionId"].encode(), (t.session_id or "").encode())
    agent = agent.replace(b'"agentId":"a0294d5"', b'"agentId":"acf896c"')
    (tmp_path / "agent-acf896c.jsonl").write_bytes(agent)
    (link,) = claude_files.find_subagents(main, t)
    assert (link.layout, link.agent_id, link.linked_by) == ("flat", "acf896c", "toolUseResult")
    assert link.tool_use_id is not None and link.tool_use_id.endswith("sRTGDt")
    assert link.parent_entry_uuid == "f1dd5da8-8895-486d-9dfb-06beacf875ef"
    assert link.agent_type == "Explore" and link.description


def test_inline_sidechains_1_0_98() -> None:
    t = load(H1)
    r = cc.reconstruct(t)
    assert len(r.chain) == 32 and r.diagnostics["sidechainEntriesExcluded"] == 405
    assert not any(t.chain[u].get("isSidechain") for u in r.chain)
    links = claude_files.find_subagents(FIXTURES / H1, t)
    assert len(links) == 5 and {s.layout for s in links} == {"inline"}
    assert sum(s.entry_count for s in links) == 405
    assert len({s.tool_use_id for s in links}) == 5
    for s in links:
        assert s.path is None and s.linked_by == "prompt" and s.root_uuid == s.agent_id
        root = t.chain[s.agent_id]
        assert root["isSidechain"] and root["parentUuid"] is None
        call = next(
            b
            for b in t.chain[s.parent_entry_uuid or ""]["message"]["content"]
            if b.get("id") == s.tool_use_id
        )
        assert call["name"] == "Task" and call["input"]["prompt"] == root["message"]["content"]
    # every sidechain entry is in the Pi tree, under its own root
    tree = SessionTree(cc.to_pi_entries(t))
    assert len(tree.tree()) == 6


def test_titles() -> None:
    t5 = load(H5)
    assert t5.titles.summaries == 3 and t5.titles.untrusted_summaries == 0
    assert t5.title() == "Parallel scan of 53 session files for sensitive data before commit"
    assert t5.titles.summary_leaf == "c31555da-8e1f-40ac-8b4a-55ae4040babe"
    t1 = load(H1)  # a 1.0.x summary header pointing at another session
    assert t1.titles.untrusted_summaries == 1 and t1.titles.summary is None and t1.title() is None
    t11 = load(H11)
    assert t11.title() == "Well, the subagents seem to be either stuck or done... can you check?"
    assert t11.titles.last_prompt_leaf is None


def test_retry_copy_is_deduplicated_2_0_76() -> None:
    r = cc.reconstruct(load(H5))
    d = r.diagnostics
    assert d["duplicateToolUses"] == 2 and d["droppedToolResults"] == 1
    assert "e2d3270a-5ece-4c0f-8d72-49d862228214" in r.chain  # the non-streamed copy
    merged = next(m for s, m in r.messages if s == "1ae74825-0aca-4474-bffa-9fa7387507df")
    assert [b["id"][-6:] for b in merged["content"] if b["type"] == "toolCall"] == ["ququdq", "SR7ej6"]


def test_sniff_rejects_pi_sessions() -> None:
    for path in PI_FIXTURES.glob("*.jsonl"):
        assert not claude_files.is_claude_code_file(path)


def test_spotter_load_and_reconstruct_is_fast() -> None:
    import time  # noqa: PLC0415

    best = 10.0
    for _ in range(3):
        start = time.perf_counter()
        cc.reconstruct(load(H9))
        best = min(best, time.perf_counter() - start)
    assert best < 0.5  # ~20 ms here; generous for slow CI machines


# --------------------------------------------------------------------------- synthetic files


def tool_use(tid: str, name: str = "Bash", args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": args or {}}


class Builder:
    """Claude Code records with increasing timestamps (one second apart unless given)."""

    def __init__(self, session: str = "s1") -> None:
        self.session = session
        self.records: list[Any] = []
        self.clock = 0

    def _ts(self, ts: str | None) -> str:
        self.clock += 1
        return ts or f"2026-01-01T00:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z"

    def add(self, kind: str, uuid: str, parent: str | None, ts: str | None, **fields: Any) -> dict[str, Any]:
        rec = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/w",
            "sessionId": self.session,
            "version": "2.1.39",
            "type": kind,
            **fields,
            "uuid": uuid,
            "timestamp": self._ts(ts),
        }
        self.records.append(rec)
        return rec

    def user(
        self, uuid: str, parent: str | None, content: Any, ts: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        return self.add("user", uuid, parent, ts, message={"role": "user", "content": content}, **kw)

    def tool_result(
        self, uuid: str, parent: str | None, tid: str, text: str = "ok", ts: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": tid, "content": text}
        return self.user(uuid, parent, [block], ts, **kw)

    def assistant(
        self,
        uuid: str,
        parent: str | None,
        blocks: list[Any],
        mid: str,
        usage: tuple[int, int, int, int] = (1, 2, 3, 4),
        stop: str | None = None,
        ts: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        message = {
            "model": "claude-test",
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": stop,
            "usage": {
                "input_tokens": usage[0],
                "output_tokens": usage[1],
                "cache_read_input_tokens": usage[2],
                "cache_creation_input_tokens": usage[3],
            },
        }
        return self.add("assistant", uuid, parent, ts, message=message, **kw)

    def text(self, uuid: str, parent: str | None, text: str, mid: str, **kw: Any) -> dict[str, Any]:
        return self.assistant(uuid, parent, [{"type": "text", "text": text}], mid, **kw)

    def system(
        self, uuid: str, parent: str | None, subtype: str, ts: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        return self.add("system", uuid, parent, ts, subtype=subtype, content="", level="info", **kw)

    def progress(self, uuid: str, parent: str | None, ts: str | None = None) -> dict[str, Any]:
        return self.add("progress", uuid, parent, ts, data={"type": "hook_progress"})

    def meta(self, obj: dict[str, Any]) -> None:
        self.records.append(obj)

    def data(self) -> bytes:
        return b"".join(orjson.dumps(r) + b"\n" for r in self.records)

    def load(self) -> cc.ClaudeTranscript:
        return cc.parse_transcript(self.data(), "<test>")


def roles(r: cc.Reconstruction) -> list[str]:
    return [m["role"] for _, m in r.messages]


def test_empty_file(tmp_path: Path) -> None:
    t = cc.parse_transcript(b"", "<empty>")
    assert t.records == [] and t.chain == {} and t.session_id is None and t.title() is None
    r = cc.reconstruct(t)
    assert r.leaf_uuid is None and r.chain == [] and r.messages == []
    assert cc.to_pi_entries(t) == []
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    assert not claude_files.is_claude_code_file(empty)
    assert claude_files.load_transcript(empty).diagnostics.physical_lines == 0
    assert claude_files.find_subagents(empty, t) == []


def test_a_file_of_only_summary_lines(tmp_path: Path) -> None:
    data = b'{"type":"summary","summary":"Other session","leafUuid":"x-1"}\n' * 3
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert claude_files.is_claude_code_file(path)
    t = claude_files.load_transcript(path)
    assert len(t.records) == 3 and t.chain == {}
    assert t.titles.summaries == 3 and t.titles.untrusted_summaries == 3 and t.title() is None
    r = cc.reconstruct(t)
    assert r.leaf_uuid is None and r.chain == [] and r.messages == []


def test_torn_last_line_and_unparsable_lines() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.text("a1", "u1", "hello", "m1")
    data = b"\n  \n" + b.data() + b"not json\n[1,2]\nnull\n" + b'{"parentUuid":"a1","type":"user","uu'
    t = cc.parse_transcript(data, "<torn>")
    d = t.diagnostics
    assert d.physical_lines == 8
    assert d.blank_lines == 2
    assert (d.unparsable_lines, d.unparsable_line_numbers) == (2, [5, 8])
    assert (d.non_object_lines, d.non_object_line_numbers) == (2, [6, 7])
    assert d.torn_tail and not d.torn_tail_parsed
    assert list(t.chain) == ["u1", "a1"] and t.lines == [3, 4]
    assert cc.reconstruct(t).chain == ["u1", "a1"]
    # a torn line that still parses (the newline was lost, the object was not)
    t2 = cc.parse_transcript(b.data().rstrip(b"\n"), "<torn2>")
    assert t2.diagnostics.torn_tail and t2.diagnostics.torn_tail_parsed and len(t2.chain) == 2


def test_unknown_types_and_duplicates_are_counted() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.meta({"type": "brand-new-thing", "x": 1})
    b.meta({"type": "permission-mode", "permissionMode": "default", "sessionId": "s1"})
    b.text("a1", "u1", "first", "m1")
    b.text("a1", "u1", "second", "m1")  # the same uuid written again: the last line wins
    t = b.load()
    assert t.diagnostics.unknown_types == {"brand-new-thing": 1}
    assert t.diagnostics.duplicate_uuids == 1
    assert t.chain["a1"]["message"]["content"][0]["text"] == "second"


def test_cycles_are_cut_and_reported() -> None:
    b = Builder()
    b.user("u1", "a2", "hi")
    b.text("a1", "u1", "x", "m1")
    b.user("u2", "a1", "more")
    b.text("a2", "u2", "y", "m2")
    b.user("leaf", "a2", "last")
    t = b.load()
    r = cc.reconstruct(t)
    assert r.leaf_uuid == "leaf"
    assert r.diagnostics["cycles"] == ["a2"]
    assert r.chain == ["u1", "a1", "u2", "a2", "leaf"]
    assert SessionTree(cc.to_pi_entries(t)).diagnostics().cycles  # the tree sees it too


def test_missing_parents_stop_the_walk_and_are_reported() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.text("a1", "u1", "x", "m1")
    b.user("u2", "never-written", "after a lost message")
    b.text("a2", "u2", "y", "m2")
    r = cc.reconstruct(b.load())
    assert r.chain == ["u2", "a2"]
    (missing,) = r.diagnostics["missingParents"]
    assert missing == {
        "uuid": "u2",
        "parentUuid": "never-written",
        "expected": False,
        "reason": "parent not in this file (never written, or written to another file)",
    }
    assert r.diagnostics["danglingParentEntries"] == 1


def test_timestamp_ties_go_to_the_first_in_file() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    same = "2026-01-01T01:00:00.000Z"
    b.text("first", "u1", "a", "m1", ts=same)
    b.text("second", "u1", "b", "m2", ts=same)
    t = b.load()
    for rule in cc.LEAF_RULES:
        assert cc.reconstruct(t, rule=rule).leaf_uuid == "first"
    # a strictly newer one wins wherever it is in the file
    b.text("third", "u1", "c", "m3", ts="2026-01-01T01:00:00.001Z")
    assert cc.reconstruct(b.load()).leaf_uuid == "third"


def test_leaf_rules_differ_on_trailing_system_entries_and_sidechains() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.text("a1", "u1", "answer", "m1")
    b.system("s1", "a1", "turn_duration", durationMs=5)
    b.user("side", None, "sub-agent prompt", isSidechain=True)  # newest, but a sidechain
    t = b.load()
    resume = cc.reconstruct(t)
    assert (resume.rule, resume.leaf_uuid, resume.chain) == ("resume-file", "a1", ["u1", "a1"])
    session = cc.reconstruct(t, rule="session")
    assert (session.leaf_uuid, session.chain) == ("s1", ["u1", "a1", "s1"])
    assert cc.reconstruct(t, rule="picker").leaf_uuid == "side"
    assert resume.diagnostics["excludedFromMessages"] == {}
    assert session.diagnostics["excludedFromMessages"] == {"system/turn_duration": 1}
    with pytest.raises(ValueError, match="unknown leaf rule"):
        cc.reconstruct(t, rule="nope")
    with pytest.raises(EntryNotFoundError):
        cc.reconstruct(t, leaf="nope")


def test_sidechain_file_uses_the_agent_rule() -> None:
    b = Builder()
    b.user("p", None, "task", isSidechain=True, agentId="abc")
    b.text("a", "p", "done", "m1", isSidechain=True, agentId="abc")
    r = cc.reconstruct(b.load())
    assert (r.rule, r.leaf_uuid, r.diagnostics["leafRuleRequested"]) == ("agent", "a", "resume-file")


def test_last_prompt_leaf_is_only_a_diagnostic() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.text("a1", "u1", "x", "m1")
    b.meta({"type": "last-prompt", "lastPrompt": "hi", "leafUuid": "u1", "sessionId": "s1"})
    r = cc.reconstruct(b.load())
    assert r.leaf_uuid == "a1"
    d = r.diagnostics
    assert (d["lastPromptLeaf"], d["lastPromptLeafAgrees"], d["lastPromptLeafOnChain"]) == ("u1", False, True)


def test_progress_entries_are_bridged_in_any_file_order() -> None:
    b = Builder()
    b.progress("p0", None)  # a progress root (2.1.x)
    b.user("u1", "p0", "hi")
    b.assistant("a1", "u1", [tool_use("t1")], "m1")
    b.tool_result("r1", "p2", "t1")  # written before the progress entries it hangs off
    b.progress("p1", "a1")
    b.progress("p2", "p1")
    b.text("a2", "r1", "done", "m2")
    t = b.load()
    r = cc.reconstruct(t)
    assert r.chain == ["u1", "a1", "r1", "a2"]
    assert roles(r) == ["user", "assistant", "toolResult", "assistant"]
    entries = {e["id"]: e for e in cc.to_pi_entries(t)}
    assert set(entries) == {"u1", "a1", "r1", "a2"}
    assert entries["u1"]["parentId"] is None and entries["r1"]["parentId"] == "a1"
    assert entries["r1"]["claudeCode"]["parentUuid"] == "p2"  # what the file said


def test_preserved_segment_relinks() -> None:
    b = Builder()
    b.user("u1", None, "old prompt")
    b.text("a1", "u1", "old answer", "m1", usage=(10, 10, 10, 10))
    b.user("h", "a1", "kept prompt")  # preserved segment head
    b.text("t", "h", "kept answer", "m2", usage=(100, 100, 100, 100))  # preserved segment tail
    seg = {"headUuid": "h", "anchorUuid": "sum", "tailUuid": "t"}
    b.system(
        "bnd",
        None,
        "compact_boundary",
        logicalParentUuid="t",
        compactMetadata={"trigger": "auto", "preservedSegment": seg},
    )
    b.user(
        "sum",
        "bnd",
        "Summary of the conversation so far",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    b.user("next", "sum", "new prompt")  # written as a child of the anchor: relinked to the tail
    b.text("a3", "next", "new answer", "m3", usage=(1, 1, 1, 1))
    t = b.load()
    r = cc.reconstruct(t)
    assert r.chain == ["bnd", "sum", "h", "t", "next", "a3"]
    assert [s for s, _ in r.messages] == ["sum", "h", "t", "next", "a3"]
    usages = [m["usage"]["totalTokens"] for _, m in r.messages if m["role"] == "assistant"]
    assert usages == [0, 4]  # the preserved assistant's usage is zeroed
    relink = r.diagnostics["preservedSegment"]
    assert relink["applied"] and relink["preserved"] == 2 and relink["pruned"] == 2
    entries = {e["id"]: e for e in cc.to_pi_entries(t)}
    assert entries["h"]["parentId"] == "sum" and entries["next"]["parentId"] == "t"
    assert entries["bnd"]["parentId"] is None
    assert entries["u1"]["parentId"] is None and entries["a1"]["parentId"] == "u1"  # still in the tree
    # the pruned history is no leaf candidate, but an explicit leaf there walks it
    assert cc.reconstruct(t, leaf="a1").chain == ["u1", "a1"]
    # a later plain boundary compacts the segment away: no relinks, everything before it pruned
    b.system("bnd2", None, "compact_boundary")
    b.user("sum2", "bnd2", "Second summary", isCompactSummary=True)
    b.text("a4", "sum2", "after", "m4")
    r2 = cc.reconstruct(b.load())
    assert r2.chain == ["bnd2", "sum2", "a4"]
    assert r2.diagnostics["preservedSegment"]["live"] is False


def test_broken_preserved_segment_is_not_applied() -> None:
    b = Builder()
    b.user("h", None, "head")
    b.text("t", "x-unrelated", "tail", "m1")
    seg = {"headUuid": "h", "anchorUuid": "sum", "tailUuid": "t"}
    b.system("bnd", None, "compact_boundary", compactMetadata={"preservedSegment": seg})
    b.user("sum", "bnd", "Summary", isCompactSummary=True)
    b.text("a", "sum", "go on", "m2")
    r = cc.reconstruct(b.load())
    assert r.chain == ["bnd", "sum", "a"]
    assert r.diagnostics["preservedSegment"]["applied"] is False


def test_duplicate_tool_use_ids_are_removed_with_their_second_result() -> None:
    b = Builder()
    b.user("u1", None, "go")
    b.assistant("a1", "u1", [tool_use("t1")], "m1")
    b.tool_result("r1", "a1", "t1", "first")
    b.assistant("a2", "r1", [{"type": "text", "text": "again"}, tool_use("t1")], "m2")
    b.tool_result("r2", "a2", "t1", "second")
    b.text("a3", "r2", "done", "m3")
    r = cc.reconstruct(b.load())
    assert r.diagnostics["duplicateToolUses"] == 1
    assert r.diagnostics["droppedToolResults"] == 1
    check_pairing(r.messages)
    second = next(m for s, m in r.messages if s == "a2")
    assert [blk["type"] for blk in second["content"]] == ["text"]
    results = [m for _, m in r.messages if m["role"] == "toolResult"]
    assert [m["content"][0]["text"] for m in results] == ["first"]


def test_dangling_tool_use_gets_a_synthetic_error_result() -> None:
    b = Builder()
    b.user("u1", None, "go")
    b.assistant(
        "a1", "u1", [{"type": "text", "text": "running"}, tool_use("t1", "Read")], "m1", stop="tool_use"
    )
    b.user("u2", "a1", "[Request interrupted by user]")
    b.text("a2", "u2", "ok", "m2")
    r = cc.reconstruct(b.load())
    assert r.diagnostics["unpairedAfter"] == 1 and r.diagnostics["syntheticToolResults"] == 1
    check_pairing(r.messages)
    source, synthetic = r.messages[2]
    assert source == "a1"
    assert synthetic == {
        "role": "toolResult",
        "toolCallId": "t1",
        "toolName": "Read",
        "content": [{"type": "text", "text": cc.SYNTHETIC_TOOL_RESULT_TEXT}],
        "details": {"synthetic": True},
        "isError": True,
        "timestamp": synthetic["timestamp"],
    }
    assert roles(r) == ["user", "assistant", "toolResult", "user", "assistant"]


def streamed(last: str) -> Builder:
    """2.1.x: pieces of one API message, each tool result parented to its piece, the next piece
    written after the previous piece's result; the next message hangs off ``last`` result."""
    b = Builder()
    b.user("u1", None, "go")
    b.assistant(
        "p1", "u1", [{"type": "thinking", "thinking": "hm", "signature": "sig"}], "m1", usage=(5, 1, 0, 0)
    )
    b.assistant("p2", "p1", [tool_use("t1", "Read")], "m1", usage=(5, 3, 0, 0))
    b.tool_result("r1", "p2", "t1", sourceToolAssistantUUID="p2")
    b.assistant("p3", "r1", [tool_use("t2", "Read")], "m1", usage=(5, 7, 0, 0))
    b.assistant("p4", "p3", [tool_use("t3", "Grep")], "m1", usage=(5, 9, 0, 0), stop="tool_use")
    first, second = ("r3", "r2") if last == "r2" else ("r2", "r3")
    for r in (first, second):
        piece, tid = ("p4", "t3") if r == "r3" else ("p3", "t2")
        b.tool_result(r, piece, tid, sourceToolAssistantUUID=piece)
    b.text("a2", last, "done", "m2", usage=(20, 2, 0, 0), stop="end_turn")
    return b


def test_streamed_pieces_interleaved_with_results_merge_by_walking_back() -> None:
    # The chain goes on from r2: piece p4 and its result r3 are off the walked chain.
    t = streamed("r2").load()
    r = cc.reconstruct(t)
    assert r.naive_chain == ["u1", "p1", "p2", "r1", "p3", "r2", "a2"]
    assert r.diagnostics["unpairedBefore"] == 0  # t3's piece is not on the naive chain either
    assert r.chain == ["u1", "p1", "p2", "r1", "p3", "p4", "r3", "r2", "a2"]
    assert r.diagnostics["orphansRecovered"] == 2 and r.diagnostics["unpairedAfter"] == 0
    assert roles(r) == ["user", "assistant", "toolResult", "toolResult", "toolResult", "assistant"]
    merged = r.messages[1][1]
    assert r.messages[1][0] == "p1"
    assert [blk["type"] for blk in merged["content"]] == ["thinking", "toolCall", "toolCall", "toolCall"]
    assert merged["content"][0] == {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"}
    assert merged["usage"]["output"] == 9 and merged["usage"]["totalTokens"] == 14  # counted once
    assert merged["stopReason"] == "toolUse"
    assert [m["toolCallId"] for _, m in r.messages[2:5]] == ["t1", "t3", "t2"]
    assert r.diagnostics["mergedAssistantPieces"] == 3 and r.diagnostics["apiAssistantMessages"] == 2
    assert r.diagnostics["usageTotalTokensSum"] == 14 + 22
    assert r.diagnostics["lastAssistantTotalTokens"] == 22
    # in the tree each piece is its own entry; the usage sits on the message's last piece only
    entries = {e["id"]: e for e in cc.to_pi_entries(t)}
    assert [entries[p]["message"]["usage"]["totalTokens"] for p in ("p1", "p2", "p3", "p4")] == [0, 0, 0, 14]
    assert entries["r3"]["parentId"] == "p4"


def test_parallel_result_off_the_chain_is_recovered() -> None:
    # The chain goes on from r3 (child of the last piece): r2, the result of p3's call, is off it.
    r = cc.reconstruct(streamed("r3").load())
    assert r.naive_chain == ["u1", "p1", "p2", "r1", "p3", "p4", "r3", "a2"]
    assert r.diagnostics["unpairedBefore"] == 1
    assert r.chain == ["u1", "p1", "p2", "r1", "p3", "p4", "r2", "r3", "a2"]
    assert r.diagnostics["orphansRecovered"] == 1 and r.diagnostics["unpairedAfter"] == 0
    check_pairing(r.messages)
    assert [m["toolCallId"] for _, m in r.messages if m["role"] == "toolResult"] == ["t1", "t2", "t3"]


SYNTHETIC = ALL_FIXTURES / "synthetic"
EQUAL_TIMESTAMPS = SYNTHETIC / "claude-code-parallel-results-equal-timestamps.jsonl"


def test_orphaned_results_with_equal_timestamps_keep_claude_codes_order() -> None:
    # Three streamed pieces of one message call three tools; the results of the second and
    # third piece are off the chain, written in the same millisecond, the third's line first.
    # Claude Code collects orphaned results piece by piece (pieces in file order) and sorts
    # them by timestamp with a stable sort: the tie keeps the collection order (b, then c).
    t = claude_files.load_transcript(EQUAL_TIMESTAMPS)
    r = cc.reconstruct(t)
    short = [u[:2] for u in r.chain]
    assert [u[:2] for u in r.naive_chain] == ["0f", "1a", "2a", "3d"]
    assert short == ["0f", "1a", "1b", "1c", "2b", "2c", "2a", "3d"]
    assert t.chain[r.chain[4]]["timestamp"] == t.chain[r.chain[5]]["timestamp"]  # the tie
    assert r.diagnostics["orphansRecovered"] == 4 and r.diagnostics["unpairedAfter"] == 0
    check_pairing(r.messages)
    results = [m["toolCallId"][-1] for _, m in r.messages if m["role"] == "toolResult"]
    assert results == ["B", "C", "A"]
    # Distinct timestamps still order by time, whatever the pieces' order.
    later = t.records[:]
    c_result = next(i for i, rec in enumerate(later) if rec.get("uuid", "").startswith("2c"))
    later[c_result] = {**later[c_result], "timestamp": "2026-03-02T10:15:02.870Z"}
    data = b"".join(orjson.dumps(rec) + b"\n" for rec in later)
    assert [u[:2] for u in cc.reconstruct(cc.parse_transcript(data)).chain][4:6] == ["2c", "2b"]


def test_walk_back_stops_at_a_human_prompt() -> None:
    b = Builder()
    b.user("u1", None, "go")
    b.text("a1", "u1", "part one", "m1")
    b.user("u2", "a1", "interjection")
    b.text("a2", "u2", "part two", "m1")  # same id, but a prompt in between: a new API message
    r = cc.reconstruct(b.load())
    assert roles(r) == ["user", "assistant", "user", "assistant"]


def test_linear_parallel_results_2_0_need_no_recovery() -> None:
    b = Builder()
    b.user("u1", None, "go")
    b.assistant("p1", "u1", [tool_use("t1")], "m1")
    b.assistant("p2", "p1", [tool_use("t2")], "m1", stop="tool_use")
    b.tool_result("r2", "p2", "t2")  # results chained linearly, in completion order
    b.tool_result("r1", "r2", "t1")
    b.text("a2", "r1", "done", "m2")
    r = cc.reconstruct(b.load())
    assert r.chain == r.naive_chain and r.diagnostics["orphansRecovered"] == 0
    check_pairing(r.messages)


def test_user_content_conversion_and_multi_result_entries() -> None:
    b = Builder()
    b.user(
        "u1",
        None,
        [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
        ],
    )
    b.assistant("a1", "u1", [tool_use("t1"), tool_use("t2")], "m1", stop="tool_use")
    b.user(
        "r",
        "a1",
        [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "one"}]},
            {"type": "tool_result", "tool_use_id": "t2", "content": "two", "is_error": True},
            {"type": "text", "text": "[Request interrupted by user for tool use]"},
        ],
    )
    b.assistant(
        "a2",
        "r",
        [{"type": "redacted_thinking", "data": "xyz"}, {"type": "text", "text": "ok"}],
        "m2",
        stop="max_tokens",
    )
    t = b.load()
    r = cc.reconstruct(t)
    assert roles(r) == ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]
    assert r.messages[0][1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "data": "AAA", "mimeType": "image/png"},
    ]
    assert r.messages[3][1]["isError"] is True and r.messages[3][1]["toolName"] == "Bash"
    last = r.messages[-1][1]
    assert last["stopReason"] == "length"
    assert last["content"][0] == {
        "type": "thinking",
        "thinking": "",
        "thinkingSignature": "xyz",
        "redacted": True,
    }
    entries = {e["id"]: e for e in cc.to_pi_entries(t)}
    multi = entries["r"]
    assert multi["type"] == "custom" and multi["customType"] == "claude-code.user/tool-results"
    assert [m["role"] for m in multi["data"]["messages"]] == ["toolResult", "toolResult", "user"]
    assert entries["u1"]["type"] == "message" and entries["u1"]["message"]["role"] == "user"


def test_system_and_attachment_entries_in_the_tree_not_in_messages() -> None:
    b = Builder()
    b.add("attachment", "at0", None, None, attachment={"type": "hook_success", "hookName": "SessionStart"})
    b.user("u1", "at0", "hi", isMeta=True)
    b.system("s1", "u1", "local_command")
    b.text("a1", "s1", "hello", "m1", stop="end_turn")
    t = b.load()
    r = cc.reconstruct(t)
    assert r.chain == ["at0", "u1", "s1", "a1"]
    assert roles(r) == ["user", "assistant"]  # isMeta user text is kept
    assert r.diagnostics["excludedFromMessages"] == {"attachment/hook_success": 1, "system/local_command": 1}
    entries = {e["id"]: e for e in cc.to_pi_entries(t)}
    assert entries["at0"]["customType"] == "claude-code.attachment/hook_success"
    assert entries["at0"]["data"] == {"type": "hook_success", "hookName": "SessionStart"}
    assert entries["s1"]["customType"] == "claude-code.system/local_command"
    assert entries["u1"]["claudeCode"]["isMeta"] is True


def test_assistant_string_content_is_one_text_block() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    rec = b.text("a1", "u1", "unused", "m1", stop="end_turn")
    rec["message"]["content"] = "plain string"
    r = cc.reconstruct(b.load())
    assert r.messages[-1][1]["content"] == [{"type": "text", "text": "plain string"}]


def test_api_error_messages_are_marked_as_errors() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.text("a1", "u1", "API Error: overloaded", "m1", isApiErrorMessage=True)
    r = cc.reconstruct(b.load())
    m = r.messages[-1][1]
    assert m["stopReason"] == "error" and m["errorMessage"] == "API Error: overloaded"
    assert r.diagnostics["lastAssistantTotalTokens"] is None


def test_explicit_progress_leaf_stands_for_its_ancestor() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.text("a1", "u1", "x", "m1")
    b.progress("p1", "a1")
    b.user("u2", "p1", "more")
    r = cc.reconstruct(b.load(), leaf="p1")
    assert (r.leaf_uuid, r.rule, r.chain) == ("a1", "explicit", ["u1", "a1"])


def test_inline_and_nested_subagents_synthetic(tmp_path: Path) -> None:
    b = Builder("sess")
    b.user("u1", None, "plan")
    b.assistant(
        "a1",
        "u1",
        [tool_use("tk", "Task", {"prompt": "do X", "description": "X", "subagent_type": "Explore"})],
        "m1",
    )
    b.tool_result("r1", "a1", "tk", "done", toolUseResult={"agentId": "n1", "status": "completed"})
    b.assistant("a2", "r1", [tool_use("tk2", "Agent", {"prompt": "do Y"})], "m2")
    b.tool_result("r2", "a2", "tk2", "done")
    main = tmp_path / "sess.jsonl"
    main.write_bytes(b.data())
    sub = tmp_path / "sess" / "subagents"
    sub.mkdir(parents=True)
    extras: tuple[tuple[str, dict[str, Any]], ...] = (("n1", {}), ("n2", {}))
    for agent, extra in extras:
        s = Builder("sess")
        s.user("x1", None, "do", isSidechain=True, agentId=agent)
        s.text("x2", "x1", "did", "mx", isSidechain=True, agentId=agent, **extra)
        (sub / f"agent-{agent}.jsonl").write_bytes(s.data())
    (sub / "agent-n2.meta.json").write_text(
        '{"agentType":"general-purpose","description":"Y","toolUseId":"tk2"}'
    )
    t = claude_files.load_transcript(main)
    links = {s.agent_id: s for s in claude_files.find_subagents(main, t)}
    assert links["n1"].tool_use_id == "tk" and links["n1"].linked_by == "toolUseResult"
    assert (links["n1"].agent_type, links["n1"].description) == ("Explore", "X")
    assert links["n2"].tool_use_id == "tk2" and links["n2"].linked_by == "meta"
    assert (links["n2"].agent_type, links["n2"].parent_entry_uuid, links["n2"].entry_count) == (
        "general-purpose",
        "a2",
        2,
    )


def test_sniff(tmp_path: Path) -> None:
    cases = {
        "pi.jsonl": b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n',
        "chain.jsonl": b'garbage\n{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u"}\n',
        "meta.jsonl": b'{"type":"queue-operation","operation":"dequeue","sessionId":"s"}\n',
        "other.jsonl": b'{"hello":"world"}\n',
        "long.jsonl": b'{"parentUuid":null,"x":"' + b"y" * (2 << 20) + b'"}\n',
    }
    expected = {
        "pi.jsonl": False,
        "chain.jsonl": True,
        "meta.jsonl": True,
        "other.jsonl": False,
        "long.jsonl": True,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert claude_files.is_claude_code_file(tmp_path / name) is expected[name], name
    assert not claude_files.is_claude_code_file(tmp_path / "missing.jsonl")


def test_titles_order() -> None:
    b = Builder()
    b.user("u1", None, "hi")
    b.meta({"type": "summary", "summary": "Summary title", "leafUuid": "u1"})
    b.meta({"type": "last-prompt", "lastPrompt": "hi", "sessionId": "s1"})
    assert b.load().title() == "Summary title"
    b.meta({"type": "ai-title", "aiTitle": "AI title", "sessionId": "s1"})
    assert b.load().title() == "AI title"
    b.meta({"type": "custom-title", "customTitle": "Mine", "sessionId": "s1"})
    b.meta({"type": "custom-title", "customTitle": "Mine, renamed", "sessionId": "s1"})
    assert b.load().title() == "Mine, renamed"


def test_listing_fields() -> None:
    b = Builder()
    b.user("c", None, "<local-command-caveat>Caveat</local-command-caveat>", isMeta=True)
    b.user("u1", "c", "<command-name>/clear</command-name>")
    b.user("u2", "u1", "the real first prompt")
    b.text("a1", "u2", "x", "m1")
    b.user("side", None, "sidechain", isSidechain=True)
    f = cc.listing_fields(b.load())
    assert f["first_message"] == "the real first prompt"
    assert f["message_count"] == 5  # every message entry of the tree, the inline sidechain's too
    assert f["created_ms"] is not None and f["modified_ms"] is not None and f["modified_ms"] > f["created_ms"]


def test_deep_chains_do_not_recurse() -> None:
    n = 60_000
    lines = [
        b'{"parentUuid":null,"type":"user","uuid":"u0","sessionId":"s","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"go"}}'
    ]
    for i in range(1, n):
        lines.append(
            b'{"parentUuid":"u%d","type":"user","uuid":"u%d","sessionId":"s","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}'
            % (i - 1, i)
        )
    t = cc.parse_transcript(b"\n".join(lines), "<deep>")
    r = cc.reconstruct(t)
    assert len(r.chain) == n and r.leaf_uuid == f"u{n - 1}" and r.chain[0] == "u0"
    assert len(SessionTree(cc.to_pi_entries(t)).branch(f"u{n - 1}")) == n


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9])
def test_extending_a_transcript_equals_reading_it_whole(cut: float) -> None:
    path = FIXTURES / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    data = path.read_bytes()
    at = data.rfind(b"\n", 0, int(len(data) * cut)) + 1
    whole = cc.parse_transcript(data, str(path))
    grown = cc.extend_transcript(cc.parse_transcript(data[:at], str(path)), data[at:])
    assert list(grown.chain) == list(whole.chain)
    assert grown.lines == whole.lines and grown.titles == whole.titles
    assert grown.diagnostics.as_json() == whole.diagnostics.as_json()
    a, b = cc.reconstruct(grown), cc.reconstruct(whole)
    assert (a.leaf_uuid, a.chain, a.messages) == (b.leaf_uuid, b.chain, b.messages)
    only = set(list(whole.chain)[-50:])
    assert cc.to_pi_entries(grown, only=only) == [e for e in cc.to_pi_entries(whole) if e["id"] in only]


def test_snip_removals_leave_the_conversation_and_children_are_relinked() -> None:
    b = Builder()
    b.user("u1", None, "first prompt")
    b.text("a1", "u1", "first answer", "m1")
    b.user("u2", "a1", "a noisy detour")
    b.text("a2", "u2", "a long noisy answer", "m2")
    b.user("u3", "a2", "back to work")
    b.system("snip", "u3", "snip_boundary", snipMetadata={"removedUuids": ["u2", "a2", "not-in-file"]})
    b.text("a3", "snip", "working", "m3")
    t = b.load()
    r = cc.reconstruct(t)
    assert r.chain == ["u1", "a1", "u3", "snip", "a3"]
    assert [s for s, _ in r.messages] == ["u1", "a1", "u3", "a3"]
    assert r.diagnostics["snipRemoved"] == 2
    entries = {e["id"]: e for e in cc.to_pi_entries(t)}
    assert entries["u3"]["parentId"] == "a1" and "u2" in entries  # still in the tree
