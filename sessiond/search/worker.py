"""The first build's reading process: ``python -m sessiond.search.worker``.

It reads the list of files to read from its standard input (a ``marshal``-ed list of ``(path,
agent)``, then end of file; an empty agent: a file it leaves to the writer) and writes, for
each in order, one frame to its standard output: 8 bytes of length (little endian) and a
``marshal``-ed tuple ``(path, signature, session)`` — ``signature`` the file's
:class:`~.index.Signature` fields before the read, or ``None`` when the file is gone;
``session`` ``(id, cwd, name, leaf, docs, nodes)`` with the docs as plain tuples of
:class:`~.extract.Doc`'s fields, or ``None`` when it could not be read (the writer then reads
the file itself, which says why). Everything it does is what
:meth:`.engine.SearchEngine._read_ahead` does in a thread; here it runs on another core, beside
the writer's SQLite inserts, with no lock between the two (see :mod:`.producer`).

It ends once the list is read, or when its output is closed (the daemon stopped the build or
went away): a broken pipe is how it learns it.
"""

from __future__ import annotations

import marshal
import os
import struct
import sys
from pathlib import Path
from typing import Any, BinaryIO, Final

FRAME: Final = struct.Struct("<Q")
MARSHAL_VERSION: Final = 4


def read_one(path: str, agent: str) -> tuple[Any, ...]:
    """One file's frame payload (see the module's docstring), made with the cyclic GC paused:
    it would scan the file's entries again and again while their docs pile up (4% of the
    worker's time), and none of them is garbage before the frame is made."""
    from ..formats.pi import paused_gc  # noqa: PLC0415

    with paused_gc():
        return _read_one(path, agent)


def _read_one(path: str, agent: str) -> tuple[Any, ...]:
    from . import index as ix  # noqa: PLC0415 - after the process started: its first output is soon
    from .readers import open_for_index  # noqa: PLC0415
    from .signature import stat_signature  # noqa: PLC0415

    sig = stat_signature(path) if agent else None  # no agent: the writer reads it
    if sig is None:
        return (path, None, None)
    signature = (sig.ino, sig.size, sig.mtime, sig.tail)
    try:
        session = open_for_index(agent, Path(path))
    except Exception:  # the writer reads it itself and logs why it cannot
        return (path, signature, None)
    try:
        docs, nodes = ix.file_docs(session.entries())
        sid, cwd, name, leaf = ix.session_fields(session)
    except Exception:
        return (path, signature, None)
    finally:
        session.close()
    rows = [tuple(d) for d in docs]
    return (path, signature, (sid, cwd, name, leaf, rows, nodes, tuple(ix.prepare(docs))))


def serve(jobs: list[tuple[str, str]], out: BinaryIO) -> None:
    for path, agent in jobs:
        data = marshal.dumps(read_one(path, agent), MARSHAL_VERSION)
        out.write(FRAME.pack(len(data)))
        out.write(data)
        out.flush()


def main() -> int:
    jobs = marshal.loads(sys.stdin.buffer.read())
    try:
        serve(jobs, sys.stdout.buffer)
    except BrokenPipeError:  # the daemon stopped reading: nothing to finish
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
