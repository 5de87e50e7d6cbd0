"""The zygote (tests/harness/zygote.py): a forked daemon is the daemon an exec would start.

Each check here failed against a first draft of the fork server, or guards a rule of its docs:
the child takes the test's working directory, umask, open-file limit, environment and streams;
its exit status is the daemon's, as Popen reports it; a daemon whose environment changes how
sessiond imports is exec'd; a zygote that died makes start_daemon exec, saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import zygote
from tests.harness.daemon import Daemon, daemon_env, start_daemon
from tests.harness.zygote import ForkedProcess, Zygote, ZygoteGone

pytestmark = pytest.mark.skipif(
    os.environ.get(zygote.DISABLE_ENV) == "1", reason=f"{zygote.DISABLE_ENV}=1: daemons are exec'd"
)


def _proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text()


async def _status(daemon: Daemon) -> dict[str, object]:
    client = await daemon.client()
    try:
        status: dict[str, object] = await client.request("daemon/status", {})
        return status
    finally:
        await client.close()


@pytest.mark.anyio
async def test_a_forked_daemon_has_the_tests_surroundings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    old_umask = os.umask(0o027)
    try:
        daemon = start_daemon(tmp_path, nofile=(256, 300))
    finally:
        os.umask(old_umask)
    try:
        process = daemon.process
        assert isinstance(process, ForkedProcess), "the daemon was exec'd, not forked"
        status = await _status(daemon)
        assert status["pid"] == process.pid
        # SESSIOND_HOME came from the request's environment (the zygote's has the worker's)
        assert status["store"] == str(tmp_path / "store")
        assert status["log"] == str(tmp_path / "daemon.log")  # stderr is the test's log file
        assert os.readlink(f"/proc/{process.pid}/fd/1") == str(tmp_path / "daemon.log")
        assert os.readlink(f"/proc/{process.pid}/cwd") == str(here)
        assert "\nUmask:\t0027\n" in _proc(process.pid, "status")
        limits = _proc(process.pid, "limits").splitlines()
        # (soft, hard): the daemon raises its soft limit to the hard one it was given
        assert next(line for line in limits if "open files" in line).split()[3:5] == ["300", "300"]
    finally:
        assert daemon.stop() == 0
    assert process.returncode == 0
    assert not Path(f"/proc/{process.pid}").exists()  # reaped by the zygote once waited for
    assert "Traceback" not in daemon.log_text()


def test_a_killed_daemon_reports_the_signal_as_popen_does(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path)
    process = daemon.process
    assert isinstance(process, ForkedProcess)
    assert process.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.01)
    process.kill()
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert process.poll() == -signal.SIGKILL
    process.send_signal(signal.SIGTERM)  # a no-op once it is gone, as with Popen
    assert daemon.stop() == -signal.SIGKILL


def test_a_daemon_with_fault_injection_is_execd(tmp_path: Path) -> None:
    """``SESSIOND_FAULTS`` is read when sessiond.store.journal is imported: the zygote imported
    it without, so such a daemon must be a fresh interpreter."""
    control = tmp_path / "faults.json"
    control.write_text("")
    daemon = start_daemon(tmp_path, env={"SESSIOND_FAULTS": str(control)})
    try:
        assert isinstance(daemon.process, subprocess.Popen)
        assert "fault injection enabled" in daemon.log_text()
    finally:
        assert daemon.stop() == 0


def test_a_dead_zygote_says_so(tmp_path: Path) -> None:
    dead = Zygote()
    dead.process.kill()
    dead.process.wait()
    with open(tmp_path / "log", "ab") as out, pytest.raises(ZygoteGone, match="zygote"):
        dead.spawn(["--help"], dict(os.environ), out.fileno(), out.fileno(), None)
    dead.close()


def test_start_daemon_execs_when_the_zygote_died(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = Zygote()
    dead.process.kill()
    dead.process.wait()
    monkeypatch.setattr(zygote, "_zygote", dead)
    monkeypatch.setattr(zygote, "_failures", 0)
    with pytest.warns(RuntimeWarning, match="exec'd this time"):
        daemon = start_daemon(tmp_path)
    try:
        assert isinstance(daemon.process, subprocess.Popen)
    finally:
        assert daemon.stop() == 0


@pytest.mark.parametrize(
    "args",
    [["--version"], ["ls", "--no-start", "--json"], ["no-such-command"], ["show", "nope", "--no-start"]],
)
def test_a_forked_cli_call_answers_as_the_execd_script(tmp_path: Path, args: list[str]) -> None:
    """Same exit code, stdout and stderr as ``subprocess.run`` of the script (argv[0], the
    parser's usage line, the JSON, an error and its exit code)."""
    script = str(Path(sys.executable).parent / "sessiond")
    env = daemon_env(tmp_path)
    forked = zygote.run_script(script, args, env, timeout=60)
    assert forked is not None, "the CLI call was exec'd, not forked"
    execd = subprocess.run(
        [script, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert (forked.returncode, forked.stdout, forked.stderr) == (execd.returncode, execd.stdout, execd.stderr)
