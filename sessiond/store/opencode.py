"""OpenCode's data directory, read-only: its SQLite database and the older JSON store.

* :class:`OpenCodeDatabase` reads ``opencode.db`` through the standard library's ``sqlite3``
  with a read-only URI connection, so OpenCode's write-ahead log is respected (a reader sees
  every committed transaction, including those not checkpointed into the main file yet) and
  sessiond never takes a write lock. ``PRAGMA data_version`` tells a long-lived connection
  whether another connection committed since it last looked: that is how changes are found.
* :class:`OpenCodeJsonStore` reads ``storage/session/<project>/<id>.json``,
  ``storage/message/<session>/<id>.json`` and ``storage/part/<message>/<id>.json`` (OpenCode
  before its SQLite migration; the files stay behind after it).
* :class:`OpenCodeSession` is one session behind sessiond's session API
  (:class:`~sessiond.store.foreign.ForeignSession`). A database session's path is
  ``<data>/opencode.db#<session id>``; a JSON one's is its session file.

A session is re-read whole when it changes (one session's rows are few); entries are only
ever appended, and a change that removes messages (OpenCode deletes reverted messages at the
next prompt) or moves the revert point asks the follower to reopen the session.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import orjson

from ..errors import NotASessionError, SessiondError, SessionNotFoundError
from ..formats.opencode import OpenCodeSession as OpenCodeRecords
from ..formats.opencode import build_session, convert, iso, session_from_row
from ..formats.opencode.convert import Conversion, entries_for, finished, settled
from ..model.js import key
from .foreign import ForeignSession
from .session import IngestResult

READ_ONLY: Final = "it is an OpenCode session; sessiond never writes another agent's data"
DB_NAME: Final = "opencode.db"
SEPARATOR: Final = "#"
BUSY_TIMEOUT: Final = 2.0


class UnreadableDatabaseError(NotASessionError):
    """OpenCode's database is missing, damaged or not SQLite (``NOT_A_SESSION`` to clients)."""

    def __init__(self, path: str, reason: str) -> None:
        SessiondError.__init__(
            self, f"cannot read OpenCode's database {path}: {reason}", path=path, reason=reason
        )
        self.path = path
        self.reason = reason


class OpenCodeDatabase:
    """``opencode.db``, opened read-only for each read (cheap, and safe from any thread).

    Every read raises :class:`UnreadableDatabaseError` (not ``sqlite3.Error``) when the file is
    missing, locked for longer than the busy timeout, damaged or not a database.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._watch: sqlite3.Connection | None = None
        self._watch_lock = threading.Lock()

    def exists(self) -> bool:
        return self.path.is_file()

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        if not self.path.is_file():
            raise UnreadableDatabaseError(str(self.path), "no such file")
        uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, check_same_thread=False)
        except sqlite3.Error as exc:
            raise UnreadableDatabaseError(str(self.path), str(exc)) from None
        conn.row_factory = sqlite3.Row
        try:
            yield conn
        except sqlite3.Error as exc:
            raise UnreadableDatabaseError(str(self.path), str(exc)) from None
        finally:
            conn.close()

    def session_rows(self, cwd: str | None = None) -> list[dict[str, Any]]:
        with self.connect() as conn:
            if not _has_table(conn, "session"):
                return []
            if cwd is None:
                rows = conn.execute("SELECT * FROM session").fetchall()
            else:
                rows = conn.execute("SELECT * FROM session WHERE directory = ?", (cwd,)).fetchall()
            stamps: dict[str, tuple[Any, ...]] = {
                sid: (n, updated) for sid, n, updated in conn.execute(_MESSAGE_STAMPS).fetchall()
            }
            parts = _has_table(conn, "part")
            if parts:
                for sid, n, updated in conn.execute(_PART_STAMPS).fetchall():
                    stamps[sid] = (*stamps.get(sid, (0, None)), n, updated)
            counts = {
                row["id"]: self._message_count(conn, row["id"], stamps[row["id"]], parts)
                for row in rows
                if row["id"] in stamps
            }
            firsts = _first_prompts(conn)
        out = []
        for row in rows:
            d = dict(row)
            d["_messages"] = counts.get(d["id"], 0)
            d["_first"] = firsts.get(d["id"])
            out.append(d)
        return out

    def _message_count(self, conn: sqlite3.Connection, sid: str, stamp: tuple[Any, ...], parts: bool) -> int:
        """A session's ``message`` entries as its tree shows them (docs/concepts.md, "Messages"):
        its settled messages (``convert.settled``: not a last one still being written) and,
        each its own ``toolResult`` message, their tool parts. Counted again only when the
        session's messages or parts changed (their number or latest update)."""
        cache_key = (str(self.path), sid)
        cached = _COUNTS.get(cache_key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        count = int(stamp[0])
        if parts:
            count += conn.execute(_TOOL_PARTS, (sid,)).fetchone()[0]
        last = conn.execute(_LAST_MESSAGE, (sid,)).fetchone()
        if last is not None:
            try:
                info = orjson.loads(last["data"])
            except orjson.JSONDecodeError:
                info = None
            if type(info) is dict and not finished(info):
                count -= 1 + (conn.execute(_TOOL_PARTS_OF, (last["id"],)).fetchone()[0] if parts else 0)
        _COUNTS[cache_key] = (stamp, count)
        return count

    def has_session(self, session_id: str) -> bool:
        with self.connect() as conn:
            if not _has_table(conn, "session"):
                return False
            return conn.execute("SELECT 1 FROM session WHERE id = ?", (session_id,)).fetchone() is not None

    def load(self, session_id: str) -> OpenCodeRecords:
        """One session with its messages and parts, read in one transaction."""
        with self.connect() as conn:
            conn.execute("BEGIN")
            row = conn.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFoundError(session_id)
            messages = conn.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                (session_id,),
            ).fetchall()
            parts = conn.execute(
                "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
                (session_id,),
            ).fetchall()
            conn.execute("COMMIT")
        info = session_from_row(dict(row))
        return build_session(info, (tuple(m) for m in messages), (tuple(p) for p in parts))

    def signature(self, session_id: str) -> tuple[Any, ...]:
        """Changes whenever a message or part of the session (or the session row) changes."""
        with self.connect() as conn:
            conn.execute("BEGIN")
            s = conn.execute(
                "SELECT time_updated, revert FROM session WHERE id = ?", (session_id,)
            ).fetchone()
            m = conn.execute(
                "SELECT COUNT(*), MAX(time_updated) FROM message WHERE session_id = ?", (session_id,)
            ).fetchone()
            p = conn.execute(
                "SELECT COUNT(*), MAX(time_updated) FROM part WHERE session_id = ?", (session_id,)
            ).fetchone()
            conn.execute("COMMIT")
        return (None if s is None else tuple(s), tuple(m), tuple(p))

    def data_version(self) -> int | None:
        """``PRAGMA data_version`` on a connection kept open: it moves when another commits."""
        with self._watch_lock:
            try:
                if self._watch is None:
                    if not self.exists():
                        return None
                    uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
                    self._watch = sqlite3.connect(
                        uri, uri=True, timeout=BUSY_TIMEOUT, check_same_thread=False
                    )
                # data_version is the value as of this connection's last read transaction: read
                # something first, or a commit would only be noticed one look later.
                self._watch.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                row = self._watch.execute("PRAGMA data_version").fetchone()
                return int(row[0])
            except sqlite3.Error:
                self.close()
                return None

    def updated_since(self, since_ms: int) -> list[str]:
        """Ids of sessions whose row changed after ``since_ms``."""
        with self.connect() as conn:
            if not _has_table(conn, "session"):
                return []
            return [r[0] for r in conn.execute("SELECT id FROM session WHERE time_updated > ?", (since_ms,))]

    def close(self) -> None:
        if self._watch is not None:
            try:
                self._watch.close()
            finally:
                self._watch = None


_MESSAGE_STAMPS: Final = "SELECT session_id, COUNT(*), MAX(time_updated) FROM message GROUP BY session_id"
_PART_STAMPS: Final = "SELECT session_id, COUNT(*), MAX(time_updated) FROM part GROUP BY session_id"
_IS_TOOL: Final = "CASE WHEN json_valid(data) THEN json_extract(data, '$.type') END = 'tool'"
"""A tool part (a part that is not JSON is not one)."""
_TOOL_PARTS: Final = f"SELECT COUNT(*) FROM part WHERE session_id = ? AND {_IS_TOOL}"
_TOOL_PARTS_OF: Final = f"SELECT COUNT(*) FROM part WHERE message_id = ? AND {_IS_TOOL}"
_LAST_MESSAGE: Final = (
    "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created DESC, id DESC LIMIT 1"
)
"""A session's last message, in the order :meth:`OpenCodeDatabase.load` reads them."""
_COUNTS: dict[tuple[str, str], tuple[tuple[Any, ...], int]] = {}
"""``(database, session id)`` → (what its messages and parts looked like, its message count)."""


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    query = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?"
    return conn.execute(query, (name,)).fetchone() is not None


def _first_prompts(conn: sqlite3.Connection) -> dict[str, str]:
    """The first typed text of each session (one query over user messages' first text parts)."""
    out: dict[str, str] = {}
    rows = conn.execute(
        "SELECT p.session_id, p.data FROM part p JOIN message m ON m.id = p.message_id "
        'WHERE m.data LIKE \'%"role":"user"%\' ORDER BY m.time_created, m.id, p.id'
    )
    for session_id, data in rows:
        if session_id in out:
            continue
        try:
            part = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if type(part) is not dict or part.get("type") != "text":
            continue
        if not part.get("synthetic") and not part.get("ignored"):
            text = part.get("text")
            if type(text) is str and text.strip():
                out[session_id] = text.strip()
    return out


class OpenCodeJsonStore:
    """The JSON files of OpenCode versions before its SQLite database (``<data>/storage``)."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / "storage"

    def session_files(self) -> Iterator[Path]:
        base = self.root / "session"
        try:
            projects = sorted(e.path for e in os.scandir(base) if e.is_dir())
        except OSError:
            return
        for project in projects:
            try:
                names = sorted(e.name for e in os.scandir(project) if e.name.endswith(".json"))
            except OSError:
                continue
            for name in names:
                yield Path(project) / name

    def find(self, session_id: str) -> Path | None:
        for candidate in sorted((self.root / "session").glob(f"*/{session_id}.json")):
            if candidate.is_file():
                return candidate
        return None

    @staticmethod
    def read_info(path: Path) -> dict[str, Any] | None:
        try:
            obj = orjson.loads(Path(path).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return obj if type(obj) is dict and type(obj.get("id")) is str else None

    def message_count(self, path: Path) -> int:
        """A session's ``message`` entries as its tree shows them (docs/concepts.md, "Messages"):
        its settled messages and, each its own ``toolResult`` message, their tool parts. The
        JSON store is OpenCode's older layout and small: the session is read and converted."""
        try:
            records = self.load(path)
        except SessiondError:
            return 0
        return len(entries_for(settled(records.messages)))

    def load(self, path: Path) -> OpenCodeRecords:
        info = self.read_info(path)
        if info is None:
            raise SessionNotFoundError(Path(path).stem)
        sid = info["id"]
        messages: list[tuple[str | None, Any, Any]] = []
        parts: list[tuple[str | None, str | None, Any]] = []
        skipped = 0
        for file in _json_files(self.root / "message" / sid):
            data = _read(file)
            if data is None:
                skipped += 1
                continue
            messages.append((None, None, data))
            mid = file.stem
            for part_file in _json_files(self.root / "part" / mid):
                part = _read(part_file)
                if part is None:
                    skipped += 1
                    continue
                parts.append((None, None, part))
        session = build_session(info, messages, parts)
        session.skipped += skipped
        return session


def _json_files(directory: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(directory) if e.name.endswith(".json") and e.is_file())
    except OSError:
        return []


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


# --------------------------------------------------------------------------- paths


def db_session_path(data_dir: Path, session_id: str) -> Path:
    return Path(data_dir) / f"{DB_NAME}{SEPARATOR}{session_id}"


def is_opencode_session_path(path: str | os.PathLike[str]) -> bool:
    """``<data>/opencode.db#<id>``, or a session file of the JSON store (``storage/session/*/``)."""
    p = Path(path)
    if split_db_path(p) is not None:
        return True
    parts = p.parts
    return (
        p.suffix == ".json"
        and len(parts) >= 4
        and parts[-3] == "session"
        and parts[-4] == "storage"
        and p.stem.startswith("ses_")
        and p.is_file()
    )


def split_db_path(path: Path) -> tuple[Path, str] | None:
    """``(database, session id)`` for a database session's path, else ``None``."""
    name = Path(path).name
    prefix = DB_NAME + SEPARATOR
    if name.startswith(prefix) and len(name) > len(prefix):
        return Path(path).parent / DB_NAME, name[len(prefix) :]
    return None


# --------------------------------------------------------------------------- the session


class _Diagnostics:
    def __init__(self, session: OpenCodeSession) -> None:
        self.session = session

    def as_json(self) -> dict[str, Any]:
        s = self.session
        info = s.records.info
        return {
            "format": "opencode",
            "store": s.store,
            "skippedRecords": s.records.skipped,
            "conversion": s.conversion.diagnostics.as_json(),
            "opencode": {
                k: info[k]
                for k in ("version", "projectID", "parentID", "slug", "revert", "tokens", "cost")
                if k in info
            },
            "children": list(s.children_ids),
        }


class OpenCodeSession(ForeignSession):
    format_name = "OpenCode"

    def __init__(self, path: Path, records: OpenCodeRecords, store: str, signature: Any) -> None:
        time = records.info.get("time")
        created = time.get("created") if type(time) is dict else None
        header = {
            "type": "session",
            "version": 3,
            "id": records.id,
            "timestamp": iso(int(created)) if type(created) is int or type(created) is float else "",
            "cwd": records.directory,
        }
        super().__init__(path, header, READ_ONLY)
        self.store = store
        self.records = records
        self.conversion: Conversion = convert(records)
        self.signature = signature
        self.children_ids: list[str] = []
        self.diagnostics = _Diagnostics(self)  # type: ignore[assignment]
        self._add_entries(self.conversion.entries, self.conversion.leaf)

    @classmethod
    def open(cls, path: Path, **_: Any) -> OpenCodeSession:
        path = Path(path)
        db = split_db_path(path)
        if db is not None:
            database = OpenCodeDatabase(db[0])
            signature = database.signature(db[1])
            session = cls(path, database.load(db[1]), "sqlite", signature)
            session.children_ids = _children(database, db[1])
            return session
        store = OpenCodeJsonStore(path.parent.parent.parent.parent)
        return cls(path, store.load(path), "json", _json_signature(store, path))

    @property
    def name(self) -> str | None:
        return self.records.title

    def file_size(self) -> int | None:
        return None  # not a file the watcher follows; changes come from the database poll

    def _messages_at(self, leaf: Any) -> list[tuple[str, dict[str, Any]]]:
        if key(leaf) == key(self.conversion.leaf):
            return self.conversion.context
        if leaf is None:
            return []
        return convert(self.records, upto=str(leaf)).context

    def ingest(self) -> IngestResult:
        """Re-read the session when it changed; report the entries that are new."""
        with self._lock:
            result = IngestResult()
            db = split_db_path(self.path)
            try:
                if db is not None:
                    database = OpenCodeDatabase(db[0])
                    signature = database.signature(db[1])
                    if signature == self.signature:
                        return result
                    if signature[0] is None:
                        result.reload_required = "the session was deleted"
                        return result
                    records = database.load(db[1])
                else:
                    store = OpenCodeJsonStore(self.path.parent.parent.parent.parent)
                    signature = _json_signature(store, self.path)
                    if signature == self.signature:
                        return result
                    records = store.load(self.path)
            except SessionNotFoundError:
                result.reload_required = "the session was deleted"
                return result
            except UnreadableDatabaseError as exc:
                result.reload_required = f"the database could not be read ({exc.reason})"
                return result
            conversion = convert(records)
            known = {e["id"] for e in self.conversion.entries}
            fresh = {e["id"] for e in conversion.entries}
            if not known <= fresh:
                result.reload_required = "messages were removed"
                return result
            new = [e for e in conversion.entries if e["id"] not in known]
            if key(conversion.leaf) != key(self.conversion.leaf) and not new:
                result.reload_required = "the revert point moved"
                return result
            self.records, self.conversion, self.signature = records, conversion, signature
            self._add_entries(new, conversion.leaf)
            result.entries.extend(new)
            return result


def _children(database: OpenCodeDatabase, session_id: str) -> list[str]:
    try:
        with database.connect() as conn:
            rows = conn.execute(
                "SELECT id FROM session WHERE parent_id = ? ORDER BY time_created, id", (session_id,)
            ).fetchall()
    except UnreadableDatabaseError:
        return []
    return [r[0] for r in rows]


def _json_signature(store: OpenCodeJsonStore, path: Path) -> tuple[Any, ...]:
    info = OpenCodeJsonStore.read_info(path)
    sid = info["id"] if info is not None else Path(path).stem
    stamps: list[tuple[str, int, int]] = []
    for file in [Path(path), *_json_files(store.root / "message" / sid)]:
        try:
            st = file.stat()
        except OSError:
            continue
        stamps.append((file.name, st.st_size, st.st_mtime_ns))
    return tuple(stamps)


__all__ = [
    "DB_NAME",
    "READ_ONLY",
    "OpenCodeDatabase",
    "OpenCodeJsonStore",
    "OpenCodeSession",
    "UnreadableDatabaseError",
    "db_session_path",
    "is_opencode_session_path",
    "split_db_path",
]
