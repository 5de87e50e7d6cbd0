"""Whether two versions of sessiond send the same frames from the first build's reading processes.

A change made for the workers' speed (``sessiond/search/worker.py`` and what it calls) must
leave what gets indexed as it was. This runs ``worker.read_one`` over every session file of a
corpus (``benchmarks/out/search-corpus-<N>mb/``, as ``benchmarks.search`` made it) and of
``tests/fixtures`` (each fixture under each agent's reader: their refusals too) with the
sessiond of each source tree, in a process of its own, and compares the frames file by file:
the docs, the nodes, the session's id, cwd, title and leaf, the texts, plain flags, token counts
and the blocks' texts (a block's bytes open with random bytes: unpacked, its texts are compared).
Each process prints one digest per file; what differs is listed.

Run: ``.venv/bin/python -m benchmarks.search_frames OLD_TREE [NEW_TREE] [--corpus DIR]...``
(a tree is a checkout's root, e.g. ``git worktree add /tmp/main main`` or ``git archive main |
tar -x -C /tmp/main``; NEW_TREE defaults to this checkout). Exit status 1 when a frame differs.
"""

from __future__ import annotations

import argparse
import hashlib
import marshal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AGENTS = (("claude-code", "claude"), ("codex", "codex"), ("pi", "pi"))


def jobs(corpora: list[Path]) -> list[tuple[str, str]]:
    out = [
        (str(p), agent)
        for root in corpora
        for agent, sub in AGENTS
        for p in sorted((root / sub).rglob("*.jsonl"))
    ]
    out += [
        (str(p), agent) for p in sorted((ROOT / "tests" / "fixtures").rglob("*.jsonl")) for agent, _ in AGENTS
    ]
    return out


def digest(frame: tuple[Any, ...]) -> str:
    """A frame's digest, its blocks unpacked (marshal version 0: equal values, equal bytes)."""
    from sessiond.search import blocks  # noqa: PLC0415 - the tree's own, once sys.path is set

    path, signature, session = frame
    if session is not None:
        sid, cwd, name, leaf, rows, nodes, (texts, plain, packed, tokens) = session
        unpacked = [(start, *blocks.unpack(data)) for start, data in packed]
        session = (sid, cwd, name, leaf, rows, nodes, texts, plain, unpacked, list(tokens.items()))
    return hashlib.sha256(marshal.dumps((path, signature, session), 0)).hexdigest()


def child(tree: str, listed: str) -> int:
    """In the tree's own process: one ``digest`` per listed job, a line each."""
    sys.path.insert(0, tree)
    from sessiond.search import worker  # noqa: PLC0415

    for line in Path(listed).read_text().splitlines():
        path, agent = line.rsplit("\t", 1)
        print(digest(worker.read_one(path, agent)), flush=False)
    return 0


def digests(tree: Path, listed: Path) -> list[str]:
    command = [sys.executable, "-m", "benchmarks.search_frames", "_child", str(tree), str(listed)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def main(argv: list[str]) -> int:
    if argv[:1] == ["_child"]:
        return child(argv[1], argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path, nargs="?", default=ROOT)
    parser.add_argument("--corpus", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    listed = jobs(args.corpus)
    job_file = ROOT / "benchmarks" / "out" / "search-frames-jobs.txt"
    job_file.parent.mkdir(parents=True, exist_ok=True)
    job_file.write_text("".join(f"{p}\t{a}\n" for p, a in listed))
    old, new = digests(args.old.resolve(), job_file), digests(args.new.resolve(), job_file)
    differ = [job for job, a, b in zip(listed, old, new, strict=True) if a != b]
    for path, agent in differ:
        print(f"differs: {agent} {path}")
    print(f"{len(listed)} frames, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
