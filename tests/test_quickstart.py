"""docs/quickstart.md, followed literally.

Every ```sh block of the page is run in order, from the repository root, the way a newcomer
would: the block marked ``terminal-1`` (``scripts/run``) stays running in the background as the
first terminal does, every other block runs to completion in a shell. ``console`` blocks are
output and placeholders, not commands. The environment is a fresh home directory — so the
default store (``~/.local/share/sessiond``), Pi's and Claude Code's directories are the ones a new
user has — with one real Claude Code transcript from ``tests/fixtures`` in ``~/.claude`` so the
"sessions of other agents" step has something to show.

Beyond exit codes, the outputs are checked for what the page says they show, and every
```` ```console output ```` block is compared with what the ```sh block before it printed (see
:func:`matches`): the page's sample output cannot go stale.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CLAUDE_FIXTURES, REPO
from tests.harness.daemon import wait_until_ready

PAGE = REPO / "docs" / "quickstart.md"
CLAUDE_FIXTURE = CLAUDE_FIXTURES / "ccl-2.1.42" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"

BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    """(marker, script) for every ```sh block, in page order."""
    found = []
    for lang, info, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if lang == "sh":
            found.append((info.strip(), body))
    return found


def expected_outputs() -> list[tuple[str, str]]:
    """(script of the ```sh block, the ```console output block after it), in page order."""
    found: list[tuple[str, str]] = []
    script: str | None = None
    for lang, info, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if lang == "sh":
            script = body
        elif lang == "console" and info.strip() == "output":
            assert script is not None, "an output block before any command"
            found.append((script, body))
    return found


ELLIPSIS = "…"


def _normal(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


def _line_pattern(line: str) -> re.Pattern[str]:
    """One expected line: whitespace runs are one space (table columns are sized by their
    contents), and ``…`` inside it stands for any text (ids, counts, a clipped preview)."""
    parts = [re.escape(p) for p in _normal(line).split(ELLIPSIS)]
    return re.compile(".*".join(parts))


def _fits(want: list[str], have: list[str]) -> bool:
    """Iterative over the expected lines; a gap tries every place its next line could match."""
    stack = [(0, 0)]
    seen: set[tuple[int, int]] = set()
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(want):
            if j == len(have):
                return True
            continue
        if want[i].strip() == ELLIPSIS:
            stack.extend((i + 1, k) for k in range(j, len(have) + 1))
        elif j < len(have) and _line_pattern(want[i]).fullmatch(have[j]):
            stack.append((i + 1, j + 1))
    return False


def matches(expected: str, actual: str) -> str | None:
    """None when ``actual`` fits ``expected``, else why not. A line that is only ``…`` stands
    for any number of lines (none included); otherwise the lines must follow each other, from
    the first line of the output to the last."""
    want = expected.rstrip("\n").split("\n")
    have = [_normal(line) for line in actual.rstrip("\n").split("\n")]
    if _fits(want, have):
        return None
    # Say where it went wrong: after the longest run of expected lines that still fits.
    k = next(k for k in range(len(want), -1, -1) if _fits([*want[:k], ELLIPSIS], have))
    missing = repr(want[k]) if k < len(want) else "the end of the output"
    return f"the page's line {k + 1}, {missing}, is not what was printed there"


def test_the_output_matcher() -> None:
    assert matches("a\n…\nc", "a\nb\nb2\nc") is None
    assert matches("a\n…\nc", "a\nc") is None
    assert matches("a  b\nx …", "a b\nx 123 tokens") is None
    assert matches("a\nc", "a\nb\nc") is not None
    assert matches("a\n…", "a\nanything\nelse") is None
    assert matches("…\nz", "a\nz\nq") is not None


def test_page_has_runnable_steps() -> None:
    found = blocks()
    assert [m for m, _ in found].count("terminal-1") == 1
    assert found[0] == ("terminal-1", "scripts/run\n")
    assert len(found) >= 8


@pytest.fixture
def newcomer() -> Iterator[dict[str, str]]:
    # A short HOME: the page uses the default store, whose socket is
    # $HOME/.local/share/sessiond/run/sessiond.sock, and a Unix socket's path has at most 107
    # bytes. Under a parallel worker's tmp_path (/tmp/pytest-of-root/pytest-N/popen-gwK/
    # test_quickstart_literally0/home) it had 112, and the daemon could not bind it.
    home = Path(tempfile.mkdtemp(prefix="qs-", dir="/tmp")) / "home"
    project = home / ".claude" / "projects" / "-work-demo"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE_FIXTURE, project / CLAUDE_FIXTURE.name)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SESSIOND_", "CLAUDE_", "PI_", "XDG_")) and k != "VIRTUAL_ENV"
    }
    env.update(HOME=str(home), NO_COLOR="1", PYTHONUNBUFFERED="1")
    yield env
    shutil.rmtree(home.parent, ignore_errors=True)


def test_quickstart_literally(newcomer: dict[str, str], tmp_path: Path) -> None:
    workspace = Path("/tmp/sessiond-quickstart")  # the page's path, as a user would type it
    shutil.rmtree(workspace, ignore_errors=True)
    store = Path(newcomer["HOME"]) / ".local" / "share" / "sessiond"
    log = tmp_path / "terminal-1.log"
    outputs: list[tuple[str, str]] = []
    daemon: subprocess.Popen[bytes] | None = None
    try:
        for marker, script in blocks():
            if marker == "terminal-1":
                with log.open("wb") as out:
                    daemon = subprocess.Popen(
                        ["bash", "-c", script],
                        cwd=REPO,
                        env=newcomer,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                # the first scripts/run may pip-install before the daemon starts
                wait_until_ready(store / "run" / "sessiond.sock", daemon, log, timeout=180)
                continue
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=REPO,
                env=newcomer,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            outputs.append((script, done.stdout))

        def output_of(command: str) -> str:
            return "\n".join(out for script, out in outputs if command in script)

        assert "Auth: sessions → cookies" in output_of("sessiond ls\n")
        tree = output_of("sessiond tree 019ad3e1")
        assert "◀ leaf" in tree and "⟳ compaction" in tree and "↳ branch summary" in tree
        assert "Now document the cookie flow" in output_of("sessiond show 019ad3e1")
        usage = json.loads(output_of("--json"))
        assert usage["sessionId"] == "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001"
        assert usage["used"] > 0 and usage["size"] > usage["used"]
        assert "Forked into" in output_of("sessiond fork")
        assert "compaction completed" in output_of("agent_loop.py")
        assert "Create hello.py" in output_of("ls --cwd /tmp/sessiond-quickstart")
        assert "fail" not in output_of("sessiond doctor").split("\n")[0]
        if CLAUDE_FIXTURE.exists():
            claude = output_of("ls --root claude")
            assert "claude-code" in claude, claude
        assert "◀ leaf" in output_of("tree examples/auth-refactor.jsonl")

        # The page's sample output is what the commands print now.
        samples = expected_outputs()
        assert len(samples) >= 3
        for script, expected in samples:
            actual = next(out for ran, out in outputs if ran == script)
            problem = matches(expected, actual)
            assert problem is None, (
                f"{script.strip()}\n{problem}\n--- the page\n{expected}--- printed\n{actual}"
            )

        # The label and the fork are in the files, where Pi would read them.
        files = sorted(store.joinpath("sessions").rglob("*.jsonl"))
        assert len(files) == 3  # the example, its fork, the agent's session
        example = next(f for f in files if "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001" in f.name)
        assert '"label":"cookies"' in example.read_text(encoding="utf-8")
    finally:
        if daemon is not None and daemon.poll() is None:
            os.killpg(daemon.pid, signal.SIGINT)  # Ctrl-C in terminal 1
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, signal.SIGKILL)
                daemon.wait()
                pytest.fail(f"Ctrl-C did not stop the daemon:\n{log.read_text()}")
        shutil.rmtree(workspace, ignore_errors=True)
    assert daemon is not None and daemon.returncode in (0, -signal.SIGINT, 130), log.read_text()
