"""The relay: NDJSON JSON-RPC between the editor (our stdio) and the agent (a child process).

Each line read is written to the other side as read — the same bytes — after a look at it
(``orjson``, no model): requests are remembered per direction (the editor's ids and the
agent's ids are separate spaces, never renumbered, so ``$/cancel_request`` passes through per
hop unchanged), and what they carry is reported to the :class:`~.recorder.Recorder`, which
only queues. The proxy changes bytes in three declared cases: the ``initialize`` answer gains
the capabilities the proxy adds (``loadSession``, ``sessionCapabilities.list``); the requests
it answers itself are not forwarded (``session/list`` and ``session/load`` for agents lacking
them, ``_sessiond/*``); and a session it loaded for an agent that could not is renamed on the
way (the editor's id outside, the agent's fresh id inside). The agent's stderr is ours. When
the agent exits the proxy exits with its status.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import stat
import sys
import threading
from collections.abc import Sequence
from typing import Any, Final

import orjson

from .answers import acp_header, list_sessions, recorded_entries, replay
from .link import DaemonError, Unavailable
from .recorder import Recorder, store_id
from .rewind import REWIND_COMMAND, BadParams, describe, rewind, rewind_command

LINE_LIMIT: Final = 1 << 30
WRITE_BACKUP_WAIT: Final = 2.0
"""At most this long an ``fs/write_text_file`` waits for the daemon to back the file up."""
AGENT_GRACE: Final = 5.0
"""How long an agent may run on after the editor closed the connection."""
SESSION_STARTS: Final = {
    "session/new": "new",
    "session/load": "load",
    "session/resume": "resume",
    "session/fork": "fork",
}


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return msg if isinstance(msg, dict) else None


def _encode(msg: dict[str, Any]) -> bytes:
    return orjson.dumps(msg) + b"\n"


def _key(value: Any) -> Any:
    """An id as a dict key (ids are strings or integers; anything else by its JSON)."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else orjson.dumps(value)


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (a pipe, a socket or a terminal)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def _read_in_thread(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    def pump() -> None:
        while chunk := os.read(fd, 1 << 16):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="sessiond-acp-stdin", daemon=True).start()


def _signal_group(pid: int, sig: int) -> None:
    """Signal the agent's process group (the agent runs in one of its own: a launcher such as
    npm's ``.bin`` wrapper and the native agent it starts end together)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class Proxy:
    """One editor, one agent process."""

    def __init__(self, argv: Sequence[str], recorder: Recorder, *, own_sessions: bool = False) -> None:
        self.argv = list(argv)
        self.recorder = recorder
        self.own_sessions = own_sessions
        self.from_editor: dict[Any, tuple[str, dict[str, Any]]] = {}
        """Requests of the editor the agent has not answered: id -> (method, params)."""
        self.from_agent: dict[Any, tuple[str, dict[str, Any]]] = {}
        """Requests of the agent the editor has not answered."""
        self.own: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        """The proxy's own requests to the agent (ids ``sessiond-acp-N``)."""
        self.answered_here: set[Any] = set()
        self.answer_list = False
        self.answer_load = False
        self.answer_resume = False
        self.agent_loads = False
        self.silent: set[str] = set()
        """Agent sessions whose updates are not relayed (the proxy is loading them itself)."""
        self.replaying: set[str] = set()
        """Sessions the agent is replaying (its own session/load): not recorded twice."""
        self.inside: dict[str, str] = {}
        self.outside: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.ended_by_us = False
        self.editor_out: asyncio.StreamWriter | None = None
        self.agent_in: asyncio.StreamWriter | None = None

    # ------------------------------------------------------------------ running

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        editor_in = asyncio.StreamReader(limit=LINE_LIMIT)
        if _pollable(sys.stdin.fileno()):
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(editor_in), sys.stdin.buffer)
        else:  # a file or /dev/null, which epoll refuses: read it in a thread
            _read_in_thread(sys.stdin.fileno(), editor_in, loop)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout.buffer
        )
        self.editor_out = asyncio.StreamWriter(transport, protocol, None, loop)
        return await self.relay(editor_in, self.editor_out)

    async def relay(self, editor_in: asyncio.StreamReader, editor_out: asyncio.StreamWriter) -> int:
        """Relay until the agent exits; its exit status."""
        self.editor_out = editor_out
        self.recorder.start()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=LINE_LIMIT,
                process_group=0,
            )
        except OSError as exc:
            print(
                f"sessiond acp: cannot start {self.argv[0]}: {exc.strerror or exc}",
                file=sys.stderr,
                flush=True,
            )
            return 127
        assert proc.stdin is not None and proc.stdout is not None
        self.agent_in = proc.stdin
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, _signal_group, proc.pid, sig)
        up = asyncio.create_task(self._editor_to_agent(editor_in, proc.stdin))
        up.add_done_callback(lambda _: self._spawn(self._end_after_editor(proc)))
        await self._agent_to_editor(proc.stdout, editor_out)
        status = await proc.wait()
        _signal_group(proc.pid, signal.SIGKILL)  # what the agent left running (its own children)
        up.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await up
        for task in list(self._tasks):
            task.cancel()
        self.recorder.end_all()
        await self.recorder.drain()
        await self.recorder.close()
        with contextlib.suppress(Exception):
            await editor_out.drain()
        if self.ended_by_us:
            return 0
        return status if status >= 0 else 128 - status

    async def _editor_to_agent(self, reader: asyncio.StreamReader, agent: asyncio.StreamWriter) -> None:
        clock = asyncio.get_running_loop().time
        recorder = self.recorder
        try:
            while line := await reader.readline():
                recorder.active_at = clock()
                out = self.from_editor_line(line)
                if out is not None:
                    agent.write(out)
                    await agent.drain()
        except (ConnectionError, BrokenPipeError):
            return
        with contextlib.suppress(Exception):
            agent.close()  # the editor is gone: the agent sees its stdin end

    async def _agent_to_editor(self, reader: asyncio.StreamReader, editor: asyncio.StreamWriter) -> None:
        clock = asyncio.get_running_loop().time
        recorder = self.recorder
        while line := await reader.readline():
            recorder.active_at = clock()
            out, wait = self.from_agent_line(line)
            if out is None:
                continue
            if wait is not None:
                with contextlib.suppress(TimeoutError, Exception):
                    await asyncio.wait_for(asyncio.shield(wait), WRITE_BACKUP_WAIT)
            try:
                editor.write(out)
                await editor.drain()
            except (ConnectionError, BrokenPipeError):
                continue  # the editor is gone; the agent is ended by its stdin closing

    async def _end_after_editor(self, proc: asyncio.subprocess.Process) -> None:
        """The editor closed our stdin (and so the agent's): an agent that keeps running anyway
        (codex-acp does) is terminated after :data:`AGENT_GRACE`, killed after as long again;
        the proxy then exits 0, as the editor ended the conversation."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(proc.wait(), AGENT_GRACE)
                return
            except TimeoutError:
                self.ended_by_us = True
                _signal_group(proc.pid, sig)

    # ------------------------------------------------------------------ editor -> agent

    def from_editor_line(self, line: bytes) -> bytes | None:
        """What to write to the agent for this line of the editor (None: nothing)."""
        msg = _parse(line)
        if msg is None:
            return line
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        if isinstance(method, str) and "id" in msg:
            if self._answer_here(method, msg, params):
                self.answered_here.add(_key(msg["id"]))
                return None
            self.from_editor[_key(msg["id"])] = (method, params)
            if method == "session/prompt":
                self.recorder.prompt(params, len(line))
            elif method == "session/load" and isinstance(params.get("sessionId"), str):
                self.replaying.add(params["sessionId"])
        elif isinstance(method, str):
            if method == "$/cancel_request" and _key(params.get("requestId")) in self.answered_here:
                return None
        elif "id" in msg:
            asked = self.from_agent.pop(_key(msg["id"]), None)
            if asked is not None and asked[0] == "session/request_permission":
                self.recorder.permission(self._outer(asked[1]), msg)
            elif asked is not None and asked[0] == "fs/write_text_file" and "result" in msg:
                self.recorder.file_write(self._outer(asked[1]), "after")
        if self.inside and isinstance(params.get("sessionId"), str) and params["sessionId"] in self.inside:
            return _encode({**msg, "params": {**params, "sessionId": self.inside[params["sessionId"]]}})
        return line

    # ------------------------------------------------------------------ agent -> editor

    def from_agent_line(self, line: bytes) -> tuple[bytes | None, asyncio.Future[None] | None]:
        """What to write to the editor for this line of the agent (None: nothing), and what to
        wait for first, at most :data:`WRITE_BACKUP_WAIT` (the backup of a file to be written)."""
        msg = _parse(line)
        if msg is None:
            return line, None
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        wait: asyncio.Future[None] | None = None
        if method is None and "id" in msg:
            key = _key(msg["id"])
            if key in self.own:
                future = self.own.pop(key)
                if not future.done():
                    future.set_result(msg)
                return None, None
            asked = self.from_editor.pop(key, None)
            if asked is not None:
                changed = self._answered(asked[0], asked[1], msg)
                if changed is not None:
                    return _encode(changed), None
        elif isinstance(method, str):
            sid = params.get("sessionId")
            if isinstance(sid, str) and sid in self.silent:
                return None, None
            outer = self._outer(params)
            if "id" in msg:
                self.from_agent[_key(msg["id"])] = (method, params)
                if method == "fs/write_text_file":
                    wait = self.recorder.file_write(outer, "before")
            elif method == "session/update":
                outer = self._with_rewind_command(outer)
                if outer.get("sessionId") not in self.replaying:
                    self.recorder.update(outer, len(line))
            if outer is not params:
                line = _encode({**msg, "params": outer})
        return line, wait

    def _outer(self, params: dict[str, Any]) -> dict[str, Any]:
        sid = params.get("sessionId")
        if self.outside and isinstance(sid, str) and sid in self.outside:
            return {**params, "sessionId": self.outside[sid]}
        return params

    def _answered(self, method: str, params: dict[str, Any], msg: dict[str, Any]) -> dict[str, Any] | None:
        """Report an answer of the agent; a changed answer to relay instead (initialize)."""
        result = msg.get("result")
        if method == "initialize" and isinstance(result, dict):
            return {**msg, "result": self._extend(result)}
        if not isinstance(result, dict):
            if method == "session/prompt":
                self.recorder.turn_ended(self._outer(params), None)
            if method == "session/load":
                self.replaying.discard(str(params.get("sessionId")))
            return None
        if method in SESSION_STARTS:
            sid = result.get("sessionId", params.get("sessionId"))
            if isinstance(sid, str):
                self.replaying.discard(sid)
                self.recorder.session_started(sid, str(params.get("cwd", "")), SESSION_STARTS[method], result)
        elif method == "session/prompt":
            self.recorder.turn_ended(self._outer(params), result)
        return None

    def _extend(self, result: dict[str, Any]) -> dict[str, Any]:
        """The agent's ``initialize`` result with what the proxy answers for it."""
        self.recorder.agent_info(result)
        caps = result.get("agentCapabilities")
        caps = dict(caps) if isinstance(caps, dict) else {}
        session_caps = caps.get("sessionCapabilities")
        session_caps = dict(session_caps) if isinstance(session_caps, dict) else {}
        self.agent_loads = caps.get("loadSession") is True
        self.answer_load = self.own_sessions or not self.agent_loads
        self.answer_list = self.own_sessions or session_caps.get("list") is None
        self.answer_resume = self.own_sessions or session_caps.get("resume") is None
        if self.recorder.link is None:
            self.answer_load = self.answer_list = self.answer_resume = False
        if self.answer_resume:
            session_caps["resume"] = session_caps.get("resume") or {}
            caps["sessionCapabilities"] = session_caps
        if self.answer_load:
            caps["loadSession"] = True
        if self.answer_list:
            session_caps["list"] = session_caps.get("list") or {}
            caps["sessionCapabilities"] = session_caps
        return {**result, "agentCapabilities": caps}

    # ------------------------------------------------------------------ answered here

    def _answer_here(self, method: str, msg: dict[str, Any], params: dict[str, Any]) -> bool:
        if method == "session/list" and self.answer_list:
            self._spawn(self._answer(msg, self._list(params)))
            return True
        if method == "session/load" and self.answer_load:
            self._spawn(self._answer(msg, self._load(params)))
            return True
        if method == "session/resume" and self.answer_resume:
            self._spawn(self._answer(msg, self._load(params, replaying=False)))
            return True
        if method == "_sessiond/rewind":
            self._spawn(self._answer(msg, self._rewind(params)))
            return True
        if method == "session/prompt" and self.recorder.link is not None:
            command = rewind_command(params.get("prompt"))
            if command is not None:
                self._spawn(self._answer(msg, self._rewind_prompt(params, *command)))
                return True
        return False

    def _with_rewind_command(self, params: dict[str, Any]) -> dict[str, Any]:
        """An ``available_commands_update`` with the proxy's ``/rewind`` added (when recording)."""
        update = params.get("update")
        if (
            self.recorder.link is None
            or not isinstance(update, dict)
            or update.get("sessionUpdate") != "available_commands_update"
            or not isinstance(update.get("availableCommands"), list)
            or any(isinstance(c, dict) and c.get("name") == "rewind" for c in update["availableCommands"])
        ):
            return params
        commands = [*update["availableCommands"], REWIND_COMMAND]
        return {**params, "update": {**update, "availableCommands": commands}}

    async def _rewind_prompt(self, params: dict[str, Any], prompt: int | None, apply: bool) -> dict[str, Any]:
        """``/rewind [N] [apply]`` typed in the editor: the rewind's report as the turn's text."""
        query: dict[str, Any] = {"sessionId": params.get("sessionId"), "dryRun": not apply}
        if prompt is not None:
            query["prompt"] = prompt - 1
        try:
            text = describe(await self._rewind(query))
        except BadParams as exc:
            text = f"/rewind: {exc.message}"
        except (DaemonError, Unavailable) as exc:
            text = f"/rewind: {exc}"
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        note = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": params.get("sessionId"), "update": chunk},
        }
        await self._to_editor(_encode(note))
        return {"stopReason": "end_turn"}

    async def _rewind(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.recorder.link is None:
            raise Unavailable("not recording (--no-record): nothing to rewind")
        await self.recorder.drain()
        return await rewind(self.recorder.link, params)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, msg: dict[str, Any], work: Any) -> None:
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        try:
            answer["result"] = await work
        except BadParams as exc:
            answer["error"] = {"code": -32602, "message": exc.message, "data": {"field": exc.field}}
        except LookupError as exc:
            answer["error"] = {"code": -32002, "message": str(exc.args[0])}
        except DaemonError as exc:
            answer["error"] = {
                "code": -32603,
                "message": f"sessiond: {exc.message}",
                "data": {"code": exc.code},
            }
        except Unavailable as exc:
            answer["error"] = {"code": -32603, "message": f"sessiond: {exc}"}
        await self._to_editor(_encode(answer))

    async def _to_editor(self, data: bytes) -> None:
        assert self.editor_out is not None
        self.editor_out.write(data)
        await self.editor_out.drain()

    async def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        assert self.recorder.link is not None
        await self.recorder.drain()
        return await list_sessions(self.recorder.link, params)

    async def _load(self, params: dict[str, Any], *, replaying: bool = True) -> dict[str, Any]:
        """Replay the recorded session (not for a resume), then give the agent a session to go
        on with."""
        link = self.recorder.link
        assert link is not None
        sid = params.get("sessionId")
        if not isinstance(sid, str):
            raise LookupError("session/load needs a sessionId")
        await self.recorder.drain()
        try:
            entries = await recorded_entries(link, store_id(sid))
        except DaemonError as exc:
            raise LookupError(f"Resource not found: no recorded session {sid}") from exc
        header = acp_header(entries)
        if header is None:
            raise LookupError(f"Resource not found: session {sid} was not recorded by sessiond acp")
        agent_sid = await self._agent_session(sid, params)
        for update in replay(entries, sid) if replaying else []:
            await self._to_editor(_encode({"jsonrpc": "2.0", "method": "session/update", "params": update}))
        result: dict[str, Any] = {}
        for name in ("modes", "models"):
            if header.get(name) is not None:
                result[name] = header[name]
        if agent_sid != sid:
            self.inside[sid] = agent_sid
            self.outside[agent_sid] = sid
        how = "load" if replaying else "resume"
        self.recorder.session_started(sid, str(params.get("cwd", header.get("cwd", ""))), how, result)
        return result

    async def _agent_session(self, sid: str, params: dict[str, Any]) -> str:
        """The agent's id for the loaded session: its own load (silenced) when it has one and
        knows the session, else a fresh ``session/new``."""
        if self.agent_loads:
            self.silent.add(sid)
            try:
                answer = await self._ask("session/load", params)
            finally:
                self.silent.discard(sid)
            if "result" in answer:
                return sid
        fresh = {"cwd": params.get("cwd", ""), "mcpServers": params.get("mcpServers", [])}
        answer = await self._ask("session/new", fresh)
        new_sid = (answer.get("result") or {}).get("sessionId")
        if not isinstance(new_sid, str):
            raise LookupError(f"the agent could not start a session to continue {sid}")
        return new_sid

    async def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request of the proxy's own to the agent; its answer is not relayed."""
        assert self.agent_in is not None
        request_id = f"sessiond-acp-{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.own[request_id] = future
        self.agent_in.write(_encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        await self.agent_in.drain()
        return await future
