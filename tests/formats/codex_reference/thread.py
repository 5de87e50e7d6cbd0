"""A Codex thread replayed from its records: Pi-shaped tree entries and the resumed history.

Two views are built in one forward pass over the records, and both can be extended as the
file grows (:meth:`Thread.feed`):

* **The tree.** Every conversation item (a response item Codex keeps), each ``compacted``
  record, each rollback and each model switch becomes one Pi v3 entry whose id is ``L<line>``
  (stable: a line never moves). Entries chain in file order; a ``thread_rolled_back`` moves
  the chain back to before the dropped turns, so the dropped turns stay in the tree as a
  branch and the leaf is where Codex resumes.
* **The history** Codex resumes with (``reconstruct_history_from_rollout``): response items
  in order; a ``compacted`` record replaces the history with its ``replacement_history``, or,
  for builds that stored only the summary, with the context the thread started with, the
  most recent user messages (at most ~20k tokens, 4 bytes a token) and the summary as a user
  message; ``thread_rolled_back {num_turns}`` drops the last N user turns and the
  instruction messages injected right before them. The last ``token_count`` gives the usage
  of the response before it and the model's context window.

:meth:`Thread.context` turns the history into Pi messages: the items of one response form
one assistant message (with that response's usage), outputs become tool results placed right
after their call, a call with no output gets the synthetic ``aborted`` result Codex sends,
and an output whose call is not in the history is dropped (Codex drops it too).

The base instructions (``session_meta.base_instructions.text``) are the first entry and the
first message of the context, a ``custom`` ``codex.instructions`` message marked
``details.systemPrompt``: Codex sends them first with every request (0.169: as a leading
``developer`` item that is no rollout item). A fork's inherited history (Codex 0.169's
paginated forks) is fed before its own records with :attr:`Thread.id_prefix` set, so its
entries keep ids of their own (``sessiond.store.codex`` finds the parent's rollout).

Differences from Codex, by design: Codex puts a fixed preamble of its own before a rebuilt
summary, and renders the instructions it sends for the run at hand (0.169 leaves out the
sections on tools the run does not offer); here the summary is sent as written and the
instructions are the text recorded in the file.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sessiond.formats.pi import paused_gc
from sessiond.model.js import date_ms

from . import items as I
from .records import COMPACTED, EVENT_MSG, RESPONSE_ITEM, SESSION_META, TURN_CONTEXT, Record

Entry = dict[str, Any]
Message = dict[str, Any]

API: Final = "openai-responses"
COMPACT_USER_MESSAGE_MAX_TOKENS: Final = 20_000
BYTES_PER_TOKEN: Final = 4
ZERO_COST: Final = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
INSTRUCTIONS: Final = "codex.instructions"
"""The custom type of the base instructions (the system prompt) in the tree and the context."""
SYSTEM_PROMPT_DETAILS: Final = {"systemPrompt": True, "source": "session_meta.base_instructions"}


def entry_id(line: int) -> str:
    return f"L{line}"


def _ms(timestamp: str) -> int:
    """Milliseconds since the epoch of an ISO timestamp (0 when it is not one)."""
    if len(timestamp) == 24 and timestamp[-1] == "Z" and timestamp[10] == "T":
        try:  # Codex's own shape, ``2026-02-23T11:48:09.610Z``: the fast path
            return int(datetime.fromisoformat(timestamp).timestamp() * 1000 + 0.5)
        except ValueError:
            pass
    value = date_ms(timestamp)
    return int(value) if value == value and not math.isinf(value) else 0


def _int(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def pi_usage(last: Any) -> dict[str, Any] | None:
    """A ``token_count`` ``last_token_usage`` as Pi's usage (``input`` excludes cached input)."""
    if type(last) is not dict:
        return None
    total_in = _int(last.get("input_tokens"))
    cached = min(_int(last.get("cached_input_tokens")), total_in)
    output = _int(last.get("output_tokens"))
    total = _int(last.get("total_tokens")) or total_in + output
    return {
        "input": total_in - cached,
        "output": output,
        "cacheRead": cached,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": dict(ZERO_COST),
    }


@dataclass(slots=True)
class HistoryItem:
    """One item of the resumed history and the tree entry it stands for."""

    entry_id: str
    item: dict[str, Any]
    line: int
    ms: int
    model: str
    usage: dict[str, Any] | None = None
    blocks: list[dict[str, Any]] | None = None
    """The item's assistant blocks, once computed (the entry and the context share them)."""

    def assistant_blocks(self) -> list[dict[str, Any]]:
        if self.blocks is None:
            self.blocks = I.assistant_blocks(self.item, self.line)
        return self.blocks


@dataclass(slots=True)
class ThreadDiagnostics:
    unknown_items: Counter[str] = field(default_factory=Counter)
    rollbacks: int = 0
    rolled_back_turns: int = 0
    compactions: int = 0
    summary_only_compactions: int = 0
    aborted_turns: int = 0
    synthetic_results: int = 0
    dropped_results: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "unknownItems": dict(sorted(self.unknown_items.items())),
            "rollbacks": self.rollbacks,
            "rolledBackTurns": self.rolled_back_turns,
            "compactions": self.compactions,
            "summaryOnlyCompactions": self.summary_only_compactions,
            "abortedTurns": self.aborted_turns,
            "syntheticToolResults": self.synthetic_results,
            "droppedToolResults": self.dropped_results,
        }


@dataclass(slots=True)
class _Node:
    """An entry on the current chain, with what a rollback needs to know about it."""

    id: str
    turn: bool = False
    contextual: bool = False


@dataclass(slots=True)
class TokenInfo:
    total: dict[str, Any] | None
    last: dict[str, Any] | None
    window: int | None
    line: int


class Thread:
    """The state of a thread after the records fed so far."""

    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider
        self.model = ""
        self.path: list[_Node] = []
        self.history: list[HistoryItem] = []
        self.token_info: TokenInfo | None = None
        self.window: int | None = None
        self.diagnostics = ThreadDiagnostics()
        self.last_line = 0
        self.last_timestamp = ""
        self._meta_seen = False
        self._names: dict[str, str] = {}
        """Tool names by call id (a tool result entry names its tool)."""
        self.id_prefix = ""
        """Put before every new entry id: ``B`` while a fork's inherited history is fed."""
        self.instructions: HistoryItem | None = None
        """The base instructions (``session_meta.base_instructions.text``): the system prompt."""

    @property
    def leaf_id(self) -> str | None:
        return self.path[-1].id if self.path else None

    # ------------------------------------------------------------------ feeding

    def feed(self, records: list[Record]) -> list[Entry]:
        """Apply records in file order; returns the new tree entries."""
        with paused_gc():
            return self._feed(records)

    def _feed(self, records: list[Record]) -> list[Entry]:
        out: list[Entry] = []
        for record in records:
            self.last_line = record.line
            if record.timestamp:
                self.last_timestamp = record.timestamp
            kind = record.type
            if kind == RESPONSE_ITEM:
                self._item(record, out)
            elif kind == COMPACTED:
                self._compacted(record, out)
            elif kind == TURN_CONTEXT:
                self._turn_context(record, out)
            elif kind == EVENT_MSG:
                self._event(record, out)
            elif kind == SESSION_META and not self._meta_seen:
                self._meta_seen = True
                provider = record.payload.get("model_provider")
                if type(provider) is str and provider:
                    self.provider = provider
                if not self.id_prefix:  # a fork's own instructions, not its parent's
                    self._instructions(record, out)
        return out

    def _instructions(self, record: Record, out: list[Entry]) -> None:
        """The base instructions Codex sends first with every request (the ``instructions``
        field in older builds, a leading ``developer`` input item that is no rollout item in
        0.169): one ``custom_message`` entry marked as the system prompt, first in the chain."""
        base = record.payload.get("base_instructions")
        text = base.get("text") if type(base) is dict else None
        if type(text) is not str or not text.strip():
            return
        eid = self.id_prefix + entry_id(record.line)
        content = [{"type": "text", "text": text}]
        item = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]}
        self.instructions = HistoryItem(eid, item, record.line, _ms(record.timestamp), self.model)
        entry = _custom_message_entry(eid, record.timestamp, INSTRUCTIONS, content)
        entry["details"] = dict(SYSTEM_PROMPT_DETAILS)
        self._append(out, entry, _Node(eid))

    def _append(self, out: list[Entry], entry: Entry, node: _Node) -> None:
        entry["parentId"] = self.leaf_id
        out.append(entry)
        self.path.append(node)

    def _item(self, record: Record, out: list[Entry]) -> None:
        item = record.payload
        t = I.item_type(item)
        if t is None or t not in I.KNOWN_ITEM_TYPES:
            self.diagnostics.unknown_items[t if t is not None else "(none)"] += 1
            return
        eid = self.id_prefix + entry_id(record.line)
        ms = _ms(record.timestamp)
        node = _Node(eid)
        history_item = HistoryItem(eid, item, record.line, ms, self.model)
        if I.is_api_item(item):
            self.history.append(history_item)
            if I.item_type(item) == "message":
                node.turn = I.is_user_turn(item)
                node.contextual = I.is_contextual_user(item) or I.is_contextual_developer(item)
        entry = self._entry_for(history_item, record, eid, ms)
        self._append(out, entry, node)

    def _entry_for(self, history_item: HistoryItem, record: Record, eid: str, ms: int) -> Entry:
        item = history_item.item
        t = I.item_type(item)
        ts = record.timestamp
        if t == "message":
            r = I.role(item)
            if r == "user":
                message: Message = {
                    "role": "user",
                    "content": I.user_blocks(item.get("content")),
                    "timestamp": ms,
                }
                return _message_entry(eid, ts, message)
            if r == "assistant":
                return _message_entry(eid, ts, self._assistant(list(history_item.assistant_blocks()), ms))
            if r == "developer":
                return _custom_message_entry(eid, ts, "codex.developer", I.user_blocks(item.get("content")))
            return _custom_entry(eid, ts, f"codex.message/{r}", {"text": _clip(I.user_text(item))})
        if t in I.OUTPUT_ITEM_TYPES:
            blocks, failed = I.output_result(item)
            cid = I.call_id(item, record.line)
            message = _tool_result(cid, self._names.get(cid, ""), blocks, failed, ms)
            return _message_entry(eid, ts, message)
        if t in I.COMPACTION_ITEM_TYPES:
            return _custom_message_entry(
                eid, ts, "codex.compaction", [{"type": "text", "text": I.compaction_text(item)}]
            )
        if I.is_model_item(item):
            blocks = list(history_item.assistant_blocks())
            for block in blocks:
                if block["type"] == "toolCall":
                    self._names[block["id"]] = block["name"]
            return _message_entry(eid, ts, self._assistant(blocks, ms))
        data = {k: v for k, v in item.items() if k != "type" and type(v) in (str, int, float, bool)}
        return _custom_entry(eid, ts, f"codex.{t}", data)

    def _assistant(self, blocks: list[dict[str, Any]], ms: int, usage: Any = None) -> Message:
        has_calls = any(b["type"] == "toolCall" for b in blocks)
        return {
            "role": "assistant",
            "content": blocks,
            "api": API,
            "provider": self.provider,
            "model": self.model,
            "usage": usage if usage is not None else _zero_usage(),
            "stopReason": "toolUse" if has_calls else "stop",
            "timestamp": ms,
        }

    def _compacted(self, record: Record, out: list[Entry]) -> None:
        payload = record.payload
        eid = self.id_prefix + entry_id(record.line)
        summary = payload.get("message")
        summary = summary if type(summary) is str else ""
        replacement = payload.get("replacement_history")
        self.diagnostics.compactions += 1
        ms = _ms(record.timestamp)
        if type(replacement) is list:
            self.history = [
                HistoryItem(eid, item, record.line, ms, self.model)
                for item in replacement
                if type(item) is dict
            ]
        else:
            self.diagnostics.summary_only_compactions += 1
            self.history = self._rebuilt(eid, record.line, ms, summary)
        data: dict[str, Any] = {"summary": summary}
        if type(replacement) is list:
            data["replacementItems"] = len(replacement)
        self._append(out, _custom_entry(eid, record.timestamp, "codex.compacted", data), _Node(eid))

    def _rebuilt(self, eid: str, line: int, ms: int, summary: str) -> list[HistoryItem]:
        """The history a summary-only compaction leaves (what Codex's local compaction builds)."""
        first_turn = next(
            (i for i, h in enumerate(self.history) if I.is_user_turn(h.item)), len(self.history)
        )
        initial = [h for h in self.history[:first_turn] if I.item_type(h.item) == "message"]
        prompts = [
            I.user_text(h.item)
            for h in self.history
            if I.is_user_turn(h.item) and not h.item.get("sessiondSummary")
        ]
        kept: list[str] = []
        budget = COMPACT_USER_MESSAGE_MAX_TOKENS
        for text in reversed(prompts):
            if budget <= 0:
                break
            tokens = -(-len(text.encode()) // BYTES_PER_TOKEN)
            if tokens > budget:
                text = text.encode()[: budget * BYTES_PER_TOKEN].decode(errors="ignore")
                tokens = budget
            kept.append(text)
            budget -= tokens
        kept.reverse()
        rebuilt = [HistoryItem(h.entry_id, h.item, h.line, h.ms, h.model) for h in initial]
        for text in kept:
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
            rebuilt.append(HistoryItem(eid, item, line, ms, self.model))
        summary_item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": summary or "(no summary available)"}],
            "sessiondSummary": True,
        }
        rebuilt.append(HistoryItem(eid, summary_item, line, ms, self.model))
        return rebuilt

    def _turn_context(self, record: Record, out: list[Entry]) -> None:
        model = record.payload.get("model")
        if type(model) is not str or not model or model == self.model:
            return
        self.model = model
        eid = self.id_prefix + entry_id(record.line)
        entry = {
            "type": "model_change",
            "id": eid,
            "parentId": None,
            "timestamp": record.timestamp,
            "provider": self.provider,
            "modelId": model,
        }
        self._append(out, entry, _Node(eid))

    def _event(self, record: Record, out: list[Entry]) -> None:
        payload = record.payload
        t = payload.get("type")
        if t == "token_count":
            info = payload.get("info")
            if type(info) is not dict:
                return
            last = info.get("last_token_usage")
            total = info.get("total_token_usage")
            window = info.get("model_context_window")
            if type(window) is int and window > 0:
                self.window = window
            self.token_info = TokenInfo(
                total if type(total) is dict else None,
                last if type(last) is dict else None,
                self.window,
                record.line,
            )
            usage = pi_usage(last)
            if usage is not None:
                for h in reversed(self.history):
                    if I.is_model_item(h.item):
                        h.usage = usage
                        break
        elif t == "task_started":
            window = payload.get("model_context_window")
            if type(window) is int and window > 0:
                self.window = window
        elif t == "thread_rolled_back":
            n = payload.get("num_turns")
            count = n if type(n) is int and n > 0 else 0
            self._rollback(record, count, out)
        elif t == "turn_aborted":
            self.diagnostics.aborted_turns += 1

    def _rollback(self, record: Record, count: int, out: list[Entry]) -> None:
        self.diagnostics.rollbacks += 1
        self.diagnostics.rolled_back_turns += count
        before = len(self.path)
        if count:
            self.history = _drop_turns(self.history, count)
            self.path = _drop_path_turns(self.path, count)
        eid = self.id_prefix + entry_id(record.line)
        data = {"numTurns": count, "droppedEntries": before - len(self.path)}
        self._append(out, _custom_entry(eid, record.timestamp, "codex.thread_rolled_back", data), _Node(eid))

    # ------------------------------------------------------------------ the context

    def context(self) -> list[tuple[str, Message]]:
        """The resumed history as Pi messages, each with the id of the entry it comes from."""
        synthetic, dropped, messages = to_messages(self.history, self.provider)
        self.diagnostics.synthetic_results = synthetic
        self.diagnostics.dropped_results = dropped
        if self.instructions is not None:
            h = self.instructions
            message = _custom(INSTRUCTIONS, I.user_blocks(h.item["content"]), h.ms)
            message["details"] = dict(SYSTEM_PROMPT_DETAILS)
            messages.insert(0, (h.entry_id, message))
        return messages


def _drop_turns(history: list[HistoryItem], count: int) -> list[HistoryItem]:
    turns = [i for i, h in enumerate(history) if I.is_user_turn(h.item)]
    if not turns:
        return history
    first = turns[0]
    cut = first if count >= len(turns) else turns[len(turns) - count]
    while cut > first:
        item = history[cut - 1].item
        if I.is_contextual_developer(item) or I.is_contextual_user(item):
            cut -= 1
            continue
        break
    return history[:cut]


def _drop_path_turns(path: list[_Node], count: int) -> list[_Node]:
    turns = [i for i, n in enumerate(path) if n.turn]
    if not turns:
        return path
    first = turns[0]
    cut = first if count >= len(turns) else turns[len(turns) - count]
    while cut > first and path[cut - 1].contextual:
        cut -= 1
    return path[:cut]


# --------------------------------------------------------------------------- history -> messages


def to_messages(history: list[HistoryItem], provider: str) -> tuple[int, int, list[tuple[str, Message]]]:
    """Pi messages for a history: ``(synthetic results, dropped results, [(entry id, message)])``."""
    raw: list[tuple[str, Message]] = []
    names: dict[str, str] = {}
    current: tuple[str, Message] | None = None
    server: list[tuple[str, Message]] = []

    def flush() -> None:
        nonlocal current
        if current is not None:
            message = current[1]
            message["stopReason"] = (
                "toolUse" if any(b["type"] == "toolCall" for b in message["content"]) else "stop"
            )
            raw.append(current)
            raw.extend(server)
            server.clear()
            current = None

    for h in history:
        item = h.item
        if not I.is_api_item(item):
            continue
        t = I.item_type(item)
        if I.is_model_item(item):
            if current is None:
                current = (h.entry_id, _assistant_message(provider, h.model, h.ms))
            blocks = h.assistant_blocks()
            current[1]["content"].extend(blocks)
            if h.usage is not None:
                current[1]["usage"] = h.usage
            for block in blocks:
                if block["type"] == "toolCall":
                    names[block["id"]] = block["name"]
            done = I.server_side_result(item)
            if done is not None and blocks:
                server.append(
                    (h.entry_id, _tool_result(blocks[0]["id"], blocks[0]["name"], [_text(done)], False, h.ms))
                )
            continue
        flush()
        if t == "message":
            r = I.role(item)
            if r == "developer":
                raw.append((h.entry_id, _custom("codex.developer", I.user_blocks(item.get("content")), h.ms)))
            else:
                raw.append(
                    (
                        h.entry_id,
                        {"role": "user", "content": I.user_blocks(item.get("content")), "timestamp": h.ms},
                    )
                )
        elif t in I.OUTPUT_ITEM_TYPES:
            blocks, failed = I.output_result(item)
            cid = I.call_id(item, h.line)
            raw.append((h.entry_id, _tool_result(cid, names.get(cid, ""), blocks, failed, h.ms)))
        elif t in I.COMPACTION_ITEM_TYPES:
            raw.append((h.entry_id, _custom("codex.compaction", [_text(I.compaction_text(item))], h.ms)))
    flush()
    return _pair(raw, names)


def _pair(
    raw: list[tuple[str, Message]], names: dict[str, str]
) -> tuple[int, int, list[tuple[str, Message]]]:
    """Every call followed by exactly one result: its first recorded output, else ``aborted``."""
    results: dict[str, list[int]] = {}
    for i, (_, message) in enumerate(raw):
        if message["role"] == "toolResult":
            results.setdefault(message["toolCallId"], []).append(i)
    used: set[int] = set()
    out: list[tuple[str, Message]] = []
    synthetic = dropped = 0
    for i, (source, message) in enumerate(raw):
        if i in used:
            continue
        if message["role"] == "toolResult":
            dropped += 1  # its call is not in the history, or it is a second output
            continue
        out.append((source, message))
        if message["role"] != "assistant":
            continue
        for block in message["content"]:
            if block["type"] != "toolCall":
                continue
            found = next((j for j in results.get(block["id"], []) if j > i and j not in used), None)
            if found is not None:
                used.add(found)
                result = raw[found]
                result[1]["toolName"] = result[1]["toolName"] or names.get(block["id"], "")
                out.append(result)
            else:
                synthetic += 1
                result_message = _tool_result(
                    block["id"], block["name"], [_text(I.SYNTHETIC_OUTPUT)], True, message["timestamp"]
                )
                result_message["details"] = {"synthetic": True}
                out.append((source, result_message))
    return synthetic, dropped, out


# --------------------------------------------------------------------------- shapes


def _zero_usage() -> dict[str, Any]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": dict(ZERO_COST),
    }


def _assistant_message(provider: str, model: str, ms: int) -> Message:
    return {
        "role": "assistant",
        "content": [],
        "api": API,
        "provider": provider,
        "model": model,
        "usage": _zero_usage(),
        "stopReason": "stop",
        "timestamp": ms,
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_result(cid: str, name: str, blocks: list[dict[str, Any]], failed: bool, ms: int) -> Message:
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": name,
        "content": blocks,
        "isError": failed,
        "timestamp": ms,
    }


def _custom(custom_type: str, content: list[dict[str, Any]], ms: int) -> Message:
    return {
        "role": "custom",
        "customType": custom_type,
        "content": content,
        "display": False,
        "timestamp": ms,
    }


def _message_entry(eid: str, timestamp: str, message: Message) -> Entry:
    return {"type": "message", "id": eid, "parentId": None, "timestamp": timestamp, "message": message}


def _custom_message_entry(eid: str, timestamp: str, custom_type: str, content: list[dict[str, Any]]) -> Entry:
    return {
        "type": "custom_message",
        "customType": custom_type,
        "content": content,
        "display": False,
        "id": eid,
        "parentId": None,
        "timestamp": timestamp,
    }


def _custom_entry(eid: str, timestamp: str, custom_type: str, data: dict[str, Any]) -> Entry:
    return {
        "type": "custom",
        "customType": custom_type,
        "data": data,
        "id": eid,
        "parentId": None,
        "timestamp": timestamp,
    }


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "API",
    "HistoryItem",
    "Thread",
    "ThreadDiagnostics",
    "TokenInfo",
    "entry_id",
    "pi_usage",
    "to_messages",
]
