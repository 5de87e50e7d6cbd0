"""sessiond's exception types.

Every failure a client or a command-line user can cause has its own type here, carrying what
is needed to explain it (which file, which id, which field). The protocol layer maps these to
JSON-RPC error codes in one place; the command line maps them to messages and exit codes.
"""

from __future__ import annotations

from typing import Any


class SessiondError(Exception):
    """Base of every error sessiond reports on purpose (as opposed to a bug)."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class NotASessionError(SessiondError):
    """A file that is not a session in the format it was read as."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} is not a valid Pi session: {reason}", path=path, reason=reason)
        self.path = path
        self.reason = reason


class EntryNotFoundError(SessiondError):
    """An id that names no entry of the session (Pi's ``Entry <id> not found``)."""

    def __init__(self, entry_id: Any) -> None:
        super().__init__(f"Entry {entry_id} not found", entryId=entry_id)
        self.entry_id = entry_id
