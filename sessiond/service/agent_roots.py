"""Finding and listing sessions in Codex CLI's home and OpenCode's data directory.

The :class:`~sessiond.service.catalog.Catalog` asks this module for the two roots whose
sessions are not one Pi-or-Claude file per session:

* **Codex** (``$CODEX_HOME``): a thread is ``sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl`` or,
  once archived, ``archived_sessions/rollout-<ts>-<id>.jsonl``; the id is the file name's
  trailing uuid (and the first ``session_meta``'s ``id``). A listing row reads the file's head
  (identity, first prompt) and counts messages with a byte scan, so listing many large
  rollouts stays cheap; rows are cached per file state.
* **OpenCode** (its data directory): database sessions first (``opencode.db``), then sessions
  only the older JSON store has (OpenCode's migration copies them into the database, so an
  id in both is the database's).

A fork (Codex ``forked_from_id``), a spawned Codex sub-agent (``source.subagent.thread_spawn``)
and an OpenCode child session (``parent_id``) name their parent in ``parentSession``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from ..formats.codex import Rollout, origin, parse_rollout, parse_session_index
from ..formats.codex import items as I
from ..formats.codex.listing import first_prompt, message_count
from ..store.bounded import BoundedLines, describe_plain
from ..store.codex import INDEX_FILE, load_history_base
from ..store.listing import SessionInfo
from ..store.opencode import DB_NAME, OpenCodeDatabase, OpenCodeJsonStore, db_session_path
from ..store.regular import open_regular

ROLLOUT: Final = re.compile(
    r"rollout-.*-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
)
HEAD_BYTES: Final = 256 * 1024
"""Enough of a rollout's start for its meta line and (almost always) its first prompt."""
_ITEM: Final = re.compile(
    rb'"payload":\{"type":"([a-z_]+)"(?:,"status":"[a-z_]*")?(?:,"id":"[^"\\]*")?(?:,"role":"([a-z]+)")?'
)
"""A response item's type (and a message's role: Codex 0.169 writes its ``status`` and ``id``
before it). Inside a JSON string a quote is escaped, so this never matches a transcript's text."""


def rollout_id(path: Path) -> str | None:
    """The thread id in a rollout's file name, or ``None`` for a file that is not a rollout."""
    m = ROLLOUT.fullmatch(Path(path).stem)
    return m.group(1) if m else None


def is_codex_session_file(root: Path, path: Path) -> bool:
    """A rollout under ``sessions/`` or ``archived_sessions/`` of this Codex home."""
    try:
        rel = Path(path).relative_to(root)
    except ValueError:
        return False
    return (
        bool(rel.parts) and rel.parts[0] in ("sessions", "archived_sessions") and rollout_id(path) is not None
    )


def codex_dirs(root: Path) -> list[Path]:
    return [root / "sessions", root / "archived_sessions"]


def codex_files(root: Path) -> Iterator[Path]:
    """Every rollout of a Codex home (newest day directories first is not needed: sorted)."""
    for base in codex_dirs(root):
        stack = [base]
        found: list[Path] = []
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as it:
                    for e in it:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(Path(e.path))
                        elif e.name.endswith(".jsonl") and rollout_id(Path(e.name)) is not None:
                            found.append(Path(e.path))
            except OSError:
                continue
        yield from sorted(found)


def find_codex(root: Path, session_id: str) -> Path | None:
    for pattern in (
        f"sessions/*/*/*/rollout-*-{session_id}.jsonl",
        f"archived_sessions/rollout-*-{session_id}.jsonl",
    ):
        for candidate in sorted(root.glob(pattern)):
            if candidate.is_file():
                return candidate
    return None


class CodexListing:
    """Listing rows of rollouts, re-read only when a file changed; titles from the index, re-read
    only when it changed."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int, int], SessionInfo | None, dict[str, Any]]] = {}
        self._titles: dict[str, tuple[tuple[int, int, int] | None, dict[str, str]]] = {}

    def titles(self, root: Path) -> dict[str, str]:
        index = root / INDEX_FILE
        try:
            st = os.stat(index)
            stamp: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        cached = self._titles.get(str(root))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            names = parse_session_index(index.read_bytes()) if stamp is not None else {}
        except OSError:
            names = {}
        self._titles[str(root)] = (stamp, names)
        return names

    def info(self, root: Path, path: Path) -> SessionInfo | None:
        entry = self._entry(path)
        if entry is None:
            return None
        info, origin_fields = entry
        changes: dict[str, Any] = {}
        title = self.titles(root).get(str(info.id))
        if title is not None:
            changes["name"] = title
        parent = origin_fields.get("forkedFromId") or origin_fields.get("parentThreadId")
        if type(parent) is str:
            found = find_codex(root, parent)
            if found is not None:
                changes["parent_session_path"] = str(found)
        return dataclasses.replace(info, **changes) if changes else info

    def _entry(self, path: Path) -> tuple[SessionInfo, dict[str, Any]] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._cache.get(str(path))
        if cached is not None and cached[0] == stamp:
            return None if cached[1] is None else (cached[1], cached[2])
        try:
            info, fields = _codex_summary(path, st.st_mtime_ns / 1e6)
        except OSError:
            self._cache[str(path)] = (stamp, None, {})
            return None
        self._cache[str(path)] = (stamp, info, fields)
        return info, fields


def _codex_summary(path: Path, mtime_ms: float) -> tuple[SessionInfo, dict[str, Any]]:
    with open_regular(path) as f:
        # complete lines, none over the line limit (a placeholder instead: store.bounded)
        data = b"".join(BoundedLines(f.fileno(), 0, os.fstat(f.fileno()).st_size, describe_plain))
    head = data[:HEAD_BYTES]
    rollout: Rollout = parse_rollout(head[: head.rfind(b"\n") + 1], str(path))
    prompt = first_prompt(rollout)
    if prompt is None and len(data) > HEAD_BYTES:
        prompt = first_prompt(parse_rollout(data, str(path)))
    sid = rollout.session_id or rollout_id(path) or Path(path).stem
    meta = rollout.meta or {}
    created = _ms(meta.get("timestamp")) or _first_ts(rollout) or mtime_ms
    modified = _last_ts(data) or mtime_ms
    if b'"payload":' in data:
        count = _message_items(data) + _inherited_messages(path, rollout)
    else:  # the first rollouts (2025) wrote bare items, no record wrapper
        count = message_count(parse_rollout(data, str(path)).records)
    info = SessionInfo(
        path=str(path),
        id=sid,
        cwd=rollout.cwd or "",
        name=None,
        parent_session_path=None,
        created_ms=created,
        modified_ms=max(modified, created),
        message_count=count,
        first_message=prompt or "(no messages)",
    )
    return info, origin(rollout)


def _message_items(data: bytes) -> int:
    """The response items of a rollout that are ``message`` entries (``is_message_item``),
    counted with a byte scan (matches tallied in C); a message whose role is not where the scan
    looks is parsed."""
    found = Counter(_ITEM.findall(data))
    count = sum(n for (kind, role), n in found.items() if kind in _MESSAGE_KINDS or role in _ROLES)
    if found.get((b"message", b"")):
        for m in _ITEM.finditer(data):
            if m.group(1) != b"message" or m.group(2) is not None:
                continue
            start = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.end())
            try:
                record = orjson.loads(data[start : len(data) if end < 0 else end])
            except orjson.JSONDecodeError:
                continue
            payload = record.get("payload") if type(record) is dict else None
            count += type(payload) is dict and I.is_message_item(payload)
    return count


_MESSAGE_KINDS: Final = frozenset(t.encode() for t in I.MODEL_ITEM_TYPES | I.OUTPUT_ITEM_TYPES)
_ROLES: Final = frozenset({b"user", b"assistant"})


def _inherited_messages(path: Path, rollout: Rollout) -> int:
    """A paginated fork's messages inherited from its parent rollouts (its tree shows them)."""
    if (rollout.meta or {}).get("history_mode") != "paginated":
        return 0
    base, _ = load_history_base(path, rollout.meta)
    return sum(message_count(records) for _, records in base)


def _ms(value: Any) -> float | None:
    from ..model.js import date_ms  # noqa: PLC0415

    ms = date_ms(value)
    return ms if ms == ms else None


def _first_ts(rollout: Rollout) -> float | None:
    for record in rollout.records:
        ms = _ms(record.timestamp)
        if ms is not None:
            return ms
    return None


def _last_ts(data: bytes) -> float | None:
    """The timestamp of the last complete line (read backwards, a few lines at most)."""
    end = data.rfind(b"\n")
    for _ in range(16):
        if end <= 0:
            return None
        start = data.rfind(b"\n", 0, end) + 1
        try:
            obj = orjson.loads(data[start:end])
        except orjson.JSONDecodeError:
            obj = None
        if type(obj) is dict:
            ms = _ms(obj.get("timestamp"))
            if ms is not None:
                return ms
        end = start - 1
    return None


# --------------------------------------------------------------------------- OpenCode


def find_opencode(root: Path, session_id: str) -> Path | None:
    database = OpenCodeDatabase(root / DB_NAME)
    if database.exists():
        try:
            if database.has_session(session_id):
                return db_session_path(root, session_id)
        except Exception:
            pass
    return OpenCodeJsonStore(root).find(session_id)


def opencode_infos(root: Path, cwd: str | None) -> list[SessionInfo]:
    infos: list[SessionInfo] = []
    seen: set[str] = set()
    database = OpenCodeDatabase(root / DB_NAME)
    by_id: dict[str, SessionInfo] = {}
    parents: dict[str, str] = {}
    wanted = None if cwd is None else {cwd, os.path.realpath(os.path.expanduser(cwd))}
    if database.exists():
        try:
            rows = [r for r in database.session_rows() if wanted is None or r.get("directory") in wanted]
        except Exception:
            rows = []
        for row in rows:
            sid = row["id"]
            info = SessionInfo(
                path=str(db_session_path(root, sid)),
                id=sid,
                cwd=row.get("directory") or "",
                name=(row.get("title") or "").strip() or None,
                parent_session_path=None,
                created_ms=float(row.get("time_created") or 0),
                modified_ms=float(row.get("time_updated") or row.get("time_created") or 0),
                message_count=int(row.get("_messages") or 0),
                first_message=row.get("_first") or "(no messages)",
            )
            if row.get("parent_id"):
                parents[sid] = row["parent_id"]
            by_id[sid] = info
            infos.append(info)
            seen.add(sid)
    store = OpenCodeJsonStore(root)
    for file in store.session_files():
        raw = OpenCodeJsonStore.read_info(file)
        if raw is None or raw["id"] in seen:
            continue
        directory = raw.get("directory")
        directory = directory if type(directory) is str else ""
        if wanted is not None and directory not in wanted:
            continue
        time = raw.get("time")
        time = time if type(time) is dict else {}
        created = _number(time.get("created")) or 0.0
        updated = _number(time.get("updated")) or created
        title = raw.get("title")
        info = SessionInfo(
            path=str(file),
            id=raw["id"],
            cwd=directory,
            name=title.strip() if type(title) is str and title.strip() else None,
            parent_session_path=None,
            created_ms=float(created),
            modified_ms=float(updated),
            message_count=store.message_count(file),
            first_message="(no messages)",
        )
        if type(raw.get("parentID")) is str:
            parents[raw["id"]] = raw["parentID"]
        by_id[raw["id"]] = info
        infos.append(info)
        seen.add(raw["id"])
    out = []
    for info in infos:
        target = by_id.get(parents.get(info.id, ""))
        out.append(info if target is None else dataclasses.replace(info, parent_session_path=target.path))
    return out


def _number(value: Any) -> float | None:
    return float(value) if type(value) is int or type(value) is float else None


__all__ = [
    "CodexListing",
    "codex_dirs",
    "codex_files",
    "find_codex",
    "find_opencode",
    "is_codex_session_file",
    "opencode_infos",
    "rollout_id",
]
