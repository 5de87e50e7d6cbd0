"""The viewer's built files, committed in ``sessiond/web/static``, are what its sources build to.

``sessiond ui`` must work on an install without Node, so the build output ships in the
package; this rebuilds ``clients/web`` (Vite, from the committed lock file) into a temporary
directory and fails when the committed files differ: run ``npm run build`` in clients/web and
commit the result. Also checks the type-check (``tsc --noEmit``) and that the page only refers
to files that are there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sessiond.web.server import STATIC, load_assets

WEB = Path(__file__).parents[2] / "clients" / "web"
TOOLS = WEB / "node_modules" / ".bin"

needs_tools = pytest.mark.skipif(
    shutil.which("node") is None or not (TOOLS / "vite").exists(),
    reason="the front-end's tools are not installed (scripts/setup-web-tests)",
)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_tools
@pytest.mark.slow
def test_the_committed_build_is_fresh(tmp_path: Path) -> None:
    out = tmp_path / "static"
    run = subprocess.run(
        [str(TOOLS / "vite"), "build", "--logLevel", "error"],
        cwd=WEB,
        env={**os.environ, "SESSIOND_WEB_OUT": str(out)},
        capture_output=True,
        check=False,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    built, committed = tree(out), tree(STATIC)
    stale = sorted(name for name in built.keys() | committed.keys() if built.get(name) != committed.get(name))
    assert not stale, (
        f"sessiond/web/static is stale ({', '.join(stale)}): run `npm run build` in clients/web and commit it"
    )


@needs_tools
@pytest.mark.slow
def test_the_sources_type_check() -> None:
    run = subprocess.run(
        [str(TOOLS / "tsc"), "-p", "tsconfig.json", "--noEmit"],
        cwd=WEB,
        capture_output=True,
        check=False,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_page_refers_only_to_shipped_files() -> None:
    assets = load_assets()
    index = assets["/"].body.decode()
    refs = re.findall(r'(?:src|href)="(/assets/[^"]+)"', index)
    assert refs, index
    assert all(ref in assets for ref in refs)
    assert all(a.immutable for path, a in assets.items() if path.startswith("/assets/"))
    assert not assets["/"].immutable
