"""Docs that misled a new user (issue 24, item 15), checked against what the code does.

* The socket's place when both ``XDG_RUNTIME_DIR`` and ``SESSIOND_HOME`` are set: the daemon
  puts it in ``<store>/run`` (only the per-user store uses the runtime directory), while
  ``--socket``'s help and the docs said "for the default store", which ``--store``'s help
  defines as ``$SESSIOND_HOME``.
* The quickstart, ui.md and the VS Code extension named only the store, Pi and Claude Code,
  though Codex and OpenCode sessions are served too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sessiond.cli_commands.base import SOCKET_HELP, STORE_HELP
from sessiond.service.config import load_config
from sessiond_client.discovery import socket_path
from tests.conftest import REPO

AGENTS = ("Pi", "Claude Code", "Codex", "OpenCode")


def test_with_both_variables_the_socket_is_in_the_store_and_the_help_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir()
    env = {"SESSIOND_HOME": str(tmp_path / "store"), "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    config = load_config(env, root=tmp_path / "store")
    assert config.socket == tmp_path / "store" / "run" / "sessiond.sock"
    assert socket_path(env=env) == config.socket  # the clients agree
    assert "$SESSIOND_HOME" in STORE_HELP
    # the help names the case: a store $SESSIOND_HOME names keeps its socket in <store>/run
    assert "$SESSIOND_HOME" in SOCKET_HELP and "<store>/run/sessiond.sock" in SOCKET_HELP
    assert "default store" not in SOCKET_HELP


@pytest.mark.parametrize("doc", ["docs/cli.md", "docs/operations.md", "docs/daemon.md"])
def test_the_docs_say_where_the_socket_of_a_sessiond_home_store_is(doc: str) -> None:
    text = (REPO / doc).read_text()
    lines = [line for line in text.splitlines() if "XDG_RUNTIME_DIR/sessiond/sessiond.sock" in line]
    assert lines
    for line in lines:
        assert "default store" not in line, line
    assert re.search(r"SESSIOND_HOME[^\n]*(\n[^\n]*)?<store>/run", text), doc


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("docs/quickstart.md", "## 2."),
        ("docs/quickstart.md", "## 6."),
        ("docs/ui.md", "# The session viewer"),
    ],
)
def test_the_newcomer_pages_name_every_agent(path: str, where: str) -> None:
    text = (REPO / path).read_text()
    section = text[text.index(where) :]
    section = section[: section.find("\n## ", 1) if "\n## " in section[1:] else None]
    for agent in AGENTS:
        assert agent in section, f"{path} {where} does not name {agent}"


def test_the_extension_describes_every_agent() -> None:
    package = json.loads((REPO / "clients" / "vscode" / "package.json").read_text())
    for agent in AGENTS:
        assert agent in package["description"], agent
