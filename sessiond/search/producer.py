"""The first build's read-ahead in processes of its own: parsing beside the writer, not in turns.

The read-ahead thread (:mod:`.readahead`) overlaps reading with the writer's inserts only as
far as Python's GIL lets it: ``sqlite3`` lets go of it while a statement runs, but the
writer's own Python (building rows, compressing, counting tokens) and the reader's parsing
take turns. A first build reads and parses more CPU than it inserts, so the reading goes to
:data:`WORKERS` processes (:mod:`.worker`, started with this interpreter), each reading every
``WORKERS``-th pending file in the writer's order; they also make what of a file's insert
needs no database (:func:`.index.prepare`), so the writer's thread does the SQL. Each sends a
file's result down its pipe; the read-ahead thread here only takes the frames off the pipes in
turn (``marshal``: a copy, no Python per text but rebuilding the tuples) and hands them to the
writer in order, as it hands its own reads.

Bounded: a worker writes one frame at a time and blocks while its pipe (64 KiB) is full, the
read-ahead holds :data:`~.readahead.DEPTH` files, so the texts of a few files are in flight
at most. Failures fall back to the writer: a file a worker could not read, or every file of a
worker that died (its pipe ends), is read by the writer itself, as when the read-ahead thread
failed; what the writer inserts is whole files either way, nothing is marked indexed that was
not. The processes exist only while a build reads: they end after their last file, and
:meth:`WorkerReadAhead.close` kills them when the build stops early. Imported only when a
build starts (the daemon's start-up does not pay for it).
"""

from __future__ import annotations

import logging
import marshal
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Final, Protocol

from .extract import Doc
from .index import Prepared, Signature
from .readahead import ReadAhead, ReadFile
from .worker import FRAME, MARSHAL_VERSION

log = logging.getLogger("sessiond.search")

KILL_WAIT_S: Final = 5.0
EXIT_WAIT_S: Final = 1.0
LAST_WORDS: Final = 300
"""Characters of a failed reading process's last line of standard error the log keeps."""
WORKERS: Final = max(1, min(2, os.cpu_count() or 1))
"""Reading processes of a build: two on a machine with two cores or more (the writer, at
about half the build's CPU, then takes its share of a core and the two workers the rest;
with more cores the writer is the bound)."""
COMMAND: list[str] = [sys.executable, "-m", "sessiond.search.worker"]
"""How a reading process is started (this interpreter; tests start failing ones)."""
_PACKAGE_PARENT: Final = str(Path(__file__).resolve().parent.parent.parent)


class WorkerFile(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def agent(self) -> str: ...


Nodes = list[tuple[str, str | None]]
Finish = Callable[[Any, Signature, str, str, str, str | None, list[Doc], Nodes, Prepared], ReadFile]
"""Makes a :class:`ReadFile` of a file and what the worker read of it (the engine's exclusion
by cwd and its file row: ``file, sig, session id, cwd, name, leaf, docs, nodes, prepared``)."""


class _Worker:
    """The reading process and its end of the pipes (used by the read-ahead thread only)."""

    def __init__(self, files: Sequence[WorkerFile], finish: Finish, agents: frozenset[str]) -> None:
        jobs = [(f.path, f.agent if f.agent in agents else "") for f in files]
        self._jobs = marshal.dumps(jobs, MARSHAL_VERSION)
        self._finish = finish
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the process's: closed by stop()
        """What the process says when it fails (a Python traceback): its last line is logged."""
        try:
            self.proc = subprocess.Popen(
                COMMAND,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=env,
                close_fds=True,
            )
        except BaseException:
            self._stderr.close()
            raise
        self.broken = False
        """It failed or ended early: the writer reads the files it has not sent."""
        self.stopping = False

    def _send_jobs(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        self.proc.stdin = None
        try:
            stdin.write(self._jobs)
        finally:
            stdin.close()

    def next_read(self, file: Any) -> ReadFile | None:
        """The next frame, which must be ``file``'s; raises when the worker is gone (the
        read-ahead then has the writer read the file itself)."""
        if self.broken:
            raise OSError("the reading process ended")
        try:
            if self.proc.stdin is not None:
                self._send_jobs()
            out = self.proc.stdout
            assert out is not None
            payload = marshal.loads(_read_exactly(out, FRAME.unpack(_read_exactly(out, FRAME.size))[0]))
        except (OSError, EOFError, ValueError, TypeError) as exc:
            self.broken = True
            if self.stopping:
                raise OSError("the build stopped reading") from None
            try:  # its output ended: it is exiting (a moment for its exit code)
                code: int | None = self.proc.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                code = None
            log.warning(
                "search: the build's reading process stopped (%s, exit code %s%s): the writer reads the rest",
                exc,
                code,
                self._last_words(),
            )
            raise OSError("the reading process ended") from None
        path, signature, found = payload
        if path != file.path:
            self.broken = True
            raise OSError(f"the reading process sent {path!r} for {file.path!r}")
        if signature is None or found is None:
            return None
        sid, cwd, name, leaf, docs, nodes, prepared = found
        made = list(map(Doc._make, docs))
        sig = Signature(*signature)
        return self._finish(file, sig, sid, cwd, name, leaf, made, nodes, Prepared._make(prepared))

    def _last_words(self) -> str:
        """``; it said: …`` with the last line the process wrote to its standard error (an
        exception's type and message end a traceback), cut to :data:`LAST_WORDS` characters;
        empty when it wrote nothing."""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 4096))
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        if not lines:
            return ""
        last = lines[-1].strip()
        return f"; it said: {last[:LAST_WORDS]}{'…' if len(last) > LAST_WORDS else ''}"

    def stop(self) -> None:
        self.stopping = True
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            log.warning("search: the build's reading process %d did not end", self.proc.pid)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self._stderr.close()


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError("the reading process's output ended")
    return data


class WorkerReadAhead(ReadAhead[Any]):
    """:class:`~.readahead.ReadAhead` whose reads come from :mod:`.worker` processes: ``workers``
    of them, each reading every ``workers``-th file (taken from them in turn, so in order)."""

    def __init__(
        self, files: Sequence[WorkerFile], finish: Finish, agents: frozenset[str], workers: int = 1
    ) -> None:
        """``agents``: those whose files the workers read (the others' they leave to the writer)."""
        self.workers: list[_Worker] = []
        try:
            for k in range(workers):
                self.workers.append(_Worker(files[k::workers], finish, agents))
        except BaseException:  # the ones started go (the caller reads in a thread instead)
            for worker in self.workers:
                worker.stop()
            raise
        self._turn = 0
        super().__init__(list(files), self._next_read)

    def _next_read(self, file: Any) -> ReadFile | None:
        worker = self.workers[self._turn % len(self.workers)]
        self._turn += 1
        return worker.next_read(file)

    def close(self) -> None:
        super().close()
        for worker in self.workers:
            worker.stop()
