"""Recording through the daemon, in the background: nothing here makes the relay wait.

The relay calls the synchronous methods below as messages pass; each turns into entries
(:mod:`.convert`) put on a queue that one writer task drains into the daemon in order
(``session/new``, ``session/append``, ``fileHistory/checkpoint`` / ``track``). When the daemon
is unavailable the writer says so once on stderr and drops what it cannot write; the relay
never notices.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from .convert import SESSION, SessionTranscript, custom
from .link import DaemonError, DaemonLink, Unavailable

SESSION_ID: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
SESSION_EXISTS: Final = -32015
FLUSH_TIMEOUT: Final = 10.0
"""How long the proxy, once the agent is gone, waits for the queue to reach the daemon."""

Op = Callable[[DaemonLink], Awaitable[None]]


def store_id(acp_session_id: str) -> str:
    """The sessiond id of an ACP session: the same id when sessiond accepts it, else a digest."""
    if len(acp_session_id) <= 256 and SESSION_ID.match(acp_session_id):
        return acp_session_id
    return "acp-" + hashlib.sha256(acp_session_id.encode()).hexdigest()[:32]


@dataclass
class Recorded:
    """One ACP session being recorded."""

    store_id: str
    transcript: SessionTranscript
    last_prompt: str | None = None
    """Entry id of the latest user message (checkpoints and tracked writes belong to it)."""


class Recorder:
    """Queues what the relay saw; one task writes it to the daemon."""

    def __init__(self, link: DaemonLink | None) -> None:
        self.link = link
        self.agent: dict[str, Any] = {}
        self.sessions: dict[str, Recorded] = {}
        self._queue: asyncio.Queue[Op | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._said = False
        self.written = 0
        """Operations the daemon acknowledged (tests and the benchmark read it)."""

    # --------------------------------------------------------------- what the relay reports

    def agent_info(self, result: dict[str, Any]) -> None:
        """The agent's ``initialize`` answer: its name and version go into each session."""
        info = result.get("agentInfo")
        self.agent = info if isinstance(info, dict) else {}

    def session_started(self, acp_id: str, cwd: str, how: str, result: dict[str, Any]) -> None:
        """A session the agent created (``new``) or continued (``load``/``resume``/``fork``)."""
        if acp_id in self.sessions:
            return
        name = str(self.agent.get("name") or "acp-agent")
        recorded = Recorded(store_id(acp_id), SessionTranscript(agent=name))
        models = result.get("models")
        if isinstance(models, dict) and isinstance(models.get("currentModelId"), str):
            recorded.transcript.model = models["currentModelId"]
        self.sessions[acp_id] = recorded
        header = {
            "sessionId": acp_id,
            "cwd": cwd,
            "agent": self.agent,
            "how": how,
            "modes": result.get("modes"),
            "models": result.get("models"),
        }

        async def op(link: DaemonLink) -> None:
            try:
                await link.call("session/new", {"sessionId": recorded.store_id, "cwd": cwd})
            except DaemonError as exc:
                if exc.code != SESSION_EXISTS:
                    raise
            await link.call(
                "session/append", {"sessionId": recorded.store_id, "entries": [custom(SESSION, header)]}
            )

        self._put(op)

    def prompt(self, params: dict[str, Any]) -> None:
        recorded = self._session(params)
        if recorded is None:
            return
        entries = recorded.transcript.prompt(params)

        async def op(link: DaemonLink) -> None:
            result = await link.call("session/append", {"sessionId": recorded.store_id, "entries": entries})
            recorded.last_prompt = result["entryIds"][-1]
            await link.call(
                "fileHistory/checkpoint", {"sessionId": recorded.store_id, "messageId": recorded.last_prompt}
            )

        self._put(op)

    def update(self, params: dict[str, Any]) -> None:
        recorded = self._session(params)
        if recorded is not None:
            self._append(recorded, recorded.transcript.update(params))

    def turn_ended(self, params: dict[str, Any], result: Any) -> None:
        recorded = self._session(params)
        if recorded is None:
            return
        stop = result.get("stopReason") if isinstance(result, dict) else None
        self._append(recorded, recorded.transcript.end_turn(stop if isinstance(stop, str) else None))

    def permission(self, params: dict[str, Any], answer: dict[str, Any]) -> None:
        """The editor's answer to ``session/request_permission``, with what it was asked."""
        recorded = self._session(params)
        if recorded is None:
            return
        data = {
            "toolCall": params.get("toolCall"),
            "options": params.get("options"),
            "outcome": (answer.get("result") or {}).get("outcome") if "result" in answer else None,
            "error": answer.get("error"),
        }
        self._append(recorded, [*recorded.transcript.flush(), custom("acp.permission", data)])

    def file_write(self, params: dict[str, Any], phase: str) -> asyncio.Future[None] | None:
        """``fs/write_text_file``: the file backed up before (``before``), its new state after.

        Returns a future that completes when the daemon has backed the file up (the relay may
        wait for it, bounded, so the copy is taken before the editor writes)."""
        recorded = self._session(params)
        path = params.get("path")
        if recorded is None or not isinstance(path, str) or (self.link and self.link.failed):
            return None
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def op(link: DaemonLink) -> None:
            try:
                if recorded.last_prompt is not None:
                    await link.call(
                        "fileHistory/track",
                        {
                            "sessionId": recorded.store_id,
                            "path": path,
                            "messageId": recorded.last_prompt,
                            "phase": phase,
                        },
                    )
            finally:
                if not done.done():
                    done.set_result(None)

        self._put(op)
        return done

    # --------------------------------------------------------------- writing

    def _session(self, params: dict[str, Any]) -> Recorded | None:
        sid = params.get("sessionId")
        return self.sessions.get(sid) if isinstance(sid, str) else None

    def _append(self, recorded: Recorded, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return

        async def op(link: DaemonLink) -> None:
            await link.call("session/append", {"sessionId": recorded.store_id, "entries": entries})

        self._put(op)

    def _put(self, op: Op) -> None:
        if self.link is None:
            return
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write())
        self._queue.put_nowait(op)

    async def _write(self) -> None:
        assert self.link is not None
        while True:
            op = await self._queue.get()
            try:
                if op is None:
                    return
                if self.link.failed is None:
                    await op(self.link)
                    self.written += 1
            except Unavailable as exc:
                self._say(f"not recording: {exc}")
            except DaemonError as exc:
                self._say(f"the daemon refused a write ({exc.code}: {exc.message}); recording goes on")
            except Exception as exc:  # recording must never stop the relay
                self._say(f"recording failed ({type(exc).__name__}: {exc}); recording goes on")
            finally:
                self._queue.task_done()

    def _say(self, message: str) -> None:
        if not self._said:
            self._said = True
            print(f"sessiond acp: {message}", file=sys.stderr, flush=True)

    def end_all(self) -> None:
        """The agent is gone: what is still pending becomes entries."""
        for recorded in self.sessions.values():
            self._append(recorded, recorded.transcript.flush())

    async def drain(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Wait (bounded) until everything queued reached the daemon."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.link is not None:
            await self.link.close()
