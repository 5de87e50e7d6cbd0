"""A refused write on another agent's session points to ``sessiond export`` (issue 24, item 13).

Through the real daemon: ``fork``, ``label`` and ``compact`` on the Claude Code transcript are
refused (-32019, exit 4) with the command that copies it into the store, in the message and as
``data.hint``; ``compact`` takes an id prefix like every other command (it sent the prefix).
"""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import CLAUDE_ID, Cli

LEAF = "d107d4c0-ae71-4d3d-af3a-cf7a370bd21f"


@pytest.mark.parametrize(
    "argv",
    [
        ["fork", CLAUDE_ID[:8], LEAF],
        ["fork", "--at", CLAUDE_ID, LEAF],
        ["label", CLAUDE_ID[:8], LEAF, "x"],
        ["compact", CLAUDE_ID[:8]],
    ],
    ids=["fork", "fork-at", "label", "compact"],
)
def test_a_refused_write_names_sessiond_export(cli: Cli, argv: list[str]) -> None:
    done = cli.run(*argv)
    assert done.returncode == 4, done.stderr
    assert f"sessiond export {CLAUDE_ID}" in done.stderr, done.stderr
    done = cli.run(*argv, "--json")
    error = json.loads(done.stdout)["error"]
    assert error["rpcCode"] == -32019
    assert error["hint"] == f"sessiond export {CLAUDE_ID}"
    assert error["exportMethod"] == "session/export"
