"""The wheel a user installs (``pipx install``, ``pip install``) works without the checkout.

The wheel is built from the checkout (``pip wheel``, offline: the build backend comes from the
dev environment) and installed into a fresh virtualenv outside it. Its dependencies are not
downloaded (tests use no network): the fresh environment sees the dev environment's
site-packages through a ``.pth`` line, which only *appends* a directory — the checkout's
editable install is never activated there (its finder hook is a ``.pth`` of its own, not
processed in an appended directory) — and every run checks that ``sessiond``,
``sessiond_client`` and ``sessiond_protocol`` are imported from the wheel, not the checkout.

To extend it (the web viewer's assets, ``sessiond ui``): add the files to :data:`SHIPPED` and a
check to :func:`test_the_wheel_installs_and_runs_outside_the_checkout`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import socket
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

SHIPPED = [
    "sessiond/__init__.py",
    "sessiond/py.typed",
    "sessiond/cli.py",
    "sessiond/cli_commands/completion.py",
    "sessiond/cli_commands/service.py",
    "sessiond_client/__init__.py",
    "sessiond_protocol/__init__.py",
]
"""Files the wheel must hold (besides every module of the three packages)."""

NOT_SHIPPED = ("tests/", "benchmarks/", "examples/", "docs/", "scripts/", ".venv/")


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, **kwargs)
    assert done.returncode == 0, f"{argv}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done


SKIPPED = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "node_modules", "build", "dist", "*.egg-info", "__pycache__", "tests"
)
"""What the build needs no copy of (by name, at any depth)."""

SCRATCH = ("benchmarks/out",)
"""Directories of the checkout that other runs write into while this one copies (a running
benchmark's live socket, its reports): never part of a build."""


def copy_sources(repo: Path, target: Path) -> None:
    """Copy the checkout for a build: regular files, directories and links only — a socket or
    a FIFO someone else left (or is using) cannot be copied and is no source."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = set(SKIPPED(directory, names))
        where = Path(directory)
        for name in names:
            path = where / name
            if path.relative_to(repo).as_posix() in SCRATCH:
                skipped.add(name)
                continue
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:  # gone since it was listed
                skipped.add(name)
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                skipped.add(name)
        return skipped

    shutil.copytree(repo, target, ignore=ignore, symlinks=True)


def test_the_build_copy_skips_sockets_fifos_and_benchmark_output(tmp_path: Path) -> None:
    """A benchmark running beside the tests leaves a live socket under benchmarks/out (and
    other helpers' runs write there): the copy the wheel is built from skips them."""
    repo = tmp_path / "repo"
    (repo / "sessiond").mkdir(parents=True)
    (repo / "sessiond" / "__init__.py").write_text("")
    (repo / "benchmarks" / "out").mkdir(parents=True)
    (repo / "benchmarks" / "run.py").write_text("")
    (repo / "benchmarks" / "out" / "report.json").write_text("{}")
    os.mkfifo(repo / "sessiond" / "pipe")
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(repo / "benchmarks" / "out" / "daemon.sock"))
        listener.listen()
        socket_elsewhere = socket.socket(socket.AF_UNIX)
        socket_elsewhere.bind(str(repo / "s.sock"))
        try:
            copy_sources(repo, tmp_path / "copy")
        finally:
            socket_elsewhere.close()
    finally:
        listener.close()
    copied = sorted(p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*"))
    assert copied == ["benchmarks", "benchmarks/run.py", "sessiond", "sessiond/__init__.py"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # A copy of the sources, so the build's scratch files never land in the checkout.
    src = out / "src"
    copy_sources(REPO, src)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        env={**os.environ, "PIP_NO_INDEX": "1"},
    )
    [built] = out.glob("sessiond-*.whl")
    return built


def test_the_wheel_holds_the_packages_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for name in SHIPPED:
        assert name in names, name
    assert not [n for n in names if n.startswith(NOT_SHIPPED)]
    metadata = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "sessiond = sessiond.cli:main" in zipfile.ZipFile(wheel).read(metadata).decode()
    for package in ("sessiond", "sessiond_client", "sessiond_protocol"):
        here = {p.relative_to(_package_dir(package)).as_posix() for p in _package_dir(package).rglob("*.py")}
        shipped = {n[len(package) + 1 :] for n in names if n.startswith(package + "/") and n.endswith(".py")}
        assert here <= shipped, (package, sorted(here - shipped))


def test_the_wheel_holds_the_viewer_and_index_ready_metadata(wheel: Path) -> None:
    """The built viewer is inside (every asset its page loads), and the metadata an index shows:
    licence file, classifiers, and no home page or repository URL that does not exist yet."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    page = archive.read("sessiond/web/static/index.html").decode()
    assets = re.findall(r'(?:src|href)="/(assets/[^"]+)"', page)
    assert assets and all(f"sessiond/web/static/{a}" in names for a in assets), assets
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = archive.read(info).decode()
    assert "License-Expression: MIT" in metadata and any(n.endswith("/licenses/LICENSE") for n in names)
    assert "Classifier: Development Status :: 3 - Alpha" in metadata
    assert "Project-URL" not in metadata and "Home-page" not in metadata


def test_build_wheel_script_builds_it(tmp_path: Path) -> None:
    """scripts/build-wheel, the release path while sessiond is on no index, builds a wheel that
    holds the viewer (it checks that itself) and prints its path."""
    done = _run(
        ["bash", str(REPO / "scripts" / "build-wheel"), "--out", str(tmp_path)],
        env={**os.environ, "PIP_NO_INDEX": "1"},
    )
    built = Path(done.stdout.strip().splitlines()[-1])
    assert built.parent == tmp_path and built.name.startswith("sessiond-") and built.suffix == ".whl"
    assert "the viewer and its" in done.stderr


def _package_dir(package: str) -> Path:
    return {
        "sessiond": REPO / "sessiond",
        "sessiond_client": REPO / "clients" / "python" / "sessiond_client",
        "sessiond_protocol": REPO / "protocol" / "sessiond_protocol",
    }[package]


def test_the_wheel_installs_and_runs_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])  # this pip installs into it
    python = venv / "bin" / "python"
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    ).stdout.strip()
    # The dependencies (orjson, pydantic, pygls, ...) from the dev environment, appended after
    # the fresh site-packages (see the module docstring).
    Path(purelib, "sessiond-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
        ]
    )
    sessiond = venv / "bin" / "sessiond"
    assert sessiond.is_file()

    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "SESSIOND_HOME": str(home / "store")}
    elsewhere: dict[str, Any] = {"cwd": str(home), "env": env}
    imported = _run(
        [
            str(python),
            "-c",
            "import json, sessiond, sessiond_client, sessiond_protocol; "
            "print(json.dumps([m.__file__ for m in (sessiond, sessiond_client, sessiond_protocol)]))",
        ],
        **elsewhere,
    )
    for path in json.loads(imported.stdout):
        assert path.startswith(purelib) and not path.startswith(str(REPO)), path

    version = _run([str(sessiond), "--version"], **elsewhere)
    assert version.stdout.strip() == f"sessiond {_version()}"
    assert "_sessiond" in _run([str(sessiond), "completion", "bash"], **elsewhere).stdout
    unit = _run([str(sessiond), "service", "systemd"], **elsewhere).stdout
    assert f"ExecStart={sessiond} serve" in unit

    # serve from the installed wheel, and a client of the installed wheel talking to it.
    socket = tmp_path / "run" / "sessiond.sock"
    daemon = subprocess.Popen(
        [str(sessiond), "serve", "--socket", str(socket)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **elsewhere,
    )
    try:
        deadline = time.monotonic() + 60
        while not socket.exists():
            assert daemon.poll() is None, daemon.communicate()[1]
            assert time.monotonic() < deadline, "the installed daemon never listened"
            time.sleep(0.1)
        client = (
            "import asyncio, sys\n"
            "from sessiond_client import SessiondClient\n"
            "async def main():\n"
            f"    async with await SessiondClient.connect(socket={str(socket)!r}, start=False) as c:\n"
            f"        new = await c.session_new(cwd={str(home)!r})\n"
            "        status = await c.daemon_status()\n"
            "        print(c.initialize_result.serverInfo.version, new.sessionId, status.pid)\n"
            "asyncio.run(main())\n"
        )
        answer = _run([str(python), "-c", client], **elsewhere).stdout.split()
        assert answer[0] == _version() and answer[1] and int(answer[2]) == daemon.pid
        status = json.loads(
            _run([str(sessiond), "status", "--json", "--socket", str(socket)], **elsewhere).stdout
        )
        assert status["running"] is True and status["pid"] == daemon.pid
        stopped = _run([str(sessiond), "stop", "--socket", str(socket)], **elsewhere)
        assert f"pid {daemon.pid}" in stopped.stdout
        assert daemon.wait(timeout=30) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def _version() -> str:
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise AssertionError("no version in pyproject.toml")
