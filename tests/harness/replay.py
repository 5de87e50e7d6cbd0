"""An agent writing its transcript, played by a separate process, and a client watching it.

The live-following tests (Claude Code, Codex) need a writer the daemon cannot tell from the
agent: another process appending the lines of a real transcript with pauses, some lines
written in two pieces (so the daemon sees a torn line and must wait for its end). The pacing
is a parameter because each format's tests were tuned to its own watcher settings; the
script is one so that a fix to it reaches every test.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessiond_client import Client

REPLAY = textwrap.dedent(
    """
    import sys, time
    source, target, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
    split_pause, pause, burst_every, burst_pause = (float(a) for a in sys.argv[4:8])
    lines = open(source, "rb").read().splitlines(keepends=True)[start:]
    with open(target, "ab", buffering=0) as out:
        for i, line in enumerate(lines):
            if i % 7 == 3 and len(line) > 10:   # a line written in two pieces
                out.write(line[: len(line) // 2]); time.sleep(split_pause); out.write(line[len(line) // 2 :])
            else:
                out.write(line)
            time.sleep(pause if i % int(burst_every) else burst_pause)
    """
)
"""The writer's script: ``source target start split_pause pause burst_every burst_pause``."""


def start_replay(
    source: Path,
    target: Path,
    start: int,
    *,
    split_pause: float,
    pause: float,
    burst_every: int,
    burst_pause: float,
) -> subprocess.Popen[bytes]:
    """Append ``source``'s lines from ``start`` on to ``target`` from another process.

    Between lines it sleeps ``pause`` (``burst_pause`` every ``burst_every`` lines, so the
    watcher sees both bursts and quiet spells); every 7th line is written in two pieces
    ``split_pause`` apart. The caller waits for the process and checks its exit status.
    """
    args = [
        str(source),
        str(target),
        str(start),
        str(split_pause),
        str(pause),
        str(burst_every),
        str(burst_pause),
    ]
    return subprocess.Popen([sys.executable, "-c", REPLAY, *args])


async def updates_until(
    client: Client, sid: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 30
) -> list[dict[str, Any]]:
    """Collect ``sid``'s updates until ``done(seen)`` holds; the client's timeout fails the test."""
    seen: list[dict[str, Any]] = []
    async for update in client.updates(sid, timeout=timeout):
        seen.append(update)
        if done(seen):
            return seen
    raise AssertionError("the update stream ended before the expected updates arrived")
