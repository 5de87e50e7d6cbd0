"""The messages the model sees, kept current while the resumed chain changes at its end.

:func:`~..messages.build_messages` turns a chain into the request in three passes: streamed
pieces are merged into API messages by ``message.id``, duplicate tool calls are removed, and
every tool call is paired with its result. Here the same passes are kept as state that can be
cut back and extended:

* the merge pass is a log of what each chain entry did (a new API message, a piece merged into
  an earlier one, a user entry, an entry left out), so cutting the chain at a position undoes
  exactly what the entries after it did;
* dedup and pairing run per *group* (an API message and the user entries up to the next one:
  the unit the pairing works on), so a change is redone from the group it reaches, and the
  groups before it keep their messages.

Following a conversation, an appended line redoes the last group (one API message and its
results). Each entry is converted once (its Pi messages, or its content blocks) and the
conversion is kept while the entry is in the context, so redoing a group reads no file.

Usage is kept with the messages: the estimate of every message as a running sum per
estimator, and the positions of messages carrying a valid usage, so ``context/usage`` costs
nothing more after an append.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ....model.tokens import ContextEstimate, TokenEstimator, assistant_usage, calculate_context_tokens
from ..graph import Graph
from ..messages import (
    EMPTY_USAGE,
    Message,
    Usage4,
    _blocks_of,
    _pair_tool_results,
    assistant_message,
    max_usage,
    usage_tuple,
    user_messages,
)
from ..records import ASSISTANT, ATTACHMENT, SYSTEM, USER, attachment_type

Fetch = Callable[[list[str]], Mapping[str, dict[str, Any]]]
"""Reads full records by uuid (the store reads their lines back from the file)."""

_ABSENT: Final = object()
_ZERO: Final = (0, 0, 0, 0, 0, 0, None)
"""Totals after no group: API messages, duplicate calls, emptied assistants, synthetic results,
dropped results, the sum of usage totals, the last valid usage total."""


@dataclass(slots=True)
class _Item:
    """An item of the merge pass: an API assistant message (``a``) or a user entry (``u``)."""

    kind: str
    uuid: str
    entry: dict[str, Any] | None = None
    blocks: list[Any] = field(default_factory=list)
    usage: Usage4 = EMPTY_USAGE
    stop: Any = None
    messages: list[Message] = field(default_factory=list)


@dataclass(slots=True)
class _Group:
    """An API message and the user entries after it (or the user entries before the first one)."""

    first: int
    """Its first item."""
    head: tuple[str, Message] | None = None
    calls: list[str] = field(default_factory=list)
    """Tool call ids it added to the seen set (removed again when it is redone)."""
    raw: list[tuple[str, Message]] = field(default_factory=list)
    duplicates: int = 0
    emptied: int = 0
    out: int = 0
    """Position of its first message."""
    totals: tuple[Any, ...] = _ZERO


def _has_messages(entry: dict[str, Any]) -> bool:
    """Whether an entry (record or skeleton) may contribute messages: user and assistant
    entries, and attachments rendered for the model (only those are read back)."""
    kind = entry.get("type")
    return kind in (USER, ASSISTANT) or (kind == ATTACHMENT and bool(entry.get("rendered")))


class Conversation:
    """The context of a transcript's resumed chain: its messages, diagnostics and usage."""

    def __init__(self, g: Graph, entries: dict[str, dict[str, Any]]) -> None:
        self.g = g
        self.entries = entries
        """uuid -> record or skeleton: an entry's type, subtype, attachment type."""
        self.start = -1
        """Chain position where the context starts (after the last compact boundary)."""
        self._boundary: str | None = None
        self.fed: list[str] = []
        """The chain from :attr:`start` as far as it was taken in."""
        self._items: list[_Item] = []
        self._log: list[tuple[Any, ...]] = []
        self._open: dict[str, int] = {}
        """``message.id`` -> its API message item, since the last user entry that is not a tool result."""
        self._merged = 0
        self._excluded: dict[str, int] = {}
        self._groups: list[_Group] = []
        self._item_group: list[int] = []
        self._seen_calls: set[str] = set()
        self.messages: list[tuple[str, Message]] = []
        self._anchors: list[int] = []
        """Positions of messages carrying a valid usage (the usage anchors)."""
        self._sums: dict[str, tuple[TokenEstimator, list[float]]] = {}
        self._converted: dict[str, tuple[Any, ...]] = {}

    # ------------------------------------------------------------------ following the chain

    def sync(self, chain: list[str], start: int, dirty: int, fetch: Fetch, fresh: Mapping[str, Any]) -> None:
        """Take in ``chain`` (context from ``start``), which changed from position ``dirty`` on.

        ``fresh`` holds records the caller has at hand (lines just read); other entries not
        converted yet are read with ``fetch``.
        """
        boundary = chain[start - 1] if start > 0 else None
        if start != self.start or boundary != self._boundary or dirty < start:
            self._reset()
            self.start, self._boundary = start, boundary
            keep = 0
        else:
            keep = dirty - start
        first = len(self._items)
        if keep < len(self.fed):
            first = self._cut(keep)
        todo = chain[start + len(self.fed) :]
        wanted = [
            u for u in todo if u not in self._converted and u not in fresh and _has_messages(self.entries[u])
        ]
        records: Mapping[str, Any] = fresh
        if wanted:
            records = {**fresh, **fetch(wanted)}
        for u in todo:
            first = min(first, self._feed(u, records))
        self._regroup(first)
        if len(self._converted) > 2 * len(self.fed) + 256:
            fed = set(self.fed)
            self._converted = {u: c for u, c in self._converted.items() if u in fed}

    def forget(self, uuids: set[str]) -> None:
        """Drop conversions that changed (an entry's usage zeroed or restored by a relink)."""
        for u in uuids:
            self._converted.pop(u, None)

    def _reset(self) -> None:
        self.fed = []
        self._items = []
        self._log = []
        self._open = {}
        self._merged = 0
        self._excluded = {}
        self._groups = []
        self._item_group = []
        self._seen_calls = set()
        self.messages = []
        self._anchors = []
        for _, sums in self._sums.values():
            del sums[1:]

    # ------------------------------------------------------------------ the merge pass

    def _convert(self, u: str, records: Mapping[str, Any]) -> tuple[Any, ...]:
        done = self._converted.get(u)
        if done is not None:
            return done
        e = records[u]
        message = e.get("message")
        if e.get("type") == ASSISTANT:
            content = message.get("content") if type(message) is dict else None
            usage = EMPTY_USAGE if u in self.g.zero_usage else usage_tuple(message)
            stop = message.get("stop_reason") if type(message) is dict else None
            head: dict[str, Any] = {"timestamp": e.get("timestamp")}
            if type(message) is dict and "model" in message:
                head["message"] = {"model": message["model"]}
            for name in ("isApiErrorMessage", "error"):
                if name in e:
                    head[name] = e[name]
            done = (head, _blocks_of(content), usage, stop)
        else:
            done = (user_messages(e, self.g.tool_names),)
        self._converted[u] = done
        return done

    def _feed(self, u: str, records: Mapping[str, Any]) -> int:
        """Take in the next chain entry; the first item it changed."""
        e = self.entries[u]
        kind = e.get("type")
        items = self._items
        self.fed.append(u)
        if kind == ASSISTANT:
            head, blocks, usage, stop = self._convert(u, records)
            mid = self.g.msg_ids.get(u)
            if mid is not None and mid in self._open:
                j = self._open[mid]
                item = items[j]
                self._log.append(("m", j, len(item.blocks), item.usage, item.stop))
                item.blocks.extend(blocks)
                item.usage = max_usage(item.usage, usage)
                if stop is not None:
                    item.stop = stop
                self._merged += 1
                return j
            items.append(_Item("a", u, head, list(blocks), usage, stop))
            previous: Any = _ABSENT
            if mid is not None:
                previous = self._open.get(mid, _ABSENT)
                self._open[mid] = len(items) - 1
            self._log.append(("a", mid, previous))
            return len(items) - 1
        if kind == USER:
            (messages,) = self._convert(u, records)
            items.append(_Item("u", u, messages=messages))
            reset: dict[str, int] | None = None
            if u not in self.g.results:
                reset, self._open = self._open, {}  # the walk back stops at a prompt
            self._log.append(("u", reset))
            return len(items) - 1
        if kind == ATTACHMENT and e.get("rendered"):
            (messages,) = self._convert(u, records)
            if messages:  # rendered text the model got; pieces still merge across it
                items.append(_Item("u", u, messages=messages))
                self._log.append(("u", None))
                return len(items) - 1
        sub = e.get("subtype") if kind == SYSTEM else attachment_type(e)
        name = f"{kind}/{sub or 'none'}"
        self._excluded[name] = self._excluded.get(name, 0) + 1
        self._log.append(("x", name))
        return len(items)

    def _cut(self, keep: int) -> int:
        """Undo what the entries after the first ``keep`` did; the first item that changed."""
        items = self._items
        first = len(items)
        log = self._log
        while len(log) > keep:
            step = log.pop()
            kind = step[0]
            if kind == "m":
                _, j, blocks, usage, stop = step
                item = items[j]
                del item.blocks[blocks:]
                item.usage, item.stop = usage, stop
                self._merged -= 1
                first = min(first, j)
            elif kind == "a":
                items.pop()
                mid, previous = step[1], step[2]
                if mid is not None:
                    if previous is _ABSENT:
                        del self._open[mid]
                    else:
                        self._open[mid] = previous
                first = min(first, len(items))
            elif kind == "u":
                items.pop()
                if step[1] is not None:
                    self._open = step[1]
                first = min(first, len(items))
            else:
                n = self._excluded[step[1]] - 1
                if n:
                    self._excluded[step[1]] = n
                else:
                    del self._excluded[step[1]]
        del self.fed[keep:]
        return first

    # ------------------------------------------------------------------ dedup and pairing, per group

    def _regroup(self, first: int) -> None:
        """Redo dedup and pairing from the group holding item ``first``."""
        groups = self._groups
        if groups:
            gi = self._item_group[first] if first < len(self._item_group) else len(groups) - 1
            start = groups[gi].first
            for group in groups[gi:]:
                self._seen_calls.difference_update(group.calls)
            self._cut_messages(groups[gi].out)
            del groups[gi:]
            del self._item_group[start:]
        else:
            start = 0
            self._cut_messages(0)
            self._item_group.clear()
        current: _Group | None = None
        seen = self._seen_calls
        for idx in range(start, len(self._items)):
            item = self._items[idx]
            if item.kind == "a":
                msg = assistant_message(item.entry or {}, item.blocks, item.usage, item.stop)
                kept: list[dict[str, Any]] = []
                calls: list[str] = []
                duplicates = 0
                for b in msg["content"]:
                    if b["type"] == "toolCall":
                        if b["id"] in seen:
                            duplicates += 1
                            continue
                        seen.add(b["id"])
                        calls.append(b["id"])
                    kept.append(b)
                if len(kept) != len(msg["content"]):
                    if not kept:  # every call a duplicate: the message is dropped
                        if current is None:
                            current = _Group(idx)
                        current.duplicates += duplicates
                        current.emptied += 1
                        self._item_group.append(len(groups))
                        continue
                    msg["content"] = kept
                if current is not None:
                    self._close(current)
                current = _Group(idx, (item.uuid, msg), calls, duplicates=duplicates)
            else:
                if current is None:
                    current = _Group(idx)
                current.raw.extend((item.uuid, m) for m in item.messages)
            self._item_group.append(len(groups))
        if current is not None:
            self._close(current)

    def _close(self, group: _Group) -> None:
        raw = [group.head, *group.raw] if group.head is not None else group.raw
        paired, counts = _pair_tool_results(raw)
        group.out = len(self.messages)
        self._add_messages(paired)
        before = self._groups[-1].totals if self._groups else _ZERO
        api, usage_sum, last = before[0], before[5], before[6]
        if group.head is not None:
            api += 1
            msg = group.head[1]
            total = msg["usage"]["totalTokens"]
            usage_sum += total
            if total > 0 and msg["stopReason"] != "error":
                last = total
        group.totals = (
            api,
            before[1] + group.duplicates,
            before[2] + group.emptied,
            before[3] + counts["syntheticToolResults"],
            before[4] + counts["droppedToolResults"],
            usage_sum,
            last,
        )
        group.raw = []
        self._groups.append(group)

    # ------------------------------------------------------------------ messages and usage

    def _add_messages(self, added: list[tuple[str, Message]]) -> None:
        messages = self.messages
        for item in added:
            if assistant_usage(item[1]) is not None:
                self._anchors.append(len(messages))
            messages.append(item)
        for estimator, sums in self._sums.values():
            total = sums[-1]
            for _, m in added:
                total += estimator.message_tokens(m)
                sums.append(total)

    def _cut_messages(self, n: int) -> None:
        del self.messages[n:]
        anchors = self._anchors
        while anchors and anchors[-1] >= n:
            anchors.pop()
        for _, sums in self._sums.values():
            del sums[n + 1 :]

    def _sums_of(self, estimator: TokenEstimator) -> list[float]:
        known = self._sums.get(estimator.name)
        if known is not None:
            return known[1]
        sums: list[float] = [0]
        total: float = 0
        for _, m in self.messages:
            total += estimator.message_tokens(m)
            sums.append(total)
        self._sums[estimator.name] = (estimator, sums)
        return sums

    def estimate(self, estimator: TokenEstimator, on_branch: Callable[[str], bool]) -> ContextEstimate:
        """:func:`~sessiond.model.tokens.estimate_projected_context_tokens` of these messages.

        The last valid usage anchors the estimate when the entry it came from is on the
        session's branch (``on_branch``); otherwise every message is estimated. Claude Code
        messages are never system messages, so no system prompt is replayed.
        """
        sums = self._sums_of(estimator)
        n = len(self.messages)
        if self._anchors:
            i = self._anchors[-1]
            source, message = self.messages[i]
            if on_branch(source):
                usage = calculate_context_tokens(assistant_usage(message))
                trailing = sums[n] - sums[i + 1]
                return ContextEstimate(usage + trailing, usage, trailing, i)
        total = sums[n]
        return ContextEstimate(total, 0, total, None)

    def diagnostics(self) -> dict[str, Any]:
        """What :func:`~..messages.build_messages` reports for the same chain."""
        totals = self._groups[-1].totals if self._groups else _ZERO
        return {
            "contextStart": self.fed[0] if self.fed else None,
            "apiAssistantMessages": totals[0],
            "mergedAssistantPieces": self._merged,
            "duplicateToolUses": totals[1],
            "assistantsEmptiedByDedup": totals[2],
            "syntheticToolResults": totals[3],
            "droppedToolResults": totals[4],
            "excludedFromMessages": dict(self._excluded),
            "usageTotalTokensSum": totals[5],
            "lastAssistantTotalTokens": totals[6],
        }
