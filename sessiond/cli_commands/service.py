"""``service systemd|launchd``: run the daemon under the system's service manager.

Prints a systemd user unit or a launchd agent that runs ``sessiond serve`` in the foreground
(the manager supervises it and collects its log), naming the absolute path of *this*
installation's ``sessiond`` — a pipx install, a virtualenv, a checkout's ``.venv`` — since
neither manager searches the user's ``PATH``. docs/operations.md says how to install them.

Both stop it with SIGTERM (the daemon answers what is in flight, flushes and closes every
session) and restart it only after a failure; exit status 3 (another daemon already holds the
store) is not retried.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from .base import EXIT_OK, Output, add_json_option, add_store_options, runner

LABEL = "dev.sessiond.daemon"
"""The launchd job's label (reverse-DNS, as launchd wants)."""
STOP_SECONDS = 30


def register(sub: Any) -> None:
    p = sub.add_parser(
        "service",
        help="print a systemd user unit or a launchd agent that runs the daemon",
        description=(
            "Print a service definition that runs `sessiond serve` under the system's service "
            "manager, with the absolute path of this sessiond. systemd: save it as "
            "~/.config/systemd/user/sessiond.service, then `systemctl --user enable --now sessiond`. "
            f"launchd: save it as ~/Library/LaunchAgents/{LABEL}.plist, then "
            f"`launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/{LABEL}.plist`. "
            "--store/--socket are passed on to `serve`."
        ),
    )
    p.add_argument("manager", choices=("systemd", "launchd"), metavar="MANAGER", help="systemd or launchd")
    add_store_options(p)
    add_json_option(p)
    p.set_defaults(handler=runner(cmd_service))


def sessiond_program() -> list[str]:
    """How to run this installation's sessiond: its console script, else ``python -m sessiond``."""
    script = Path(sys.executable).with_name("sessiond")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "sessiond"]


def serve_argv(args: argparse.Namespace) -> list[str]:
    argv = [*sessiond_program(), "serve"]
    if args.store:
        argv += ["--store", str(Path(args.store).expanduser().absolute())]
    if args.socket:
        argv += ["--socket", str(Path(args.socket).expanduser().absolute())]
    return argv


def _systemd_quote(arg: str) -> str:
    """One ExecStart word: systemd splits on whitespace and honours double quotes; ``%`` is a
    specifier and ``$`` an environment reference, both doubled to stay literal."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if arg and not any(c in arg for c in " \t\"'\\;"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_unit(argv: list[str]) -> str:
    exec_start = " ".join(_systemd_quote(a) for a in argv)
    return f"""[Unit]
Description=sessiond, the session daemon for coding agents

[Service]
Type=exec
ExecStart={exec_start}
# SIGTERM: sessiond stops accepting clients, answers what is in flight, flushes and closes
# every session, and removes its socket.
KillSignal=SIGTERM
TimeoutStopSec={STOP_SECONDS}
Restart=on-failure
RestartSec=2
# 3: another daemon already serves this store; starting again would not help.
RestartPreventExitStatus=3
Environment=PYTHONUNBUFFERED=1

[Install]
WantedBy=default.target
"""


def launchd_plist(argv: list[str], home: Path) -> str:
    import plistlib  # noqa: PLC0415

    log = home / "Library" / "Logs" / "sessiond.log"
    job: dict[str, Any] = {
        "Label": LABEL,
        "ProgramArguments": argv,
        "RunAtLoad": True,
        # Restart after a crash, not after a clean stop (launchctl bootout, or exit status 0).
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Background",
        "ExitTimeOut": STOP_SECONDS,
        "ThrottleInterval": 2,
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
    }
    return plistlib.dumps(job, sort_keys=False).decode()


async def cmd_service(args: argparse.Namespace, out: Output) -> int:
    argv = serve_argv(args)
    if args.manager == "systemd":
        text = systemd_unit(argv)
        where = "~/.config/systemd/user/sessiond.service"
        then = "systemctl --user daemon-reload && systemctl --user enable --now sessiond"
    else:
        text = launchd_plist(argv, Path.home())
        where = f"~/Library/LaunchAgents/{LABEL}.plist"
        then = f"launchctl bootstrap gui/$(id -u) {where}"
    if out.json:
        out.emit({"manager": args.manager, "path": where, "then": then, "argv": argv, "content": text})
        return EXIT_OK
    out.out.file.write(text)
    out.out.file.flush()
    out.note(f"save it as {where}, then: {then}   (command: {shlex.join(argv)})")
    return EXIT_OK
