"""``--json`` on every subcommand, and the exit-code table of docs/cli.md.

The list of subcommands comes from the parser itself, so a command added without a case here
(and so without a checked ``--json``) fails the first test.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiond.cli import build_parser
from tests.cli.conftest import (
    EXAMPLE,
    EXAMPLE_ID,
    SESSIOND,
    Cli,
    isolated_env,
    new_session,
    run_plain,
)
from tests.harness.daemon import Daemon

pytestmark = pytest.mark.anyio


def subcommands() -> set[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def _documents(stdout: str) -> list[Any]:
    """Every JSON document on stdout: one (possibly indented) document, or one per line."""
    text = stdout.strip()
    assert text, "no output"
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines()]


async def test_every_subcommand_accepts_json_and_prints_json(
    cli: Cli, cli_daemon: Daemon, tmp_path: Path
) -> None:
    client = await cli_daemon.client()
    sid, ids = await new_session(client, tmp_path, ["a question", "an answer"])
    await client.close()
    # (arguments, expected exit code, a check of the first JSON document)
    cases: dict[str, tuple[tuple[str, ...], int, Any]] = {
        "ls": (("--all",), 0, lambda d: EXAMPLE_ID in {s["sessionId"] for s in d["sessions"]}),
        "show": ((EXAMPLE_ID,), 0, lambda d: d["leafId"] == "u1000006"),
        "tree": ((EXAMPLE_ID,), 0, lambda d: len(d["nodes"]) == 20),
        "context": ((EXAMPLE_ID,), 0, lambda d: d["totalTokens"] > 0),
        "usage": ((EXAMPLE_ID,), 0, lambda d: set(d) >= {"used", "size", "percent", "source"}),
        "label": ((sid, ids[0], "first"), 0, lambda d: d["label"] == "first"),
        "fork": (("--at", sid, ids[1]), 0, lambda d: d["sourceSessionId"] == sid and d["sessionId"] != sid),
        "compact": ((sid, "--summarizer", "extractive"), 0, lambda d: d["compacted"] is False),
        # No checkpoint at this entry: the error document, with the daemon's error code.
        "rewind": (("--dry-run", sid, ids[0]), 2, lambda d: d["error"]["rpcCode"] == -32029),
        "tail": (("-n", "2", EXAMPLE_ID), 0, lambda d: d["kind"] == "entry"),
        "doctor": ((), 0, lambda d: d["ok"] is True),
        # The fork above holds the same words (and is newer): the session is among the hits.
        "search": (("a question",), 0, lambda d: sid in {h["sessionId"] for h in d["hits"]}),
        "inspect": ((str(EXAMPLE),), 0, lambda d: d["leafId"] == "u1000006"),
        "gc": ((), 0, lambda d: isinstance(d, dict) and "error" not in d),
        "export": ((EXAMPLE_ID,), 0, lambda d: d["source"]["sessionId"] == EXAMPLE_ID != d["sessionId"]),
        "ui": (("--no-browser",), 0, lambda d: d["url"].startswith(d["viewer"] + "#code=")),
        "status": ((), 0, lambda d: d["running"] is True and d["pid"] > 0 and d["clients"]),
        "completion": (("bash",), 0, lambda d: d["shell"] == "bash" and "_sessiond" in d["script"]),
        "service": (("systemd",), 0, lambda d: d["manager"] == "systemd" and "[Service]" in d["content"]),
        # Not the package's daemon: stop is run on a store of its own, where none runs (exit 3).
        "stop": ((), -2, lambda d: d["running"] is False and d["stopped"] is False),
        # No JetStream cluster configured (none runs on the default address): the error document.
        "store": (
            ("export", "--json", "no-such-session"),
            2,
            lambda d: "cluster is unavailable" in d["error"]["message"],
        ),
        # serve and connect run until stopped: checked on their own below.
        "serve": ((), -1, None),
        "connect": ((), -1, None),
        "stats": (("--timezone", "UTC"), 0, lambda d: set(d) == {"rows", "totals", "pricesAsOf"}),
        "mcp": ((), -1, None),  # an MCP server on stdio: tests/mcp drives it with the SDK's client
        "acp": ((), -1, None),  # an ACP proxy on stdio: tests/acp drives it as an editor would
    }
    assert set(cases) == subcommands()
    for command, (args, code, check) in cases.items():
        if code == -1:
            continue
        if command in ("inspect", "completion"):  # no --store/--socket options
            r = run_plain(command, "--json", *args, env=cli.env)
        elif command == "store":  # --json belongs to its actions
            r = cli.run(command, *args)
        elif code == -2:
            r = run_plain(command, "--json", *args, env=isolated_env(tmp_path / "elsewhere"))
            code = 3
        else:
            r = cli.run(command, "--json", *args)
        assert r.returncode == code, (command, r.stdout, r.stderr)
        documents = _documents(r.stdout)
        assert check(documents[0]), (command, documents[0])
        assert "Traceback" not in r.stderr


def test_serve_json_logs_json_and_reports_a_running_daemon_as_json(cli: Cli, tmp_path: Path) -> None:
    already = run_plain("serve", "--json", env=cli.env)  # the package's daemon holds this store
    assert already.returncode == 3
    assert json.loads(already.stdout)["error"]["message"].startswith("sessiond is already running")

    env = isolated_env(tmp_path)
    proc = subprocess.Popen(
        [str(SESSIOND), "serve", "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        first = json.loads(proc.stderr.readline())
        assert first["level"] == "info" and first["message"].startswith("listening on ")
        assert first["logger"].startswith("sessiond") and first["time"].endswith("+00:00")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out == ""
    assert [json.loads(line)["message"] for line in err.splitlines()][-1] == "stopped"


def test_connect_json_bridges_json_rpc(cli: Cli) -> None:
    proc = subprocess.Popen(
        cli.args("connect", "--json"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientInfo": {"name": "test", "version": "0"}},
        }
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "sessiond"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_connect_json_reports_a_bad_configuration_as_json(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[compaction]\nsummarizer = 'nonsense'\n")
    r = run_plain("connect", "--json", env={**isolated_env(tmp_path), "SESSIOND_CONFIG": str(config)})
    assert r.returncode == 2, r.stderr
    error = json.loads(r.stdout)["error"]
    assert error["exitCode"] == 2 and "summarizer" in error["message"]
    assert r.stderr.startswith("sessiond connect: ") and r.stderr.count("\n") == 1


def test_usage_errors_are_json_under_json(cli: Cli) -> None:
    for args in (("ls", "--json", "--limit", "0"), ("--json",), ("tree", "--json"), ("nonsense", "--json")):
        r = run_plain(*args, env=cli.env)
        assert r.returncode == 2, args
        error = json.loads(r.stdout)["error"]
        assert error["exitCode"] == 2 and error["message"] and "Traceback" not in r.stderr
    plain = run_plain("ls", "--limit", "0", env=cli.env)
    assert plain.returncode == 2 and plain.stdout == "" and "must be at least 1" in plain.stderr


def test_gc_with_a_bad_configuration_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("this is not toml [\n")
    env = {**isolated_env(tmp_path), "SESSIOND_CONFIG": str(config)}
    for args in (("gc",), ("gc", "--json")):
        r = run_plain(*args, env=env)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("sessiond gc: ") and "Traceback" not in r.stderr
    assert json.loads(run_plain("gc", "--json", env=env).stdout)["error"]["exitCode"] == 2


def test_docs_cli_md_covers_every_command_option_and_exit_code() -> None:
    from sessiond.cli_commands import base  # noqa: PLC0415
    from tests.conftest import REPO  # noqa: PLC0415

    text = (REPO / "docs" / "cli.md").read_text()
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in action.choices.items():
        assert f"\n## {name}\n" in text, name
        for option in (o for a in sub._actions for o in a.option_strings if o.startswith("--")):
            if option != "--help":
                assert option in text, (name, option)
    codes = (base.EXIT_OK, base.EXIT_INTERNAL, base.EXIT_USAGE, base.EXIT_UNREACHABLE, base.EXIT_REFUSED)
    for code in (*codes, base.EXIT_INTERRUPTED):
        assert f"\n| {code} | " in text, code
