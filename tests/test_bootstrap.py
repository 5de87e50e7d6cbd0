"""``scripts/bootstrap`` (the first step of ``scripts/run``) prints no setuptools banner
(issue 24, item 15): a newcomer's first run showed a box of asterisks, "Editable installation
... Please be careful with folders in your working directory", as if something had failed.

Real: the checkout is copied and bootstrapped into a virtualenv of its own, offline — the
environment sees the dev environment's packages through an appended site directory (as
tests/test_packaging.py does) and builds without isolation, so nothing is downloaded (uv, tried
first, is kept offline with an empty cache, so pip installs).
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.test_packaging import copy_sources


def test_the_first_bootstrap_prints_no_editable_install_banner(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    copy_sources(REPO, checkout)
    venv = checkout / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = next(venv.glob("lib/python*/site-packages"))
    # pip and the build backend from the dev environment, appended (never shadowing the copy)
    (purelib / "dev-env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # uv (bootstrap's first choice) offline with nothing cached cannot install: the pip
        # path runs, the one that printed the banner (uv builds quietly)
        "UV_OFFLINE": "1",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
    }
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        ["bash", "scripts/bootstrap"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert (venv / ".installed").exists(), output
    assert "uv unavailable: installing with pip" in output, output  # the path under test ran
    assert "Editable installation" not in output and "****" not in output, output
