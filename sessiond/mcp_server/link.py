"""The MCP server's one connection to the daemon, opened on first use and reopened when lost.

``sessiond mcp`` holds no copy of the engine: every tool is one or a few requests to the store's
daemon, which it starts when none runs (like ``sessiond connect``). An agent keeps its MCP
server for hours while the daemon may be restarted underneath, so a closed connection is
reopened once and a read retried; a write (``handoff``'s fork) is never retried, since the
daemon may have done it before the connection dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any, Final

from ..errors import SessiondError

START_TIMEOUT: Final = 15.0
"""How long ``initialize`` may take on a daemon that was just started."""

REQUEST_TIMEOUT: Final = 120.0
"""A request the daemon did not answer in this long is reported as a failure of the tool."""


class ToolFailure(Exception):
    """A failure to report to the agent as a tool error: the daemon's own message (and its
    JSON-RPC code), or why the daemon could not be reached. Never a traceback."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class MethodMissing(ToolFailure):
    """The daemon does not know the method (-32601): an older daemon, or a feature turned off."""


class DaemonLink:
    """Requests to the store's daemon over its Unix socket (started when none answers)."""

    def __init__(self, store: Path | None, socket: Path | None, *, start: bool = True) -> None:
        self._store = store
        self._socket = socket
        self._start = start
        self._client: Any = None
        self._lock = asyncio.Lock()

    async def _open(self) -> Any:
        from ..rpc.bridge import DaemonUnavailableError, open_client  # noqa: PLC0415
        from ..service.config import load_config  # noqa: PLC0415

        try:
            config = load_config(root=self._store, socket=self._socket)
        except SessiondError as exc:
            raise ToolFailure(f"sessiond's configuration is invalid: {exc.message}") from None
        try:
            return await open_client(
                config, "sessiond-mcp", start=self._start, on_start=_started, timeout=START_TIMEOUT
            )
        except DaemonUnavailableError as exc:
            raise ToolFailure(f"cannot start the sessiond daemon: {exc.message}") from None
        except OSError as exc:
            raise ToolFailure(
                f"no sessiond daemon answers at {config.socket} ({exc.strerror or exc}); start one with "
                "`sessiond serve`"
            ) from None

    async def _connected(self) -> Any:
        async with self._lock:
            if self._client is None or self._client.closed:
                self._client = await self._open()
            return self._client

    async def call(self, method: str, params: dict[str, Any], *, retry: bool = True) -> Any:
        """The daemon's result for ``method``; its error answers become :class:`ToolFailure`."""
        from sessiond_client.client import ConnectionClosedError, RpcError  # noqa: PLC0415

        for attempt in (1, 2):
            client = await self._connected()
            try:
                return await client.request(method, params, timeout=REQUEST_TIMEOUT)
            except RpcError as exc:
                if exc.code == -32601:
                    raise MethodMissing(
                        f"this sessiond daemon does not offer {method} (it may be older than this "
                        "command: restart it with `sessiond stop`)",
                        exc.code,
                    ) from None
                raise ToolFailure(_rpc_message(exc.message, exc.data), exc.code) from None
            except (ConnectionClosedError, ConnectionError):
                self._client = None
                if not retry or attempt == 2:
                    raise ToolFailure(f"the sessiond daemon closed the connection during {method}") from None
            except TimeoutError:
                raise ToolFailure(
                    f"the sessiond daemon did not answer {method} in {REQUEST_TIMEOUT:.0f} s"
                ) from None
        raise AssertionError("unreachable")

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()


def _rpc_message(message: str, data: Any) -> str:
    """The daemon's message, with the field it names (``data.field``) when it names one."""
    if isinstance(data, dict) and isinstance(data.get("field"), str) and data["field"] not in message:
        return f"{message} (field {data['field']})"
    return message


def _started(pid: int, log: Path) -> None:
    """Said on stderr (the MCP client's log), never stdout: stdout is the protocol."""
    import sys  # noqa: PLC0415

    print(f"sessiond mcp: started the sessiond daemon (pid {pid}, log {log})", file=sys.stderr, flush=True)
