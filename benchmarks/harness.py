"""What every benchmark shares: timing, the machine and its load, Pi, the daemon, the results.

A benchmark is a module of this package, run from the repository root as
``python -m benchmarks.<module>`` (children it starts are run the same way, see
:func:`module_command`). It defines

* ``BENCH``: a :class:`Bench` — its name in the report, what it measures and against what, the
  arguments of each ``run_all`` mode, the goals it is judged on;
* ``add_arguments(parser)``: its own flags (the common ones are added by :func:`main`);
* ``run(args) -> dict | None``: measure and return the results, JSON-able (``None`` when
  nothing was measured, e.g. ``--generate-only``);
* ``report(results)``: print them for a reader;
* ``extract(results) -> Extract``: the figures ``run_all`` puts in ``docs/benchmarks.md``, each
  beside the reference measured in the same run;

and ends with ``if __name__ == "__main__": raise SystemExit(main(sys.modules[__name__]))``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import math
import os
import platform
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Self

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "benchmarks"
OUT_DIR = BENCH_DIR / "out"
FIXTURES = REPO / "tests" / "fixtures"
"""The real session files kept in the repository (``tests/fixtures/README.md``)."""
MIB = 1 << 20
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the report (or its JSON)."""
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- timing


def monotonic() -> float:
    """CLOCK_MONOTONIC: one clock for every process of a run (start times, windows)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def pct(samples: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``samples``; NaN for none."""
    s = sorted(samples)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, int(q * len(s)))]


def summary(samples_s: list[float], wall_s: float) -> dict[str, float]:
    """p50/p99/max in microseconds and the rate, for latencies given in seconds."""
    return {
        "p50Us": pct(samples_s, 0.50) * 1e6,
        "p99Us": pct(samples_s, 0.99) * 1e6,
        "maxUs": max(samples_s) * 1e6 if samples_s else float("nan"),
        "perSec": len(samples_s) / wall_s if wall_s > 0 else float("nan"),
        "n": len(samples_s),
    }


def summary_ms(samples_s: list[float]) -> dict[str, float]:
    """p50/p99/max in milliseconds and the count, for latencies given in seconds."""
    return {
        "p50Ms": pct(samples_s, 0.50) * 1e3,
        "p99Ms": pct(samples_s, 0.99) * 1e3,
        "maxMs": max(samples_s) * 1e3 if samples_s else float("nan"),
        "n": len(samples_s),
    }


def ratio(a: float, b: float) -> str:
    """``a / b`` for a report's "x" column; ``-`` when either is missing (NaN) or ``b`` is 0."""
    if not b or b != b or a != a:
        return "-"
    return f"{a / b:.2f}"


def priced_usage(inp: int, output: int, cache_read: int, cache_write: int) -> dict[str, Any]:
    """A Pi assistant message's ``usage`` with its cost at Claude Sonnet's list prices, so that
    generated sessions carry realistic cost fields (their sum is what Pi adds up)."""
    cost = {
        "input": round(inp * 3e-6, 6),
        "output": round(output * 15e-6, 6),
        "cacheRead": round(cache_read * 3e-7, 6),
        "cacheWrite": round(cache_write * 3.75e-6, 6),
    }
    cost["total"] = round(sum(cost.values()), 6)
    return {
        "input": inp,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": inp + output + cache_read + cache_write,
        "cost": cost,
    }


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, every thread (exited ones too): ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


class Scratch:
    """Numbered scratch directories under one root on the repo's disk, removed at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        self._n = 0

    def new_dir(self, name: str) -> Path:
        self._n += 1
        d = self.root / f"{self._n:03d}-{name}"
        d.mkdir()
        return d

    def disk(self) -> str:
        """``/dev/vda1 ext4``: the device and file system holding the scratch root (``df``)."""
        out = subprocess.run(
            ["df", "--output=source,fstype", str(self.root)], capture_output=True, text=True, check=False
        ).stdout.split("\n")[1:2]
        return " ".join(" ".join(out).split())

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def module_command(module: str, *args: str) -> list[str]:
    """The command running ``module`` of this package in a fresh interpreter (``cwd`` = the repo)."""
    return [sys.executable, "-m", module, *args]


# --------------------------------------------------------------------------- Pi

PI_PKG_REL = Path("node_modules/@earendil-works/pi-coding-agent")


def find_oracle(explicit: str | None) -> tuple[Path | None, str]:
    """(Pi package dir, note). Order: --oracle, $PI_ORACLE_DIR, <repo>/.cache/pi-oracle, /tmp/pi-oracle."""
    if explicit:
        candidates = [Path(explicit)]
    else:
        candidates = [Path(p) for p in (os.environ.get("PI_ORACLE_DIR"),) if p]
        candidates += [REPO / ".cache" / "pi-oracle", Path("/tmp/pi-oracle")]
    for c in candidates:
        pkg = c / PI_PKG_REL
        if (pkg / "dist/core/session-manager.js").is_file():
            try:
                version = json.loads((pkg / "package.json").read_text())["version"]
            except (OSError, ValueError, KeyError):
                version = "?"
            return pkg, f"Pi {version} from {c}"
    tried = ", ".join(str(c) for c in candidates)
    return None, f"no pi-oracle found (tried {tried}); run scripts/setup-oracle or pass --oracle DIR"


# --------------------------------------------------------------------------- the daemon


class Daemon:
    """``python -m sessiond serve`` on a scratch dir, ready when a client completes ``initialize``.

    The store is ``<base>/store``, the socket ``<base>/run/sessiond.sock``, the log
    ``<base>/daemon.log``; Claude Code's and Pi's directories are ``<base>/claude`` and
    ``<base>/pi`` (created with their ``projects``/``sessions`` folders, so no root has to
    appear later), the config file ``<base>/config.toml`` holds ``config``. ``profile``: run
    under cProfile, writing the profile there on SIGTERM. ``env``: more environment.
    ``start()`` returns once the daemon answers — not when its socket file appears, which
    happens before it accepts. ``stop()`` sends SIGTERM (SIGKILL after 30 s). A context manager.
    """

    def __init__(
        self,
        base: Path,
        config: str = "",
        *,
        profile: Path | None = None,
        env: dict[str, str] | None = None,
        log_level: str = "warning",
    ) -> None:
        self.base = base
        self.store = base / "store"
        self.claude_projects = base / "claude" / "projects"
        self.pi_sessions = base / "pi" / "sessions"
        for d in (self.store / "sessions", self.claude_projects, self.pi_sessions):
            d.mkdir(parents=True, exist_ok=True)
        self.socket = base / "run" / "sessiond.sock"
        if len(os.fsencode(self.socket)) > SOCKET_PATH_MAX:
            # A deep scratch dir (run_all's smoke run under pytest: .../popen-gw0/run_all0/scratch/
            # compaction/compaction-tmp/002-daemon/...) makes a path the kernel refuses (`serve`
            # exits 2 saying so): the socket goes to a short directory of its own instead.
            short = tempfile.mkdtemp(prefix="sessiond-bench-")
            atexit.register(shutil.rmtree, short, True)  # the daemon may be started again till then
            self.socket = Path(short) / "sessiond.sock"
        self.log = base / "daemon.log"
        self.config = base / "config.toml"
        self.config.write_text(config)
        self.profile = profile
        self.log_level = log_level
        self.env = {
            **os.environ,
            "SESSIOND_HOME": str(self.store),
            "SESSIOND_CONFIG": str(self.config),
            "CLAUDE_CONFIG_DIR": str(base / "claude"),
            "PI_CODING_AGENT_DIR": str(base / "pi"),
            **(env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Self:
        prefix = [sys.executable]
        if self.profile is not None:
            prefix += ["-m", "cProfile", "-o", str(self.profile)]
        args = [
            *prefix,
            "-m",
            "sessiond",
            "serve",
            "--socket",
            str(self.socket),
            "--log-level",
            self.log_level,
        ]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=out, env=self.env, cwd=REPO)
        try:
            wait_until_ready(self.socket, self.process, self.log_text, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_indexed(self, timeout: float = 600.0) -> float:
        """See :func:`wait_indexed`."""
        return wait_indexed(self.socket, timeout)

    @property
    def pid(self) -> int:
        assert self.process is not None, "the daemon was not started"
        return self.process.pid

    def cpu(self) -> float:
        """CPU seconds the daemon used so far."""
        return process_cpu_seconds(self.pid)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> int | None:
        """SIGTERM (what flushes everything and, under cProfile, writes the profile); the exit
        code, or None when it had to be killed after 30 s."""
        p = self.process
        if p is None:
            return None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                return p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                return None
        return p.returncode

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        code = self.stop()
        if code not in (0, None) or "Traceback" in self.log_text():
            log(f"  daemon exited {code}:\n{self.log_text()[-2000:]}")


SOCKET_PATH_MAX = 107
"""Bytes of a Unix socket path the kernel takes (``sun_path`` is 108 with its NUL)."""


def wait_until_ready(
    sock: Path, process: subprocess.Popen[Any], log_text: Callable[[], str], timeout: float = 60.0
) -> None:
    """Return once a client can connect to ``sock`` and complete ``initialize`` (retried with
    backoff); raise RuntimeError with the daemon's log when it exits or the deadline passes."""
    deadline = time.monotonic() + timeout
    delay, last = 0.01, None
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {process.returncode}:\n{log_text()[-5000:]}")
        try:
            _initialize(sock)
            return
        except (OSError, ValueError) as exc:  # not listening yet, reset, torn answer
            last = exc
        if time.monotonic() + delay > deadline:
            raise RuntimeError(f"the daemon did not start ({last!r}):\n{log_text()[-5000:]}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _initialize(sock: Path) -> None:
    """``initialize`` then ``exit`` over NDJSON; returns once the daemon closed the connection."""
    _exchange(sock, [])


def _exchange(sock: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """``initialize``, then each ``(method, params)`` in turn, then ``exit``, over NDJSON: the
    answers (``result`` or ``error`` objects) of ``calls``, in order. Notifications are skipped."""
    initialize = {"protocolVersion": 1, "clientInfo": {"name": "benchmark-harness"}}
    answers: list[dict[str, Any]] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(sock))
        buffer = b""
        for i, (method, params) in enumerate([("initialize", initialize), *calls], start=1):
            request = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
            s.sendall(json.dumps(request).encode() + b"\n")
            while True:
                while b"\n" not in buffer:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise ConnectionResetError(f"closed before answering {method}")
                    buffer += chunk
                line, buffer = buffer.split(b"\n", 1)
                answer = json.loads(line)
                if answer.get("id") == i:
                    break
            if i == 1:
                if "result" not in answer:
                    raise RuntimeError(f"the daemon refused initialize: {answer}")
            else:
                answers.append(answer)
        s.sendall(b'{"jsonrpc":"2.0","method":"exit"}\n')
        while s.recv(65536):
            pass
    return answers


def wait_indexed(sock: Path, timeout: float = 600.0) -> float:
    """Wait until the daemon's first read of the roots is over (the search index and the usage
    records report ``indexing: null``): a figure of steady work measured while that build
    still runs measures the build. Returns the seconds waited. A daemon without search or
    stats (an error answer) counts as done for that part."""
    t0 = time.monotonic()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search/query", {"query": "indexed", "limit": 1}),
        ("stats/query", {"groupBy": "daily", "since": "2000-01-01"}),
    ]
    while True:
        answers = _exchange(sock, calls)
        if all((a.get("result") or {}).get("indexing") is None for a in answers):
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"the daemon's first indexing did not finish within {timeout:g} s: {answers}")
        time.sleep(0.2)


# --------------------------------------------------------------------------- the machine and its load


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _cmd_version(cmd: list[str]) -> str | None:
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    try:
        out = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else None


def filesystem_of(path: Path) -> str:
    """``/dev/vda1 ext4 (mounted on /)``: the mount holding ``path``, from /proc/self/mountinfo."""
    real = os.path.realpath(path)
    best: tuple[int, str] = (-1, "unknown")
    for line in _read("/proc/self/mountinfo").splitlines():
        parts = line.split()
        if " - " not in line or len(parts) < 5:
            continue
        mount = parts[4].replace("\\040", " ")
        tail = line.split(" - ", 1)[1].split()
        if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) > best[0]:
            best = (len(mount), f"{tail[0]} on {tail[1] if len(tail) > 1 else '?'} (mounted at {mount})")
    return best[1]


def describe_machine(oracle_note: str, scratch: Path) -> dict[str, Any]:
    """Everything a reader needs to compare these numbers with theirs."""
    cpuinfo = _read("/proc/cpuinfo")
    model = next(
        (ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")), None
    )
    flags = next((ln for ln in cpuinfo.splitlines() if ln.startswith("flags")), "")
    mem = {
        ln.split(":")[0]: int(ln.split()[1]) for ln in _read("/proc/meminfo").splitlines() if ln.split()[1:2]
    }
    try:
        git = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        git = ""
    versions = {}
    for pkg in ("orjson", "pygls", "watchfiles", "pydantic"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[pkg] = metadata.version(pkg)
    return {
        "cpuModel": model or platform.processor() or "unknown",
        "virtual": " hypervisor" in flags,
        "cpus": os.cpu_count(),
        "cpusUsable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memTotalGiB": mem.get("MemTotal", 0) / MIB,
        "memAvailableGiB": mem.get("MemAvailable", 0) / MIB,
        "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
        "os": _os_name(),
        "scratchDir": os.path.relpath(scratch, REPO) if scratch.is_relative_to(REPO) else str(scratch),
        "scratchFs": filesystem_of(scratch if scratch.exists() else REPO),
        "tempDir": tempfile.gettempdir(),
        "tempFs": filesystem_of(Path(tempfile.gettempdir())),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": versions,
        "node": _cmd_version(["node", "--version"]),
        "pi": oracle_note,
        "sessiond": git or "unknown",
    }


def _os_name() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.platform()


def _cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    parts = _read("/proc/stat").splitlines()[0].split()[1:]
    vals = [float(x) for x in parts]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    total = sum(vals[:8])
    return total - idle, total


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [float(x) for x in _read("/proc/loadavg").split()[:3]] or [float("nan")] * 3


class LoadMonitor:
    """Load of the machine while benchmarks run: /proc/loadavg and the CPU not used by them."""

    def __init__(self) -> None:
        self.start = loadavg()
        self.samples: list[float] = [self.start[0]]
        self._cpu0 = _cpu_times()
        self._self0 = self._own_cpu()
        self._t0 = time.monotonic()

    @staticmethod
    def _own_cpu() -> float:
        """CPU seconds of this process and its finished children (every benchmark and its daemons)."""
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    def sample(self) -> None:
        """Record the 1-minute load average now (called between benchmarks)."""
        self.samples.append(loadavg()[0])

    def finish(self, note: str | None) -> dict[str, Any]:
        """Summary: load averages, and the CPU other processes used, as cores on average."""
        end = loadavg()
        busy1, total1 = _cpu_times()
        wall = time.monotonic() - self._t0
        cpus = os.cpu_count() or 1
        busy_s = (busy1 - self._cpu0[0]) / CLK_TCK
        own_s = self._own_cpu() - self._self0
        other = max(0.0, busy_s - own_s)
        return {
            "start": self.start,
            "end": end,
            "min1": min([*self.samples, end[0]]),
            "max1": max([*self.samples, end[0]]),
            "wallSeconds": wall,
            "machineBusyCores": busy_s / wall if wall > 0 else float("nan"),
            "ownCores": own_s / wall if wall > 0 else float("nan"),
            "otherCores": other / wall if wall > 0 else float("nan"),
            "cpus": cpus,
            "totalJiffies": total1 - self._cpu0[1],
            "note": note,
        }


# --------------------------------------------------------------------------- results and the report


@dataclass(frozen=True)
class Goal:
    """A goal set by an earlier issue: ``subject op threshold`` (subject: the row's value or ratio)."""

    key: str
    issue: int
    text: str
    """The goal in the issue's words."""
    op: str
    threshold: float
    on: str = "value"
    """``value``: judged on the row's value (in ``unit``); ``ratio``: on value / reference."""
    unit: str = ""
    reading: str = ""
    """How run_all turns a goal the issue states in words into a number, when it had to."""

    def met(self, x: float) -> bool:
        """Whether ``x`` satisfies the goal (NaN never does)."""
        if math.isnan(x):
            return False
        return {"<": x < self.threshold, "<=": x <= self.threshold, ">=": x >= self.threshold}[self.op]

    def describe(self) -> str:
        """``< 2 ms``, ``<= 1.00x``: the threshold as the table shows it."""
        op = {"<": "<", "<=": "≤", ">=": "≥"}[self.op]
        if self.on == "ratio":
            return f"{op} {self.threshold:.2f}x"
        return f"{op} {fmt(self.threshold)} {self.unit}"


@dataclass
class Row:
    """One figure of sessiond's, beside the reference measured in the same run."""

    figure: str
    value: float
    unit: str
    reference: str | None = None
    ref_value: float | None = None
    goal: Goal | None = None

    @property
    def ratio(self) -> float | None:
        """value / reference; None without a reference or when the reference is 0."""
        if self.ref_value is None or not self.ref_value or math.isnan(self.ref_value):
            return None
        return self.value / self.ref_value

    @property
    def judged(self) -> float | None:
        """The number the goal is judged on (value or ratio)."""
        if self.goal is None:
            return None
        return self.value if self.goal.on == "value" else self.ratio

    @property
    def met(self) -> bool | None:
        """Goal verdict, None when the row has no goal."""
        if self.goal is None:
            return None
        j = self.judged
        return False if j is None else self.goal.met(j)


@dataclass
class Extract:
    """What a benchmark's results say: rows, notes, and why a goal could not be judged."""

    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    """sessiond and its reference disagree on the work done: the figures then do not compare."""
    unmeasured: dict[str, str] = field(default_factory=dict)

    def add(self, *args: Any, **kw: Any) -> None:
        """Add a row, dropping it when the value is missing (a section not run in this mode)."""
        row = Row(*args, **kw)
        if row.value is None:
            return
        self.rows.append(row)


def fmt(v: float | None) -> str:
    """A number for a table: 3 significant digits below 100, integers with separators above."""
    if v is None:
        return "—"
    if math.isnan(v) or math.isinf(v):
        return "nan"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:.3g}"


@dataclass(frozen=True)
class Bench:
    """How ``run_all`` runs a benchmark module in each mode and presents it in the report."""

    name: str
    """Its name in the report (``## <name>: <title>``) and in ``run_all --only``."""
    module: str
    """The module run as ``python -m <module>``."""
    title: str
    references: str
    """What its figures are compared with, in words."""
    args: dict[str, tuple[str, ...]]
    """Arguments per ``run_all`` mode (``smoke``, ``quick``, ``full``)."""
    goals: tuple[Goal, ...] = ()
    takes_oracle: bool = False
    """It compares with Pi's own code: ``--oracle DIR`` is accepted (and passed by run_all)."""
    quick: str = "smaller inputs, fewer runs"
    """What ``--quick`` does (its help text)."""


def with_total(print_report: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """A module's ``report``: its tables, then how long the whole run took."""

    def report(res: dict[str, Any]) -> None:
        print_report(res)
        print(f"\n(total {res['totalSeconds']:.0f} s)")

    return report


def main(module: ModuleType, argv: list[str] | None = None) -> int:
    """The command line of a benchmark module: its flags plus the common ones, ``run``, then the
    results as a report (or JSON with ``--json``), and as JSON in ``--json-out`` for run_all."""
    argv = sys.argv[1:] if argv is None else argv
    child = getattr(module, "child", None)
    if child is not None and argv and argv[0].startswith("_"):
        code: int = child(argv)  # a worker process the benchmark started itself
        return code
    bench: Bench = module.BENCH
    doc = module.__doc__ or ""
    ap = argparse.ArgumentParser(
        prog=f"python -m {bench.module}",
        description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help=bench.quick)
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    ap.add_argument(
        "--json-out", metavar="PATH", help="also write the JSON results to PATH (report printed as usual)"
    )
    ap.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        default=OUT_DIR,
        help="generated inputs (cached) and scratch files go under DIR (default benchmarks/out)",
    )
    if bench.takes_oracle:
        ap.add_argument("--oracle", metavar="DIR", help="pi-oracle install dir (default: see find_oracle)")
    module.add_arguments(ap)
    args = ap.parse_args(argv)
    results = module.run(args)
    if results is None:
        return 0
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1) + "\n")
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        module.report(results)
    return 0
