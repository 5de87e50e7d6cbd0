"""The ``command`` summarizer: a configured program writes the summary.

The program (an argv, run without a shell) gets ``system_prompt + "\\n\\n" + prompt`` on stdin
(UTF-8) and prints the summary on stdout. Its environment is the daemon's, plus the configured
extra variables, plus ``SESSIOND_SUMMARY_KIND`` (``history`` or ``turn_prefix``) and
``SESSIOND_MAX_TOKENS`` (the output budget).

Outcomes, reported as they happened (``compaction.summary.failure`` decides what is refused):

* exit 0 → the stripped stdout, stop reason ``stop`` (empty output gives an empty text);
* non-zero exit or death by a signal → an ``error`` response with the stderr tail;
* more than :data:`MAX_OUTPUT` bytes on stdout → an ``error`` response (the text would be cut);
* the timeout → the process group is killed, an ``error`` response;
* the program cannot be started (missing, not executable) → :class:`SummarizerUnavailableError`.

The program runs in a session of its own, so a timeout or a cancellation kills its whole
process group (helpers it started included) and waits for it: no orphans are left behind.
Cancelling the awaiting task does that and then lets the cancellation propagate.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from subprocess import PIPE

import anyio
import anyio.abc

from ...compaction.summary import SummaryRequest, SummaryResponse
from . import SummarizerUnavailableError

MAX_OUTPUT = 1024 * 1024
"""Bytes of stdout kept; a longer output is reported as an error (the rest is drained)."""
STDERR_TAIL = 4096
"""Bytes of stderr kept (the last ones) for the error message."""


class CommandSummarizer:
    name = "command"

    def __init__(
        self, argv: Sequence[str], timeout: float = 120.0, env: Mapping[str, str] | None = None
    ) -> None:
        """``env`` adds to (or overrides) the daemon's environment; it does not replace it.

        A bad configuration raises :class:`SummarizerUnavailableError`."""
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise SummarizerUnavailableError("the summary command must be a non-empty list of strings")
        if not timeout > 0:
            raise SummarizerUnavailableError("the summary command timeout must be positive")
        self.argv = list(argv)
        self.timeout = float(timeout)
        self.env = dict(env or {})

    def _environment(self, request: SummaryRequest) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env["SESSIOND_SUMMARY_KIND"] = request.kind
        env["SESSIOND_MAX_TOKENS"] = str(request.max_tokens)
        return env

    async def summarize(self, request: SummaryRequest) -> SummaryResponse:
        data = (request.system_prompt + "\n\n" + request.prompt).encode("utf-8", "replace")
        try:
            process = await anyio.open_process(
                self.argv,
                stdin=PIPE,
                stdout=PIPE,
                stderr=PIPE,
                env=self._environment(request),
                start_new_session=True,
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise SummarizerUnavailableError(
                f"cannot run the summary command {self.argv[0]!r}: {reason}"
            ) from exc

        stdout = bytearray()
        stderr = bytearray()
        overflow = False

        async def feed() -> None:
            assert process.stdin is not None
            try:
                if data:
                    await process.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the program does not read (all of) its input: its choice
            finally:
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await process.stdin.aclose()

        async def read_stdout() -> None:
            nonlocal overflow
            assert process.stdout is not None
            async for chunk in process.stdout:
                if len(stdout) + len(chunk) > MAX_OUTPUT:
                    overflow = True
                    stdout.extend(chunk[: MAX_OUTPUT - len(stdout)])
                else:
                    stdout.extend(chunk)

        async def read_stderr() -> None:
            assert process.stderr is not None
            async for chunk in process.stderr:
                stderr.extend(chunk)
                if len(stderr) > STDERR_TAIL:
                    del stderr[: len(stderr) - STDERR_TAIL]

        finished = False
        try:
            with anyio.move_on_after(self.timeout) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(feed)
                    tg.start_soon(read_stdout)
                    tg.start_soon(read_stderr)
                await process.wait()
                finished = True
        finally:
            # A timeout, a cancellation or an error: the group goes, helpers included (one may
            # still hold the pipes open after the program itself exited).
            await _reap(process, kill=not finished)
        if scope.cancelled_caught:
            return SummaryResponse(
                "", "error", error_message=f"summary command timed out after {self.timeout:g} s"
            )

        code = process.returncode
        if code != 0:
            tail = stderr.decode("utf-8", "replace").strip()
            if code is not None and code < 0:
                what = f"summary command was killed by signal {-code}"
            else:
                what = f"summary command exited with code {code}"
            return SummaryResponse("", "error", error_message=f"{what}: {tail}" if tail else what)
        if overflow:
            return SummaryResponse(
                "", "error", error_message=f"summary command printed more than {MAX_OUTPUT} bytes"
            )
        return SummaryResponse(stdout.decode("utf-8", "replace").strip(), "stop")


async def _reap(process: anyio.abc.Process, *, kill: bool) -> None:
    """Kill the process group (``kill``), wait for the program, close the pipes.

    Shielded: it also runs while the awaiting task is being cancelled.
    """
    with anyio.CancelScope(shield=True):
        if kill:
            _kill_group(process)
        await process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await stream.aclose()


def _kill_group(process: anyio.abc.Process) -> None:
    killpg = getattr(os, "killpg", None)
    if killpg is not None:
        try:
            # start_new_session made the program a session and group leader: pgid == pid.
            killpg(process.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    with contextlib.suppress(ProcessLookupError):
        process.kill()
