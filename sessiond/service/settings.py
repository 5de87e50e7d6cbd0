"""Per-session settings kept beside the transcript, never in it.

A setting such as a context-window override is about how sessiond treats a session, not
part of the conversation; writing it into the JSONL would change the leaf and show up in Pi.
So each session with settings has ``<store>/settings/<sessionId>.json`` (replaced atomically).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..store.layout import validate_session_id


class SessionSettings:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[str, dict[str, Any]] = {}

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{validate_session_id(session_id)}.json"

    def get(self, session_id: str) -> dict[str, Any]:
        if session_id not in self._cache:
            try:
                data = json.loads(self._path(session_id).read_text())
                self._cache[session_id] = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._cache[session_id] = {}
        return self._cache[session_id]

    def forget(self, session_id: str) -> None:
        """Drop the cached copy of a closed session's settings (the file stays)."""
        self._cache.pop(session_id, None)

    def update(self, session_id: str, **values: Any) -> dict[str, Any]:
        """Set values (``None`` removes a key) and persist atomically."""
        data = dict(self.get(session_id))
        for name, value in values.items():
            if value is None:
                data.pop(name, None)
            else:
                data[name] = value
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings-", dir=self.directory)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, sort_keys=True)
            os.replace(tmp, self._path(session_id))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._cache[session_id] = data
        return data
