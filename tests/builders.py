"""Build sessions in memory for tests, the way Pi's append API grows them.

Each append makes a child of the current leaf and advances the leaf; ``branch`` moves the
leaf back. Ids are short and readable (``e1``, ``e2`` … or given explicitly).
"""

from __future__ import annotations

import itertools
from typing import Any

from sessiond.formats.pi import encode_line
from sessiond.model import entries as E
from sessiond.model.js import UNDEFINED
from sessiond.model.tree import SessionTree


def usage(total: int = 0, inp: int = 0, out: int = 0) -> dict[str, Any]:
    return {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(
    text: str = "",
    *,
    calls: list[tuple[str, dict[str, Any]]] | None = None,
    total: int = 0,
    stop: str = "stop",
    provider: str = "anthropic",
    model: str = "claude",
    error: str | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for i, (name, args) in enumerate(calls or []):
        content.append({"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": args})
    m: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": usage(total),
        "stopReason": stop,
        "timestamp": 2,
    }
    if error is not None:
        m["errorMessage"] = error
    return m


def tool_result(text: str, call_id: str = "call_0", name: str = "read") -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 3,
    }


class Ledger:
    """An in-memory session: header, entries in append order, a leaf."""

    def __init__(self, session_id: str = "s1", cwd: str = "/w") -> None:
        self.header = E.new_header(session_id, "2026-01-01T00:00:00.000Z", cwd)
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self._ids = (f"e{i}" for i in itertools.count(1))
        self._clock = itertools.count(1)

    def _ts(self) -> str:
        n = next(self._clock)
        return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    def _add(self, entry: dict[str, Any]) -> str:
        self.entries.append(entry)
        eid: str = entry["id"]
        self.leaf = eid
        return eid

    def _next(self, eid: str | None) -> str:
        return eid if eid is not None else next(self._ids)

    def message(self, message: dict[str, Any], eid: str | None = None) -> str:
        return self._add(E.new_message(self._next(eid), self.leaf, self._ts(), message))

    def user(self, text: str, eid: str | None = None) -> str:
        return self.message(user(text), eid)

    def assistant(self, text: str = "", eid: str | None = None, **kw: Any) -> str:
        return self.message(assistant(text, **kw), eid)

    def tool_result(self, text: str, eid: str | None = None, **kw: Any) -> str:
        return self.message(tool_result(text, **kw), eid)

    def thinking(self, level: str, eid: str | None = None) -> str:
        return self._add(E.new_thinking_level_change(self._next(eid), self.leaf, self._ts(), level))

    def model_change(self, provider: str, model_id: str, eid: str | None = None) -> str:
        return self._add(E.new_model_change(self._next(eid), self.leaf, self._ts(), provider, model_id))

    def compaction(
        self,
        summary: str,
        first_kept: str | None,
        tokens_before: int = 1000,
        eid: str | None = None,
        **kw: Any,
    ) -> str:
        return self._add(
            E.new_compaction(self._next(eid), self.leaf, self._ts(), summary, first_kept, tokens_before, **kw)
        )

    def branch_summary(self, from_leaf: str | None, summary: str, eid: str | None = None) -> str:
        old = self.leaf if self.leaf is not None else "root"
        self.leaf = from_leaf
        return self._add(E.new_branch_summary(self._next(eid), from_leaf, self._ts(), old, summary))

    def custom(self, custom_type: str, data: Any = UNDEFINED, eid: str | None = None) -> str:
        return self._add(E.new_custom(self._next(eid), self.leaf, self._ts(), custom_type, data))

    def custom_message(
        self, custom_type: str, content: Any, display: bool = True, eid: str | None = None
    ) -> str:
        return self._add(
            E.new_custom_message(self._next(eid), self.leaf, self._ts(), custom_type, content, display)
        )

    def label(self, target: str, label: Any = UNDEFINED, eid: str | None = None) -> str:
        return self._add(E.new_label(self._next(eid), self.leaf, self._ts(), target, label))

    def session_info(self, name: str, eid: str | None = None) -> str:
        return self._add(E.new_session_info(self._next(eid), self.leaf, self._ts(), name))

    def context_edit(self, target: str, replacement: dict[str, Any] | None, eid: str | None = None) -> str:
        return self._add(E.new_context_edit(self._next(eid), self.leaf, self._ts(), target, replacement))

    def branch(self, entry_id: str | None) -> None:
        self.leaf = entry_id

    def tree(self) -> SessionTree:
        tree = SessionTree(list(self.entries))
        tree.leaf_id = self.leaf
        return tree

    def jsonl(self) -> bytes:
        return b"".join(encode_line(e) for e in [self.header, *self.entries])
