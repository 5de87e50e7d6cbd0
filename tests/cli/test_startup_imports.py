"""The command line imports only what the command it runs uses (issue 30 item 2).

Every ``sessiond`` call pays for its imports before it does anything: ``--help``, ``ls`` asked of a
running daemon and ``connect`` (the bridge an editor spawns) used to load rich, pydantic, the
inspection, every format and the compaction (~190 ms of imports). Each command's heavy modules are
imported inside its handler; these tests run the real command line in a fresh interpreter and
list the modules it loaded. Not a timing test: the time is measured in ``benchmarks/startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, isolated_env

# Run ``sessiond.cli.main`` with the given arguments, then write the names of the loaded modules
# to the file named first (also after ``--help``'s SystemExit).
_PROBE = """
import sys
out, argv = sys.argv[1], sys.argv[2:]
from sessiond.cli import main
try:
    code = main(argv)
except SystemExit as exc:
    code = exc.code
with open(out, "w") as f:
    f.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""

HEAVY = (
    "rich",
    "pydantic",
    "pydantic_core",
    "anyio",
    "mcp",
    "sessiond.inspection",
    "sessiond.formats",
    "sessiond.compaction",
    "sessiond.search",
    "sessiond.usage",
    "sessiond.service.views",
    "sessiond.store.session",
    "sessiond.model.tree",
    "sessiond_protocol.models",
    "sessiond_protocol.methods",
)
"""Packages no light command needs (a name stands for the package and its submodules)."""

ALLOWED = frozenset({"sessiond.compaction", "sessiond.compaction.settings"})
"""The configuration's part of them: the compaction defaults (their package loads its code lazily)."""


def loaded_by(
    tmp_path: Path, *argv: str, env: dict[str, str], stdin: str | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = tmp_path / "modules.txt"
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), *argv],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert out.exists(), run.stderr
    return run, set(out.read_text().split("\n"))


def heavy_in(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules - ALLOWED if any(m == h or m.startswith(h + ".") for h in heavy))


def test_help_loads_no_heavy_module(tmp_path: Path) -> None:
    run, modules = loaded_by(tmp_path, "--help", env=isolated_env(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "COMMAND" in run.stdout and "inspect" in run.stdout  # the real help, every command listed
    assert heavy_in(modules) == []
    not_yet = ("asyncio", "logging", "sessiond_client", "sessiond.store", "sessiond.service")
    assert heavy_in(modules, not_yet) == []  # nothing of the daemon or the client before a command runs


@pytest.mark.parametrize("command", ["show", "compact", "search", "stats", "inspect", "serve"])
def test_a_subcommands_help_loads_no_heavy_module(tmp_path: Path, command: str) -> None:
    run, modules = loaded_by(tmp_path, command, "--help", env=isolated_env(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "usage: sessiond " + command in run.stdout
    assert heavy_in(modules) == []


def test_ls_of_a_running_daemon_loads_only_the_client(cli: Cli, tmp_path: Path) -> None:
    run, modules = loaded_by(
        tmp_path, "ls", "--json", "--no-start", "--socket", str(cli.daemon.socket), env=cli.env
    )
    assert run.returncode == 0, run.stderr
    assert len(json.loads(run.stdout)["sessions"]) >= 3  # it did list the store's sessions
    assert "sessiond_client.client" in modules
    assert heavy_in(modules) == []


def test_ls_as_a_table_adds_only_rich(cli: Cli, tmp_path: Path) -> None:
    run, modules = loaded_by(tmp_path, "ls", "--no-start", "--socket", str(cli.daemon.socket), env=cli.env)
    assert run.returncode == 0, run.stderr
    assert "rich.table" in modules
    assert heavy_in(modules, tuple(h for h in HEAVY if h != "rich")) == []


def test_connect_loads_only_the_bridge(cli: Cli, tmp_path: Path) -> None:
    # What an editor does: one request, then stdin ends; the bridge forwards it and the answer.
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "daemon/status"})
    run, modules = loaded_by(
        tmp_path, "connect", "--socket", str(cli.daemon.socket), env=cli.env, stdin=request + "\n"
    )
    assert run.returncode == 0, run.stderr
    assert '"id":1' in run.stdout.replace(" ", "")  # the daemon's answer came back
    assert "sessiond.rpc.bridge" in modules
    assert heavy_in(modules) == []
