"""What every CLI command shares: exit codes, output, reaching the daemon, turning errors into codes.

Exit codes (the same for every command that talks to the daemon or reads a session):

* 0 success;
* 1 an internal error (a bug in sessiond, or an I/O error it could not attribute to the input);
* 2 bad input or usage: an unknown session or entry id, a file that is not a session, an invalid
  option, a refused confirmation on a non-interactive stdin;
* 3 the daemon cannot be reached (``--no-start`` and none runs, or it could not be started);
* 4 a conflict or refusal: rewind left files alone (conflicts, refused paths, a declined
  confirmation), the session is read-only, a compaction is already running, the session
  changed underneath;
* 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# Only the standard library at module level: every command module imports this one to register
# its parser, and `sessiond --help` must not load rich, asyncio or the model (issue 30;
# tests/cli/test_startup_imports.py). Each function imports what it uses.

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_REFUSED = 4
EXIT_INTERRUPTED = 130

WIDE = 4096
"""Console width when stdout is not a terminal: lines are never wrapped or cut for a pipe."""


class CliError(Exception):
    """A failure to report in one line, with its exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


# JSON-RPC error codes (sessiond_protocol.ErrorCode) -> exit codes. Anything else is 1.
_USAGE_ERRORS = {
    -32602,  # INVALID_PARAMS
    -32010,  # SESSION_NOT_FOUND
    -32011,  # ENTRY_NOT_FOUND
    -32013,  # NOT_ON_BRANCH
    -32014,  # NOT_EDITABLE
    -32015,  # SESSION_EXISTS
    -32016,  # PATH_OUTSIDE_STORE
    -32020,  # NOT_SAVED
    -32021,  # NOT_A_SESSION
    -32027,  # SUMMARIZER_UNAVAILABLE
    -32028,  # PATH_REFUSED
    -32029,  # CHECKPOINT_NOT_FOUND
}
_REFUSALS = {
    -32012,  # LEAF_MISMATCH
    -32017,  # SESSION_CHANGED
    -32019,  # READ_ONLY
    -32023,  # COMPACTION_RUNNING
    -32026,  # PREPARATION_STALE
}
_CANCELLED = -32800


def exit_code_for_rpc(code: int) -> int:
    if code in _USAGE_ERRORS:
        return EXIT_USAGE
    if code in _REFUSALS:
        return EXIT_REFUSED
    if code == _CANCELLED:
        return EXIT_INTERRUPTED
    return EXIT_INTERNAL


# ---------------------------------------------------------------------------- output


def make_console(*, stderr: bool = False) -> Console:
    """A console that colours a terminal and writes plain, unwrapped text to anything else.

    Rich drops colours when the stream is not a terminal and honours ``NO_COLOR``; the wide
    width keeps tables and long lines whole in pipes and files.
    """
    from rich.console import Console  # noqa: PLC0415

    stream = sys.stderr if stderr else sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    if is_tty or os.environ.get("FORCE_COLOR"):
        return Console(stderr=stderr, highlight=False)
    return Console(stderr=stderr, highlight=False, width=WIDE, soft_wrap=True)


class Output:
    """Where a command writes: ``out`` (results), ``err`` (messages, progress), or JSON."""

    def __init__(self, command: str, json_mode: bool) -> None:
        self.command = command
        self.json = json_mode
        self._out: Console | None = None
        self._err: Console | None = None

    @property
    def out(self) -> Console:
        """The results' console, made on first use (a ``--json`` command never loads rich)."""
        if self._out is None:
            self._out = make_console()
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            self._err = make_console(stderr=True)
        return self._err

    @property
    def interactive(self) -> bool:
        return self.out.is_terminal

    def show(self, *renderables: Any, **kwargs: Any) -> None:
        """Print to stdout; off a terminal, without the trailing blanks rich pads table cells with."""
        console = self.out
        if console.is_terminal:
            console.print(*renderables, **kwargs)
            return
        with console.capture() as captured:
            console.print(*renderables, **kwargs)
        text = "\n".join(line.rstrip() for line in captured.get().split("\n"))
        console.file.write(text)
        console.file.flush()

    def emit(self, value: Any, *, compact: bool = False) -> None:
        """One JSON document on stdout (``compact``: one line, for streams)."""
        from ..model.js_json import stringify  # noqa: PLC0415

        text = stringify(value) if compact else stringify(value, indent=2)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def note(self, message: str) -> None:
        """A message for the person at the terminal (stderr; silent in --json mode)."""
        if not self.json:
            self.err.print(message, markup=False, highlight=False)

    def warn(self, message: str) -> None:
        """A one-line warning on stderr, in every mode (stdout's JSON stays as it is)."""
        self.err.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)

    def fail(self, error: CliError) -> None:
        print(f"sessiond {self.command}: {error.message}", file=sys.stderr)
        if self.json:
            body: dict[str, Any] = {"message": error.message, "exitCode": error.code}
            if error.data:
                body.update(error.data)
            self.emit({"error": body})


Command = Callable[[argparse.Namespace, Output], Coroutine[Any, Any, int]]


def runner(command: Command) -> Callable[[argparse.Namespace], int]:
    """The argparse handler: run ``command`` on an event loop and map failures to exit codes."""

    def run(args: argparse.Namespace) -> int:
        import asyncio  # noqa: PLC0415

        from ..errors import SessiondError  # noqa: PLC0415

        out = Output(args.command, bool(getattr(args, "json", False)))
        try:
            return asyncio.run(command(args, out))
        except CliError as exc:
            out.fail(exc)
            return exc.code
        except SessiondError as exc:
            out.fail(CliError(exc.message, EXIT_USAGE))
            return EXIT_USAGE
        except KeyboardInterrupt:
            print(f"sessiond {args.command}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BrokenPipeError:
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (keep the interpreter's flush quiet)
            return EXIT_OK

    return run


# ---------------------------------------------------------------------------- options


STORE_HELP = "the store (default: $SESSIOND_HOME, else $XDG_DATA_HOME/sessiond, else ~/.local/share/sessiond)"
SOCKET_HELP = (
    "the daemon's Unix socket (default: $XDG_RUNTIME_DIR/sessiond/sessiond.sock when $XDG_RUNTIME_DIR "
    "is set and the store is the per-user one, $XDG_DATA_HOME/sessiond or ~/.local/share/sessiond; "
    "for any other store, also one named by $SESSIOND_HOME or --store, <store>/run/sessiond.sock)"
)


_SKIPPED_KINDS = (
    ("unparsableLines", "not JSON"),
    ("notObjects", "not a JSON object"),
    ("ignoredValueLines", 'a bare value (null, 0, false, "")'),
    ("extraHeaders", "a second header"),
)


def skipped_lines_warning(info: dict[str, Any]) -> str | None:
    """One line saying which lines of a session's file were skipped as bad (from the loader's
    ``diagnostics``), or None when none were: a corrupt line must not go unnoticed by the
    person reading the session, though every reader skips it and goes on."""
    diagnostics = info.get("diagnostics") or {}
    counts = [(int(diagnostics.get(key) or 0), what) for key, what in _SKIPPED_KINDS]
    total = sum(n for n, _ in counts)
    if not total:
        return None
    kinds = ", ".join(f"{n} {what}" for n, what in counts if n)
    numbers = [str(n) for n in diagnostics.get("unparsableLineNumbers") or []]
    where = ""
    if numbers:
        shown = ", ".join(numbers[:5]) + (", …" if len(numbers) > 5 else "")
        where = f" (line{'s' if len(numbers) > 1 else ''} {shown})"
    path = info.get("path") or info.get("sessionId")
    return (
        f"{total} bad line{'s' if total > 1 else ''} skipped in {path}: {kinds}{where}; "
        "`sessiond inspect FILE` shows the details"
    )


def add_store_options(p: argparse.ArgumentParser) -> None:
    """``--store``/``--socket``, whose help states the defaults the daemon really uses
    (:mod:`sessiond.store.layout`, ``Config.run_dir``): a test keeps them in step."""
    p.add_argument("--store", metavar="DIR", help=STORE_HELP)
    p.add_argument("--socket", metavar="PATH", help=SOCKET_HELP)


def add_daemon_options(p: argparse.ArgumentParser) -> None:
    add_store_options(p)
    p.add_argument(
        "--no-start", action="store_true", help="fail (exit 3) instead of starting the daemon when none runs"
    )
    add_json_option(p)


def add_session_command(
    sub: Any, name: str, *, help: str, description: str | None = None, session_help: str = "the session id"
) -> argparse.ArgumentParser:
    """The parser of a command about one session, asked of the daemon: the daemon's options
    and the ``SESSION`` argument, the same for every such command (and so for completion)."""
    p: argparse.ArgumentParser = sub.add_parser(name, help=help, description=description)
    add_daemon_options(p)
    p.add_argument("session", metavar="SESSION", help=session_help)
    return p


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable JSON instead of text")


def non_negative(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {n}")
    return n


def positive(value: str) -> int:
    n = non_negative(value)
    if n == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def load_config(args: argparse.Namespace) -> Any:
    """The daemon's configuration as this command line selects it (``--store``, ``--socket``)."""
    from ..service.config import load_config as load  # noqa: PLC0415

    store = getattr(args, "store", None)
    socket = getattr(args, "socket", None)
    return load(
        root=Path(store).expanduser() if store else None,
        socket=Path(socket).expanduser() if socket else None,
    )


# ---------------------------------------------------------------------------- the daemon


@contextlib.asynccontextmanager
async def daemon_client(args: argparse.Namespace, *, name: str = "sessiond-cli") -> AsyncIterator[Any]:
    """An initialised :class:`sessiond_client.Client` on the store's daemon, started if needed."""
    import asyncio  # noqa: PLC0415

    from sessiond_client.client import Client  # noqa: PLC0415

    from ..rpc.bridge import DaemonUnavailableError, connect_or_start  # noqa: PLC0415

    config = load_config(args)
    socket = config.socket
    try:
        if getattr(args, "no_start", False):
            reader, writer = await asyncio.open_unix_connection(str(socket), limit=2**26)
        else:
            reader, writer = await connect_or_start(config, started_notice(config.root))
    except (FileNotFoundError, ConnectionRefusedError):
        raise CliError(
            f"no daemon is running for the store {config.root} (socket {socket}); "
            "start one with `sessiond serve`, or leave out --no-start",
            EXIT_UNREACHABLE,
            socket=str(socket),
        ) from None
    except DaemonUnavailableError as exc:
        raise CliError(f"cannot start the daemon: {exc.message}", EXIT_UNREACHABLE) from None
    except OSError as exc:
        raise CliError(
            f"cannot reach the daemon at {socket}: {exc.strerror or exc}", EXIT_UNREACHABLE
        ) from None
    client = Client(reader, writer)
    try:
        await call(client, "initialize", initialize_params(name), timeout=15)
        await client.notify("initialized", {})
        yield client
    finally:
        with contextlib.suppress(Exception):
            await client.close()


def started_notice(store: Path) -> Callable[[int, Path], None]:
    """What a command that had to start the daemon tells the user (stderr): it keeps running
    after the command ends, so say which process it is, where it logs and how to stop it."""

    def tell(pid: int, log: Path) -> None:
        print(
            f"sessiond: no daemon was running for the store {store}; started one "
            f"(pid {pid}, log {log}). It keeps running: `sessiond stop` stops it.",
            file=sys.stderr,
            flush=True,
        )

    return tell


def initialize_params(name: str) -> dict[str, Any]:
    from .. import __version__  # noqa: PLC0415

    return {"protocolVersion": 1, "clientInfo": {"name": name, "version": __version__}}


async def call(client: Any, method: str, params: Any = None, *, timeout: float | None = 60) -> Any:
    """``client.request`` with the daemon's errors turned into :class:`CliError` (and exit codes)."""
    from sessiond_client.client import ConnectionClosedError, RpcError  # noqa: PLC0415

    try:
        return await client.request(method, params, timeout=timeout)
    except RpcError as exc:
        data = exc.data if isinstance(exc.data, dict) else {}
        raise CliError(exc.message, exit_code_for_rpc(exc.code), rpcCode=exc.code, **data) from None
    except (ConnectionClosedError, ConnectionError) as exc:
        raise CliError(f"the daemon closed the connection ({exc})", EXIT_UNREACHABLE) from None
    except TimeoutError:
        raise CliError(f"the daemon did not answer {method} in time", EXIT_INTERNAL) from None


# ---------------------------------------------------------------------------- what a SESSION argument is

MIN_PREFIX = 4
"""Shortest id prefix a SESSION argument may be (as with git's abbreviated hashes)."""
_FULL_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def match_session_id(target: str, ids: Iterable[str]) -> str:
    """The session ``target`` names among ``ids``: itself when it is one, else the one id it is a
    prefix of. Ambiguous: :class:`CliError` naming the candidates. None matching: ``target`` as
    given (the daemon then says it does not know it)."""
    matches: list[str] = []
    for sid in ids:
        if sid == target:
            return target
        if sid.startswith(target):
            matches.append(sid)
    if len(matches) == 1:
        return matches[0]
    if matches:
        matches.sort()
        shown = ", ".join(matches[:10]) + (f" and {len(matches) - 10} more" if len(matches) > 10 else "")
        raise CliError(
            f"{target!r} is ambiguous: {len(matches)} sessions start with it ({shown}); give more of the id",
            EXIT_USAGE,
            candidates=matches[:50],
        )
    return target


def wants_prefix_match(target: str) -> bool:
    """Whether resolving ``target`` needs the listing: a full UUID or a short string is taken as is."""
    return len(target) >= MIN_PREFIX and _FULL_UUID.fullmatch(target) is None


async def resolve_session(client: Any, target: str) -> str:
    """The full id of the session ``target`` names (an id or a unique prefix of one, in any
    root: the store, Pi's, Claude Code's), asking the daemon's listing only when needed."""
    if not wants_prefix_match(target):
        return target
    ids: list[str] = []
    params: dict[str, Any] = {"limit": 1000}
    while True:
        page = await call(client, "session/list", params, timeout=300)
        ids += [s["sessionId"] for s in page["sessions"]]
        if target in ids or not page.get("nextCursor"):
            break
        params["cursor"] = page["nextCursor"]
    return match_session_id(target, ids)


def looks_like_file(value: str) -> bool:
    """A FILE argument (a path) rather than a session id: something exists there (a file, or a
    directory or FIFO to be told about), or it has a slash or .jsonl."""
    return (
        os.path.lexists(value)
        or os.sep in value
        or value.endswith(".jsonl")
        or value.startswith("~")
        or ".db#" in value  # <data>/opencode.db#<session id>
    )


def path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a session file — what it is instead — or None for a
    regular file. Only ``stat``: a FIFO is never opened (that would wait for a writer)."""
    import stat  # noqa: PLC0415

    shown = os.fspath(path)
    from ..store.opencode import split_db_path  # noqa: PLC0415

    database = split_db_path(Path(path))
    if database is not None and database[0].is_file():
        return None  # <data>/opencode.db#<session id>: a session inside OpenCode's database
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"{shown} is a symlink to {os.readlink(path)}, which does not exist"
        return f"no such file: {shown}"
    except NotADirectoryError:
        return f"no such file: {shown} (a component of the path is not a directory)"
    except PermissionError:
        return f"cannot read {shown}: permission denied"
    except OSError as exc:
        return f"cannot read {shown}: {exc.strerror or exc}"
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return (
            f"{shown} is a directory, not a session file (a session is one .jsonl file; "
            f"`sessiond ls --cwd {shown}` lists the sessions recorded in a working directory)"
        )
    if stat.S_ISFIFO(mode):
        return f"{shown} is a named pipe (FIFO), not a session file: only regular files are read"
    if stat.S_ISCHR(mode):
        return f"{shown} is a character device, not a session file"
    if stat.S_ISBLK(mode):
        return f"{shown} is a block device, not a session file"
    if stat.S_ISSOCK(mode):
        return f"{shown} is a Unix socket, not a session file"
    return f"{shown} is not a regular file"


NEITHER_FORMAT = (
    "a Pi session starts with a header line such as "
    '{"type":"session","version":3,"id":…}; a Claude Code transcript is lines of records '
    "carrying uuid, parentUuid and sessionId; a Codex rollout starts with a session_meta "
    "record; an OpenCode session is named <data>/opencode.db#<session id>"
)


def neither_format(path: str | os.PathLike[str], reason: str) -> str:
    """The message for a file read as a session that is neither format sessiond knows."""
    shown = os.fspath(path)
    return f"{shown} is neither a Pi session nor a Claude Code transcript ({reason}): {NEITHER_FORMAT}"


def not_a_session_message(path: str | os.PathLike[str], exc: Any) -> str:
    """The message for a ``NotASessionError``: an OpenCode database that cannot be read says so
    itself; any other file gets :func:`neither_format`."""
    from ..store.opencode import UnreadableDatabaseError  # noqa: PLC0415

    if isinstance(exc, UnreadableDatabaseError):
        return str(exc.message)
    return neither_format(path, exc.reason)
