"""ACP traffic as sessiond entries: pure translation, no I/O (the recorder queues the result).

One :class:`SessionTranscript` per ACP session turns what passed through into Pi entries:
a prompt becomes a user message; consecutive ``agent_message_chunk`` / ``agent_thought_chunk``
updates merge into one assistant message (text / thinking parts); a ``tool_call`` is a
``toolCall`` part of the assistant message, and its terminal ``tool_call_update`` (completed or
failed) a ``toolResult`` message (failed -> ``isError``); plan, mode, usage and title updates
become custom entries (a title also a ``session_info`` name). Every raw update is kept too,
in order, in ``acp.updates`` custom entries, so :mod:`.answers` can replay exactly what the
editor saw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

UPDATES: Final = "acp.updates"
"""Custom entry: ``{"notifications": [params of session/update, ...]}`` in the order relayed."""
PROMPT: Final = "acp.prompt"
"""Custom entry: the ``session/prompt`` params as the editor sent them."""
SESSION: Final = "acp.session"
"""Custom entry: the ACP session's id, cwd, agent and what ``session/new`` answered."""

STOP_REASONS: Final = {
    "end_turn": "stop",
    "max_tokens": "length",
    "max_turn_requests": "length",
    "refusal": "error",
    "cancelled": "aborted",
}
ZERO_USAGE: Final = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def now_ms() -> int:
    return int(time.time() * 1000)


def custom(custom_type: str, data: Any) -> dict[str, Any]:
    return {"type": "custom", "customType": custom_type, "data": data}


def user_content(blocks: Any) -> list[dict[str, Any]]:
    """ACP content blocks as Pi user content: text, images; a resource as its text or link."""
    out: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image":
            out.append(
                {"type": "image", "data": block.get("data", ""), "mimeType": block.get("mimeType", "")}
            )
        elif kind == "resource_link":
            out.append({"type": "text", "text": f"@{block.get('uri', '')}"})
        elif kind == "resource":
            resource = block.get("resource") or {}
            text = resource.get("text")
            out.append(
                {"type": "text", "text": text if isinstance(text, str) else f"@{resource.get('uri', '')}"}
            )
    return out


def _tool_output(update: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool call's content (texts; a diff or a terminal named) as Pi tool-result content."""
    out: list[dict[str, Any]] = []
    for item in update.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "content":
            out.extend(user_content([item.get("content")]))
        elif item.get("type") == "diff":
            out.append({"type": "text", "text": f"edited {item.get('path', '')}"})
        elif item.get("type") == "terminal":
            out.append({"type": "text", "text": f"terminal {item.get('terminalId', '')}"})
    return out


@dataclass
class SessionTranscript:
    """What one ACP session produced so far that is not yet an entry."""

    agent: str
    model: str | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)
    raw: list[Any] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)

    def prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Entries for a prompt: what was pending, the raw prompt, then the user message (last,
        so the recorder can checkpoint files at its id)."""
        entries = self.flush()
        entries.append(custom(PROMPT, params))
        message = {"role": "user", "content": user_content(params.get("prompt")), "timestamp": now_ms()}
        entries.append({"type": "message", "message": message})
        return entries

    def update(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Entries made complete by one ``session/update`` (usually none: chunks accumulate)."""
        update = params.get("update")
        if not isinstance(update, dict):
            self.raw.append(params)
            return []
        kind = update.get("sessionUpdate")
        entries: list[dict[str, Any]] = []
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            content = update.get("content") or {}
            if isinstance(content, dict) and content.get("type") == "text":
                self._chunk(
                    "text" if kind == "agent_message_chunk" else "thinking", str(content.get("text", ""))
                )
        elif kind == "tool_call":
            self._call(update)
        elif kind == "tool_call_update":
            call_id = str(update.get("toolCallId", ""))
            if call_id in self.calls:
                self.calls[call_id].update({k: v for k, v in update.items() if v is not None})
                self._refresh(call_id)
            else:
                self._call(update)
            status = update.get("status")
            if status in ("completed", "failed") and call_id not in self.finished:
                self.raw.append(params)
                entries = self.flush()
                self.finished.add(call_id)
                entries.append({"type": "message", "message": self._result(call_id, status == "failed")})
                return entries
        elif kind == "plan":
            entries = [custom("acp.plan", {"entries": update.get("entries")})]
        elif kind == "current_mode_update":
            entries = [custom("acp.mode", {"currentModeId": update.get("currentModeId")})]
        elif kind == "usage_update":
            entries = [custom("acp.usage", {k: v for k, v in update.items() if k != "sessionUpdate"})]
        elif kind == "session_info_update":
            title = update.get("title")
            if isinstance(title, str):
                entries = [{"type": "session_info", "name": title}]
        self.raw.append(params)
        if entries:
            return [*self.flush(), *entries]
        return []

    def end_turn(self, stop_reason: str | None) -> list[dict[str, Any]]:
        """Entries at the end of a prompt turn (its answer, or an error answer: stop None)."""
        return self.flush(STOP_REASONS.get(stop_reason or "", "error"))

    def flush(self, stop: str | None = None) -> list[dict[str, Any]]:
        """The pending raw updates and assistant message as entries (raw first)."""
        entries: list[dict[str, Any]] = []
        if self.raw:
            entries.append(custom(UPDATES, {"notifications": self.raw}))
            self.raw = []
        if self.parts:
            calls = any(p["type"] == "toolCall" for p in self.parts)
            message = {
                "role": "assistant",
                "content": self.parts,
                "api": "acp",
                "provider": self.agent,
                "model": self.model or self.agent,
                "usage": ZERO_USAGE,
                "stopReason": stop or ("toolUse" if calls else "stop"),
                "timestamp": now_ms(),
            }
            entries.append({"type": "message", "message": message})
            self.parts = []
        return entries

    def _chunk(self, kind: str, text: str) -> None:
        key = "text" if kind == "text" else "thinking"
        if self.parts and self.parts[-1]["type"] == kind:
            self.parts[-1][key] += text
        else:
            self.parts.append({"type": kind, key: text})

    def _call(self, update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId", ""))
        self.calls[call_id] = dict(update)
        raw_input = update.get("rawInput")
        self.parts.append(
            {
                "type": "toolCall",
                "id": call_id,
                "name": str(update.get("title") or update.get("kind") or "tool"),
                "arguments": raw_input if isinstance(raw_input, dict) else {"input": raw_input},
            }
        )

    def _refresh(self, call_id: str) -> None:
        """A later update named the call or gave its input: the pending part says so too."""
        call = self.calls[call_id]
        for part in self.parts:
            if part["type"] == "toolCall" and part["id"] == call_id:
                part["name"] = str(call.get("title") or call.get("kind") or "tool")
                raw_input = call.get("rawInput")
                if raw_input is not None:
                    part["arguments"] = raw_input if isinstance(raw_input, dict) else {"input": raw_input}

    def _result(self, call_id: str, failed: bool) -> dict[str, Any]:
        call = self.calls.get(call_id, {})
        content = _tool_output(call)
        if not content and call.get("rawOutput") is not None:
            import json  # noqa: PLC0415

            content = [{"type": "text", "text": json.dumps(call["rawOutput"], ensure_ascii=False)}]
        return {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": str(call.get("title") or call.get("kind") or "tool"),
            "content": content,
            "isError": failed,
            "timestamp": now_ms(),
        }
