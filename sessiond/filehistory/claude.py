"""Claude Code's file history as sessiond snapshots (docs/file-history.md, Claude Code sessions).

Claude Code backs a file up before its tools first edit it in a turn, into
``<file-history>/<sessionId>/<sha256(absolute path)[:16]>@v<N>`` (``copyFile``: content and
permissions), and writes ``file-history-snapshot`` records: at each prompt the backups of every
tracked file, then cumulative updates during the turn (the last record for a prompt wins), or,
from 2.1.3xx, one ``file-history-delta`` per file backed up during the turn. A ``null`` backup
means the file did not exist then.

That maps one to one onto sessiond's snapshot data: a checkpoint per prompt, its files'
states pointing at blobs (the backups, imported into the session's blob store on first use).
What the session *last wrote* — the basis of conflict detection — comes from its
Write/Edit/MultiEdit tool results, replayed in transcript order; a file whose last write cannot
be reconstructed has no ``seen`` entry, so a rewind treats any content there as someone else's.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ..formats.claude_code import ClaudeTranscript
from .blobs import Blobs
from .errors import FileHistoryError


def _key(path: str, cwd: str | None) -> str:
    """sessiond's file key: relative to the cwd when inside it (Claude Code's rule too)."""
    if cwd and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, cwd)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def snapshot_records(transcript: ClaudeTranscript) -> dict[str, dict[str, Any]]:
    """Prompt uuid -> its last ``trackedFileBackups`` (records in file order, last one wins).

    From 2.1.3xx a backup taken during a turn is recorded as a ``file-history-delta``
    (``snapshotMessageId`` names the prompt's snapshot, ``trackingPath`` the file, ``backup`` its
    backup) instead of a cumulative snapshot update: it adds that file to the prompt's backups.
    """
    out: dict[str, dict[str, Any]] = {}
    for rec in transcript.records:
        if rec.get("type") == "file-history-delta":
            target = rec.get("snapshotMessageId")
            path = rec.get("trackingPath")
            backup = rec.get("backup")
            if (
                isinstance(target, str)
                and target in out
                and isinstance(path, str)
                and isinstance(backup, dict)
            ):
                out[target] = {**out[target], path: backup}
            continue
        if rec.get("type") != "file-history-snapshot":
            continue
        snap = rec.get("snapshot")
        if not isinstance(snap, dict):
            continue
        message_id = snap.get("messageId") or rec.get("messageId")
        backups = snap.get("trackedFileBackups")
        if isinstance(message_id, str) and isinstance(backups, dict):
            out.pop(message_id, None)  # keep first-seen order of the latest state
            out[message_id] = backups
    return out


def checkpoint_data(transcript: ClaudeTranscript, backups_dir: Path, blobs: Blobs) -> list[dict[str, Any]]:
    """One ``checkpoint`` snapshot per prompt, with the backups imported as blobs."""
    session_dir = backups_dir / (transcript.session_id or "")
    cwd = transcript.cwd
    out: list[dict[str, Any]] = []
    for message_id, backups in snapshot_records(transcript).items():
        files: dict[str, Any] = {}
        for path, backup in backups.items():
            if not isinstance(path, str) or not isinstance(backup, dict):
                continue
            name = backup.get("backupFileName")
            key = _key(path, cwd)
            if name is None:
                files[key] = {"kind": "missing"}
                continue
            if not isinstance(name, str) or "/" in name or name in (".", ".."):
                continue
            source = session_dir / name
            try:
                sha, size = blobs.put_file(source)
                mode = os.stat(source).st_mode & 0o7777
            except (OSError, FileHistoryError):
                continue  # the backup is gone (retention) or not a regular file: not restorable
            files[key] = {"kind": "file", "blob": sha, "mode": mode, "size": size}
        out.append({"messageId": message_id, "kind": "checkpoint", "files": files})
    return out


def _apply_edit(text: str, old: Any, new: Any, replace_all: Any) -> str | None:
    if not isinstance(old, str) or not isinstance(new, str) or (old and old not in text):
        return None
    if not old:
        return new if not text else None
    return text.replace(old, new) if replace_all is True else text.replace(old, new, 1)


def written_contents(transcript: ClaudeTranscript) -> dict[str, str | None]:
    """File key -> the text the session last wrote (None: written, but not reconstructible)."""
    cwd = transcript.cwd
    out: dict[str, str | None] = {}
    for rec in transcript.records:
        if rec.get("type") != "user":
            continue
        result = rec.get("toolUseResult")
        if not isinstance(result, dict):
            continue
        path = result.get("filePath")
        if not isinstance(path, str):
            continue
        key = _key(path, cwd)
        content: str | None
        if "edits" in result and isinstance(result.get("originalFileContents"), str):
            content = result["originalFileContents"]
            for edit in result["edits"] if isinstance(result["edits"], list) else []:
                if content is None or not isinstance(edit, dict):
                    content = None
                    break
                content = _apply_edit(
                    content, edit.get("old_string"), edit.get("new_string"), edit.get("replace_all")
                )
        elif "oldString" in result and isinstance(result.get("originalFile"), str):
            content = _apply_edit(
                result["originalFile"],
                result.get("oldString"),
                result.get("newString"),
                result.get("replaceAll"),
            )
        elif result.get("type") in ("create", "update") and isinstance(result.get("content"), str):
            content = result["content"]
        else:
            continue
        out[key] = content
    return out


def seen_data(transcript: ClaudeTranscript) -> dict[str, Any]:
    """A ``seen`` update: what the session last wrote, as content keys (sha256 of the text)."""
    seen = {
        key: hashlib.sha256(text.encode()).hexdigest()
        for key, text in written_contents(transcript).items()
        if text is not None
    }
    return {"messageId": None, "kind": "update", "files": {}, "seen": seen}


def claude_history_data(session: Any, blobs: Blobs, config: Any) -> list[dict[str, Any]]:
    """Everything to replay for a Claude Code session: its checkpoints, then what it wrote."""
    transcript: ClaudeTranscript = session.read_transcript()
    data = checkpoint_data(transcript, config.claude_file_history, blobs)
    seen = seen_data(transcript)
    if data and seen["seen"]:
        seen["messageId"] = data[-1]["messageId"]
        data.append(seen)
    return data
