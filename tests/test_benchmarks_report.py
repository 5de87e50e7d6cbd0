"""benchmarks.run_all: the report it writes, and that docs/benchmarks.md is its untouched output.

One real run of every benchmark module in ``--smoke`` mode (minimal sizes, four at a time) except
``rpc``, whose smallest run still starts five daemons and dozens of client processes (~15 s on a
loaded 2-core machine); rpc's section is checked in the committed report instead. No timing is asserted: the
numbers are noise at these sizes, only their presence and shape are.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run_all

REPO = Path(__file__).resolve().parent.parent
RUN_ALL = (sys.executable, "-m", "benchmarks.run_all")
DOC = REPO / "docs" / "benchmarks.md"
SMOKE_SKIP = {"rpc", "ui"}
"""Too slow for a smoke run (rpc), or needing a browser the web tests already drive (ui)."""
NAMES = [b.name for b in run_all.BENCHMARKS]


def _sections(text: str) -> dict[str, str]:
    """``## heading`` -> its body."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _bench_section(sections: dict[str, str], name: str) -> str:
    hits = [body for head, body in sections.items() if head.startswith(f"{name}: ")]
    assert len(hits) == 1, f"expected one section for {name}, got {len(hits)}"
    return hits[0]


def _table(body: str) -> list[list[str]]:
    """Rows of the first markdown table in ``body`` (header and separator dropped)."""
    rows = [ln for ln in body.splitlines() if ln.startswith("|")]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in rows]
    return cells[2:]


def _number(cell: str) -> float:
    """A numeric cell as the report writes it (``1,234``, ``0.45x``, ``3.9e-05x``)."""
    return float(cell.replace(",", "").removesuffix("x"))


def _check_bench_table(body: str, name: str) -> int:
    """Every value, reference value and ratio is a number or ``—``; returns the rows with a ratio."""
    rows = _table(body)
    assert rows, f"{name}: no figures"
    with_ratio = 0
    for figure, value, reference, ref_value, unit, ratio, goal in rows:
        assert figure and unit, (name, figure)
        _number(value)
        if reference == "—":
            assert ref_value == "—" and ratio == "—", (name, figure)
            continue
        ref = _number(ref_value)
        if ratio != "—":
            r = _number(ratio)
            assert r == pytest.approx(_number(value) / ref, rel=0.06, abs=1e-3), (name, figure, ratio)
            with_ratio += 1
        if goal:
            assert re.search(r"\*\*(MET|NOT MET)\*\*$", goal), (name, goal)
    return with_ratio


def _check_report(text: str, ran: list[str]) -> dict[str, str]:
    assert run_all.check_report(text) == []
    sections = _sections(text)
    for head in ("Machine", "Load", "Goals", "Shortfalls"):
        assert head in sections, head
    machine = sections["Machine"]
    for label in (
        "CPU",
        "cores",
        "RAM",
        "kernel",
        "filesystem of the temp dir",
        "Python",
        "Node",
        "Pi",
        "date",
    ):
        assert re.search(rf"^\| {re.escape(label)}\b.*\| \S", machine, flags=re.M), label
    assert re.search(r"Load average \(1/5/15 min\) [\d.]+/[\d.]+/[\d.]+ at the start", sections["Load"])
    for name in NAMES:
        body = _bench_section(sections, name)
        if name in ran:
            assert _check_bench_table(body, name) > 0, f"{name}: no figure has a ratio"
        else:
            assert "Not run in this invocation" in body
    # every goal not met or not measured is a shortfall, and nothing else is a goal shortfall
    goal_rows = _table(sections["Goals"])
    assert goal_rows, "no goals judged"
    bad = [r for r in goal_rows if r[-1] in ("**NOT MET**", "**NOT MEASURED**")]
    assert all(r[-1] in ("**MET**", "**NOT MET**", "**NOT MEASURED**") for r in goal_rows)
    bullets = [ln for ln in sections["Shortfalls"].splitlines() if ln.startswith("* ") and "(issue " in ln]
    assert len(bullets) == len(bad)
    return sections


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One smoke run of run_all: report text, the saved results and the paths."""
    tmp = tmp_path_factory.mktemp("run_all")
    out, work = tmp / "report.md", tmp / "work"
    ran = [n for n in NAMES if n not in SMOKE_SKIP]
    proc = subprocess.run(
        [
            *RUN_ALL,
            # four at a time: a smoke run mostly waits (daemons starting, idle windows), ~4 times
            # shorter than one after the other (278 -> 76 s on a loaded 2-core machine)
            *("--smoke", "--jobs", "4", "--only", ",".join(ran)),
            *("--output", str(out), "--work", str(work), "--scratch", str(tmp / "scratch")),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        # a hang guard, not a speed check: ~1-2 min beside the other test worker (it was 2-5 min
        # one benchmark at a time, and ran out of 300 s on a machine loaded by other suites)
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"text": out.read_text(), "ran": ran, "tmp": tmp, "results": work / "results.json"}


@pytest.mark.slow
def test_smoke_report_structure(smoke: dict[str, Any]) -> None:
    sections = _check_report(smoke["text"], smoke["ran"])
    assert "smoke" in smoke["text"].splitlines()[0]
    results = json.loads(smoke["results"].read_text())
    pi = results["piAvailable"]
    inspect_body = _bench_section(sections, "inspect")
    assert ("Pi SessionManager.open" in inspect_body) == pi
    if not pi:
        assert "Pi-based figures skipped" in sections["Load"]


def _rerender(smoke: dict[str, Any], state: dict[str, Any], name: str) -> tuple[int, str]:
    path = smoke["tmp"] / f"{name}.json"
    out = smoke["tmp"] / f"{name}.md"
    path.write_text(json.dumps(state))
    proc = subprocess.run(
        [*RUN_ALL, "--from-results", str(path), "--output", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.returncode, out.read_text()


@pytest.mark.slow
def test_goal_verdicts_follow_the_numbers(smoke: dict[str, Any]) -> None:
    """The same results re-rendered with the 10 MB session's RSS made huge: the goal flips."""
    state = json.loads(smoke["results"].read_text())
    before = _sections(run_all.render(state))
    assert "RSS after open per MB of file" in _bench_section(before, "journal")
    worse = copy.deepcopy(state)
    big = max(worse["benchmarks"]["journal"]["results"]["open"], key=lambda r: r["sizeMB"])
    big["session"]["rssPerMB"] = 3.0
    rc, text = _rerender(smoke, worse, "worse")
    assert rc == 0
    sections = _check_report(text, smoke["ran"])
    rss = [r for r in _table(sections["Goals"]) if "memory after open" in r[1]]
    assert len(rss) == 1 and rss[0][-1] == "**NOT MET**" and rss[0][5].startswith("3.00 MB/MB")
    assert "memory after open well under the file size" in sections["Shortfalls"]


@pytest.mark.slow
def test_a_failed_benchmark_is_reported(smoke: dict[str, Any]) -> None:
    state = json.loads(smoke["results"].read_text())
    rec = state["benchmarks"]["watch"]
    del rec["results"]
    rec["error"], rec["errorTail"] = "exit status 1", ["Traceback (most recent call last):", "boom"]
    rc, text = _rerender(smoke, state, "failed")
    assert rc == 1
    sections = _sections(text)
    assert "**FAILED**: exit status 1" in _bench_section(sections, "watch")
    assert "**watch** did not run to the end" in sections["Shortfalls"]
    assert re.search(r"\| watch \|.*\*\*NOT MEASURED\*\*", sections["Goals"])


@pytest.mark.slow
def test_an_edited_report_is_detected(smoke: dict[str, Any]) -> None:
    text = smoke["text"]
    assert run_all.check_report(text) == []
    assert run_all.check_report(text.replace("| CPU |", "| CPU model |", 1))
    assert run_all.check_report(text.split("\n", 1)[1])


def test_committed_report_is_generated_by_run_all() -> None:
    """docs/benchmarks.md: the script's untouched output, from a run of every benchmark."""
    text = DOC.read_text()
    header = text.splitlines()[0]
    assert re.search(r"--mode (quick|full);", header), header
    sections = _check_report(text, NAMES)
    heads = [h.split(":")[0] for h in sections if ":" in h]
    assert heads == NAMES, "the report's sections differ from run_all.BENCHMARKS: regenerate it"
    assert f"benchmarks: {','.join(NAMES)};" in header


@pytest.mark.parametrize("mode", ["--quick", "--mode=full"])
def test_benchmarks_run_side_by_side_only_in_a_smoke_run(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A measuring run never runs two benchmarks at once: they would measure each other."""
    with pytest.raises(SystemExit) as exc:
        run_all.main([mode, "--jobs", "2", "--only", "inspect", "--output", "/dev/null"])
    assert exc.value.code == 2
    assert "--jobs above 1 only with --smoke" in capsys.readouterr().err


def test_a_daemon_in_a_deep_scratch_dir_still_gets_a_socket(tmp_path: Path) -> None:
    """The smoke run under pytest puts a benchmark's daemon deep enough that its socket path
    passed the kernel's 107 bytes (a clean-clone CI run: compaction and filehistory failed,
    `serve` exiting 2): the harness then puts the socket in a short directory of its own."""
    import os  # noqa: PLC0415

    from benchmarks.harness import SOCKET_PATH_MAX, Daemon  # noqa: PLC0415

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    assert len(os.fsencode(deep / "run" / "sessiond.sock")) > SOCKET_PATH_MAX
    with Daemon(deep) as daemon:
        daemon.start()
        assert len(os.fsencode(daemon.socket)) <= SOCKET_PATH_MAX
        assert daemon.wait_indexed() >= 0  # it answers requests on that socket
