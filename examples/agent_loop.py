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
Start the daemon first (``scripts/run``), or point ``--socket`` at one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from sessiond_client import Client

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

    def summarize(self, params: dict[str, Any]) -> dict[str, Any]:
        lines = [line for line in params["conversation"].splitlines() if line.startswith("[User]:")]
        goals = "\n".join(f"- {line[8:]}" for line in lines[-5:]) or "- (none)"
        return {"summary": f"## Goal\n{goals}\n\n## Progress\n### Done\n- [x] Files edited as asked"}


class Agent:
    def __init__(self, client: Client, workspace: Path, model: FakeModel) -> None:
        self.client = client
        self.workspace = workspace
        self.model = model
        self.sid = ""
        self.log: list[str] = []
        self.compacting: set[str] = set()
        """Compactions sessiond announced and has not finished yet."""

    def say(self, line: str) -> None:
        self.log.append(line)
        print(line, flush=True)

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        return await self.client.request(method, {"sessionId": self.sid, **params})

    async def start(self) -> None:
        self.client.on_request("compaction/summarize", self.on_summarize)
        created = await self.client.request("session/new", {"cwd": str(self.workspace), "subscribe": True})
        self.sid = created["sessionId"]
        # A tiny window so that a few turns fill it: threshold compaction and overflow happen.
        await self.call(
            "compaction/settings",
            {"set": {"contextWindow": 2200, "reserveTokens": 400, "keepRecentTokens": 250}},
        )
        self.say(f"session {self.sid} in {self.workspace}")

    async def on_summarize(self, params: dict[str, Any]) -> Any:
        self.say(f"summarizing {len(params['conversation'])} chars for compaction {params['compactionId']}")
        return self.model.summarize(params)

    async def edit(self, name: str, text: str) -> None:
        await self.call("fileHistory/track", {"path": name})
        (self.workspace / name).write_text(text)
        await self.call("fileHistory/track", {"path": name, "phase": "after"})
        self.say(f"  edited {name}")

    async def turn(self, step: int, prompt: str) -> None:
        appended = await self.call(
            "session/append",
            {
                "entries": [
                    {"type": "message", "message": {"role": "user", "content": prompt, "timestamp": now_ms()}}
                ]
            },
        )
        await self.call("fileHistory/checkpoint", {"messageId": appended["leafId"]})
        self.say(f"> {prompt}")
        for _attempt in range(2):
            context = (await self.call("context/get", {}))["messages"]
            answer = self.model.complete(context, prompt, step)
            await self.call("session/append", {"entries": [{"type": "message", "message": answer}]})
            if answer["stopReason"] != "error":
                break
            self.say(f"  model error: {answer['errorMessage']}")
            if not await self.wait_for_retry():
                return
        for block in answer["content"]:
            if block["type"] == "toolCall":
                name = block["arguments"]["path"]
                await self.edit(name, f"# step {step}: {prompt}\nprint('welcome')\n")
                await self.call(
                    "session/append",
                    {
                        "entries": [
                            {
                                "type": "message",
                                "message": {
                                    "role": "toolResult",
                                    "toolCallId": block["id"],
                                    "toolName": "write",
                                    "content": [{"type": "text", "text": f"wrote {name}"}],
                                    "isError": False,
                                    "timestamp": now_ms(),
                                },
                            }
                        ]
                    },
                )
        await self.drain()

    def note(self, update: dict[str, Any]) -> None:
        kind = update["sessionUpdate"]
        if kind == "usage_update" and update["used"] is not None:
            self.say(f"  context {update['used']}/{update['size']} tokens ({update['source']})")
        elif kind == "compaction_update":
            if update["status"] == "in_progress":
                self.compacting.add(update["compactionId"])
            else:
                self.compacting.discard(update["compactionId"])
                self.say(
                    f"  compaction {update['status']} (reason {update['reason']}, "
                    f"willRetry {update['willRetry']})"
                )

    async def wait_for_retry(self) -> bool:
        """After an overflow: wait for sessiond's compaction, retry if it says so."""
        async for update in self.client.updates(self.sid, timeout=30):
            self.note(update)
            if update["sessionUpdate"] == "compaction_update" and update["status"] != "in_progress":
                return bool(update["willRetry"]) and update["status"] == "completed"
        return False

    async def drain(self) -> None:
        await asyncio.sleep(0.05)
        for method, params in self.client.drain_notifications():
            if method == "session/update":
                self.note(params["update"])

    async def finish(self) -> None:
        # Let a background compaction finish before looking at the result.
        if self.compacting:
            async for update in self.client.updates(self.sid, timeout=30):
                self.note(update)
                if not self.compacting:
                    break
        listed = await self.call("fileHistory/list", {})
        first = listed["checkpoints"][0]["messageId"]
        plan = await self.call("fileHistory/rewind", {"messageId": first, "dryRun": True})
        would = sorted(f["path"] for f in plan["files"] if f["action"] != "none")
        self.say(f"rewinding to the first prompt would touch: {', '.join(would)}")
        usage = await self.call("context/usage", {})
        self.say(f"final context: {usage['used']} tokens ({usage['source']})")


async def main(socket: str | None, workspace: Path) -> list[str]:
    from sessiond.service.config import load_config  # noqa: PLC0415

    workspace.mkdir(parents=True, exist_ok=True)
    path = socket or str(load_config().socket)
    async with await Client.connect_unix(path) as client:
        await client.initialize("agent_loop", summarizer=True)
        agent = Agent(client, workspace, FakeModel(overflow_at=1500))
        await agent.start()
        for step, prompt in enumerate(PROMPTS):
            await agent.turn(step, prompt)
        await agent.finish()
        return agent.log


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket")
    parser.add_argument("--workspace", type=Path, default=Path("/tmp/sessiond-agent-demo"))
    args = parser.parse_args()
    asyncio.run(main(args.socket, args.workspace))
