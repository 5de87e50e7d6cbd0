"""A Codex thread's name (``session_index.jsonl``) is read once per change of the index, not once
per rollout (a first build reads every rollout of a home), and never kept stale: a change of
size, inode or mtime is read again, and an index written within the last two seconds is not
kept at all (it could change again without its size or mtime moving)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

import sessiond.formats.codex as codex_formats
from sessiond.store import codex

A, B = "019a0000-0000-7000-8000-00000000000a", "019a0000-0000-7000-8000-00000000000b"


def _write(home: Path, names: dict[str, str], *, age_s: float) -> None:
    index = home / codex.INDEX_FILE
    index.write_bytes(b"".join(orjson.dumps({"id": k, "thread_name": v}) + b"\n" for k, v in names.items()))
    st = index.stat()
    then = st.st_mtime_ns - int(age_s * 1e9)
    os.utime(index, ns=(then, then))


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times an index was parsed."""
    calls: list[int] = []
    real = codex_formats.parse_session_index

    def counted(data: bytes) -> dict[str, str]:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(codex_formats, "parse_session_index", counted)
    monkeypatch.setattr(codex, "_TITLES", {})
    return calls


def test_a_settled_index_is_parsed_once_for_many_rollouts(tmp_path: Path, parses: list[int]) -> None:
    rollout = tmp_path / "sessions" / "2026" / "01" / "01" / "rollout.jsonl"
    _write(tmp_path, {A: "first thread", B: "second thread"}, age_s=60)
    for _ in range(50):
        assert codex.read_title(rollout, A) == "first thread"
        assert codex.read_title(rollout, B) == "second thread"
    assert len(parses) == 1
    assert codex.read_title(rollout, "019a0000-0000-7000-8000-0000000000ff") is None


def test_a_changed_index_is_read_again(tmp_path: Path, parses: list[int]) -> None:
    rollout = tmp_path / "sessions" / "rollout.jsonl"
    _write(tmp_path, {A: "first thread"}, age_s=60)
    assert codex.read_title(rollout, A) == "first thread"
    _write(tmp_path, {A: "renamed thread"}, age_s=30)  # another size and mtime
    assert codex.read_title(rollout, A) == "renamed thread"
    assert codex.read_title(rollout, A) == "renamed thread"
    (tmp_path / codex.INDEX_FILE).unlink()
    assert codex.read_title(rollout, A) is None
    assert len(parses) == 2


def test_an_index_written_just_now_is_not_kept(tmp_path: Path, parses: list[int]) -> None:
    rollout = tmp_path / "archived_sessions" / "rollout.jsonl"
    _write(tmp_path, {A: "first thread"}, age_s=0)
    assert codex.read_title(rollout, A) == "first thread"
    index = tmp_path / codex.INDEX_FILE
    stamp = index.stat()
    index.write_bytes(index.read_bytes().replace(b"first", b"fresh"))  # same size
    os.utime(index, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # and the same mtime
    assert codex.read_title(rollout, A) == "fresh thread"
    assert len(parses) == 2
