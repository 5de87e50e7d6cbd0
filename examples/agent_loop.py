"""A small coding agent that keeps its conversation in sessiond.

    .venv/bin/python examples/agent_loop.py --workspace /tmp/demo-ws [--socket PATH]

What an agent does with sessiond, end to end:

* append each user prompt, take a file-history checkpoint for it;
* ask sessiond for the context the model should see (``context/get``) and call the model;
* append the answer with the provider's usage; sessiond answers with ``usage_update``;
* before editing a file: ``fileHistory/track`` (and ``phase: after`` once written);
* when the context fills up sessiond compacts (``compaction_update``) — asking this agent for
  the summary (``compaction/summarize``: it declared the ``summarizer`` capability);
* when the model fails with a context overflow, sessiond hides the failed attempt, compacts,
  and says ``willRetry``: the agent sends the same request again, once.

The "model" is a deterministic fake (no network, no key) that reads and edits files in the
workspace and overflows once when its context passes a size, so the whole cycle runs offline.
It talks to the store's daemon (started when none runs, as every client does), or to the one
on ``--socket``. Only the client packages are used (``sessiond_client``, ``sessiond_protocol``):
an agent never imports the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from sessiond_client import SessiondClient, UpdateStream
from sessiond_protocol.notifications import CompactionUpdate, SessionUpdate, SummarizeParams, UsageUpdate

PROMPTS = [
    "Create hello.py that prints a greeting.",
    "Make the greeting configurable with a NAME variable.",
    "Add a README explaining how to run it.",
    "Rename the greeting to a welcome message everywhere.",
    "Add a test file for the welcome message.",
    "Summarise what we did so far.",
]


def now_ms() -> int:
    return int(time.time() * 1000)


class FakeModel:
    """Answers prompts with file edits; reports usage like a provider; overflows once."""

    def __init__(self, overflow_at: int) -> None:
        self.overflow_at = overflow_at
        self.overflowed = False

    @staticmethod
    def tokens(messages: list[dict[str, Any]]) -> int:
        return sum(len(json.dumps(m["message"])) for m in messages) // 4

    def complete(self, context: list[dict[str, Any]], prompt: str, step: int) -> dict[str, Any]:
        used = self.tokens(context)
        if used > self.overflow_at and not self.overflowed:
            self.overflowed = True
            return {
                "role": "assistant",
                "content": [],
                "api": "fake",
                "provider": "fake",
                "model": "fake-1",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                "stopReason": "error",
                "errorMessage": f"prompt is too long: {used} tokens > {self.overflow_at} maximum",
                "timestamp": now_ms(),
            }
        name = ["hello.py", "hello.py", "README.md", "hello.py", "test_hello.py", None][step % len(PROMPTS)]
        plan = " ".join(f"Step {i}: look at the code, change it, check the result." for i in range(1, 16))
        content: list[dict[str, Any]] = [{"type": "text", "text": f"Working on: {prompt} {plan}"}]
        if name:
            content.append(
                {"type": "toolCall", "id": f"call_{step}", "name": "write", "arguments": {"path": name}}
            )
        return {
            "role": "assistant",
            "content": content,
            "api": "fake",
            "provider": "fake",
            "model": "fake-1",
            "usage": {"input": used, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": used + 40},
            "stopReason": "toolUse" if name else "stop",
            "timestamp": now_ms(),
        }

    def summarize(self, conversation: str) -> str:
        lines = [line for line in conversation.splitlines() if line.startswith("[User]:")]
        goals = "\n".join(f"- {line[8:]}" for line in lines[-5:]) or "- (none)"
        return f"## Goal\n{goals}\n\n## Progress\n### Done\n- [x] Files edited as asked"


class Agent:
    updates: UpdateStream
    """The session's update stream, from run() on."""

    def __init__(self, workspace: Path, model: FakeModel) -> None:
        self.workspace = workspace
        self.model = model
        self.client: SessiondClient | None = None
        self.sid = ""
        self.log: list[str] = []
        self.compacting: set[str] = set()
        """Compactions sessiond announced and has not finished yet."""

    @property
    def c(self) -> SessiondClient:
        assert self.client is not None, "connect first"
        return self.client

    def say(self, line: str) -> None:
        self.log.append(line)
        print(line, flush=True)

    async def summarize(self, request: SummarizeParams) -> str:
        """sessiond's ``compaction/summarize`` request: this agent's own model writes the summary."""
        self.say(f"summarizing {len(request.conversation)} chars for compaction {request.compactionId}")
        return self.model.summarize(request.conversation)

    async def start(self) -> None:
        created = await self.c.session_new(cwd=self.workspace, subscribe=True)
        self.sid = created.sessionId
        # A tiny window so that a few turns fill it: threshold compaction and overflow happen.
        await self.c.compaction_settings(
            self.sid, set={"contextWindow": 2200, "reserveTokens": 400, "keepRecentTokens": 250}
        )
        self.say(f"session {self.sid} in {self.workspace}")

    async def append(self, message: dict[str, Any]) -> str:
        appended = await self.c.append(self.sid, [{"type": "message", "message": message}])
        return appended.leafId or ""

    async def edit(self, name: str, text: str) -> None:
        await self.c.file_history_track(self.sid, name)  # before writing: back it up
        (self.workspace / name).write_text(text)
        await self.c.file_history_track(self.sid, name, phase="after")
        self.say(f"  edited {name}")

    async def turn(self, step: int, prompt: str) -> None:
        prompt_id = await self.append({"role": "user", "content": prompt, "timestamp": now_ms()})
        await self.c.file_history_checkpoint(self.sid, prompt_id)
        self.say(f"> {prompt}")
        for _attempt in range(2):
            context = [m.model_dump() for m in (await self.c.context_get(self.sid)).messages]
            answer = self.model.complete(context, prompt, step)
            await self.append(answer)
            if answer["stopReason"] != "error":
                break
            self.say(f"  model error: {answer['errorMessage']}")
            if not await self.wait_for_retry():
                return
        for block in answer["content"]:
            if block["type"] == "toolCall":
                name = block["arguments"]["path"]
                await self.edit(name, f"# step {step}: {prompt}\nprint('welcome')\n")
                await self.append(
                    {
                        "role": "toolResult",
                        "toolCallId": block["id"],
                        "toolName": "write",
                        "content": [{"type": "text", "text": f"wrote {name}"}],
                        "isError": False,
                        "timestamp": now_ms(),
                    }
                )
        await self.drain()

    def note(self, event: SessionUpdate) -> None:
        update = event.update
        if isinstance(update, UsageUpdate) and update.used is not None:
            self.say(f"  context {update.used}/{update.size} tokens ({update.source})")
        elif isinstance(update, CompactionUpdate):
            if update.status == "in_progress":
                self.compacting.add(update.compactionId)
            else:
                self.compacting.discard(update.compactionId)
                self.say(
                    f"  compaction {update.status} (reason {update.reason}, willRetry {update.willRetry})"
                )

    async def wait_for_retry(self) -> bool:
        """After an overflow: wait for sessiond's compaction, retry if it says so."""
        while True:
            try:
                event = await self.updates.next(timeout=30)
            except TimeoutError:
                return False
            self.note(event)
            update = event.update
            if isinstance(update, CompactionUpdate) and update.status != "in_progress":
                return bool(update.willRetry) and update.status == "completed"

    async def drain(self) -> None:
        await asyncio.sleep(0.05)
        for event in self.updates.pending():
            self.note(event)

    async def finish(self) -> None:
        # Let a background compaction finish before looking at the result.
        while self.compacting:
            self.note(await self.updates.next(timeout=30))
        listed = await self.c.file_history_list(self.sid)
        first: str = listed.checkpoints[0].model_dump()["messageId"]  # an extra field of the open model
        plan = await self.c.file_history_rewind(self.sid, first, dry_run=True)
        would = sorted(f["path"] for f in plan.model_dump()["files"] if f["action"] != "none")
        self.say(f"rewinding to the first prompt would touch: {', '.join(would)}")
        usage = await self.c.context_usage(self.sid)
        self.say(f"final context: {usage.used} tokens ({usage.source})")

    async def run(self, socket: str | None) -> list[str]:
        self.workspace.mkdir(parents=True, exist_ok=True)
        async with await SessiondClient.connect(
            socket=socket, name="agent_loop", summarizer=self.summarize
        ) as client:
            self.client = client
            async with client.updates() as updates:  # every subscribed session's updates, from now on
                self.updates = updates
                await self.start()
                for step, prompt in enumerate(PROMPTS):
                    await self.turn(step, prompt)
                await self.finish()
        return self.log


async def main(socket: str | None, workspace: Path) -> list[str]:
    return await Agent(workspace, FakeModel(overflow_at=1500)).run(socket)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", help="a daemon's socket (default: the store's daemon, started if needed)")
    parser.add_argument("--workspace", type=Path, default=Path("/tmp/sessiond-agent-demo"))
    args = parser.parse_args()
    try:
        asyncio.run(main(args.socket, args.workspace))
    except BrokenPipeError:
        # The reader went away (`agent_loop.py | head`): stop quietly. Point stdout at /dev/null
        # so the interpreter's final flush does not fail again and print a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt:
        sys.exit(130)
