"""Child process of the crash tests: append messages to one session until killed.

Usage::

    python -m tests.store.crash_writer create DIR MODE SEED    # a new session in DIR
    python -m tests.store.crash_writer open FILE MODE SEED     # append to an existing session file

(run from the repository's root, as the crash tests do, so that ``tests`` is importable).

``MODE`` is a durability (``buffered`` / ``fsync``). Protocol on stdout, one line each,
flushed at once: ``path <file>``, then ``ready`` once the session is created or opened,
then the id of every entry right after its append returned (its acknowledgement). Messages
alternate user / assistant; about one in sixteen is ~50 KB, so that a kill can land in the
middle of a large ``write()``. The loop ends by itself only after ``--max-seconds`` (a
safety net for an orphan), exiting with status 3.
"""

from __future__ import annotations

import io
import random
import sys
import time
from pathlib import Path

from sessiond.store.journal import Durability
from sessiond.store.session import Session
from tests.builders import assistant, user

BIG_EVERY = 16
BIG_BYTES = 50_000
MAX_SECONDS = 30.0


def _texts(rng: random.Random) -> tuple[list[str], list[str]]:
    words = [rng.choice("abcdefghijklmnopqrstuvwxyz") * rng.randint(1, 9) for _ in range(400)]
    small = [" ".join(rng.choices(words, k=rng.randint(3, 60))) for _ in range(32)]
    big = []
    for _ in range(4):
        text = " ".join(rng.choices(words, k=BIG_BYTES // 5))
        big.append(text[:BIG_BYTES])
    return small, big


def main(argv: list[str]) -> int:
    action, target, mode, seed = argv[0], Path(argv[1]), Durability(argv[2]), int(argv[3])
    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):
        out.reconfigure(line_buffering=True)
    rng = random.Random(seed)
    small, big = _texts(rng)
    if action == "create":
        session = Session.create(target, "/tmp/crash-test", durability=mode)
    elif action == "open":
        session = Session.open(target, durability=mode)
    else:
        raise SystemExit(f"unknown action {action!r}")
    out.write(f"path {session.path}\n")
    out.write("ready\n")
    out.flush()
    deadline = time.monotonic() + MAX_SECONDS
    n = 0
    while time.monotonic() < deadline:
        body = big[n % len(big)] if rng.randrange(BIG_EVERY) == 0 else rng.choice(small)
        text = f"{seed}/{n}: {body}"
        message = user(text) if n % 2 == 0 else assistant(text, total=n)
        entry_id = session.append_message(message)
        out.write(entry_id + "\n")
        out.flush()
        n += 1
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
