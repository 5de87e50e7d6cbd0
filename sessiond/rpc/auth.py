"""Who may use the daemon over TCP and the viewer's WebSocket: the store's token, one-time
codes, and the viewer's short-lived tokens.

* The **token** (``<store>/tcp.token``, 0600) is long-lived: TCP clients and editors read it
  from the file. It is never put on a command line (``/proc/PID/cmdline`` is readable by every
  local user) and can be replaced on demand (:meth:`Credentials.rotate`, ``sessiond ui
  --new-token``), which also ends every code, viewer token and connection that used the old one.
* A **one-time code** is what ``sessiond ui`` puts in the URL it hands the browser (so in the
  browser's command line): it is good for one ``initialize`` within :data:`CODE_TTL` seconds,
  then useless — by the time another user reads it, it has been used (or has expired).
* That ``initialize`` is answered with a **viewer token** (``viewerToken``), which the page
  keeps in its tab and presents when it reconnects. It is never written anywhere; it ends when
  no connection has used it for :data:`VIEWER_IDLE` seconds, at rotation, and when the daemon
  stops.

All comparisons are constant-time; a code is checked against every live code.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CODE_TTL = 60.0
"""Seconds a one-time code stays good (the browser uses it at once)."""
VIEWER_IDLE = 3600.0
"""Seconds a viewer token stays good after the last connection that used it closed."""
MAX_CODES = 16
"""Codes outstanding at once; a new one beyond drops the oldest."""

Kind = Literal["token", "viewer"]


@dataclass(frozen=True)
class Granted:
    """An accepted credential: how (``token`` or ``viewer``), the viewer token it stands for,
    and the viewer token to hand back (a code was exchanged) or None."""

    kind: Kind
    viewer: str | None = None
    issued: str | None = None


class Credentials:
    """The daemon's secrets for anonymous transports (one per daemon)."""

    def __init__(
        self,
        token_path: Path,
        read_token: Callable[[Path], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = token_path
        self._read_token = read_token
        self._token: str | None = None
        self._clock = clock
        self._codes: dict[str, float] = {}
        """Code -> when it expires."""
        self._viewers: dict[str, float] = {}
        """Viewer token -> when it was last used (a connection with it opened or closed)."""
        self._in_use: dict[str, int] = {}
        self.generation = 0
        """Bumped by :meth:`rotate`: connections let in before it are closed."""

    @property
    def token(self) -> str:
        """The long-lived token (created, 0600, on first use)."""
        if self._token is None:
            self._token = self._read_token(self.path)
        return self._token

    def issue_code(self) -> tuple[str, float]:
        """A new one-time code and the seconds it stays good."""
        self._expire()
        while len(self._codes) >= MAX_CODES:
            del self._codes[next(iter(self._codes))]
        code = secrets.token_urlsafe(24)
        self._codes[code] = self._clock() + CODE_TTL
        return code, CODE_TTL

    def check(self, presented: str) -> Granted | None:
        """What ``presented`` grants, or None. A code is used up by this call."""
        self._expire()
        if hmac.compare_digest(presented.encode(), self.token.encode()):
            return Granted("token")
        for code in list(self._codes):
            if hmac.compare_digest(presented.encode(), code.encode()):
                del self._codes[code]
                viewer = secrets.token_urlsafe(32)
                self._viewers[viewer] = self._clock()
                return Granted("viewer", viewer, viewer)
        for viewer in list(self._viewers):
            if hmac.compare_digest(presented.encode(), viewer.encode()):
                self._viewers[viewer] = self._clock()
                return Granted("viewer", viewer)
        return None

    def opened(self, viewer: str) -> None:
        """A connection authenticated with ``viewer`` is open: it does not expire meanwhile."""
        self._in_use[viewer] = self._in_use.get(viewer, 0) + 1

    def closed(self, viewer: str) -> None:
        """That connection closed: the idle time starts now (if it was the last)."""
        left = self._in_use.get(viewer, 0) - 1
        if left > 0:
            self._in_use[viewer] = left
        else:
            self._in_use.pop(viewer, None)
        if viewer in self._viewers:
            self._viewers[viewer] = self._clock()

    def rotate(self) -> None:
        """A new long-lived token (written atomically, 0600); every code and viewer token ends."""
        token = secrets.token_urlsafe(32)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._token = token
        self._codes.clear()
        self._viewers.clear()
        self._in_use.clear()
        self.generation += 1

    def _expire(self) -> None:
        now = self._clock()
        for code, until in list(self._codes.items()):
            if until <= now:
                del self._codes[code]
        for viewer, last in list(self._viewers.items()):
            if viewer not in self._in_use and now - last > VIEWER_IDLE:
                del self._viewers[viewer]


__all__ = ["CODE_TTL", "VIEWER_IDLE", "Credentials", "Granted"]
