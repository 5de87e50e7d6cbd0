"""Codex CLI rollouts, read-only: records, the resumed history, Pi-shaped entries, listing.

Pure: bytes in, structures out. ``records`` reads lines tolerantly, ``items`` classifies and
converts response items, ``thread`` replays a thread into tree entries and the history Codex
resumes with, ``listing`` gives what a session list shows. See ``docs/codex.md``.
"""

from .listing import first_prompt, listing_fields, origin, parse_session_index
from .records import Record, Rollout, RolloutDiagnostics, extend_rollout, parse_rollout
from .thread import Thread, ThreadDiagnostics, entry_id, pi_usage, to_messages

__all__ = [
    "Record",
    "Rollout",
    "RolloutDiagnostics",
    "Thread",
    "ThreadDiagnostics",
    "entry_id",
    "extend_rollout",
    "first_prompt",
    "listing_fields",
    "origin",
    "parse_rollout",
    "parse_session_index",
    "pi_usage",
    "to_messages",
]
