"""The store the viewer's end-to-end test (and the docs' screenshots) look at.

A real daemon on a temporary store with

* a sessiond session written by an "agent" through the protocol: prompts, tool calls, usage,
  a side branch, a compaction, a label, and file history over a real workspace (three
  prompts' checkpoints, then a file changed by someone else: a rewind's conflict);
* a Pi session in Pi's directory;
* a Claude Code transcript that :meth:`Scenario.grow_claude` extends on disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiond_client import Client
from tests.builders import assistant, tool_result, user
from tests.harness.daemon import Daemon
from tests.web.stores import ClaudeWriter, now_ms, pi_session

PI_SESSION = "pi-readme-review"


@dataclass
class Scenario:
    daemon: Daemon
    workspace: Path
    claude: ClaudeWriter
    agent_session: str = ""
    prompts: list[str] = field(default_factory=list)
    """The agent's user prompts (ids), oldest first: each has a file-history checkpoint."""
    entries: dict[str, str] = field(default_factory=dict)
    """Named entries of the agent's session (``first_answer``, ``second_prompt``...)."""
    states: list[dict[str, bytes]] = field(default_factory=list)
    """The workspace at each prompt's checkpoint."""
    claude_prompt: str = ""

    def info(self) -> dict[str, Any]:
        written: dict[str, Any] = json.loads((self.daemon.socket.parent / "ui.json").read_text())
        return written

    def token(self) -> str:
        return (self.daemon.store / "tcp.token").read_text().strip()

    def grow_claude(self, turns: int = 2) -> list[str]:
        ids: list[str] = []
        for i in range(turns):
            ids += self.claude.turn(f"live turn {i}: add a test", f"Added test {i}.", grow=4000)
        return ids


def workspace_state(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


async def _append(client: Client, sid: str, *messages: dict[str, Any]) -> list[str]:
    result = await client.request(
        "session/append",
        {"sessionId": sid, "entries": [{"type": "message", "message": now_ms(m)} for m in messages]},
    )
    return list(result["entryIds"])


async def build(daemon: Daemon, tmp: Path) -> Scenario:
    ws = tmp / "webapp"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    print('hello')\n")
    (ws / "README.md").write_text("# webapp\n")
    pi_session(tmp / "pi" / "sessions", PI_SESSION, str(ws), "Review the README of webapp")
    claude = ClaudeWriter(tmp / "claude" / "projects", str(ws))
    claude.turn("Explain src/app.py", "It prints hello.")
    claude.turn("Make it configurable", "Added a --name option.", grow=3000)
    scenario = Scenario(daemon, ws, claude)

    client = await daemon.client()
    try:
        created = await client.request("session/new", {"cwd": str(ws)})
        sid = scenario.agent_session = created["sessionId"]
        await client.request("session/setName", {"sessionId": sid, "name": "Greeting refactor"})
        await client.request(
            "session/append",
            {
                "sessionId": sid,
                "entries": [
                    {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}
                ],
            },
        )

        async def prompt(text: str) -> str:
            [pid] = await _append(client, sid, user(text))
            await client.request("fileHistory/checkpoint", {"sessionId": sid, "messageId": pid})
            scenario.prompts.append(pid)
            scenario.states.append(workspace_state(ws))
            return pid

        async def edit(rel: str, content: str) -> None:
            await client.request("fileHistory/track", {"sessionId": sid, "path": rel})
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(content)
            await client.request("fileHistory/track", {"sessionId": sid, "path": rel, "phase": "after"})

        scenario.entries["first_prompt"] = await prompt("Greet the user by name")
        ids = await _append(
            client,
            sid,
            assistant("Reading the code.", calls=[("read", {"path": "src/app.py"})], total=21_000),
            tool_result("def main():\n    print('hello')\n"),
        )
        await edit("src/app.py", "def main(name):\n    print(f'hello {name}')\n")
        [answer] = await _append(client, sid, assistant("Done: main takes a name.", total=26_000))
        scenario.entries["first_answer"] = answer
        scenario.entries["tool_call"] = ids[0]

        scenario.entries["second_prompt"] = await prompt("Add a test for it")
        await edit("tests/test_app.py", "from src.app import main\n\ndef test_main():\n    main('x')\n")
        await _append(client, sid, assistant("Added tests/test_app.py.", total=41_000))

        scenario.entries["third_prompt"] = await prompt("Document it in the README")
        await edit("README.md", "# webapp\n\nRun `main(name)` to greet someone.\n")
        [last] = await _append(client, sid, assistant("README updated.", total=58_000))
        scenario.entries["last_answer"] = last
        # someone else edits a tracked file afterwards: a rewind leaves it alone (a conflict)
        (ws / "README.md").write_text("# webapp\n\nEdited by hand.\n")

        # a side branch: the second answer retried
        await client.request(
            "tree/navigate", {"sessionId": sid, "targetId": scenario.entries["second_prompt"]}
        )
        await _append(client, sid, assistant("A different take on the tests.", total=39_000))
        await client.request("tree/navigate", {"sessionId": sid, "targetId": last})
        await client.request("tree/label", {"sessionId": sid, "entryId": answer, "label": "name works"})
        await client.request("session/configure", {"sessionId": sid, "contextWindow": 80_000})
        # a compaction checkpoint, then the conversation goes on
        compacted = await client.request(
            "compaction/run", {"sessionId": sid, "summarizer": "extractive", "keepRecentTokens": 10}
        )
        scenario.entries["compaction"] = compacted["entryId"]
        scenario.entries["fourth_prompt"] = await prompt("Now add type hints")
        await _append(client, sid, assistant("Type hints added.", total=31_000))
    finally:
        await client.close()
    return scenario
