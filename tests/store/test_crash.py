"""Crashes and faults of the store: writers killed with SIGKILL, torn tails, full disks, failed syncs.

The crash tests run ``crash_writer.py`` in real processes, kill them at random (seeded) moments
while they append, and check what a crash may and may not leave behind: the file loads, every
acknowledged entry is there exactly once, at most the last line is torn, and the next append
repairs a torn tail without losing anything. Kills land both in fresh files and in files that
earlier kills already tore (the next writer then repairs the tail first).
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiond.errors import JournalBrokenError, JournalError
from sessiond.formats.pi import encode_line, load_session
from sessiond.model import entries as E
from sessiond.store import journal as journal_module
from sessiond.store.journal import Durability
from sessiond.store.session import Session
from tests.builders import assistant, user

REPO = Path(__file__).resolve().parents[2]
WRITER = "tests.store.crash_writer"
SEED = 8345
MODES = [Durability.BUFFERED, Durability.FSYNC]

FRESH_KILLS = 13
"""Kills per mode, each in a new session file."""
CHAINS = 3
CHAIN_KILLS = 4
"""Kills per chain: the first creates the file, the next ones reopen what the kill before left."""
DELAY_MS = (20, 200)
assert len(MODES) * (FRESH_KILLS + CHAINS * CHAIN_KILLS) >= 50


# ---------------------------------------------------------------------------- the writer process


@dataclass
class Killed:
    path: Path | None
    acked: list[str]


def run_and_kill(action: str, target: Path, mode: Durability, seed: int, delay: float) -> Killed:
    """Start the writer, let it append for ``delay`` seconds after it is ready, SIGKILL it."""
    err_path = target.parent / f"writer-{seed}.stderr" if action == "open" else target / "writer.stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", WRITER, action, str(target), mode.value, str(seed)],
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=REPO,
        )
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: list[bytes] = []
    ready = threading.Event()

    def read() -> None:
        for raw in stdout:
            lines.append(raw)
            if raw == b"ready\n":
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60), "the writer never got ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(10)
        stdout.close()
    stderr = err_path.read_text(errors="replace")
    err_path.unlink()
    assert proc.returncode == -signal.SIGKILL, f"the writer ended on its own ({proc.returncode}):\n{stderr}"
    path: Path | None = None
    acked: list[str] = []
    after_ready = False
    for raw in lines:
        if not raw.endswith(b"\n"):
            break  # killed in the middle of printing: that id was not reported
        text = raw[:-1].decode()
        if text.startswith("path "):
            path = Path(text[5:])
        elif text == "ready":
            after_ready = True
        elif after_ready:
            acked.append(text)
    return Killed(path, acked)


# ---------------------------------------------------------------------------- checks


def _is_json(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


@dataclass
class FileState:
    """What a kill left: entry ids in file order and the junk lines it is allowed to contain."""

    ids: list[Any] = field(default_factory=list)
    junk: list[bytes] = field(default_factory=list)
    """Fragments torn by earlier kills (each became a junk line when the next writer repaired it)."""
    tail: bytes = b""
    """An unterminated last line (empty when the file ends with a newline)."""


def check_after_kill(path: Path, acked: list[str], earlier_junk: list[bytes]) -> FileState:
    data = path.read_bytes()
    loaded = load_session(path)  # must not raise: the file always loads
    ids = [e.get("id") for e in loaded.entries]
    assert len(ids) == len(set(ids)), "an entry id appears twice"
    *complete, tail = data.split(b"\n")
    assert len(complete) == len(set(complete)), "a line was written twice"
    # Only the last line may be torn; other junk lines are the fragments of earlier kills,
    # terminated by the writer that reopened the file.
    tail_is_junk = bool(tail) and not _is_json(tail)
    junk = [raw for raw in complete if not _is_json(raw)] + ([tail] if tail_is_junk else [])
    expected = earlier_junk + ([tail] if tail_is_junk else [])
    assert junk == expected
    diag = loaded.diagnostics
    assert diag.unparsable_lines == len(expected)
    assert diag.torn_tail == bool(tail)
    assert diag.blank_lines == 0
    # Every acknowledged entry is in the file, in the order it was acknowledged. A buffered
    # append is acknowledged once write() returned: the line is in the page cache, which the
    # death of the process does not lose (only an OS crash or power loss would); fsync-mode
    # acknowledgements come after fdatasync. So with only the writer dying, both modes must
    # keep every acknowledged entry.
    missing = [a for a in acked if a not in set(ids)]
    assert not missing, f"{len(missing)} acknowledged entries lost, first {missing[0]}"
    position = {eid: i for i, eid in enumerate(ids)}
    assert [position[a] for a in acked] == sorted(position[a] for a in acked)
    return FileState(ids, junk[: len(earlier_junk)] + ([tail] if tail_is_junk else []), tail)


def check_repair(path: Path, mode: Durability, state: FileState, work: Path) -> None:
    """On a copy: reopen, append once, and check that nothing before was lost or changed."""
    copy = work / f"verify-{path.name}"
    shutil.copyfile(path, copy)
    before = copy.read_bytes()
    try:
        session = Session.open(copy, durability=mode)
        assert session.diagnostics.torn_tail == bool(state.tail)
        assert session.entry_count == len(state.ids)
        new_id = session.append_message(user("after the crash"))
        session.close()
        after = copy.read_bytes()
        assert after.endswith(b"\n")
        assert after.startswith(before), "bytes already in the file were changed"
        added = after[len(before) :]
        assert added.startswith(b"\n") == bool(state.tail)
        assert added.count(b"\n") == (2 if state.tail else 1)
        reloaded = load_session(copy)
        ids = [e.get("id") for e in reloaded.entries]
        assert ids == [*state.ids, new_id]
        assert reloaded.diagnostics.unparsable_lines == len(state.junk)  # the fragment stays one line
        assert not reloaded.diagnostics.torn_tail
        if state.ids:
            assert reloaded.entries[-1]["parentId"] == state.ids[-1]
    finally:
        copy.unlink(missing_ok=True)


def torn_line(rng: random.Random, parent: str | None) -> bytes:
    """What a kill inside ``write()`` leaves: the start of a line (sometimes all but its newline)."""
    entry = E.new_message(
        f"{rng.randrange(1 << 32):08x}", parent, "2026-01-01T00:00:00.000Z", user("t" * rng.randrange(60_000))
    )
    line = encode_line(entry)[:-1]
    return line if rng.random() < 0.25 else line[: rng.randrange(1, len(line))]


@dataclass
class Stats:
    kills: int = 0
    acked: int = 0
    torn: int = 0
    no_file: int = 0
    injected: int = 0
    largest: int = 0

    def report(self, label: str) -> None:
        print(
            f"\n{label}: {self.kills} kills, {self.acked} acknowledged appends, {self.torn} torn tails, "
            f"{self.injected} torn by hand, {self.no_file} killed before the first append, "
            f"largest file {self.largest / 1e6:.1f} MB"
        )


# ---------------------------------------------------------------------------- crash tests


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_sigkill_while_appending_to_fresh_files(tmp_path: Path, mode: Durability) -> None:
    rng = random.Random(f"{SEED}-fresh-{mode.value}")
    stats = Stats()
    for i in range(FRESH_KILLS):
        directory = tmp_path / f"run{i}"
        directory.mkdir()
        delay = rng.uniform(*DELAY_MS) / 1e3
        killed = run_and_kill("create", directory, mode, rng.randrange(1 << 30), delay)
        stats.kills += 1
        stats.acked += len(killed.acked)
        assert killed.path is not None
        if not killed.path.exists():
            assert not killed.acked
            stats.no_file += 1
            continue
        state = check_after_kill(killed.path, killed.acked, [])
        stats.torn += bool(state.tail)
        stats.largest = max(stats.largest, killed.path.stat().st_size)
        check_repair(killed.path, mode, state, tmp_path)
        shutil.rmtree(directory)
    stats.report(f"fresh files, {mode.value}")
    assert stats.acked > 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_sigkill_while_appending_to_reopened_files(tmp_path: Path, mode: Durability) -> None:
    rng = random.Random(f"{SEED}-reopen-{mode.value}")
    stats = Stats()
    for chain in range(CHAINS):
        directory = tmp_path / f"chain{chain}"
        directory.mkdir()
        path: Path | None = None
        junk: list[bytes] = []
        all_acked: list[str] = []
        for link in range(CHAIN_KILLS):
            delay = rng.uniform(*DELAY_MS) / 1e3
            seed = rng.randrange(1 << 30)
            if path is None or not path.exists():
                killed = run_and_kill("create", directory, mode, seed, delay)
            else:
                killed = run_and_kill("open", path, mode, seed, delay)
            stats.kills += 1
            stats.acked += len(killed.acked)
            path = killed.path
            assert path is not None
            if not path.exists():
                assert not killed.acked
                stats.no_file += 1
                continue
            all_acked.extend(killed.acked)
            # Everything acknowledged by every writer of this file so far is still there.
            state = check_after_kill(path, all_acked, junk)
            stats.torn += bool(state.tail)
            stats.largest = max(stats.largest, path.stat().st_size)
            check_repair(path, mode, state, tmp_path)
            junk = state.junk  # a torn tail becomes a junk line once the next writer repairs it
            if not state.tail and link < CHAIN_KILLS - 1:
                # On this machine a kill rarely splits a 50 KB write() (the kernel checks for
                # fatal signals between large chunks), so tear the last line by hand as such a
                # kill would, for the next writer process to repair.
                tail = torn_line(rng, state.ids[-1] if state.ids else None)
                with open(path, "ab") as f:
                    f.write(tail)
                stats.injected += 1
                if not _is_json(tail):
                    junk = [*junk, tail]
        shutil.rmtree(directory)
    stats.report(f"reopened files, {mode.value}")
    assert stats.acked > 0


# ---------------------------------------------------------------------------- torn tails by hand


def _session_with_messages(tmp_path: Path, n: int = 4, **kw: Any) -> tuple[Session, list[str]]:
    session = Session.create(tmp_path, "/w", **kw)
    ids = [
        session.append_message(user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}", total=i)) for i in range(n)
    ]
    return session, ids


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_torn_tail_fragment_is_terminated_by_the_next_append(tmp_path: Path, mode: Durability) -> None:
    session, ids = _session_with_messages(tmp_path, durability=mode)
    session.close()
    fragment = b'{"type":"message","id":"deadbeef","parentId":"' + ids[-1].encode() + b'","timest'
    with open(session.path, "ab") as f:
        f.write(fragment)
    size = session.path.stat().st_size

    reopened = Session.open(session.path, durability=mode)
    assert reopened.diagnostics.torn_tail and not reopened.diagnostics.torn_tail_parsed
    assert reopened.entry_count == len(ids)
    assert reopened.leaf_id == ids[-1]
    assert session.path.stat().st_size == size, "opening must not write"
    new_id = reopened.append_message(user("after the tear"))
    second = reopened.append_message(assistant("and one more"))
    reopened.close()

    data = session.path.read_bytes()
    assert data.endswith(b"\n")
    assert data.split(b"\n")[len(ids) + 1] == fragment  # header, the entries, the fragment as is
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == [*ids, new_id, second]
    assert loaded.entries[-2]["parentId"] == ids[-1]
    assert loaded.entries[-1]["parentId"] == new_id
    d = loaded.diagnostics
    assert d.unparsable_lines == 1
    assert d.unparsable_line_numbers == [len(ids) + 2]  # header, the entries, then the fragment
    assert (d.blank_lines, d.torn_tail) == (0, False)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_complete_unterminated_last_line_is_kept_and_terminated(tmp_path: Path, mode: Durability) -> None:
    session, ids = _session_with_messages(tmp_path, durability=mode)
    session.close()
    entry = E.new_message("c0ffee00", ids[-1], "2026-01-01T00:00:00.000Z", user("no newline"))
    line = encode_line(entry)
    with open(session.path, "ab") as f:
        f.write(line[:-1])  # complete JSON, but no newline

    reopened = Session.open(session.path, durability=mode)
    assert reopened.diagnostics.torn_tail and reopened.diagnostics.torn_tail_parsed
    assert reopened.entry_count == len(ids) + 1
    assert reopened.leaf_id == "c0ffee00"  # Pi keeps it as an entry, and it is the leaf
    before = session.path.read_bytes()
    new_id = reopened.append_message(assistant("reply"))
    reopened.close()

    after = session.path.read_bytes()
    assert after.startswith(before)
    assert after[len(before) : len(before) + 1] == b"\n"  # the newline came first
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == [*ids, "c0ffee00", new_id]
    assert loaded.entries[-1]["parentId"] == "c0ffee00"
    assert loaded.entries[-2] == entry
    d = loaded.diagnostics
    assert (d.unparsable_lines, d.blank_lines, d.torn_tail) == (0, 0, False)


# ---------------------------------------------------------------------------- injected faults


class FaultyOs:
    """Stands in for ``os`` inside ``sessiond.store.journal``; the named functions are replaced."""

    def __init__(self, **replaced: Callable[..., Any]) -> None:
        self._replaced = replaced

    def __getattr__(self, name: str) -> Any:
        return self._replaced[name] if name in self._replaced else getattr(os, name)


def _enospc(*_: Any) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _partial_then_enospc() -> Callable[[int, Any], int]:
    calls = 0

    def write(fd: int, data: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return os.write(fd, bytes(data[: max(1, len(data) // 2)]))
        return _enospc()

    return write


@dataclass
class Snapshot:
    entry_count: int
    leaf_id: Any
    branch: list[Any]
    messages: list[Any]
    size: int
    data: bytes

    @classmethod
    def of(cls, session: Session) -> Snapshot:
        return cls(
            session.entry_count,
            session.leaf_id,
            session.branch_ids(),
            list(session.context().messages),
            session.path.stat().st_size,
            session.path.read_bytes(),
        )


@contextlib.contextmanager
def faulty_os(monkeypatch: pytest.MonkeyPatch, **replaced: Callable[..., Any]) -> Iterator[None]:
    with monkeypatch.context() as m:
        m.setattr(journal_module, "os", FaultyOs(**replaced))
        yield


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("how", ["at-once", "after-partial-write"])
def test_disk_full_is_an_error_without_acknowledgement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Durability, how: str
) -> None:
    session, ids = _session_with_messages(tmp_path, durability=mode)
    before = Snapshot.of(session)
    write = _enospc if how == "at-once" else _partial_then_enospc()
    with faulty_os(monkeypatch, write=write), pytest.raises(JournalError) as raised:
        session.append_message(user("x" * 20_000))
    assert type(raised.value) is JournalError  # not broken: the next append may succeed
    assert raised.value.errno == errno.ENOSPC
    assert Snapshot.of(session) == before  # nothing in memory, nothing (not even half a line) on disk
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == ids
    assert loaded.diagnostics.unparsable_lines == 0 and not loaded.diagnostics.torn_tail

    new_id = session.append_message(user("space again"))  # os.write is the real one again
    session.close()
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == [*ids, new_id]
    assert loaded.entries[-1]["parentId"] == ids[-1]
    assert loaded.diagnostics.unparsable_lines == 0


def test_disk_full_during_torn_tail_repair_keeps_the_tail_for_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, ids = _session_with_messages(tmp_path)
    session.close()
    with open(session.path, "ab") as f:
        f.write(b'{"type":"mess')
    reopened = Session.open(session.path)
    before = Snapshot.of(reopened)
    with faulty_os(monkeypatch, write=_partial_then_enospc()), pytest.raises(JournalError) as raised:
        reopened.append_message(user("y" * 10_000))
    assert raised.value.errno == errno.ENOSPC
    assert Snapshot.of(reopened) == before  # the repair newline was rolled back with the line
    new_id = reopened.append_message(user("now it fits"))
    reopened.close()
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == [*ids, new_id]
    assert loaded.diagnostics.unparsable_lines == 1
    assert loaded.diagnostics.blank_lines == 0


def test_disk_full_on_the_first_flush_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session.create(tmp_path, "/w")
    with faulty_os(monkeypatch, write=_partial_then_enospc()), pytest.raises(JournalError) as raised:
        session.append_message(user("z" * 10_000))
    assert raised.value.errno == errno.ENOSPC
    assert not session.path.exists()
    assert not session.flushed
    assert session.entry_count == 0
    first = session.append_message(user("again"))
    session.close()
    assert [e["id"] for e in load_session(session.path).entries] == [first]


def test_rollback_that_cannot_truncate_breaks_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, ids = _session_with_messages(tmp_path)
    before = Snapshot.of(session)

    def no_truncate(*_: Any) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with faulty_os(monkeypatch, write=_partial_then_enospc(), ftruncate=no_truncate):
        with pytest.raises(JournalError) as raised:
            session.append_message(user("w" * 10_000))
        assert raised.value.errno == errno.ENOSPC
    assert (session.entry_count, session.leaf_id) == (before.entry_count, before.leaf_id)
    with pytest.raises(JournalBrokenError):  # half a line is on disk: no more writes on top
        session.append_message(user("refused"))
    session.close()
    loaded = load_session(session.path)  # the half line is a torn tail
    assert [e["id"] for e in loaded.entries] == ids
    assert loaded.diagnostics.torn_tail and loaded.diagnostics.unparsable_lines == 1
    reopened = Session.open(session.path)
    new_id = reopened.append_message(user("repaired"))
    reopened.close()
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == [*ids, new_id]
    assert not loaded.diagnostics.torn_tail


def test_failed_fdatasync_breaks_the_journal_until_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, ids = _session_with_messages(tmp_path, durability=Durability.FSYNC)

    def eio(*_: Any) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with faulty_os(monkeypatch, fdatasync=eio), pytest.raises(JournalBrokenError) as raised:
        session.append_message(user("lost?"))
    assert raised.value.errno == errno.EIO
    for durability in (Durability.FSYNC, Durability.BUFFERED):  # fdatasync works again: still refused
        with pytest.raises(JournalBrokenError):
            session.append_message(user("refused"), durability=durability)
        with pytest.raises(JournalBrokenError):
            session.append_custom("refused-too", {"n": 1}, durability=durability)
    session.close()
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries][: len(ids)] == ids
    assert loaded.diagnostics.unparsable_lines == 0 and not loaded.diagnostics.torn_tail

    reopened = Session.open(session.path, durability=Durability.FSYNC)
    new_id = reopened.append_message(user("after reopening"))
    reopened.close()
    assert [e["id"] for e in load_session(session.path).entries][-1] == new_id


# ---------------------------------------------------------------------------- a real full disk


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (needs root, or CAP_SYS_ADMIN); skipped when mounting is not permitted."""
    mount = shutil.which("mount")
    umount = shutil.which("umount")
    if mount is None or umount is None:
        pytest.skip("no mount/umount command")
    point = tmp_path / "tmpfs"
    point.mkdir()
    proc = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"mounting a small tmpfs is not permitted here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield point
    finally:
        if subprocess.run([umount, str(point)], check=False, capture_output=True).returncode != 0:
            subprocess.run([umount, "-l", str(point)], check=False, capture_output=True)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_real_full_disk(small_tmpfs: Path, mode: Durability) -> None:
    ballast = small_tmpfs / "ballast"
    ballast.write_bytes(b"\0" * 16_384)
    session = Session.create(small_tmpfs / "sessions", "/w", durability=mode)
    acked: list[str] = []
    failure: JournalError | None = None
    before: Snapshot | None = None
    for i in range(64):
        before = Snapshot.of(session) if session.flushed else None
        try:
            acked.append(session.append_message(user(f"{i}: " + "f" * 6_000)))
        except JournalError as exc:
            failure = exc
            break
    assert failure is not None, "the tmpfs never filled up"
    assert type(failure) is JournalError and failure.errno == errno.ENOSPC
    assert before is not None and acked
    assert Snapshot.of(session) == before  # not acknowledged, not in memory, not on disk
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == acked
    assert loaded.diagnostics.unparsable_lines == 0 and not loaded.diagnostics.torn_tail

    ballast.unlink()
    new_id = session.append_message(user("room again"))
    session.close()
    loaded = load_session(session.path)
    assert [e["id"] for e in loaded.entries] == [*acked, new_id]
    assert session.path.read_bytes().endswith(b"\n")
