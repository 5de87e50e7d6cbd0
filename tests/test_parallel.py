"""The suite's parallel run (scripts/test, docs/testing.md): its table of files stays true.

``tests/conftest.py`` names files by path (the ones sharing a place they write, the long ones
handed out first); a file renamed or moved would silently leave its group, so each name must
still be there.
"""

from __future__ import annotations

from tests.conftest import HEAVY_FIRST, REPO, SHARED_GROUPS, work_unit


def test_every_file_named_for_the_parallel_run_exists() -> None:
    missing = [p for p in (*SHARED_GROUPS, *HEAVY_FIRST) if not (REPO / p).exists()]
    assert missing == []


def test_a_file_is_a_unit_of_work_unless_it_shares_a_group() -> None:
    assert work_unit("tests/cli/test_tail.py::test_x[a::b]") == "tests/cli/test_tail.py"
    assert work_unit("tests/web/test_vscode.py::test_y") == work_unit("tests/web/test_code_server.py::test_z")
    assert work_unit("tests/web/test_vscode.py::test_y") != work_unit("tests/web/test_server.py::test_y")


def test_the_test_script_runs_the_suite_on_workers_with_these_units() -> None:
    script = (REPO / "scripts" / "test").read_text()
    assert "-n 2 --dist loadfile --no-loadscope-reorder" in script


def test_the_test_script_runs_every_setup_script() -> None:
    """The set-up steps run in parallel lanes (scripts/test): none may fall out of them."""
    script = (REPO / "scripts" / "test").read_text()
    setups = sorted(p.name for p in (REPO / "scripts").glob("setup-*"))
    assert setups, "no scripts/setup-*"
    lanes = script.split("lanes=(", 1)[1].split("\n)", 1)[0]
    missing = [name for name in setups if f'"{name}: ' not in lanes and f";{name}: " not in lanes]
    assert missing == []
    assert "scripts/test-vscode --install" in script


def test_mypy_beside_pytest_still_decides_the_run() -> None:
    """mypy runs beside pytest (scripts/test): its exit status is still waited for and counted."""
    script = (REPO / "scripts" / "test").read_text()
    started = script.index(".venv/bin/mypy >")
    assert started < script.index("-m pytest")
    assert script.index('wait "$mypy_pid" || mypy_status=$?') > script.index("-m pytest")
    assert script.rstrip().endswith('exit "$status"')
