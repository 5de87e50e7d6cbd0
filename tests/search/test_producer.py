"""The first build's reading process (:mod:`sessiond.search.producer`) hands the writer exactly
what the read-ahead thread makes of the same files (every Claude Code, Codex and Pi file of
tests/fixtures), and a build whose reading process fails or dies still indexes every file
(the writer reads the rest itself) and leaves no process behind. (What the readers make of
the files is checked against the daemon's own readers in test_readers.)"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.search import engine as engine_module
from sessiond.search import producer
from sessiond.search.blocks import NONCE
from sessiond.search.engine import SearchEngine, SourceFile, stat_signature
from sessiond.search.index import Filters, Signature
from sessiond.search.producer import WorkerReadAhead
from sessiond.search.readahead import ReadFile
from sessiond.search.readers import FILE_AGENTS, open_for_index

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
AGENTS = {"claude-code": "claude-code", "codex": "codex", "pi": "pi"}
FILES = [
    SourceFile(str(path), agent, agent)
    for folder, agent in AGENTS.items()
    for path in sorted((FIXTURES / folder).rglob("*.jsonl"))
    if path.name != "session_index.jsonl"
]


class FixtureSource:
    """Every session file of tests/fixtures, read as the daemon's source reads them."""

    worker_agents = FILE_AGENTS

    def files(self) -> Iterator[SourceFile]:
        yield from FILES

    def classify(self, path: str) -> SourceFile | None:
        return next((f for f in FILES if f.path == path), None)

    def signature(self, path: str) -> Signature | None:
        return stat_signature(path)

    def open(self, file: SourceFile, *, follow: bool = False) -> Any:
        return open_for_index(file.agent, Path(file.path))


def test_there_are_files_of_each_agent() -> None:
    assert {f.agent for f in FILES} == set(AGENTS)
    assert len(FILES) >= 25


def _comparable(read: ReadFile | None) -> Any:
    """A read with its blocks' random nonces cut off (the rest must be equal byte for byte)."""
    if read is None or read.prepared is None:
        return read
    blocks = [(start, data[NONCE:]) for start, data in read.prepared.blocks]
    return (read.path, read.sig, read.meta, read.docs, read.nodes, read.prepared._replace(blocks=blocks))


@pytest.mark.parametrize("workers", [1, 2])
def test_the_worker_reads_what_the_thread_reads(tmp_path: Path, workers: int) -> None:
    engine = SearchEngine(tmp_path / "index.sqlite3", FixtureSource(), exclude=("/nowhere/*",))
    ahead = WorkerReadAhead(FILES, engine._read_file, FILE_AGENTS, workers)
    docs = 0
    try:
        for file in FILES:
            got = ahead.take(file.path, lambda: False)
            assert got is not None, file.path
            assert _comparable(got) == _comparable(engine._read_ahead(file)), file.path
            docs += len(got.docs)
    finally:
        ahead.close()
    assert all(w.proc.poll() is not None for w in ahead.workers)  # reaped
    assert docs > 1000


NEEDLES = ("the", "def", "error", "README", "json")
REAL_COMMAND = list(producer.COMMAND)


def _build(index: Path, worker: bool) -> SearchEngine:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "WORKER_MIN_BYTES", 0 if worker else 1 << 60)
        engine = SearchEngine(index, FixtureSource())
        engine.start()
        engine.flush()
        deadline = time.monotonic() + 120  # only a bound for "it finished at all"
        while engine.progress is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        engine.flush()
    return engine


def _hits(engine: SearchEngine) -> dict[str, Any]:
    """Every needle's hits (the first 200 of them, and how many there are)."""
    found: dict[str, Any] = {"bytes read": engine.bytes_read}
    for needle in NEEDLES:
        page = engine.search(match=None, needle=needle, filters=Filters(), offset=0, limit=200)
        found[needle] = (page.total, sorted((h.session_id, h.entry_id, h.kind, h.snippet) for h in page.hits))
    return found


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What a build without reading processes finds."""
    engine = _build(tmp_path_factory.mktemp("thread") / "index.sqlite3", worker=False)
    try:
        return _hits(engine)
    finally:
        engine.close()


@pytest.mark.parametrize(
    "command",
    [
        REAL_COMMAND,
        [sys.executable, "-c", "import sys; sys.exit(3)"],
        [
            sys.executable,
            "-c",
            "import marshal, os, sys; from sessiond.search import worker; "
            "jobs = marshal.loads(sys.stdin.buffer.read()); "
            "worker.serve(jobs[:3], sys.stdout.buffer); os._exit(9)",
        ],
    ],
    ids=["works", "fails-at-once", "dies-after-three-files"],
)
def test_a_build_with_workers_indexes_what_one_without_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], reference: dict[str, Any]
) -> None:
    monkeypatch.setattr(producer, "COMMAND", command)
    started: list[WorkerReadAhead] = []
    real = producer.WorkerReadAhead.__init__

    def spy(self: WorkerReadAhead, *args: Any) -> None:
        real(self, *args)
        started.append(self)

    monkeypatch.setattr(producer.WorkerReadAhead, "__init__", spy)
    built = _build(tmp_path / "index.sqlite3", worker=True)
    try:
        assert started, "the build did not start a reading process"
        # no process left once the build ended
        assert all(w.proc.poll() is not None for w in started[0].workers)
        # the working one sent every file; the others' files were read by the writer
        assert any(w.broken for w in started[0].workers) == (command != REAL_COMMAND)
        assert _hits(built) == reference
    finally:
        built.close()


def test_a_build_stopped_early_leaves_no_process(tmp_path: Path) -> None:
    engine = SearchEngine(tmp_path / "index.sqlite3", FixtureSource())
    ahead = WorkerReadAhead(FILES, engine._read_file, FILE_AGENTS, 2)
    assert ahead.take(FILES[0].path, lambda: False) is not None
    ahead.close()  # the engine closing mid-build (SearchEngine._stop_read_ahead)
    assert all(w.proc.poll() is not None for w in ahead.workers)


def test_a_worker_that_cannot_start_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second worker fails to start: the first one is stopped, the engine reads in a thread."""
    started: list[Any] = []
    real = producer._Worker.__init__

    def second_fails(self: Any, *args: Any) -> None:
        if started:
            raise OSError("no more processes")
        real(self, *args)
        started.append(self)

    monkeypatch.setattr(producer._Worker, "__init__", second_fails)
    engine = SearchEngine(tmp_path / "index.sqlite3", FixtureSource())
    with pytest.raises(OSError, match="no more processes"):
        WorkerReadAhead(FILES, engine._read_file, FILE_AGENTS, 2)
    assert started and started[0].proc.poll() is not None


def test_a_worker_that_dies_has_its_last_words_logged(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: dict[str, Any],
) -> None:
    """What a dying reading process wrote last (a traceback's last line) is in the daemon's log,
    with its exit code, instead of nothing: its standard error went to /dev/null."""
    monkeypatch.setattr(
        producer,
        "COMMAND",
        [
            sys.executable,
            "-c",
            "import marshal, os, sys; from sessiond.search import worker; "
            "jobs = marshal.loads(sys.stdin.buffer.read()); "
            "worker.serve(jobs[:2], sys.stdout.buffer); sys.stdout.flush(); "
            "sys.stderr.write('Traceback (most recent call last):\\n  File x\\n"
            "MemoryError: the worker ran out ' + 'x' * 400 + '\\n'); sys.stderr.flush(); os._exit(7)",
        ],
    )
    caplog.set_level("WARNING", logger="sessiond.search")
    built = _build(tmp_path / "index.sqlite3", worker=True)
    try:
        assert _hits(built) == reference  # the writer read the rest
    finally:
        built.close()
    said = [r.getMessage() for r in caplog.records if "reading process stopped" in r.getMessage()]
    assert len(said) == producer.WORKERS, said  # each of them died so
    for line in said:
        assert "exit code 7" in line
        assert "; it said: MemoryError: the worker ran out xxx" in line
        assert line.count("x") < 400 and "…" in line  # cut to LAST_WORDS characters
