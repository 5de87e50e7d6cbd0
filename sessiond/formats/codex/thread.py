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

from ...model.js import date_ms
from ..pi import paused_gc
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


_REPLAYED_EVENTS: Final = frozenset({"token_count", "task_started", "thread_rolled_back", "turn_aborted"})
"""The ``event_msg`` types the replay acts on (the rest echo items for a UI, or mark progress)."""


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
    last_usage: dict[str, Any] | None = None
    """The ``last_token_usage`` of the latest ``token_count`` after this item, when it is the
    history's last model item then: :attr:`usage` is made of it when the context asks (most
    of a long rollout's ``token_count`` events are overtaken by the next before that)."""

    def assistant_blocks(self) -> list[dict[str, Any]]:
        if self.blocks is None:
            self.blocks = I.assistant_blocks(self.item, self.line)
        return self.blocks

    def pi_usage(self) -> dict[str, Any] | None:
        """The usage of the response this item ends (:func:`pi_usage` of its token count)."""
        if self.last_usage is not None:
            self.usage = pi_usage(self.last_usage)
            self.last_usage = None
        return self.usage


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


_Node = tuple[str, bool, bool]
"""An entry on the current chain, with what a rollback needs to know about it: its id, whether
it starts a user turn, and whether it is context injected before one."""


@dataclass(slots=True)
class TokenInfo:
    total: dict[str, Any] | None
    last: dict[str, Any] | None
    window: int | None
    line: int


class Thread:
    """The state of a thread after the records fed so far.

    Fed once per line of every rollout the daemon opens or indexes, so the common records
    are taken in one place each, with what they need computed once (an item's type, role and
    content are read once; the usage of a ``token_count`` is made when the context asks for
    it, since the next one usually overtakes it first). What comes out is the same as the
    plain replay described above: ``tests/formats/test_codex_fast.py`` holds it to that.
    """

    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider
        self.model = ""
        self.path: list[_Node] = []
        self.history: list[HistoryItem] = []
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
        self._token: tuple[Any, Any, int | None, int] | None = None
        """The last ``token_count``'s ``(total, last, window, line)`` (:attr:`token_info`)."""
        self._last_model: HistoryItem | None = None
        """The history's last model item, which a ``token_count`` gives its usage to."""
        self._last_model_known = True
        """False after the history was replaced (found again when a ``token_count`` needs it)."""

    @property
    def leaf_id(self) -> str | None:
        return self.path[-1][0] if self.path else None

    @property
    def token_info(self) -> TokenInfo | None:
        """The usage the last ``token_count`` reported, and the window known then."""
        if self._token is None:
            return None
        total, last, window, line = self._token
        return TokenInfo(
            total if type(total) is dict else None, last if type(last) is dict else None, window, line
        )

    # ------------------------------------------------------------------ feeding

    def feed(self, records: list[Record]) -> list[Entry]:
        """Apply records in file order; returns the new tree entries."""
        with paused_gc():
            return self._feed(records)

    def _feed(self, records: list[Record]) -> list[Entry]:
        out: list[Entry] = []
        item = self._item
        event = self._event
        for record in records:
            kind = record.type
            if kind == RESPONSE_ITEM:
                item(record, out)
            elif kind == EVENT_MSG:
                t = record.payload.get("type")
                if type(t) is str and t in _REPLAYED_EVENTS:  # not the UI's echoes of items
                    event(record, out)
            elif kind == TURN_CONTEXT:
                model = record.payload.get("model")
                if type(model) is str and model and model != self.model:
                    self._model_change(record, model, out)
            elif kind == COMPACTED:
                self._compacted(record, out)
            elif kind == SESSION_META and not self._meta_seen:
                self._meta_seen = True
                provider = record.payload.get("model_provider")
                if type(provider) is str and provider:
                    self.provider = provider
                if not self.id_prefix:  # a fork's own instructions, not its parent's
                    self._instructions(record, out)
        if records:
            self.last_line = records[-1].line
            for record in reversed(records):
                if record.timestamp:
                    self.last_timestamp = record.timestamp
                    break
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
        self._append(out, entry, (eid, False, False))

    def _append(self, out: list[Entry], entry: Entry, node: _Node) -> None:
        entry["parentId"] = self.leaf_id
        out.append(entry)
        self.path.append(node)

    def _item(self, record: Record, out: list[Entry]) -> None:
        """A response item: its tree entry, and its place in the history when Codex sends it
        (every known item but a ``system`` message and the items Codex only records)."""
        item = record.payload
        t = item.get("type")
        if type(t) is not str or t not in I.KNOWN_ITEM_TYPES:
            self.diagnostics.unknown_items[t if type(t) is str else "(none)"] += 1
            return
        line = record.line
        eid = f"{self.id_prefix}L{line}"
        ts = record.timestamp
        ms = _ms(ts)
        path = self.path
        parent = path[-1][0] if path else None
        turn = contextual = False
        message: Message | None = None
        entry: Entry
        if t == "message":
            r = item.get("role")
            if r == "user":
                h = HistoryItem(eid, item, line, ms, self.model)
                self.history.append(h)
                content = item.get("content")
                contextual = any(I.is_contextual_text(text) for text in I.texts(content))
                turn = not contextual
                message = {"role": "user", "content": I.user_blocks(content), "timestamp": ms}
            elif r == "assistant":
                h = HistoryItem(eid, item, line, ms, self.model)
                self.history.append(h)
                self._last_model = h
                message = self._assistant(list(h.assistant_blocks()), ms)
            elif r == "developer":
                self.history.append(HistoryItem(eid, item, line, ms, self.model))
                contextual = I.is_contextual_developer(item)
                entry = _custom_message_entry(eid, ts, "codex.developer", I.user_blocks(item.get("content")))
                entry["parentId"] = parent
            else:
                if r != "system":
                    self.history.append(HistoryItem(eid, item, line, ms, self.model))
                label = r if type(r) is str else None
                entry = _custom_entry(eid, ts, f"codex.message/{label}", {"text": _clip(I.user_text(item))})
                entry["parentId"] = parent
        elif t in I.MODEL_ITEM_TYPES:
            h = HistoryItem(eid, item, line, ms, self.model)
            self.history.append(h)
            self._last_model = h
            blocks = list(h.assistant_blocks())
            names = self._names
            for block in blocks:
                if block["type"] == "toolCall":
                    names[block["id"]] = block["name"]
            message = self._assistant(blocks, ms)
        elif t in I.OUTPUT_ITEM_TYPES:
            self.history.append(HistoryItem(eid, item, line, ms, self.model))
            blocks, failed = I.output_result(item)
            cid = I.call_id(item, line)
            message = _tool_result(cid, self._names.get(cid, ""), blocks, failed, ms)
        elif t in I.COMPACTION_ITEM_TYPES:
            self.history.append(HistoryItem(eid, item, line, ms, self.model))
            content = [{"type": "text", "text": I.compaction_text(item)}]
            entry = _custom_message_entry(eid, ts, "codex.compaction", content)
            entry["parentId"] = parent
        else:  # recorded, never sent: ghost snapshots and the like
            data = {k: v for k, v in item.items() if k != "type" and type(v) in (str, int, float, bool)}
            entry = _custom_entry(eid, ts, f"codex.{t}", data)
            entry["parentId"] = parent
        if message is not None:
            entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": message}
        out.append(entry)
        path.append((eid, turn, contextual))

    def _assistant(self, blocks: list[dict[str, Any]], ms: int) -> Message:
        has_calls = False
        for block in blocks:
            if block["type"] == "toolCall":
                has_calls = True
                break
        return {
            "role": "assistant",
            "content": blocks,
            "api": API,
            "provider": self.provider,
            "model": self.model,
            "usage": {
                "input": 0,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": "toolUse" if has_calls else "stop",
            "timestamp": ms,
        }

    def _replaced_history(self, history: list[HistoryItem]) -> None:
        self.history = history
        self._last_model = None
        self._last_model_known = False

    def _compacted(self, record: Record, out: list[Entry]) -> None:
        payload = record.payload
        eid = self.id_prefix + entry_id(record.line)
        summary = payload.get("message")
        summary = summary if type(summary) is str else ""
        replacement = payload.get("replacement_history")
        self.diagnostics.compactions += 1
        ms = _ms(record.timestamp)
        if type(replacement) is list:
            items = [item for item in replacement if type(item) is dict]
            self._replaced_history([HistoryItem(eid, item, record.line, ms, self.model) for item in items])
        else:
            self.diagnostics.summary_only_compactions += 1
            self._replaced_history(self._rebuilt(eid, record.line, ms, summary))
        data: dict[str, Any] = {"summary": summary}
        if type(replacement) is list:
            data["replacementItems"] = len(replacement)
        self._append(out, _custom_entry(eid, record.timestamp, "codex.compacted", data), (eid, False, False))

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

    def _model_change(self, record: Record, model: str, out: list[Entry]) -> None:
        """A ``turn_context`` naming another model: a ``model_change`` entry."""
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
        self._append(out, entry, (eid, False, False))

    def _event(self, record: Record, out: list[Entry]) -> None:
        payload = record.payload
        t = payload.get("type")
        if t == "token_count":
            info = payload.get("info")
            if type(info) is not dict:
                return
            last = info.get("last_token_usage")
            window = info.get("model_context_window")
            if type(window) is int and window > 0:
                self.window = window
            self._token = (info.get("total_token_usage"), last, self.window, record.line)
            if type(last) is dict:
                if not self._last_model_known:
                    models = (h for h in reversed(self.history) if I.is_model_item(h.item))
                    self._last_model = next(models, None)
                    self._last_model_known = True
                h = self._last_model
                if h is not None:
                    h.last_usage = last
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
            self._replaced_history(_drop_turns(self.history, count))
            self.path = _drop_path_turns(self.path, count)
        eid = self.id_prefix + entry_id(record.line)
        data = {"numTurns": count, "droppedEntries": before - len(self.path)}
        entry = _custom_entry(eid, record.timestamp, "codex.thread_rolled_back", data)
        self._append(out, entry, (eid, False, False))

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
    turns = [i for i, n in enumerate(path) if n[1]]
    if not turns:
        return path
    first = turns[0]
    cut = first if count >= len(turns) else turns[len(turns) - count]
    while cut > first and path[cut - 1][2]:
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

    model_types = I.MODEL_ITEM_TYPES
    for h in history:
        item = h.item
        t = item.get("type")
        if type(t) is not str:
            continue
        if t == "message":
            r = item.get("role")
            if r == "system":
                continue  # Codex never sends these
            model = r == "assistant"
        elif t in model_types:
            model = True
        elif t in I.API_ITEM_TYPES:
            model = False
        else:
            continue
        if model:
            if current is None:
                current = (h.entry_id, _assistant_message(provider, h.model, h.ms))
            blocks = h.assistant_blocks()
            current[1]["content"].extend(blocks)
            usage = h.pi_usage()
            if usage is not None:
                current[1]["usage"] = usage
            for block in blocks:
                if block["type"] == "toolCall":
                    names[block["id"]] = block["name"]
            if t in {"web_search_call", "image_generation_call"}:  # server-side: no output follows
                done = I.server_side_result(item)
                if done is not None and blocks:
                    result = _tool_result(blocks[0]["id"], blocks[0]["name"], [_text(done)], False, h.ms)
                    server.append((h.entry_id, result))
            continue
        flush()
        if t == "message":
            if r == "developer":
                raw.append((h.entry_id, _custom("codex.developer", I.user_blocks(item.get("content")), h.ms)))
            else:
                message = {"role": "user", "content": I.user_blocks(item.get("content")), "timestamp": h.ms}
                raw.append((h.entry_id, message))
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
