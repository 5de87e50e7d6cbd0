"""The proxy's one connection to the daemon: opened lazily, never retried after it failed.

Recording is best-effort by design: the editor and the agent must not wait for the daemon,
so when it cannot be reached (or started) the proxy says so once on stderr and keeps
relaying without recording; a later daemon is not looked for again during this run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any, Final

from ..errors import SessiondError

START_TIMEOUT: Final = 15.0
REQUEST_TIMEOUT: Final = 60.0


class Unavailable(Exception):
    """The daemon cannot be reached (the message says why, for the one stderr line)."""


class DaemonError(Exception):
    """The daemon answered a request with an error (its JSON-RPC code and message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class DaemonLink:
    """Requests to the store's daemon (started when none answers, unless ``start`` is false)."""

    def __init__(self, store: Path | None, socket: Path | None, *, start: bool = True) -> None:
        self._store = store
        self._socket = socket
        self._start = start
        self._client: Any = None
        self._failed: str | None = None
        self._lock = asyncio.Lock()

    @property
    def failed(self) -> str | None:
        """Why the daemon is unavailable (None: not known to be)."""
        return self._failed

    async def connect(self) -> None:
        """Open the connection ahead of the first record. The client's modules are imported
        in a thread first: importing them takes tenths of a second, which on the event loop
        would hold up the messages relayed meanwhile."""
        await asyncio.to_thread(_import_client)
        with contextlib.suppress(Unavailable):
            await self._connected()

    async def _open(self) -> Any:
        from ..rpc.bridge import DaemonUnavailableError, open_client  # noqa: PLC0415
        from ..service.config import load_config  # noqa: PLC0415

        try:
            config = load_config(root=self._store, socket=self._socket)
            return await open_client(
                config, "sessiond-acp", start=self._start, on_start=_started, timeout=START_TIMEOUT
            )
        except DaemonUnavailableError as exc:
            raise Unavailable(f"cannot start the sessiond daemon: {exc.message}") from None
        except SessiondError as exc:
            raise Unavailable(f"sessiond's configuration is invalid: {exc.message}") from None
        except OSError as exc:
            raise Unavailable(f"no sessiond daemon answers ({exc.strerror or exc})") from None

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """The daemon's result; :class:`DaemonError` for its error answers, :class:`Unavailable`
        when it cannot be reached (then every later call fails at once, too)."""
        from sessiond_client.client import ConnectionClosedError, RpcError  # noqa: PLC0415

        client = await self._connected()
        try:
            return await client.request(method, params, timeout=REQUEST_TIMEOUT)
        except RpcError as exc:
            raise DaemonError(exc.code, exc.message) from None
        except (ConnectionClosedError, ConnectionError, TimeoutError) as exc:
            self._failed = f"the sessiond daemon stopped answering ({type(exc).__name__})"
            raise Unavailable(self._failed) from None

    async def _connected(self) -> Any:
        """The open client (opened now if need be); :class:`Unavailable` when it cannot be."""
        from sessiond_client.client import ConnectionClosedError  # noqa: PLC0415

        async with self._lock:
            if self._failed is not None:
                raise Unavailable(self._failed)
            if self._client is None or self._client.closed:
                try:
                    self._client = await self._open()
                except Unavailable as exc:
                    self._failed = str(exc)
                    raise
                except (OSError, TimeoutError, ConnectionClosedError) as exc:
                    self._failed = f"the sessiond daemon did not answer initialize ({exc})"
                    raise Unavailable(self._failed) from None
            return self._client

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()


def _import_client() -> None:
    """What :meth:`DaemonLink._open` and :meth:`DaemonLink.call` import, imported ahead."""
    import sessiond_client.client  # noqa: F401, PLC0415

    from ..rpc import bridge  # noqa: F401, PLC0415
    from ..service import config  # noqa: F401, PLC0415


def _started(pid: int, log: Path) -> None:
    """Said on stderr (the editor's agent log): stdout is the protocol."""
    print(f"sessiond acp: started the sessiond daemon (pid {pid}, log {log})", file=sys.stderr, flush=True)
