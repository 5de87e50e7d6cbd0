"""Property: after any sequence of appends (the daemon's own, reported with their entries),
external appends, forks (an entry appended below an earlier one: what came after it leaves
the branch), rewrites, truncations and deletions, the index answers exactly what a
brute-force scan of the same sessions' texts finds — words and substrings alike — and says of
each hit whether it is on its session's current branch as a walk up from the last entry does."""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiond.search.engine import SearchEngine, SourceFile, stat_signature
from sessiond.search.index import Filters, Signature
from sessiond.search.pi_file import read_pi_v3
from sessiond.search.query import words_match
from sessiond.store.session import Session
from tests.search.conftest import user_entry

WORDS = ["alpha", "beta", "gamma", "delta", "Omega", "épée"]
SESSIONS = 3


class DirSource:
    """Pi files in one directory, opened with the store's read-only reader."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self) -> Iterator[SourceFile]:
        for path in sorted(self.root.glob("*/*.jsonl")):
            yield SourceFile(str(path), "pi", "pi")

    def classify(self, path: str) -> SourceFile | None:
        return SourceFile(path, "pi", "pi") if path.endswith(".jsonl") else None

    def signature(self, path: str) -> Signature | None:
        return stat_signature(path)

    def open(self, file: SourceFile, *, follow: bool = False) -> Any:
        """As the daemon's source opens Pi files: the v3 fast path, else the store's reader."""
        fast = read_pi_v3(Path(file.path))
        return fast if fast is not None else Session.open(Path(file.path), read_only="test")


def _header(sid: str) -> bytes:
    return orjson.dumps(
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/p"}
    )


op = st.one_of(
    st.tuples(
        st.just("append"),
        st.integers(0, SESSIONS - 1),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    ),
    st.tuples(
        st.just("external"),
        st.integers(0, SESSIONS - 1),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    ),
    st.tuples(
        st.just("rewrite"),
        st.integers(0, SESSIONS - 1),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    ),
    st.tuples(
        st.sampled_from(["fork", "external fork"]),
        st.integers(0, SESSIONS - 1),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
    ),
    st.tuples(st.just("truncate"), st.integers(0, SESSIONS - 1), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.integers(0, SESSIONS - 1), st.just(0)),
    st.tuples(st.just("query"), st.just(0), st.just(0)),
)


def _tokens(text: str) -> set[str]:
    folded = text.lower().replace("é", "e")
    return set(re.findall(r"[^\W_]+", folded))


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[int, list[dict[str, Any]]] = {}
        self.counter = 0

    def path(self, n: int) -> Path:
        return self.root / "--p--" / f"2026-01-01T00-00-00-000Z_s{n}.jsonl"

    def write(self, n: int) -> None:
        path = self.path(n)
        path.parent.mkdir(exist_ok=True)
        lines = [_header(f"s{n}")] + [orjson.dumps(e) for e in self.files[n]]
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(b"\n".join(lines) + b"\n")
        os.replace(tmp, path)

    def new_entries(self, n: int, words: list[str], *, fork: bool = False) -> list[dict[str, Any]]:
        """Entries going on from the last one, or (``fork``) from the first one's parent's
        first child: the file's first entry (a rewind to it, then new turns)."""
        out = []
        if fork and self.files.get(n):
            parent = self.files[n][0]["id"]
        else:
            parent = self.files[n][-1]["id"] if self.files.get(n) else None
        for word in words:
            self.counter += 1
            other = WORDS[self.counter % len(WORDS)]  # pieces of code: words joined by _ and .
            entry = user_entry(
                f"e{self.counter}",
                timestamp="2026-01-02T00:00:00Z",
                parent=parent,
                text=f"{word} x{self.counter} {word}_{other}.py",
            )
            parent = entry["id"]
            out.append(entry)
        return out

    def append(self, n: int, entries: list[dict[str, Any]]) -> None:
        path = self.path(n)
        if n not in self.files:
            self.files[n] = []
            self.write(n)
        self.files[n] += entries
        with open(path, "ab") as f:
            f.write(b"".join(orjson.dumps(e) + b"\n" for e in entries))

    def expected_words(self, word: str) -> set[tuple[str, str]]:
        want = _tokens(word)
        return {
            (f"s{n}", e["id"])
            for n, entries in self.files.items()
            for e in entries
            if want <= _tokens(e["message"]["content"])
        }

    def on_branch(self) -> set[tuple[str, str]]:
        """Each file's entries from its last one (Pi's leaf) up through the parents."""
        out: set[tuple[str, str]] = set()
        for n, entries in self.files.items():
            parents = {e["id"]: e["parentId"] for e in entries}
            current = entries[-1]["id"] if entries else None
            while current is not None and (f"s{n}", current) not in out:
                out.add((f"s{n}", current))
                current = parents.get(current)
        return out

    def expected_substring(self, needle: str) -> set[tuple[str, str]]:
        return {
            (f"s{n}", e["id"])
            for n, entries in self.files.items()
            for e in entries
            if needle.lower() in e["message"]["content"].lower()
        }


def _found(
    engine: SearchEngine, word: str, substring: bool, branch: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    page = engine.search(
        match=None if substring else words_match(word),
        needle=word if substring else None,
        filters=Filters(),
        offset=0,
        limit=200,
    )
    assert not page.cut, "the query ran out of its time budget (a loaded machine)"
    for h in page.hits:
        assert h.on_branch == ((h.session_id, h.entry_id) in branch), (word, h.session_id, h.entry_id)
    return {(h.session_id, h.entry_id) for h in page.hits}


def _check(engine: SearchEngine, world: World) -> None:
    branch = world.on_branch()
    for word in WORDS:
        assert _found(engine, word, False, branch) == world.expected_words(word), word
    for piece in ("lph", "ega", "pée", "lta_gamma", "_OMEGA.", "a_Omeg", "pha_d", "eta.p", "ée_b"):
        assert _found(engine, piece, True, branch) == world.expected_substring(piece), piece


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=14), st.booleans())
def test_index_equals_brute_force(ops: list[tuple[str, int, Any]], restart: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        root.mkdir()
        world = World(root)
        index = Path(tmp) / "search" / "index.sqlite3"
        engine = SearchEngine(index, DirSource(root))
        engine.start()
        try:
            for kind, n, arg in ops:
                path = str(world.path(n))
                if kind == "append":
                    entries = world.new_entries(n, arg)
                    world.append(n, entries)
                    engine.appended(path, entries, entries[-1]["id"], None, os.path.getsize(path))
                elif kind == "external":
                    world.append(n, world.new_entries(n, arg))
                    engine.changed(path)
                elif kind == "fork":
                    entries = world.new_entries(n, arg, fork=True)
                    world.append(n, entries)
                    engine.appended(path, entries, entries[-1]["id"], None, os.path.getsize(path))
                elif kind == "external fork":
                    world.append(n, world.new_entries(n, arg, fork=True))
                    engine.changed(path)
                elif kind == "rewrite":
                    world.files[n] = []
                    world.files[n] = world.new_entries(n, arg)
                    world.write(n)
                    engine.changed(path)
                elif kind == "truncate" and n in world.files:
                    world.files[n] = world.files[n][: len(world.files[n]) - arg]
                    world.write(n)
                    engine.changed(path)
                elif kind == "delete" and n in world.files:
                    del world.files[n]
                    os.unlink(path)
                    engine.removed(path)
                elif kind == "query":
                    _check(engine, world)
            if restart:  # a restart looks at every file again: nothing may be lost or stale
                engine.close()
                engine = SearchEngine(index, DirSource(root))
                engine.start()
                engine.flush()
                while engine.progress is not None:
                    time.sleep(0.01)
            _check(engine, world)
        finally:
            engine.close()
