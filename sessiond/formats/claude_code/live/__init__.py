"""Following a Claude Code transcript line by line (see :mod:`.transcript`)."""

from __future__ import annotations

from .conversation import Conversation, Fetch
from .transcript import Growth, LiveTranscript

__all__ = ["Conversation", "Fetch", "Growth", "LiveTranscript"]
