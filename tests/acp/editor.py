"""A scripted editor for the relay tests: raw NDJSON lines to ``sessiond acp``, answers its
requests, and keeps every line it sent and received byte for byte."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
TIMEOUT = 60.0


class Editor:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        self.handlers: dict[str, Any] = {}

    @classmethod
    async def start(
        cls, socket: Path, env: dict[str, str], *options: str, agent: list[str] | None = None
    ) -> Editor:
        argv = [sys.executable, "-m", "sessiond", "acp", "--socket", str(socket), *options, "--"]
        argv += agent or [sys.executable, str(FAKE_AGENT)]
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=ROOT,
            limit=1 << 26,
        )
        return cls(proc)

    async def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.sent.append(line)
        self.proc.stdin.write(line)
        await self.proc.stdin.drain()

    async def send(self, msg: dict[str, Any], *, spaced: bool = False) -> None:
        text = json.dumps(msg, separators=(" , ", " : ") if spaced else (",", ":"), ensure_ascii=False)
        await self.send_line((text + "\n").encode())

    async def next(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), TIMEOUT)
        assert line, "the proxy closed its stdout"
        self.received.append(line)
        return json.loads(line)  # type: ignore[no-any-return]

    async def request(
        self, rid: Any, method: str, params: dict[str, Any], **kw: Any
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Send a request; answer the agent's requests meanwhile; return (answer, everything else seen)."""
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, **kw)
        seen: list[dict[str, Any]] = []
        while True:
            msg = await self.next()
            if "method" not in msg and msg.get("id") == rid:
                return msg, seen
            seen.append(msg)
            if "method" in msg and "id" in msg:
                handler = self.handlers[msg["method"]]
                result = handler(msg["params"])
                await self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    async def finish(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        with_stdin = self.proc.stdin
        if not with_stdin.is_closing():
            with_stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), TIMEOUT)
        stderr = (await self.proc.stderr.read()).decode()
        return code, stderr
