"""``sessiond inspect``: everything sessiond derives from a session file, as one JSON object.

The keys and their meanings are those of the Pi oracle (``tests/oracle/harness.mjs``, listed
in ``tests/oracle/README.md``), which prints what Pi's own code derives from the same file; so
the two outputs can be compared directly, and a difference is a compatibility bug. sessiond adds ``format``,
``estimator`` and ``diagnostics`` (what was skipped, orphans, cycles, duplicate ids).

A Claude Code transcript is recognised by its first record and described with the same keys
where they make sense (``"format": "claude-code"``): the branch is the chain ``--resume``
rebuilds, the context its messages, the tree every entry of every branch; ``claudeCode``
adds the reconstruction diagnostics, the titles and the sub-agent transcripts.

A Codex rollout (recognised by its first record) and an OpenCode session (a database session
``<data>/opencode.db#<session id>``, or a session file of the older JSON store) are described
the same way (``"format": "codex"`` / ``"opencode"``): the branch ends where the agent resumes,
the context is what it would send, and ``agent`` holds the reader's diagnostics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .compaction.prepare import CompactionSettings, NoCompaction, prepare_compaction
from .errors import EntryNotFoundError
from .formats import claude_code as cc
from .formats.pi import LoadedSession, load_session
from .model import entries as E
from .model.js import UNDEFINED, get, nullish, to_string, trim, truthy, utf16_len, utf16_slice, utf16_sort_key
from .model.js_json import object_items, stringify
from .model.messages import convert_to_llm
from .model.projection import project
from .model.tokens import (
    TokenEstimator,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    get_estimator,
)
from .model.tree import SessionTree, count_nodes
from .store import claude_files

PREVIEW_CHARS = 120


@dataclass(frozen=True, slots=True)
class InspectOptions:
    leaf: str | None = None
    """Move the leaf before building context: an entry id, or ``"null"`` for no leaf."""
    full: bool = False
    """Full message texts instead of 120-character previews."""
    compaction: bool = False
    keep: int = 20000
    reserve: int = 16384
    window: int | None = None
    estimator: str = "pi"


def inspect_file(path: str, options: InspectOptions) -> dict[str, Any]:
    """Load ``path`` and describe it. Raises :class:`~sessiond.errors.SessiondError` subclasses."""
    if claude_files.is_claude_code_file(path):
        transcript = claude_files.load_transcript(path)
        subagents = claude_files.find_subagents(path, transcript)
        return describe_claude_code(transcript, options, file=os.path.abspath(path), subagents=subagents)
    foreign = open_agent_session(path)
    if foreign is not None:
        return describe_foreign(foreign, options, file=os.path.abspath(path))
    loaded = load_session(path)
    return describe_session(loaded, options, file=os.path.abspath(path))


def describe_session(
    loaded: LoadedSession, options: InspectOptions, file: str = "<memory>"
) -> dict[str, Any]:
    estimator = get_estimator(options.estimator)
    clip = _clipper(options.full)
    tree = SessionTree(loaded.entries)
    diag = loaded.diagnostics
    result: dict[str, Any] = {
        "file": file,
        "format": "pi",
        "sessiondVersion": __version__,
        "estimator": estimator.name,
        "fileRepair": {
            "modified": diag.torn_tail or loaded.migrated,
            "trailingNewlineAdded": diag.torn_tail and not loaded.migrated,
            "rewritten": loaded.migrated,
        },
        "header": loaded.header,
        "sessionId": loaded.header["id"],
        "entryCount": len(tree),
        "sessionName": _session_name(loaded.file_lines),
        "loadedLeafId": tree.leaf_id,
    }
    if options.leaf is not None:
        if options.leaf == "null":
            tree.reset_leaf()
        else:
            try:
                tree.set_leaf(options.leaf)
            except KeyError:
                raise EntryNotFoundError(options.leaf) from None
    result["leafId"] = tree.leaf_id
    branch = tree.branch()
    result["branchIds"] = [get(e, "id") for e in branch]
    result["branch"] = [_entry_brief(e) for e in branch]
    path = tree.context_path()
    projection = project(path)
    result["contextEntryIds"] = [get(p.source, "id") for p in projection.entries]
    result["projection"] = [
        {"id": get(p.source, "id"), "type": get(p.source, "type"), "messages": len(p.messages)}
        for p in projection.entries
    ]
    result["context"] = {
        "thinkingLevel": projection.settings.thinking_level,
        "model": projection.settings.model,
        "messages": [_describe_message(m, clip, estimator) for m in projection.messages],
        "llmRoles": [get(m, "role") for m in convert_to_llm(projection.messages)],
    }
    roots = tree.tree()
    labels: dict[str, Any] = {}
    stack = list(roots)
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if node.label is not UNDEFINED:
            labels[to_string(get(node.entry, "id"))] = node.label
        if id(node) not in visited:
            visited.add(id(node))
            stack.extend(node.children)
    result["tree"] = {
        "roots": [get(n.entry, "id") for n in roots],
        "nodes": count_nodes(roots),
        "labels": labels,
    }
    if options.compaction:
        result["compaction"] = _compaction_report(branch, projection, options, estimator, clip)
    result["diagnostics"] = {**diag.as_json(), **tree.diagnostics().as_json()}
    return result


def _session_name(file_lines: list[Any]) -> Any:
    """The latest ``session_info`` in file order, any branch; an empty name clears it."""
    for line in reversed(file_lines):
        if get(line, "type") == E.SESSION_INFO:
            name = get(line, "name")
            if type(name) is str and trim(name):
                return trim(name)
            return None
    return None


def _clipper(full: bool) -> Any:
    def clip(text: str) -> str:
        if full or utf16_len(text) <= PREVIEW_CHARS:
            return text
        return utf16_slice(text, 0, PREVIEW_CHARS - 3) + "..."

    return clip


def _entry_brief(e: Any) -> dict[str, Any]:
    brief: dict[str, Any] = {"id": get(e, "id"), "parentId": get(e, "parentId"), "type": get(e, "type")}
    t = brief["type"]
    if t == E.MESSAGE:
        brief["role"] = get(get(e, "message"), "role")
    elif t == E.CONTEXT_EDIT:
        brief["targetId"] = get(e, "targetId")
        brief["replacement"] = None if get(e, "replacement") is None else "content"
    elif t == E.LABEL:
        brief["targetId"] = get(e, "targetId")
        label = get(e, "label")
        brief["label"] = None if nullish(label) else label
    elif t == E.COMPACTION:
        brief["firstKeptEntryId"] = get(e, "firstKeptEntryId")
    elif t == E.BRANCH_SUMMARY:
        brief["fromId"] = get(e, "fromId")
    return brief


def _blocks_text(content: Any) -> str:
    """A readable rendering of message content (text, and placeholders for other blocks)."""
    if nullish(content):
        return ""
    if type(content) is str:
        return content
    if type(content) is not list:
        return stringify(content)
    parts: list[Any] = []
    for b in content:
        if type(b) is not dict and type(b) is not list:
            parts.append("")
            continue
        t = get(b, "type")
        if t == "text":
            text = get(b, "text")
            parts.append("" if nullish(text) else text)
        elif t == "image":
            mime = get(b, "mimeType")
            parts.append(f"[image {'?' if nullish(mime) else to_string(mime)}]")
        elif t == "thinking":
            thinking = get(b, "thinking")
            parts.append(f"[thinking {utf16_len(to_string('' if nullish(thinking) else thinking))} chars]")
        elif t == "toolCall":
            args = get(b, "arguments")
            parts.append(
                f"[toolCall {to_string(get(b, 'name'))}({stringify({} if nullish(args) else args)})]"
            )
        else:
            parts.append(f"[{to_string(t)}]")
    return "\n".join(to_string(p) for p in parts if truthy(p))


def _describe_message(m: Any, clip: Any, estimator: TokenEstimator) -> dict[str, Any]:
    role = get(m, "role")
    out: dict[str, Any] = {"role": role}
    if role in ("user", "custom"):
        out["text"] = clip(_blocks_text(get(m, "content")))
        if role == "custom":
            out["customType"] = get(m, "customType")
            out["display"] = get(m, "display")
    elif role == "assistant":
        out["text"] = clip(_blocks_text(get(m, "content")))
        out["stopReason"] = get(m, "stopReason")
        out["provider"] = get(m, "provider")
        out["model"] = get(m, "model")
        error = get(m, "errorMessage")
        if truthy(error):
            out["errorMessage"] = clip(to_string(error))
    elif role == "toolResult":
        out["text"] = clip(_blocks_text(get(m, "content")))
        out["toolCallId"] = get(m, "toolCallId")
        out["toolName"] = get(m, "toolName")
        out["isError"] = get(m, "isError")
    elif role == "bashExecution":
        output = get(m, "output")
        out["text"] = clip(
            f"$ {to_string(get(m, 'command'))}\n{'' if nullish(output) else to_string(output)}"
        )
        if truthy(get(m, "excludeFromContext")):
            out["excludeFromContext"] = True
    elif role in ("compactionSummary", "branchSummary"):
        summary = get(m, "summary")
        out["text"] = clip("" if nullish(summary) else to_string(summary))
        if role == "compactionSummary":
            out["tokensBefore"] = get(m, "tokensBefore")
        else:
            out["fromId"] = get(m, "fromId")
    elif role == "system":
        out["text"] = clip(_blocks_text(get(m, "content")))
        sections = get(m, "sections")
        out["sections"] = [k for k, _ in object_items(sections)] if type(sections) is dict else []
        added = get(m, "toolsAdded")
        out["toolsAdded"] = [get(t, "name") for t in added] if type(added) is list else []
        removed = get(m, "toolsRemoved")
        if truthy(removed) and type(removed) is list:
            out["toolsRemoved"] = [get(t, "name") for t in removed]
    else:
        out["text"] = clip(_blocks_text(get(m, "content")))
    out["estTokens"] = estimator.message_tokens(m)
    return out


def _compaction_report(
    branch: list[Any], projection: Any, options: InspectOptions, estimator: TokenEstimator, clip: Any
) -> dict[str, Any]:
    settings = CompactionSettings(True, options.reserve, options.keep)
    # Pi's harness prepares on the branch (getBranch) and estimates on the context projection.
    prep = prepare_compaction(branch, settings, estimator)
    estimate = estimate_context_tokens(projection.messages, estimator)
    projected = estimate_projected_context_tokens(projection, branch, estimator)
    report: dict[str, Any] = {
        "settings": settings.as_json(),
        "estimateContextTokens": estimate.as_json(),
        "estimateProjectedContextTokens": projected.as_json(),
    }
    if options.window:
        report["shouldCompact"] = projected.tokens > options.window - settings.reserve_tokens
    if isinstance(prep, NoCompaction):
        report["preparation"] = None
        report["reason"] = prep.reason
        return report
    previous = prep.previous_summary
    report["preparation"] = {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": prep.tokens_before,
        "previousSummary": None if previous is UNDEFINED else clip(to_string(previous)),
        "messagesToSummarize": [get(m, "role") for m in prep.messages_to_summarize],
        "turnPrefixMessages": [get(m, "role") for m in prep.turn_prefix_messages],
        "fileOps": {
            "read": sorted(prep.file_ops.read, key=utf16_sort_key),
            "written": sorted(prep.file_ops.written, key=utf16_sort_key),
            "edited": sorted(prep.file_ops.edited, key=utf16_sort_key),
        },
        "serializedHistoryChars": utf16_len(prep.serialized_history()),
    }
    return report


# --------------------------------------------------------------------------- Claude Code


def describe_claude_code(
    t: cc.ClaudeTranscript,
    options: InspectOptions,
    file: str = "<memory>",
    subagents: list[cc.SubagentLink] | None = None,
) -> dict[str, Any]:
    """The ``inspect`` object for a Claude Code transcript (see the module docstring)."""
    estimator = get_estimator(options.estimator)
    clip = _clipper(options.full)
    entries = cc.to_pi_entries(t)
    tree = SessionTree(entries)
    loaded = cc.reconstruct(t)
    if options.leaf is None:
        rec: cc.Reconstruction | None = loaded
    elif options.leaf == "null":
        rec = None
    else:
        rec = cc.reconstruct(t, leaf=options.leaf)  # EntryNotFoundError for an unknown uuid
    result: dict[str, Any] = {
        "file": file,
        "format": "claude-code",
        "sessiondVersion": __version__,
        "estimator": estimator.name,
        "sessionId": t.session_id,
        "cwd": t.cwd,
        "claudeCodeVersion": t.version,
        "entryCount": len(tree),
        "sessionName": t.title(),
        "loadedLeafId": loaded.leaf_uuid,
        "leafId": rec.leaf_uuid if rec is not None else None,
    }
    chain = rec.chain if rec is not None else []
    messages_with_source = rec.messages if rec is not None else []
    messages = [m for _, m in messages_with_source]
    result["branchIds"] = chain
    result["branch"] = [_cc_brief(tree.get(u)) for u in chain if tree.get(u) is not None]
    per_entry: dict[str, int] = {}
    for source, _ in messages_with_source:
        per_entry[source] = per_entry.get(source, 0) + 1
    result["contextEntryIds"] = list(per_entry)
    result["projection"] = [
        {"id": u, "type": get(tree.get(u), "type"), "messages": per_entry.get(u, 0)} for u in chain
    ]
    model = None
    for m in reversed(messages):
        if m.get("role") == "assistant" and m.get("model"):
            model = {"provider": m.get("provider"), "modelId": m.get("model")}
            break
    result["context"] = {
        "thinkingLevel": None,
        "model": model,
        "messages": [_describe_message(m, clip, estimator) for m in messages],
        "llmRoles": [get(m, "role") for m in convert_to_llm(messages)],
    }
    roots = tree.tree()
    result["tree"] = {"roots": [get(n.entry, "id") for n in roots], "nodes": count_nodes(roots), "labels": {}}
    if options.compaction:
        settings = CompactionSettings(True, options.reserve, options.keep)
        estimate = estimate_context_tokens(messages, estimator)
        report: dict[str, Any] = {
            "settings": settings.as_json(),
            "estimateContextTokens": estimate.as_json(),
        }
        if options.window:
            report["shouldCompact"] = estimate.tokens > options.window - settings.reserve_tokens
        report["preparation"] = None
        report["reason"] = "claude_code_transcript"
        result["compaction"] = report
    listing = cc.listing_fields(t)
    result["diagnostics"] = {**t.diagnostics.as_json(), **tree.diagnostics().as_json()}
    result["claudeCode"] = {
        "leafRule": rec.rule if rec is not None else None,
        "reconstruction": rec.diagnostics if rec is not None else None,
        "titles": t.titles.as_json(),
        "listing": {
            "createdMs": listing["created_ms"],
            "modifiedMs": listing["modified_ms"],
            "messageCount": listing["message_count"],
            "firstMessage": clip(listing["first_message"]) if listing["first_message"] else None,
        },
        "subagents": [s.as_json() for s in subagents] if subagents is not None else None,
    }
    return result


def _cc_brief(e: Any) -> dict[str, Any]:
    brief = _entry_brief(e)
    if brief["type"] == E.CUSTOM:
        brief["customType"] = get(e, "customType")
    return brief


# --------------------------------------------------------------------------- Codex, OpenCode


def open_agent_session(path: str | os.PathLike[str]) -> Any:
    """A Codex rollout or an OpenCode session at ``path`` opened read-only, else ``None``."""
    from .store.codex import CodexSession, is_codex_rollout  # noqa: PLC0415
    from .store.opencode import OpenCodeSession, is_opencode_session_path  # noqa: PLC0415

    if is_opencode_session_path(path):
        return OpenCodeSession.open(Path(path))
    if is_codex_rollout(path):
        return CodexSession.open(Path(path))
    return None


def describe_foreign(session: Any, options: InspectOptions, file: str = "<memory>") -> dict[str, Any]:
    """The ``inspect`` object for a Codex or OpenCode session (a store ``ForeignSession``)."""
    estimator = get_estimator(options.estimator)
    clip = _clipper(options.full)
    loaded_leaf = session.leaf_id
    if options.leaf == "null":
        session.reset_leaf()
    elif options.leaf is not None:
        session.set_leaf(options.leaf)  # EntryNotFoundError for an unknown id
    branch = session.branch()
    projection = session.context()
    messages = projection.messages
    diagnostics = session.diagnostics.as_json()
    result: dict[str, Any] = {
        "file": file,
        "format": diagnostics.get("format"),
        "sessiondVersion": __version__,
        "estimator": estimator.name,
        "sessionId": session.id,
        "cwd": session.cwd,
        "entryCount": session.entry_count,
        "sessionName": session.name,
        "loadedLeafId": loaded_leaf,
        "leafId": session.leaf_id,
        "branchIds": [get(e, "id") for e in branch],
        "branch": [_cc_brief(e) for e in branch],
        "contextEntryIds": [get(p.source, "id") for p in projection.entries],
        "projection": [
            {"id": get(p.source, "id"), "type": get(p.source, "type"), "messages": len(p.messages)}
            for p in projection.entries
        ],
        "context": {
            "thinkingLevel": None,
            "model": projection.settings.model,
            "messages": [_describe_message(m, clip, estimator) for m in messages],
            "llmRoles": [get(m, "role") for m in convert_to_llm(messages)],
        },
    }
    roots = session.tree.tree()
    result["tree"] = {"roots": [get(n.entry, "id") for n in roots], "nodes": count_nodes(roots), "labels": {}}
    usage = session.context_usage(estimator)
    result["usage"] = {**usage.as_json(), "contextWindow": session.native_context_window()}
    if options.compaction:
        settings = CompactionSettings(True, options.reserve, options.keep)
        report: dict[str, Any] = {"settings": settings.as_json(), "estimateContextTokens": usage.as_json()}
        if options.window:
            report["shouldCompact"] = usage.tokens > options.window - settings.reserve_tokens
        report["preparation"] = None
        report["reason"] = "read_only_session"
        result["compaction"] = report
    result["diagnostics"] = session.tree.diagnostics().as_json()
    result["agent"] = {k: v for k, v in diagnostics.items() if k != "format"}
    return result
