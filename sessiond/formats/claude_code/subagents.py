"""Sub-agent transcripts and the calls that spawned them, in the three layouts Claude Code used.

Inline sidechains (1.0.x) live in the main file; ``flat`` (2.0.x, ``agent-*.jsonl`` beside
the session) and ``nested`` (2.1.x, ``<sessionId>/subagents/``) transcripts are files the
store layer finds and reads (:mod:`sessiond.store.claude_files`); this module only links
what it is given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Final

from .graph import Graph, graph_of
from .records import ASSISTANT, PROGRESS, USER, ClaudeTranscript, content_of, prompt_text, tool_result_ids


@dataclass(slots=True)
class SubagentLink:
    """A sub-agent transcript and, when the main transcript says so, the call that spawned it."""

    agent_id: str
    """``agentId`` (the ``agent-<id>.jsonl`` stem); for 1.0.x inline sidechains the root's uuid."""
    path: str | None
    """The transcript file; ``None`` for inline sidechains."""
    layout: str
    """``inline`` (1.0.x, inside the main file), ``flat`` (2.0.x siblings), ``nested`` (2.1.x)."""
    tool_use_id: str | None
    """The Task/Agent ``tool_use`` that spawned it (``None`` for the compaction worker)."""
    parent_entry_uuid: str | None
    """The main-session entry holding that ``tool_use``; for the compaction worker, its boundary."""
    agent_type: str | None
    description: str | None
    entry_count: int
    """Chain entries of the sub-agent (progress entries not counted)."""
    kind: str = "task"
    """``task`` or ``compaction`` (``agent-acompact-*``)."""
    linked_by: str | None = None
    """What linked it: ``toolUseResult``, ``agent_progress``, ``meta``, ``prompt``, ``logicalParentUuid``,
    ``timestamp``; ``None`` when nothing in the main transcript names it."""
    root_uuid: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "path": self.path,
            "layout": self.layout,
            "kind": self.kind,
            "toolUseId": self.tool_use_id,
            "parentEntryUuid": self.parent_entry_uuid,
            "agentType": self.agent_type,
            "description": self.description,
            "entryCount": self.entry_count,
            "linkedBy": self.linked_by,
            "rootUuid": self.root_uuid,
        }


@dataclass(slots=True)
class _Spawns:
    calls: dict[str, tuple[str, str, dict[str, Any]]]
    """tool_use id -> (entry uuid, tool name, input) for the main transcript's Task/Agent calls."""
    by_result: dict[str, str]
    """agentId -> tool_use id, from ``toolUseResult.agentId``."""
    by_progress: dict[str, str]
    """agentId -> tool_use id, from ``agent_progress`` progress entries."""


_SPAWN_TOOLS: Final = frozenset({"Task", "Agent"})


def _spawns(t: ClaudeTranscript) -> _Spawns:
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {}
    by_result: dict[str, str] = {}
    by_progress: dict[str, str] = {}
    for u, e in t.chain.items():
        etype = e.get("type")
        if etype == ASSISTANT:
            content = content_of(e)
            for b in content if type(content) is list else ():
                if type(b) is dict and b.get("type") == "tool_use" and b.get("name") in _SPAWN_TOOLS:
                    tid = b.get("id")
                    if type(tid) is str and tid not in calls:
                        args = b.get("input")
                        calls[tid] = (u, b["name"], args if type(args) is dict else {})
        elif etype == USER:
            result = e.get("toolUseResult")
            if type(result) is dict and type(result.get("agentId")) is str:
                ids = tool_result_ids(e)
                if ids:
                    by_result.setdefault(result["agentId"], ids[0])
        elif etype == PROGRESS:
            data = e.get("data")
            if (
                type(data) is dict
                and data.get("type") == "agent_progress"
                and type(data.get("agentId")) is str
            ):
                ptu = e.get("parentToolUseID")
                if type(ptu) is str:
                    by_progress.setdefault(data["agentId"], ptu)
    return _Spawns(calls, by_result, by_progress)


@dataclass(frozen=True, slots=True)
class SubagentFile:
    """A sub-agent transcript the caller found beside a session and read."""

    path: str
    layout: str
    """``nested`` (2.1.x, ``<sessionId>/subagents/``) or ``flat`` (2.0.x, ``agent-*.jsonl`` siblings:
    the caller keeps only those whose first ``sessionId`` is the session's)."""
    transcript: ClaudeTranscript
    meta: dict[str, Any] = field(default_factory=dict)
    """Its ``agent-<id>.meta.json`` (``{}`` when there is none or it is not an object)."""


def link_subagents(t: ClaudeTranscript, files: Iterable[SubagentFile] = ()) -> list[SubagentLink]:
    """The sub-agents of the session ``t``: its inline sidechains and the transcript ``files``.

    * inline (1.0.x): sidechain roots inside the file, linked to a Task call by prompt text;
    * file-based (``nested``, ``flat``) agents are linked by ``meta.json`` ``toolUseId``,
      ``toolUseResult.agentId`` or ``agent_progress`` (``data.agentId`` + ``parentToolUseID``);
    * the compaction worker (``agent-acompact-*``) is linked to the compact boundary whose
      ``logicalParentUuid`` it hangs off.

    A flat sibling of a sub-agent transcript that nothing links is not one of its children
    and is left out. Sorted by first timestamp, then agent id.
    """
    spawns = _spawns(t)
    links = _inline_links(t, spawns)
    for f in files:
        link = _file_link(f, t, spawns)
        if link is not None:
            links.append(link)
    links.sort(key=lambda x: (x[0] if x[0] == x[0] else math.inf, x[1].agent_id))
    return [link for _, link in links]


def _inline_links(t: ClaudeTranscript, spawns: _Spawns) -> list[tuple[float, SubagentLink]]:
    g = graph_of(t)
    chain = t.chain
    if t.is_sidechain_file:
        return []
    root_of: dict[str, str | None] = {}
    sizes: dict[str, int] = {}
    for u in g.order:
        if chain[u].get("isSidechain") is not True:
            continue
        path: list[str] = []
        seen: set[str] = set()
        cur: str | None = u
        root: str | None = None
        while cur is not None and cur not in seen:
            if cur in root_of:
                root = root_of[cur]
                break
            seen.add(cur)
            path.append(cur)
            p = g.parent[cur]
            if p is None or p not in g.parent:
                root = cur
                break
            cur = p
        for x in path:
            root_of[x] = root
        if root is not None:
            sizes[root] = sizes.get(root, 0) + 1
    used: set[str] = set()
    out: list[tuple[float, SubagentLink]] = []
    for root, size in sizes.items():
        e = chain[root]
        if e.get("isSidechain") is not True:
            continue
        agent = e.get("agentId")
        tool_use: str | None = None
        linked_by: str | None = None
        if type(agent) is str:
            tool_use = spawns.by_result.get(agent) or spawns.by_progress.get(agent)
            linked_by = (
                "toolUseResult" if agent in spawns.by_result else "agent_progress" if tool_use else None
            )
        if tool_use is None:
            prompt = prompt_text(e)
            for tid, (_, _, args) in spawns.calls.items():
                if tid not in used and prompt is not None and args.get("prompt") == prompt:
                    tool_use, linked_by = tid, "prompt"
                    break
        if tool_use is not None:
            used.add(tool_use)
        out.append(
            (
                g.ts[root],
                _link(
                    agent if type(agent) is str else root,
                    None,
                    "inline",
                    tool_use,
                    spawns,
                    size,
                    linked_by,
                    root,
                    meta={},
                ),
            )
        )
    return out


def _link(
    agent_id: str,
    path: str | None,
    layout: str,
    tool_use: str | None,
    spawns: _Spawns,
    count: int,
    linked_by: str | None,
    root: str | None,
    meta: dict[str, Any],
) -> SubagentLink:
    call = spawns.calls.get(tool_use) if tool_use is not None else None
    args = call[2] if call is not None else {}
    agent_type = meta.get("agentType") if type(meta.get("agentType")) is str else args.get("subagent_type")
    description = meta.get("description") if type(meta.get("description")) is str else args.get("description")
    return SubagentLink(
        agent_id=agent_id,
        path=path,
        layout=layout,
        tool_use_id=tool_use,
        parent_entry_uuid=call[0] if call is not None else None,
        agent_type=agent_type if type(agent_type) is str else None,
        description=description if type(description) is str else None,
        entry_count=count,
        linked_by=linked_by,
        root_uuid=root,
    )


def _file_link(f: SubagentFile, t: ClaudeTranscript, spawns: _Spawns) -> tuple[float, SubagentLink] | None:
    stem = PurePath(f.path).name.removesuffix(".jsonl")
    sub, meta = f.transcript, f.meta
    agent_id = sub.agent_id or (stem[len("agent-") :] if stem.startswith("agent-") else stem)
    g = graph_of(sub)
    first_ts = min((g.ts[u] for u in g.order if g.ts[u] == g.ts[u]), default=math.nan)
    tool_use: str | None = None
    linked_by: str | None = None
    if type(meta.get("toolUseId")) is str:
        tool_use, linked_by = meta["toolUseId"], "meta"
    elif agent_id in spawns.by_result:
        tool_use, linked_by = spawns.by_result[agent_id], "toolUseResult"
    elif agent_id in spawns.by_progress:
        tool_use, linked_by = spawns.by_progress[agent_id], "agent_progress"
    if f.layout == "flat" and t.is_sidechain_file and tool_use is None:
        return None  # a sibling of a sub-agent transcript, not one of its children
    root = g.order[0] if g.order else None
    link = _link(agent_id, f.path, f.layout, tool_use, spawns, len(g.order), linked_by, root, meta)
    if agent_id.startswith("acompact"):
        link.kind = "compaction"
        boundary, how = _compaction_boundary(t, sub, g, first_ts)
        link.parent_entry_uuid = boundary
        link.linked_by = how
        if link.agent_type is None:
            link.agent_type = "compaction"
        if link.description is None and boundary is not None:
            meta_c = t.chain[boundary].get("compactMetadata")
            trigger = meta_c.get("trigger") if type(meta_c) is dict else None
            link.description = f"compaction ({trigger})" if type(trigger) is str else "compaction"
    return first_ts, link


def _compaction_boundary(
    t: ClaudeTranscript, sub: ClaudeTranscript, sg: Graph, first_ts: float
) -> tuple[str | None, str | None]:
    """The main transcript's boundary a compaction worker belongs to, and how it was found."""
    g = graph_of(t)
    if not g.boundaries:
        return None, None
    parents = {sg.parent[u] for u in sg.order if sg.parent[u] is not None and sg.parent[u] not in sg.parent}
    for b in g.boundaries:
        logical = t.chain[b].get("logicalParentUuid")
        if type(logical) is str and logical in parents:
            return b, "logicalParentUuid"
    if first_ts == first_ts:
        for b in g.boundaries:
            if g.ts[b] >= first_ts:
                return b, "timestamp"
    return None, None
