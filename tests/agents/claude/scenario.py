"""One scripted Claude Code session, run once and shared by the tests of this directory.

The real agent runs six turns against the stand-in while a real daemon follows its transcript:

1. a prompt answered with thinking (signed), text and a Read; then three tool calls in one step
   (Edit of the file read, a Bash command with a long output, a Read of a missing file: a tool
   error); then a plain reply;
2. ``--resume``: a Write of a new file, a failing Bash command and a Read of a PNG (an image
   result) in one step, then a reply;
3. ``--resume``: redacted and plain thinking with a Read, then an Edit of the new file, then a
   reply;
4. ``--resume`` with ``/compact`` (the stand-in answers the summary request);
5. ``--resume`` after the compaction: a plain reply;
6. ``--resume --fork-session``: a reply in a new session forked from this one.

After each turn the daemon's context of the session (``context/get``) is taken once it has
seen every entry of the file, together with the requests the turn sent.
"""

from __future__ import annotations

import asyncio
import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiond.store.claude import ClaudeSession
from sessiond_client import Client
from tests.agents.claude.agent import NOBODY, ClaudeHome, RunResult
from tests.agents.claude.standin import (
    RedactedThinking,
    Reply,
    StandIn,
    Summary,
    Text,
    Thinking,
    ToolUse,
    call,
    say,
)
from tests.harness.daemon import Daemon, start_daemon

NOTES_BEFORE = "alpha\nbeta\n"
NOTES_AFTER = "alpha\ngamma\n"
SCRIPT_BEFORE_EDIT = "print('hi')\n"
SCRIPT_AFTER_EDIT = "print('hello')\n"


def _png(width: int, height: int) -> bytes:
    """A small red RGB PNG (an image the Read tool returns as an image block)."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


RED_PNG = _png(4, 4)


@dataclass
class Turn:
    """One ``claude -p`` run: its arguments, result, the main requests it sent, and the
    daemon's context of the session right after it (``context/get`` messages)."""

    args: tuple[str, ...]
    run: RunResult
    requests: list[dict[str, Any]]
    context: list[dict[str, Any]]
    cold_context: list[dict[str, Any]]


@dataclass
class Scenario:
    home: ClaudeHome
    standin: StandIn
    daemon: Daemon
    session_id: str
    fork_id: str = ""
    turns: list[Turn] = field(default_factory=list)
    fork_turn: Turn | None = None
    known_before_subscribe: list[str] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    """What the subscribed client received while turns 2-5 ran."""

    @property
    def transcript(self) -> Path:
        return self.home.transcript(self.session_id)


def cold_entry_ids(path: Path) -> list[str]:
    return list(dict.fromkeys(e["id"] for e in ClaudeSession.open(path).entries() if isinstance(e, dict)))


def cold_messages(path: Path) -> list[dict[str, Any]]:
    return [m for _, m in ClaudeSession.open(path).reconstruction.messages]


async def _caught_up(client: Client, sc: Scenario, timeout: float = 30) -> None:
    """Wait until the subscribed client was told of every entry now in the file."""
    want = set(cold_entry_ids(sc.transcript))

    def seen_ids() -> set[str]:
        ids = set(sc.known_before_subscribe)
        for u in sc.updates:
            if u.get("sessionUpdate") == "entries_appended":
                ids.update(u.get("entryIds") or [])
        return ids

    if want <= seen_ids():
        return
    async for update in client.updates(sc.session_id, timeout=timeout):
        sc.updates.append(update)
        if want <= seen_ids():
            return


async def _context(client: Client, sid: str) -> list[dict[str, Any]]:
    got = await client.request("context/get", {"sessionId": sid})
    return [m["message"] for m in got["messages"]]


async def _turn(sc: Scenario, client: Client | None, prompt: str, *args: str, fork: bool = False) -> Turn:
    mark = sc.standin.mark()
    run = await asyncio.to_thread(sc.home.run, prompt, *args)
    requests = sc.standin.since(mark)
    sid = run.session_id
    if client is not None and not fork:
        await _caught_up(client, sc)
        context = await _context(client, sid)
    else:
        probe = await sc.daemon.client()
        try:
            await probe.request("session/load", {"sessionId": sid})
            context = await _context(probe, sid)
        finally:
            await probe.close()
    turn = Turn(args, run, requests, context, cold_messages(sc.home.transcript(sid)))
    return turn


async def run_scenario(root: Path, standin: StandIn, home: ClaudeHome) -> Scenario:
    """Run the six turns (see the module docstring) and return what was recorded."""
    home.write_file("notes.txt", NOTES_BEFORE)
    home.write_file("red.png", RED_PNG)
    (home.home / ".claude" / "projects").mkdir(parents=True)
    for d in (home.home / ".claude", home.home / ".claude" / "projects"):
        os.chown(d, NOBODY, NOBODY)  # the agent's own directories, made early for the daemon to watch
    daemon = start_daemon(root, env={"CLAUDE_CONFIG_DIR": str(home.home / ".claude")})
    sc = Scenario(home, standin, daemon, session_id="")
    try:
        await _script(sc)
    except BaseException:
        daemon.stop()
        raise
    return sc


async def _script(sc: Scenario) -> None:
    standin, home, daemon = sc.standin, sc.home, sc.daemon
    p = home.project
    notes = str(p / "notes.txt")
    script = str(p / "script.py")
    standin.script(
        Reply(
            [
                Thinking("The user wants the notes fixed; read them first.", "c2lnbmF0dXJlLW9uZQ=="),
                Text("Let me read the notes."),
                ToolUse("Read", {"file_path": notes}),
            ]
        ),
        call(
            ToolUse("Edit", {"file_path": notes, "old_string": "beta", "new_string": "gamma"}),
            ToolUse("Bash", {"command": "seq 1 4000", "description": "Count to 4000"}),
            ToolUse("Read", {"file_path": str(p / "missing.txt")}),
            text="Editing, counting and checking the other file at once.",
        ),
        say("Fixed the notes; the other file does not exist."),
    )
    first = await _turn(sc, None, "fix the notes")
    sc.session_id = first.run.session_id
    sc.turns.append(first)
    client = await daemon.client()
    try:
        await client.request("session/load", {"sessionId": sc.session_id, "subscribe": True})
        tree = await client.request("tree/get", {"sessionId": sc.session_id})
        sc.known_before_subscribe = [n["id"] for n in tree["nodes"]]
        resume = ("--resume", sc.session_id)
        standin.script(
            call(
                ToolUse("Write", {"file_path": script, "content": SCRIPT_BEFORE_EDIT}),
                ToolUse("Bash", {"command": "ls /nonexistent-dir", "description": "A failing command"}),
                ToolUse("Read", {"file_path": str(home.project / "red.png")}),  # an image result
            ),
            say("Wrote the script; the listing failed."),
        )
        sc.turns.append(await _turn(sc, client, "write a script", *resume))
        standin.script(
            Reply(
                [
                    RedactedThinking("ZW5jcnlwdGVkLXRoaW5raW5n"),
                    Thinking("Read it before editing.", "c2lnbmF0dXJlLXR3bw=="),
                    ToolUse("Read", {"file_path": script}),
                ]
            ),
            call(ToolUse("Edit", {"file_path": script, "old_string": "hi", "new_string": "hello"})),
            say("Changed the greeting."),
        )
        sc.turns.append(await _turn(sc, client, "make it say hello", *resume))
        standin.script(
            Summary("<summary>\n1. The user had notes fixed and a greeting script written.\n</summary>")
        )
        sc.turns.append(await _turn(sc, client, "/compact", *resume))
        standin.script(say("Yes, still here after the compaction."))
        sc.turns.append(await _turn(sc, client, "are you still there?", *resume))
        standin.script(say("This is the fork."))
        sc.fork_turn = await _turn(sc, client, "continue in a fork", *resume, "--fork-session", fork=True)
        sc.fork_id = sc.fork_turn.run.session_id
        await _caught_up(client, sc)
        for method, params in client.drain_notifications():
            if method == "session/update" and params.get("sessionId") == sc.session_id:
                sc.updates.append(params["update"])
    finally:
        await client.close()
