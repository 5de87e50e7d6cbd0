"""Seeded synthetic Claude Code transcripts for the follow-equals-cold property tests.

Each transcript is a list of JSONL lines in the shapes real 2.1.x files have (the fixtures in
``tests/fixtures/claude-code``), mixing what makes following hard: assistant messages streamed
as several pieces sharing a ``message.id``; parallel tool calls whose results hang off the
piece holding the call, written in any order (and sometimes in the same millisecond), the
next message hanging off the last result written; ``progress`` entries between them, in
chains, with entries parented on them; trailing system entries; compact boundaries, plain
or with a ``preservedSegment`` (valid or broken) and their summaries; rewinds (a prompt
branching from an earlier entry); inline sidechains; retried messages repeating a tool id;
API errors; metadata records (titles, summaries, last prompts, snapshots, unknown types);
blank, torn-looking and non-object lines; invalid and equal timestamps; a child written
before its parent. ``rare=True`` adds what a follower cannot follow and must reload for (a
repeated uuid, a snip boundary removing entries already written).
"""

from __future__ import annotations

import random
import uuid as uuidlib
from datetime import UTC, datetime
from typing import Any

import orjson

SESSION = "5e55b3a1-0000-4000-8000-00000000c0de"


class Synth:
    def __init__(self, seed: int, *, rare: bool = False, session: str = SESSION) -> None:
        self.rng = random.Random(seed)
        self.rare = rare
        self.session = session
        self.ms = 1_771_000_000_000
        self.lines: list[bytes] = []
        self.leaf: str | None = None
        self.chain: list[str] = []
        """Chain uuids in the order written (for rewinds, segments, summaries)."""
        self.users: list[str] = []
        self.tokens = 12_000
        self.pending: bytes | None = None
        """A line held back to be written after the next one (a child before its parent)."""

    # ------------------------------------------------------------------ primitives

    def uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def ts(self, same: bool = False) -> str:
        if not same:
            self.ms += self.rng.randint(1, 3000)
        if self.rng.random() < 0.01:
            return "not a date"
        d = datetime.fromtimestamp(self.ms / 1000, UTC)
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.ms % 1000:03d}Z"

    def text(self, lo: int = 5, hi: int = 60) -> str:
        words = ("alpha", "beta", "gamma", "delta", "file", "test", "fix", "run", "ok", "src/app.ts")
        return " ".join(self.rng.choice(words) for _ in range(self.rng.randint(lo, hi)))

    def emit(self, rec: dict[str, Any]) -> None:
        line = orjson.dumps(rec) + b"\n"
        if self.pending is not None:
            self.lines.append(line)
            self.lines.append(self.pending)
            self.pending = None
            return
        if rec.get("uuid") and rec.get("parentUuid") and self.rng.random() < 0.02:
            self.pending = line  # written after the next line: its child may come first
            return
        self.lines.append(line)

    def flush(self) -> None:
        if self.pending is not None:
            self.lines.append(self.pending)
            self.pending = None

    def entry(self, kind: str, parent: str | None, *, same_ts: bool = False, **fields: Any) -> str:
        u = self.uuid()
        rec: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/proj",
            "sessionId": self.session,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": u,
            "timestamp": self.ts(same_ts),
        }
        self.emit(rec)
        self.chain.append(u)
        return u

    def usage(self) -> dict[str, Any]:
        self.tokens += self.rng.randint(50, 3000)
        return {
            "input_tokens": self.rng.randint(1, 9),
            "cache_creation_input_tokens": self.rng.randint(0, 2000),
            "cache_read_input_tokens": self.tokens,
            "output_tokens": self.rng.randint(1, 700),
        }

    def piece(self, mid: str, block: dict[str, Any], stop: str | None, parent: str | None, **kw: Any) -> str:
        message = {
            "model": "claude-opus-4-6",
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": stop,
            "usage": self.usage(),
        }
        return self.entry("assistant", parent, message=message, requestId="req_" + mid[-6:], **kw)

    def meta(self) -> None:
        r = self.rng.random()
        if r < 0.3:
            self.emit({"type": "file-history-snapshot", "messageId": self.uuid(), "snapshot": {}})
        elif r < 0.45:
            self.emit({"type": "custom-title", "customTitle": self.text(1, 4), "sessionId": self.session})
        elif r < 0.6:
            self.emit({"type": "ai-title", "aiTitle": self.text(2, 6), "sessionId": self.session})
        elif r < 0.72:
            leaf = self.rng.choice(self.chain) if self.chain and self.rng.random() < 0.7 else self.uuid()
            self.emit({"type": "summary", "summary": self.text(3, 8), "leafUuid": leaf})
        elif r < 0.85:
            self.emit(
                {
                    "type": "last-prompt",
                    "lastPrompt": self.text(2, 9),
                    "leafUuid": self.leaf,
                    "sessionId": self.session,
                }
            )
        elif r < 0.9:
            self.emit({"type": "queue-operation", "operation": "enqueue", "sessionId": self.session})
        elif r < 0.94:
            self.emit({"type": "brand-new-record-type", "x": 1})
        elif r < 0.96:
            self.lines.append(b"\n")
        elif r < 0.98:
            self.lines.append(b"[1, 2, 3]\n")
        else:
            self.lines.append(b'{"type": "user", "uuid": \n')  # unparsable

    # ------------------------------------------------------------------ conversation

    def progress(self, parent: str | None, tool: str, n: int) -> str | None:
        for _ in range(n):
            data = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash"}
            parent = self.entry("progress", parent, data=data, parentToolUseID=tool, toolUseID=tool)
        return parent

    def result(self, holder: str, tid: str, same_ts: bool = False) -> str:
        block = {"tool_use_id": tid, "type": "tool_result", "content": self.text(), "is_error": False}
        return self.entry(
            "user",
            holder,
            same_ts=same_ts,
            message={"role": "user", "content": [block]},
            toolUseResult={"stdout": self.text()},
            sourceToolAssistantUUID=holder,
        )

    def turn(self) -> None:
        r = self.rng
        if r.random() < 0.5:
            self.meta()
        parent = self.leaf
        if self.users and r.random() < 0.07:  # a rewind: branch from an earlier prompt's parent
            parent = self.rng.choice(self.chain[: max(1, len(self.chain) - 5)])
        content: Any = self.text() if r.random() < 0.7 else [{"type": "text", "text": self.text()}]
        prompt = self.entry("user", parent, message={"role": "user", "content": content})
        self.users.append(prompt)
        self.leaf = prompt
        for step in range(r.randint(1, 5)):
            mid = "msg_01" + "".join(r.choices("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", k=20))
            last = step == 0 and r.random() < 0.2
            if r.random() < 0.3:
                self.leaf = self.piece(
                    mid, {"type": "thinking", "thinking": self.text(), "signature": "sig"}, None, self.leaf
                )
            if r.random() < 0.05:
                self.leaf = self.entry(
                    "assistant",
                    self.leaf,
                    isApiErrorMessage=True,
                    message={
                        "model": "<synthetic>",
                        "id": mid + "E",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "API Error: 529"}],
                        "stop_reason": "stop_sequence",
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    },
                )
            if last:
                self.leaf = self.piece(mid, {"type": "text", "text": self.text()}, "end_turn", self.leaf)
                break
            calls: list[tuple[str, str]] = []
            for _ in range(r.choices((1, 2, 3), (60, 30, 10))[0]):
                tid = "toolu_" + "".join(r.choices("abcdefghijklmnop0123456789", k=16))
                if r.random() < 0.03 and calls:
                    tid = calls[0][1]  # a retried call repeating a tool id
                block = {
                    "type": "tool_use",
                    "id": tid,
                    "name": r.choice(("Read", "Bash", "Edit")),
                    "input": {"x": self.text(1, 3)},
                }
                holder = self.piece(mid, block, "tool_use" if r.random() < 0.5 else None, self.leaf)
                self.leaf = holder
                calls.append((holder, tid))
                if r.random() < 0.3:
                    self.leaf = self.progress(self.leaf, tid, r.randint(1, 3))
            order = list(calls)
            r.shuffle(order)
            tie = r.random() < 0.2
            for i, (holder, tid) in enumerate(order):
                if r.random() < 0.04:
                    continue  # a call without a result (interrupted)
                res = self.result(holder, tid, same_ts=tie and i > 0)
                self.leaf = res
                if r.random() < 0.15:
                    self.leaf = self.progress(self.leaf, tid, r.randint(1, 2)) or self.leaf
            if r.random() < 0.05:
                self.leaf = self.entry(
                    "attachment",
                    self.leaf,
                    attachment={"type": "hook_success", "hookName": "x", "content": "ok"},
                )
        else:
            mid = "msg_01" + "".join(r.choices("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", k=20))
            self.leaf = self.piece(mid, {"type": "text", "text": self.text()}, "end_turn", self.leaf)
        if r.random() < 0.3:
            self.entry("system", self.leaf, subtype="stop_hook_summary", level="suggestion", hookCount=1)
            if r.random() < 0.5:
                self.entry("system", self.chain[-1], subtype="turn_duration", durationMs=r.randint(100, 9000))
        if r.random() < 0.05:  # an inline sidechain (1.0.x sub-agent)
            side = self.entry(
                "user", None, message={"role": "user", "content": self.text()}, isSidechain=True
            )
            self.entry(
                "assistant",
                side,
                isSidechain=True,
                message={
                    "id": "msg_side" + side[:6],
                    "role": "assistant",
                    "content": [{"type": "text", "text": "ok"}],
                    "stop_reason": "end_turn",
                    "usage": self.usage(),
                },
            )

    def compact(self) -> None:
        r = self.rng
        seg: dict[str, Any] | None = None
        summary_id = self.uuid()
        if r.random() < 0.5 and len(self.chain) > 6:
            # The last few entries of the walk from the leaf, kept as the segment.
            walk = self.walk_back(self.leaf, r.randint(2, 5))
            if walk:
                seg = {"headUuid": walk[-1], "anchorUuid": summary_id, "tailUuid": walk[0]}
                if r.random() < 0.15:
                    seg["headUuid"] = self.uuid()  # broken: the tail does not lead to it
        meta: dict[str, Any] = {"trigger": "auto", "preTokens": self.tokens}
        if seg is not None:
            meta["preservedSegment"] = seg
        boundary = self.entry(
            "system",
            None,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid=self.leaf,
            compactMetadata=meta,
        )
        rec = {
            "parentUuid": boundary,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/proj",
            "sessionId": self.session,
            "version": "2.1.39",
            "type": "user",
            "message": {"role": "user", "content": "This session is being continued. " + self.text()},
            "isCompactSummary": True,
            "isVisibleInTranscriptOnly": True,
            "uuid": summary_id,
            "timestamp": self.ts(),
        }
        self.emit(rec)
        self.chain.append(summary_id)
        self.leaf = summary_id
        self.tokens = 9_000

    def walk_back(self, leaf: str | None, n: int) -> list[str]:
        """Up to ``n`` entries of the parent walk from ``leaf`` (from what was written)."""
        parents: dict[str, str | None] = {}
        for line in self.lines:
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if type(rec) is dict and type(rec.get("uuid")) is str and rec.get("type") != "progress":
                parents[rec["uuid"]] = rec.get("parentUuid")
        out: list[str] = []
        cur = leaf
        while cur is not None and cur in parents and len(out) < n:
            out.append(cur)
            cur = parents[cur]
        return out

    def rare_event(self) -> None:
        r = self.rng
        if r.random() < 0.5 and self.lines:
            # A line repeating an entry (Claude Code's last line wins).
            for line in reversed(self.lines):
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if type(rec) is dict and rec.get("type") == "user" and type(rec.get("uuid")) is str:
                    self.lines.append(line)
                    return
        elif len(self.chain) > 4:
            removed = [self.chain[-3]]
            self.entry("system", self.leaf, subtype="snip_boundary", snipMetadata={"removedUuids": removed})

    def build(self, turns: int) -> list[bytes]:
        self.emit({"type": "file-history-snapshot", "messageId": self.uuid(), "snapshot": {}})
        for i in range(turns):
            self.turn()
            if self.rng.random() < 0.08:
                self.compact()
            if self.rare and self.rng.random() < 0.06 and i > 2:
                self.rare_event()
        self.flush()
        return self.lines


def transcript(seed: int, turns: int, *, rare: bool = False) -> bytes:
    return b"".join(Synth(seed, rare=rare).build(turns))
