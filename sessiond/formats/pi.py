"""Pi's session file format (v1-v3): reading, migrating and encoding lines.

Reading follows Pi 1.6.0's loader (docs/pi-format.md §3.1) so the same file yields the same entries:
split on ``\\n`` only, skip blank and unparsable lines *anywhere*, require the first parsed
line to be a session header with a string id (junk before it is tolerated, however long).
Unlike Pi, what was skipped is counted and reported, and reading never writes: the torn-tail
repair and the migration rewrite are the writer's business.

Encoding is ``JSON.stringify`` plus ``\\n`` (:mod:`sessiond.model.js_json`), so a line written
here is byte-identical to the one Pi would write.
"""

from __future__ import annotations

import gc
import hashlib
import io
import itertools
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ..errors import NotASessionError
from ..model import entries as E
from ..model.js import UNDEFINED, trim, truthy
from ..model.js_json import JSONParseError, dumps, parse
from .lines import LineDiagnostics


@dataclass(slots=True)
class LoadDiagnostics(LineDiagnostics):
    """What the loader skipped or noticed. Nothing here stops a file from loading."""

    physical_lines: int = 0
    """Lines in the file, counting an unterminated last line."""
    falsy_lines: int = 0
    """Lines holding ``null``, ``false``, ``0`` or ``""``: valid JSON that Pi ignores."""
    leading_junk_lines: int = 0
    """Lines before the header (blank, unparsable or ignored)."""
    torn_tail_parsed: bool = False
    """The unterminated last line still parsed (and was kept as an entry)."""
    extra_headers: int = 0
    """``type: "session"`` lines after the first; they are not entries."""
    source_version: float | None = None
    """The header's version before migration (``None`` when already current)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "physicalLines": self.physical_lines,
            **self.skipped_json(),
            "ignoredValueLines": self.falsy_lines,
            "leadingJunkLines": self.leading_junk_lines,
            "tornTail": self.torn_tail,
            "tornTailParsed": self.torn_tail_parsed,
            "extraHeaders": self.extra_headers,
            "migratedFromVersion": self.source_version,
        }


@dataclass(slots=True)
class LoadedSession:
    """A parsed session file: header, entries in file order, and what the loader saw."""

    header: dict[str, Any]
    entries: list[Any]
    """Non-header lines (Pi's ``getEntries()``); lines typed ``session`` are left out."""
    diagnostics: LoadDiagnostics
    file_lines: list[Any] = field(default_factory=list)
    """Every kept parsed line including the header(s), in order (Pi's ``fileEntries``)."""

    @property
    def migrated(self) -> bool:
        return self.diagnostics.source_version is not None


_BLANK: Final = object()
_JUNK: Final = object()


def _parse_line(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    text = raw.decode("utf-8", "replace")
    if not trim(text):
        return _BLANK
    try:
        return parse(text)
    except JSONParseError:
        return _JUNK


def parse_session(
    data: bytes,
    *,
    source: str = "<bytes>",
    migrate: bool = True,
    new_id: Callable[[], str] | None = None,
) -> LoadedSession:
    """Parse a whole session file held in memory.

    Raises :class:`NotASessionError` when the first parsed line is not a valid header (or
    there is none). ``migrate`` brings v1/v2 files to v3 in memory, as Pi does on open;
    ``new_id`` supplies the ids v1 entries get (random 8-hex by default, like Pi).
    """
    return _parse_lines(io.BytesIO(data), source=source, migrate=migrate, new_id=new_id)


def load_session(path: str | os.PathLike[str], *, migrate: bool = True) -> LoadedSession:
    """Read and parse a session file. Opens it read-only; never repairs or rewrites it.

    Lines are read one at a time (binary iteration splits on ``\\n`` only, as Pi does), so
    the whole file is never held in memory twice.
    """
    with open(path, "rb") as f:
        return _parse_lines(f, source=os.fspath(path), migrate=migrate)


def scan_lines(
    lines: Iterable[bytes], diag: LoadDiagnostics, offset: int = 0
) -> Iterator[tuple[int, int, Any]]:
    """Classify raw lines (each with its ``\\n``) and yield ``(offset, length, value)`` per kept one.

    Kept are the values Pi keeps: objects, and non-object JSON that is truthy. Blank,
    unparsable and falsy lines are counted in ``diag``; once the lines are exhausted ``diag``
    also says whether the file ended without a newline and whether that last piece parsed.
    """
    number = 0
    kept = 0
    last_kept = -1
    raw = b"\n"
    loads, error = orjson.loads, orjson.JSONDecodeError
    for number, raw in enumerate(lines, 1):
        length = len(raw)
        try:
            value = loads(raw)  # (_parse_line's first step, inlined: this runs for every line)
        except error:
            value = _parse_line(raw)
        if type(value) is dict or (value is not _BLANK and value is not _JUNK and truthy(value)):
            kept += 1
            last_kept = number
            yield offset, length, value
        else:
            if value is _BLANK:
                diag.blank_lines += 1
            elif value is _JUNK:
                diag.skip_unparsable(number)
            else:
                diag.falsy_lines += 1
            if not kept:
                diag.leading_junk_lines += 1
        offset += length
    diag.physical_lines = number
    diag.torn_tail = number > 0 and not raw.endswith(b"\n")
    diag.torn_tail_parsed = diag.torn_tail and last_kept == number


def check_header(first: Any, source: str, physical_lines: int) -> dict[str, Any]:
    """The first kept line, if it is a valid session header; else :class:`NotASessionError`."""
    if first is None:
        reason = "the file is empty" if physical_lines == 0 else "it contains no JSON lines"
        raise NotASessionError(source, reason)
    if not E.is_valid_header(first):
        if type(first) is dict and first.get("type") == E.HEADER:
            reason = "the session header has no string id"
        else:
            reason = "its first JSON line is not a session header"
        raise NotASessionError(source, reason)
    header: dict[str, Any] = first
    return header


class paused_gc:
    """Pause the cyclic GC while many fresh containers are created and none become garbage.

    Parsing creates one dict per JSON object; the collector would re-scan them all again and
    again while they pile up (40-90 ms on a 50 MB session).
    """

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


def _parse_lines(
    lines: Iterable[bytes],
    *,
    source: str,
    migrate: bool,
    new_id: Callable[[], str] | None = None,
) -> LoadedSession:
    diag = LoadDiagnostics()
    with paused_gc():
        kept = [value for _, _, value in scan_lines(lines, diag)]
    header = check_header(kept[0] if kept else None, source, diag.physical_lines)
    entries = [line for line in kept if not (type(line) is dict and line.get("type") == E.HEADER)]
    diag.extra_headers = len(kept) - len(entries) - 1
    if migrate:
        if new_id is None:
            seed = header.get("id") if type(header) is dict else None
            new_id = stable_ids(seed if isinstance(seed, str) else source)
        version = migrate_entries(kept, new_id=new_id)
        if version is not None:
            diag.source_version = version
    return LoadedSession(header, entries, diag, kept)


# --------------------------------------------------------------------------- migration


def _random_short_id() -> str:
    return uuid.uuid4().hex[:8]


def stable_ids(seed: str) -> Callable[[], str]:
    """8-hex ids for a v1 file's entries, the same at every read of the same session.

    Pi draws them at random because it rewrites the file once migrated. A read-only root is
    migrated in memory at every load, so random ids would change from one read (or daemon
    restart) to the next and an id a user copied from ``sessiond tree`` would name nothing.
    Derived from the session id and the entry's position, they are as opaque as Pi's.
    """
    counter = itertools.count()
    seen: set[str] = set()

    def make() -> str:
        while True:
            candidate = hashlib.sha256(f"{seed}\0{next(counter)}".encode()).hexdigest()[:8]
            if candidate not in seen:
                seen.add(candidate)
                return candidate

    return make


def header_version(header: Any) -> Any:
    """``header.version ?? 1``."""
    version = header.get("version", UNDEFINED) if type(header) is dict else UNDEFINED
    return 1 if version is None or version is UNDEFINED else version


def migrate_entries(file_lines: list[Any], *, new_id: Callable[[], str] | None = None) -> float | None:
    """Bring parsed lines (header first) to version 3 in place, with Pi's exact semantics.

    v1 -> v2: every non-header line gets a fresh 8-hex ``id`` and ``parentId`` = the previous
    line's id (one linear chain); a compaction's numeric ``firstKeptEntryIndex`` (an index
    into the raw line list, header at 0) becomes ``firstKeptEntryId`` when its target already
    has an id, and is removed. v2 -> v3: role ``hookMessage`` becomes ``custom``. Returns the
    version migrated from, or ``None`` when nothing changed.
    """
    header = next((line for line in file_lines if type(line) is dict and line.get("type") == E.HEADER), None)
    version = header_version(header)
    if not isinstance(version, int | float) or isinstance(version, bool):
        return None  # Pi compares with <; a non-numeric version never migrates
    if version >= E.CURRENT_VERSION:
        return None
    make_id = new_id or _random_short_id
    if version < 2:
        previous: Any = None
        for line in file_lines:
            if type(line) is not dict:
                continue
            if line.get("type") == E.HEADER:
                line["version"] = 2
                continue
            line["id"] = make_id()
            line["parentId"] = previous
            previous = line["id"]
            if line.get("type") == E.COMPACTION:
                index = line.get("firstKeptEntryIndex", UNDEFINED)
                if type(index) in (int, float) and type(index) is not bool:
                    target = (
                        file_lines[int(index)]
                        if index == int(index) and 0 <= index < len(file_lines)
                        else None
                    )
                    if truthy(target) and not (type(target) is dict and target.get("type") == E.HEADER):
                        target_id = target.get("id", UNDEFINED) if type(target) is dict else UNDEFINED
                        if target_id is UNDEFINED:
                            line.pop("firstKeptEntryId", None)  # JS assigns undefined
                        else:
                            line["firstKeptEntryId"] = target_id
                    del line["firstKeptEntryIndex"]
    if version < 3:
        for line in file_lines:
            if type(line) is not dict:
                continue
            if line.get("type") == E.HEADER:
                line["version"] = 3
                continue
            if line.get("type") == E.MESSAGE:
                message = line.get("message")
                if truthy(message) and type(message) is dict and message.get("role") == "hookMessage":
                    message["role"] = "custom"
    return version


# --------------------------------------------------------------------------- encoding


def encode_line(entry: Any) -> bytes:
    """One JSONL line exactly as Pi writes it: ``JSON.stringify(entry) + "\\n"``."""
    return dumps(entry) + b"\n"


__all__ = [
    "LoadDiagnostics",
    "LoadedSession",
    "check_header",
    "encode_line",
    "header_version",
    "load_session",
    "migrate_entries",
    "parse_session",
    "paused_gc",
    "scan_lines",
]
