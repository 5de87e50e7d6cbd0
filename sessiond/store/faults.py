"""Test-only fault injection for the journal: make ``write`` / ``fdatasync`` fail on demand.

Why: the reliability suite (``tests/reliability/``) must show what a *real daemon process*
does when the disk fills up or reports an I/O error in the middle of a write or a flush —
error to the client, no acknowledgement, nothing half-applied. ``EIO`` cannot be produced
on demand by an ordinary file system, and a small tmpfs cannot be mounted without root, so
the daemon's journal needs a switch.

Inert unless enabled: :func:`install_from_env` is called once when ``journal.py`` is
imported, and does nothing unless the environment variable ``SESSIOND_FAULTS`` names a
control file. Then — and only then — the ``os`` module that ``journal.py`` calls through
is replaced by a proxy whose ``write`` and ``fdatasync`` consult the control file; every
other attribute is the real ``os``. With the variable unset nothing is replaced, so the
cost is zero.

The control file is JSON, re-read whenever its size or mtime changes (so a test switches
faults on and off while the daemon runs; a missing or empty file means no faults)::

    {"rules": [
      {"op": "write",     "errno": "ENOSPC", "path": "--w-full--", "skip": 0, "times": 1,
       "partial": true},
      {"op": "fdatasync", "errno": "EIO",    "path": "--w-eio--"}
    ]}

* ``op``: ``write`` or ``fdatasync``;
* ``errno``: a name from :mod:`errno` (``EIO``, ``ENOSPC`` ...);
* ``path``: a substring of the file's path (``/proc/self/fd`` is read); omitted: any file;
* ``skip``: let this many matching calls through first (default 0);
* ``times``: fail this many calls, then let calls through again (default: no end);
* ``partial``: for ``write``, write half of the bytes first and fail on the rest (what a
  disk filling up in the middle of a line does), so the journal's roll-back is exercised.

Counters restart whenever the control file changes. Every injected failure is logged on
the ``sessiond.faults`` logger.
"""

from __future__ import annotations

import errno as errno_codes
import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("sessiond.faults")

ENV = "SESSIOND_FAULTS"


@dataclass
class Rule:
    op: str
    errno: int
    path: str | None
    skip: int
    times: int | None
    partial: bool
    seen: int = 0
    failed: int = 0
    rest_fails: bool = False
    """A partial write went through: the call writing the rest fails."""

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Rule:
        name = raw.get("errno", "EIO")
        code = getattr(errno_codes, name) if isinstance(name, str) else int(name)
        times = raw.get("times")
        return cls(
            op=str(raw["op"]),
            errno=code,
            path=raw.get("path"),
            skip=int(raw.get("skip", 0)),
            times=None if times is None else int(times),
            partial=bool(raw.get("partial", False)),
        )

    def fires(self) -> bool:
        """Count one matching call; whether this one fails."""
        self.seen += 1
        if self.seen <= self.skip:
            return False
        if self.times is not None and self.failed >= self.times:
            return False
        self.failed += 1
        return True


class FaultyOs:
    """Stands in for ``os`` inside the journal; only ``write`` and ``fdatasync`` can fail."""

    def __init__(self, control: str) -> None:
        self._control = control
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._rules: list[Rule] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _current_rules(self) -> list[Rule]:
        """The rules of the control file as it is now (caller holds the lock)."""
        try:
            st = os.stat(self._control)
        except FileNotFoundError:
            self._stamp, self._rules = None, []
            return self._rules
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                with open(self._control, "rb") as f:
                    data = f.read()
                rules = json.loads(data)["rules"] if data.strip() else []
                self._rules = [Rule.parse(r) for r in rules]
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                log.error("unreadable fault control file %s: %s", self._control, exc)
                self._rules = []
        return self._rules

    def _matching(self, op: str, fd: int) -> tuple[Rule, bool] | None:
        """The rule failing this call, and whether it may write part of the bytes first."""
        with self._lock:
            rules = [r for r in self._current_rules() if r.op == op]
            if not rules:
                return None
            try:
                path = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                path = ""
            for rule in rules:
                if rule.path is not None and rule.path not in path:
                    continue
                if rule.rest_fails:
                    rule.rest_fails = False
                    return rule, False
                if rule.fires():
                    log.warning("injected %s into %s of %s", errno_codes.errorcode[rule.errno], op, path)
                    rule.rest_fails = rule.partial
                    return rule, rule.partial
        return None

    def write(self, fd: int, data: Any) -> int:
        match = self._matching("write", fd)
        if match is None:
            return os.write(fd, data)
        rule, partial = match
        if partial and len(data) > 1:
            return os.write(fd, bytes(data[: len(data) // 2]))  # the call writing the rest fails
        raise OSError(rule.errno, os.strerror(rule.errno))

    def fdatasync(self, fd: int) -> None:
        match = self._matching("fdatasync", fd)
        if match is not None:
            raise OSError(match[0].errno, os.strerror(match[0].errno))
        os.fdatasync(fd)


def install_from_env(namespace: dict[str, Any]) -> None:
    """Replace ``os`` in ``namespace`` (the journal's globals) if ``SESSIOND_FAULTS`` is set."""
    control = os.environ.get(ENV)
    if control:
        namespace["os"] = FaultyOs(control)
        log.warning("fault injection enabled, controlled by %s", control)
