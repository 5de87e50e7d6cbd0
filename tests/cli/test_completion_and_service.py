"""``completion`` (bash, zsh, fish) and ``service`` (systemd, launchd) — issue 14 item 15.

bash's completion is exercised through its own machinery (``COMP_WORDS``/``COMP_CWORD`` and the
registered function) for every subcommand and every option; zsh and fish scripts are checked by
their shells (syntax, registration; fish's ``complete -C``) when those are installed, and for
completeness in any case. The systemd unit goes through ``systemd-analyze verify`` when it
exists; the launchd plist is parsed.
"""

from __future__ import annotations

import argparse
import json
import os
import plistlib
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from sessiond.cli import build_parser
from sessiond.cli_commands.completion import describe
from tests.cli.conftest import SESSIOND, run_plain


def _env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SESSIOND_HOME": str(tmp_path / "store")}


def _script(shell: str, tmp_path: Path) -> Path:
    done = run_plain("completion", shell, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    path = tmp_path / f"sessiond.{shell}"
    path.write_text(done.stdout)
    return path


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _bash_complete(script: Path, *words: str) -> list[str]:
    """What bash's completion offers for ``sessiond WORDS...`` (the last word being completed)."""
    quoted = " ".join(shlex.quote(w) for w in words)
    program = (
        f"source {script}\n"
        f"COMP_WORDS=(sessiond {quoted})\n"
        f"COMP_CWORD={len(words)}\n"
        "_sessiond\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, check=True)
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_every_command_option_and_choice(tmp_path: Path) -> None:
    script = _script("bash", tmp_path)
    commands = _commands()
    assert {"status", "stop", "completion", "service", "show", "serve"} <= set(commands)
    assert set(_bash_complete(script, "")) >= set(commands) | {"--version"}
    assert _bash_complete(script, "st") == ["status", "stop", "store", "stats"]
    for name, sub in commands.items():
        flags = {f for a in sub._actions for f in a.option_strings}
        offered = set(_bash_complete(script, name, "-"))
        assert offered == flags, name
        for action in sub._actions:
            if action.option_strings and action.choices:
                values = _bash_complete(script, name, action.option_strings[-1], "")
                assert values == [str(c) for c in action.choices], (name, action.option_strings)
    assert _bash_complete(script, "completion", "") == ["bash", "zsh", "fish"]
    assert _bash_complete(script, "service", "") == ["systemd", "launchd"]
    # Paths: a FILE/SESSION argument and --store/--socket complete files and directories.
    (tmp_path / "notes.jsonl").write_text("{}\n")
    (tmp_path / "adir").mkdir()
    assert _bash_complete(script, "show", str(tmp_path / "no")) == [str(tmp_path / "notes.jsonl")]
    assert _bash_complete(script, "ls", "--store", str(tmp_path / "a")) == [str(tmp_path / "adir")]
    done = subprocess.run(
        ["bash", "-c", f"source {script}; complete -p sessiond"], capture_output=True, text=True, check=True
    )
    assert "-F _sessiond" in done.stdout and done.stdout.strip().endswith("sessiond")


def test_zsh_and_fish_scripts_name_every_command_and_option(tmp_path: Path) -> None:
    _, commands = describe(build_parser())
    for shell in ("zsh", "fish"):
        text = _script(shell, tmp_path).read_text()
        for command in commands:
            assert command.name in text, (shell, command.name)
            for option in command.options:
                for flag in option.flags:
                    word = (
                        flag
                        if shell == "zsh"
                        else (f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
                    )
                    assert word in text, (shell, command.name, flag)
        assert "version" in text


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_parses_and_registers_the_script(tmp_path: Path) -> None:
    script = _script("zsh", tmp_path)
    subprocess.run(["zsh", "-n", str(script)], check=True, timeout=30)
    done = subprocess.run(
        [
            "zsh",
            "-f",
            "-c",
            f"autoload -U compinit; compinit -u -D; source {script}; print $_comps[sessiond]",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        env={**_env(tmp_path), "ZDOTDIR": str(tmp_path)},
    )
    assert done.stdout.strip() == "_sessiond", done


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_commands_options_and_choices(tmp_path: Path) -> None:
    script = _script("fish", tmp_path)
    subprocess.run(["fish", "-n", str(script)], check=True, timeout=30)

    def complete(line: str) -> list[str]:
        done = subprocess.run(
            ["fish", "--no-config", "-c", f"source {script}; complete -C {line!r}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
            env=_env(tmp_path),
        )
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert complete("sessiond st") == ["status", "stop", "store"]
    assert "--no-start" in complete("sessiond show --no")
    assert set(complete("sessiond ls --root ")) == {"sessiond", "pi", "claude", "codex", "opencode"}
    assert set(complete("sessiond completion ")) == {"bash", "zsh", "fish"}


def test_completion_json(tmp_path: Path) -> None:
    done = run_plain("completion", "--json", "bash", env=_env(tmp_path))
    assert done.returncode == 0
    document = json.loads(done.stdout)
    assert document["shell"] == "bash" and "complete -o filenames" in document["script"]
    assert run_plain("completion", "tcsh", env=_env(tmp_path)).returncode == 2


# ---------------------------------------------------------------------------- service files


def _service(tmp_path: Path, *args: str) -> dict[str, object]:
    done = run_plain("service", "--json", *args, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    return document


def test_the_systemd_unit_runs_this_sessiond(tmp_path: Path) -> None:
    unit = _service(tmp_path, "systemd", "--store", str(tmp_path / "my store"))
    text = str(unit["content"])
    assert unit["path"] == "~/.config/systemd/user/sessiond.service"
    assert unit["argv"] == [str(SESSIOND), "serve", "--store", str(tmp_path / "my store")]
    assert f'ExecStart={SESSIOND} serve --store "{tmp_path / "my store"}"' in text
    for line in ("Type=exec", "KillSignal=SIGTERM", "Restart=on-failure", "RestartPreventExitStatus=3"):
        assert line in text.splitlines(), line
    assert "WantedBy=default.target" in text
    plain = run_plain("service", "systemd", env=_env(tmp_path))
    assert plain.stdout.startswith("[Unit]") and "systemctl --user enable --now sessiond" in plain.stderr


def _verify(unit: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    assert shutil.which("systemd-analyze") is not None
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path)},
    )


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    units = tmp_path / "units"
    units.mkdir()
    unit = units / "sessiond.service"
    unit.write_text(str(_service(tmp_path, "systemd")["content"]))
    done = _verify(unit, tmp_path)
    assert done.returncode == 0 and "sessiond.service" not in done.stderr, done.stderr
    # The check can fail: a unit whose program does not exist is reported.
    broken = units / "broken.service"
    broken.write_text(unit.read_text().replace(str(SESSIOND), str(tmp_path / "no-such-sessiond")))
    assert _verify(broken, tmp_path).returncode != 0


def test_the_systemd_unit_parses_without_systemd(tmp_path: Path) -> None:
    """Where systemd-analyze is missing: sections, keys, and an absolute, executable program."""
    text = str(_service(tmp_path, "systemd")["content"])
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, sep, value = line.partition("=")
        assert sep and current is not None, line
        current[key] = value
    assert set(sections) == {"Unit", "Service", "Install"}
    program = sections["Service"]["ExecStart"].split()[0]
    assert os.path.isabs(program) and os.access(program, os.X_OK)
    assert sections["Install"]["WantedBy"] == "default.target"


def test_the_launchd_agent_is_a_valid_plist(tmp_path: Path) -> None:
    agent = _service(tmp_path, "launchd", "--socket", str(tmp_path / "s.sock"))
    job = plistlib.loads(str(agent["content"]).encode())
    assert job["Label"] == "dev.sessiond.daemon"
    assert job["ProgramArguments"] == [str(SESSIOND), "serve", "--socket", str(tmp_path / "s.sock")]
    assert job["RunAtLoad"] is True and job["KeepAlive"] == {"SuccessfulExit": False}
    assert job["StandardErrorPath"] == str(tmp_path / "Library" / "Logs" / "sessiond.log")
    assert all(os.path.isabs(p) for p in (job["StandardOutPath"], job["StandardErrorPath"]))
    assert agent["path"] == "~/Library/LaunchAgents/dev.sessiond.daemon.plist"
