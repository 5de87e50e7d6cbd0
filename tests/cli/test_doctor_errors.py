"""``doctor``, starting the daemon on demand, and the exit codes of failures."""

from __future__ import annotations

import json
from pathlib import Path

from sessiond import __version__
from tests.cli.conftest import EXAMPLE_ID, Cli, isolated_env, run_plain, stop_daemon_of


def test_doctor_with_a_running_daemon(cli: Cli) -> None:
    r = cli.run("doctor", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] is True
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["daemon"]["status"] == "ok" and checks["daemon"]["daemonVersion"] == __version__
    assert checks["daemon version"]["status"] == "ok" and checks["protocol"]["status"] == "ok"
    assert checks["store"]["mode"] == "0700" and checks["store"]["status"] == "ok"
    assert checks["watcher"]["backend"] in ("inotify", "polling", "native")
    assert checks["summarizer"]["default"] == "auto" and checks["summarizer"]["command"] is None
    assert {checks[f"root {n}"]["exists"] for n in ("sessiond", "pi", "claude")} == {True}
    plain = cli.run("doctor")
    assert plain.returncode == 0
    rows = {line.split()[1]: line.split()[0] for line in plain.stdout.splitlines() if line.strip()}
    assert rows["daemon"] == "ok" and rows["watcher"] in ("ok", "warn") and rows["summarizer"] == "ok"


def test_doctor_without_a_daemon_and_with_an_open_store(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    store = tmp_path / "store"
    store.mkdir(mode=0o755)
    store.chmod(0o755)
    config = tmp_path / "config.toml"
    config.write_text('[summarizer.command]\nargv = ["no-such-summarizer-binary"]\n')
    r = run_plain("doctor", "--json", env={**env, "SESSIOND_CONFIG": str(config)})
    assert r.returncode == 2
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["store"]["status"] == "fail" and "chmod 700" in checks["store"]["detail"]
    assert checks["daemon"]["status"] == "warn" and checks["daemon"]["reachable"] is False
    assert checks["summarizer"]["status"] == "fail"
    assert "no-such-summarizer-binary" in checks["summarizer"]["detail"]
    assert checks["root claude"]["exists"] is False
    assert not (store / "run").exists()  # doctor starts nothing


def test_no_start_without_a_daemon_exits_3_where_the_daemon_is_needed(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    needs_daemon = (
        ("tail", "--no-start", EXAMPLE_ID),
        ("label", "--no-start", EXAMPLE_ID, "e1", "x"),
        ("fork", "--no-start", EXAMPLE_ID, "e1"),
        ("compact", "--no-start", EXAMPLE_ID),
        ("rewind", "--no-start", "--dry-run", EXAMPLE_ID, "e1"),
    )
    for args in needs_daemon:
        r = run_plain(*args, env=env)
        assert r.returncode == 3, (args, r.stderr)
        assert "no daemon is running" in r.stderr and "--no-start" in r.stderr
    r = run_plain("tail", "--no-start", "--json", EXAMPLE_ID, env=env)
    assert r.returncode == 3 and json.loads(r.stdout)["error"]["exitCode"] == 3
    assert not (tmp_path / "store").exists()  # nothing was started or created


def test_a_command_starts_the_daemon_when_none_runs(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    try:
        r = run_plain("ls", "--json", env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == {"sessions": [], "nextCursor": None}
        assert (tmp_path / "store" / "run" / "sessiond.sock").exists()
        again = run_plain("ls", "--no-start", env=env)  # the daemon it started is still there
        assert again.returncode == 0 and again.stderr == "no sessions\n"
    finally:
        stop_daemon_of(tmp_path / "store")


def test_bad_input_exits_2(cli: Cli, tmp_path: Path) -> None:
    unknown = (
        ("show", "no-such-session"),
        ("tree", "no-such-session"),
        ("usage", "nope"),
        ("compact", "nope"),
    )
    for args in unknown:
        r = cli.run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip() == f"sessiond {args[0]}: Session {args[1]} not found"
    r = cli.run("context", "--json", "no-such-session")
    assert r.returncode == 2
    assert json.loads(r.stdout)["error"] == {
        "message": "Session no-such-session not found",
        "exitCode": 2,
        "rpcCode": -32010,
        "sessionId": "no-such-session",
    }
    assert cli.run("show", "--leaf", "nope", EXAMPLE_ID).returncode == 2
    assert cli.run("show", "bad id!").returncode == 2  # not a valid session id
    assert cli.run("ls", "--limit", "0").returncode == 2
    assert cli.run("ls", "--root", "elsewhere").returncode == 2
    missing = cli.run("show", str(tmp_path / "missing.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    junk = tmp_path / "notes.jsonl"
    junk.write_text('{"hello": "world"}\n')
    r = cli.run("tree", str(junk))
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_help_lists_the_commands(cli: Cli) -> None:
    r = run_plain("--help", env=cli.env)
    assert r.returncode == 0
    commands = (
        "ls",
        "show",
        "tree",
        "context",
        "usage",
        "compact",
        "fork",
        "label",
        "rewind",
        "tail",
        "doctor",
    )
    for command in commands:
        assert f"    {command} " in r.stdout or f"    {command}\n" in r.stdout, command


def test_doctor_does_not_tell_anyone_to_chmod_a_shared_directory(tmp_path: Path) -> None:
    """A socket put in /tmp-like directory (sticky, everyone writes): a warning, never "chmod 700"
    (which would take /tmp away from every other user), and no failure."""
    env = isolated_env(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    r = run_plain("doctor", "--json", "--socket", str(shared / "sessiond.sock"), env=env)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    socket_dir = checks["socket dir"]
    assert socket_dir["status"] == "warn" and socket_dir["mode"] == "1777"
    assert "shared" in socket_dir["detail"] and "chmod" not in socket_dir["detail"]
    assert shared.stat().st_mode & 0o7777 == 0o1777  # doctor changes nothing
    left_open = tmp_path / "run"
    left_open.mkdir(mode=0o755)
    left_open.chmod(0o755)
    r = run_plain("doctor", "--json", "--socket", str(left_open / "sessiond.sock"), env=env)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["socket dir"]["status"] == "fail" and "chmod 700" in checks["socket dir"]["detail"]
