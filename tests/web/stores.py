"""Sessions of every root for the viewer's tests and benchmark, made here (no fixture files).

* Claude Code transcripts as Claude Code writes them (``uuid``/``parentUuid`` records, tool
  use and results, API usage per assistant message), with :class:`ClaudeWriter` appending
  more lines later, as a running ``claude`` would;
* Pi sessions in Pi's directory (read-only to sessiond by default);
* large sessions for the benchmark.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.builders import Ledger, assistant, tool_result, user

CLAUDE_VERSION = "2.1.42"
APP = "/src/app.py"
APP_TEXT = "def main():\n    pass\n"


def encode_claude_project(cwd: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in cwd)


class ClaudeWriter:
    """A Claude Code transcript being written: each call appends complete lines to the file."""

    def __init__(self, projects: Path, cwd: str, session_id: str | None = None) -> None:
        self.session_id = session_id or str(uuid.uuid4())
        self.cwd = cwd
        directory = projects / encode_claude_project(cwd)
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{self.session_id}.jsonl"
        self.parent: str | None = None
        self._clock = itertools.count(1)
        self._ids = itertools.count(1)
        self.context_tokens = 12_000

    def _ts(self) -> str:
        n = next(self._clock)
        return f"2026-03-01T10:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"

    def _record(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        record_id = str(uuid.uuid4())
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": CLAUDE_VERSION,
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": record_id,
            "timestamp": self._ts(),
            **extra,
        }
        self.parent = record_id
        return record

    def pending(self, turns: int, grow: int = 4000) -> bytes:
        """The lines of ``turns`` more turns, not written: for another program to append."""
        path, self.path = self.path, self.path.with_suffix(".pending")
        try:
            for i in range(turns):
                self.turn(f"live turn {i}: add a test", f"Added test {i}.", grow=grow)
            return self.path.read_bytes()
        finally:
            self.path.unlink(missing_ok=True)
            self.path = path

    def _write(self, records: list[dict[str, Any]]) -> list[str]:
        with open(self.path, "a", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        return [r["uuid"] for r in records]

    def _usage(self, grow: int) -> dict[str, int]:
        self.context_tokens += grow
        return {
            "input_tokens": 12,
            "cache_creation_input_tokens": grow,
            "cache_read_input_tokens": self.context_tokens - grow - 12,
            "output_tokens": 180,
        }

    def _assistant(self, content: list[dict[str, Any]], grow: int, stop: str) -> dict[str, Any]:
        n = next(self._ids)
        return self._record(
            "assistant",
            {
                "id": f"msg_{n:024d}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": self._usage(grow),
            },
            requestId=f"req_{n:024d}",
        )

    def turn(self, prompt: str, answer: str, *, tool: str | None = "Read", grow: int = 1500) -> list[str]:
        """A prompt, optionally one tool call and its result, and an answer."""
        records = [self._record("user", {"role": "user", "content": prompt})]
        if tool is not None:
            call_id = f"toolu_{next(self._ids):020d}"
            records.append(
                self._assistant(
                    [
                        {
                            "type": "tool_use",
                            "id": call_id,
                            "name": tool,
                            "input": {"file_path": "/src/app.py"},
                        }
                    ],
                    grow // 2,
                    "tool_use",
                )
            )
            records.append(
                self._record(
                    "user",
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": call_id,
                                "content": "def main():\n    pass\n",
                            }
                        ],
                    },
                    toolUseResult={"type": "text", "file": {"filePath": "/src/app.py"}},
                )
            )
        records.append(self._assistant([{"type": "text", "text": answer}], grow - grow // 2, "end_turn"))
        return self._write(records)


def _epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def pi_session(pi_sessions: Path, session_id: str, cwd: str, title: str) -> Path:
    """A finished Pi session in Pi's own directory, with a branch and a label."""
    s = Ledger(session_id, cwd)
    s.model_change("anthropic", "claude-sonnet-4-5")
    s.message(user(title))
    s.message(assistant("Looking at the code.", calls=[("read", {"path": "README.md"})], total=9000))
    s.message(tool_result("# readme"))
    s.message(assistant("Done: the README explains the build.", total=9800))
    s.message(user("And the tests?"))
    s.message(assistant("They pass.", total=10400))
    s.label("e3", "found it")
    for entry in s.entries:  # message times agree with the entries' (the list shows them)
        if entry["type"] == "message":
            entry["message"]["timestamp"] = _epoch_ms(entry["timestamp"])
    directory = pi_sessions / ("--" + cwd.strip("/").replace("/", "-") + "--")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"2026-02-01T09-00-00-000Z_{session_id}.jsonl"
    path.write_bytes(s.jsonl())
    return path


def now_ms(message: dict[str, Any]) -> dict[str, Any]:
    """The message, timestamped now (as an agent appending it would)."""
    return {**message, "timestamp": int(time.time() * 1000)}


def big_pi_session(path: Path, session_id: str, entries: int, *, branch_every: int = 500) -> None:
    """``entries`` entries: a long conversation with a side branch every ``branch_every`` entries."""
    s = Ledger(session_id, "/bench")
    s.model_change("anthropic", "claude-sonnet-4-5")
    total = 5000
    while len(s.entries) < entries:
        s.message(user(f"step {len(s.entries)}: " + "please look at this " * 6))
        total += 300
        s.message(assistant("done " + "x" * 120, total=total))
        if len(s.entries) % branch_every < 2 and len(s.entries) > 10:
            keep = s.leaf
            s.branch(s.entries[-4]["id"])
            s.message(user("an abandoned idea"))
            s.branch(keep)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(s.jsonl())


def big_claude_transcript(projects: Path, cwd: str, size_bytes: int) -> ClaudeWriter:
    """A Claude Code transcript of about ``size_bytes`` bytes (turns with tool calls)."""
    writer = ClaudeWriter(projects, cwd)
    i = 0
    while not writer.path.exists() or writer.path.stat().st_size < size_bytes:
        writer.turn(
            f"task {i}: " + "change the parser " * 20, "Changed. " + "The details follow. " * 40, grow=600
        )
        i += 1
    return writer
