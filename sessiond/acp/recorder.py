"""Recording through the daemon, in the background: nothing here makes the relay wait.

The relay calls the synchronous methods below as messages pass; each turns into entries
(:mod:`.convert`) put on a queue that one writer task drains into the daemon in order
(``session/new``, ``session/append``, ``fileHistory/checkpoint`` / ``track``). The relay only
builds the entries; serialising them and talking to the daemon is the writer's, which runs
when the relay is quiet (:data:`QUIET`; at most :data:`MAX_DELAY` later; at once when a write
of the editor waits for its backup or the proxy needs the record). Entries queued meanwhile are
merged into one ``session/append``, so a busy relay costs a few daemon round trips, not one per
message: each round trip is socket writes, a wake-up and the daemon's work on the same few
cores, which is what delayed relayed messages. For the same reason a prompt's file-history
checkpoint is made only when it is needed: before the first ``fs/write_text_file`` the proxy
relays after the prompt (a prompt whose turn edits nothing through the editor needs none;
rewinding to it is rewinding to the next checkpoint, :mod:`.rewind`).
When the daemon is unavailable the writer says so once on stderr and drops what it cannot
write; the relay never notices.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from .convert import SESSION, SessionTranscript, custom
from .link import DaemonError, DaemonLink, Unavailable

SESSION_ID: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
SESSION_EXISTS: Final = -32015
FLUSH_TIMEOUT: Final = 10.0
"""How long the proxy, once the agent is gone, waits for the queue to reach the daemon."""
QUIET: Final = 0.002
"""The writer waits until the relay has passed no message for this long (seconds)..."""
MAX_DELAY: Final = 0.05
"""...but records wait at most this long (a relay that never pauses) before they are written."""
MERGE_ENTRIES: Final = 200
"""At most this many entries merged into one ``session/append`` (the daemon takes 1000)."""
MERGE_BYTES: Final = 4 << 20
"""At most about this many bytes of relayed messages merged into one append (the daemon's
message limit is 16 MiB; each relayed message is kept raw and converted, so about twice)."""

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
    checkpointed: bool = True
    """Whether ``last_prompt`` has its checkpoint (made before its turn's first tracked write)."""


@dataclass
class Append:
    """Entries for one session, merged while they wait for the writer."""

    recorded: Recorded
    entries: list[dict[str, Any]]
    size: int = 0
    """About how many bytes of relayed messages the entries hold."""
    prompts: list[int] = field(default_factory=list)
    """Indexes (in ``entries``) of prompts (user messages tracked writes will belong to)."""


class Recorder:
    """Queues what the relay saw; one task writes it to the daemon."""

    def __init__(self, link: DaemonLink | None) -> None:
        self.link = link
        self.agent: dict[str, Any] = {}
        self.sessions: dict[str, Recorded] = {}
        self._queue: deque[Op | Append] = deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._urgent = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.active_at = 0.0
        """When the relay last passed a message (the event loop's clock; the relay sets it)."""
        self._said = False
        self.written = 0
        """Operations the daemon acknowledged (tests and the benchmark read it)."""

    def start(self) -> None:
        """Connect to the daemon in the background before anything is recorded (the first
        record then finds the client imported and the connection open)."""

        async def op(link: DaemonLink) -> None:
            await link.connect()
            if link.failed is not None:
                raise Unavailable(link.failed)

        self._put(op)

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

    def prompt(self, params: dict[str, Any], size: int = 0) -> None:
        """``session/prompt`` (``size``: the bytes of the relayed line)."""
        recorded = self._session(params)
        if recorded is None:
            return
        entries = recorded.transcript.prompt(params)
        self._append(recorded, entries, size, prompt=True)

    def update(self, params: dict[str, Any], size: int = 0) -> None:
        """A ``session/update`` notification (``size``: the bytes of the relayed line)."""
        recorded = self._session(params)
        if recorded is not None:
            self._append(recorded, recorded.transcript.update(params), size)

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
        self._urgent.set()  # the editor's write waits for this backup

        async def op(link: DaemonLink) -> None:
            try:
                if recorded.last_prompt is not None:
                    if not recorded.checkpointed:
                        await link.call(
                            "fileHistory/checkpoint",
                            {"sessionId": recorded.store_id, "messageId": recorded.last_prompt},
                        )
                        recorded.checkpointed = True
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

    def _append(
        self, recorded: Recorded, entries: list[dict[str, Any]], size: int = 0, *, prompt: bool = False
    ) -> None:
        """Queue entries, merged into the queue's last append when it is for the same session
        (and not full); with ``prompt`` the last entry is a prompt's user message."""
        if not entries or self.link is None:
            return
        last = self._queue[-1] if self._queue else None
        if (
            isinstance(last, Append)
            and last.recorded is recorded
            and len(last.entries) + len(entries) <= MERGE_ENTRIES
            and last.size + size <= MERGE_BYTES
        ):
            last.entries.extend(entries)
            last.size += size
        else:
            last = Append(recorded, list(entries), size)
            self._push(last)
        if prompt:
            last.prompts.append(len(last.entries) - 1)

    def _put(self, op: Op) -> None:
        if self.link is not None:
            self._push(op)

    def _push(self, item: Op | Append) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write())
        self._queue.append(item)
        self._idle.clear()
        self._wake.set()

    async def _write(self) -> None:
        assert self.link is not None
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                self._urgent.clear()
                await self._wake.wait()
                await self._quiet(loop, loop.time() + MAX_DELAY)
                continue
            item = self._queue.popleft()
            try:
                if self.link.failed is None:
                    if isinstance(item, Append):
                        await self._write_append(self.link, item)
                    else:
                        await item(self.link)
                    self.written += 1
            except Unavailable as exc:
                self._say(f"not recording: {exc}")
            except DaemonError as exc:
                self._say(f"the daemon refused a write ({exc.code}: {exc.message}); recording goes on")
            except Exception as exc:  # recording must never stop the relay
                self._say(f"recording failed ({type(exc).__name__}: {exc}); recording goes on")

    async def _quiet(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """Until the relay has been quiet for :data:`QUIET`, ``deadline`` passed or a write is
        urgent: the writer's work then falls between relayed messages, not on them."""
        while not self._urgent.is_set():
            now = loop.time()
            wait = min(self.active_at + QUIET, deadline) - now
            if wait <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._urgent.wait(), wait)

    @staticmethod
    async def _write_append(link: DaemonLink, item: Append) -> None:
        recorded = item.recorded
        result = await link.call("session/append", {"sessionId": recorded.store_id, "entries": item.entries})
        if item.prompts:
            recorded.last_prompt = result["entryIds"][item.prompts[-1]]
            recorded.checkpointed = False

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
        self._urgent.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.link is not None:
            await self.link.close()
