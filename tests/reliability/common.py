"""Helpers shared by the reliability tests: (re)starting and killing the real daemon, reading files.

Everything here drives real processes: the daemon is ``python -m sessiond serve`` on a real
Unix socket (``tests.harness.daemon.start_daemon``), clients are ``sessiond_client.Client``
connections, and files are read back from disk with sessiond's loader (and Pi's own code when
``pi-oracle`` is installed).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sessiond.formats.pi import LoadedSession, load_session
from tests.conftest import oracle_dir
from tests.harness.daemon import Daemon, start_daemon
from tests.oracle.pi import pi_result


def restart(tmp: Path, generation: int, **kw: Any) -> Daemon:
    """Start a daemon on the store in ``tmp`` (again), once it answers.

    The previous daemon's log is moved aside first (``daemon.<n>.log``), so each log holds one
    daemon's lines; a socket left behind by a killed daemon stays where it was, for the new
    daemon to replace (it holds the store lock, so the old socket is stale): the harness waits
    for a connection that completes ``initialize``, which the stale socket never gives.
    """
    log = tmp / "daemon.log"
    if log.exists():
        log.rename(tmp / f"daemon.{generation}.log")
    return start_daemon(tmp, **kw)


def kill(daemon: Daemon) -> None:
    """SIGKILL the daemon: no handler runs, nothing is flushed or closed."""
    daemon.process.send_signal(signal.SIGKILL)
    daemon.process.wait(timeout=30)
    assert daemon.process.returncode == -signal.SIGKILL, daemon.log_text()


def stop_cleanly(daemon: Daemon) -> None:
    code = daemon.stop()
    assert code == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text(), daemon.log_text()


@dataclass
class FileLines:
    """A session file split as a crash may leave it: complete lines and an unterminated tail."""

    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    junk: list[bytes] = field(default_factory=list)
    """Complete lines that are not JSON (a torn tail that a later append terminated)."""
    tail: bytes = b""
    """An unterminated last line (empty when the file ends with a newline)."""
    tail_is_entry: bool = False
    """The unterminated last line is complete JSON (kept as an entry, as Pi keeps it)."""
    raw_lines: list[bytes] = field(default_factory=list)

    @property
    def torn(self) -> bytes:
        """The unterminated last line if it is a fragment (not JSON), else empty."""
        return b"" if self.tail_is_entry else self.tail

    @property
    def ids(self) -> list[str]:
        return [e["id"] for e in self.entries]


def read_lines(path: Path) -> FileLines:
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    header = orjson.loads(complete[0])
    assert header.get("type") == "session", f"{path}: the first line is not the header"
    out = FileLines(header, tail=tail, raw_lines=complete)
    for raw in complete[1:]:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            out.junk.append(raw)
            continue
        assert isinstance(value, dict) and isinstance(value.get("id"), str), raw[:200]
        out.entries.append(value)
    if tail:
        try:
            value = orjson.loads(tail)
        except orjson.JSONDecodeError:
            pass
        else:  # complete JSON without its newline: the loaders keep it as an entry (Pi does)
            out.entries.append(value)
            out.tail_is_entry = True
    return out


def load_checked(path: Path) -> LoadedSession:
    """sessiond's loader must read the file; it reports what ``read_lines`` found."""
    loaded = load_session(path)
    lines = read_lines(path)
    assert [e.get("id") for e in loaded.entries] == lines.ids
    assert loaded.diagnostics.blank_lines == 0
    return loaded


def pi_loads(path: Path) -> dict[str, Any] | None:
    """What Pi's own ``SessionManager`` makes of the file (None when pi-oracle is not installed)."""
    oracle = oracle_dir()
    if oracle is None:
        return None
    return pi_result(oracle, path, "--full")


def text_of(entry: dict[str, Any]) -> str:
    """The text of a message entry written by these tests (empty for anything else)."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return str(content[0].get("text", ""))
    return ""


def message(role: str, text: str, n: int = 0) -> dict[str, Any]:
    """A Pi message of ``role`` carrying ``text`` (assistant messages with usage, as agents write)."""
    body: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": n}
    if role == "assistant":
        body.update(
            {
                "api": "x",
                "provider": "p",
                "model": "m",
                "stopReason": "stop",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 10 + n},
            }
        )
    return body
