"""Claude Code transcripts (``~/.claude/projects/<dir>/<sessionId>.jsonl``): a pure, read-only reader.

Claude Code's record format is undocumented; what this package does follows the facts in
``docs/claude-code.md`` and is checked against real transcripts from 1.0.98 to 2.1.114. The
goal is to rebuild what ``claude --resume <file>`` rebuilds, and to map it onto sessiond's
Pi-shaped model. Bytes in, structures out: nothing here opens a file (the store layer does,
:mod:`sessiond.store.claude_files`). One module per stage, each using only the ones above it
in this list:

* :mod:`.records` — record types, the parsed :class:`ClaudeTranscript`, record accessors;
* :mod:`.parse` — tolerant line parsing (:func:`parse_transcript`), growth
  (:func:`extend_transcript`), the sniff of a file's first bytes;
* :mod:`.graph` — effective parents (progress bridged, boundaries rooted, ``preservedSegment``
  relinks, snips), computed once per transcript;
* :mod:`.messages` — Claude Code entries as Pi messages; the request built from a chain;
* :mod:`.reconstruct` — leaf rules, the walk, orphan recovery (:func:`reconstruct`);
* :mod:`.to_pi` — every chain entry as a Pi v3 entry (:func:`to_pi_entries`);
* :mod:`.subagents` — linking sub-agent transcripts to the calls that spawned them;
* :mod:`.listing` — what a session list shows.

Nothing here recurses on the depth of a conversation: every walk is a loop with a seen-set.
Reading is one ``orjson`` parse per line with the cyclic GC paused; everything after that is
linear in the number of entries.
"""

from __future__ import annotations

from .graph import Graph, graph_of
from .listing import listing_fields
from .messages import SYNTHETIC_TOOL_RESULT_TEXT, Message, Usage4, assistant_message, pi_usage, user_messages
from .parse import extend_transcript, first_session_id, parse_line, parse_transcript, sniff
from .reconstruct import LEAF_RULES, Reconstruction, reconstruct
from .records import (
    ASSISTANT,
    ATTACHMENT,
    CHAIN_TYPES,
    COMPACT_BOUNDARY,
    MESSAGE_TYPES,
    METADATA_TYPES,
    PROGRESS,
    SNIP_BOUNDARY,
    SYSTEM,
    USER,
    ClaudeLoadDiagnostics,
    ClaudeTranscript,
    Titles,
    looks_like_claude_record,
    timestamp_ms,
)
from .subagents import SubagentFile, SubagentLink, link_subagents
from .to_pi import to_pi_entries

__all__ = [
    "ASSISTANT",
    "ATTACHMENT",
    "CHAIN_TYPES",
    "COMPACT_BOUNDARY",
    "LEAF_RULES",
    "MESSAGE_TYPES",
    "METADATA_TYPES",
    "PROGRESS",
    "SNIP_BOUNDARY",
    "SYNTHETIC_TOOL_RESULT_TEXT",
    "SYSTEM",
    "USER",
    "ClaudeLoadDiagnostics",
    "ClaudeTranscript",
    "Graph",
    "Message",
    "Reconstruction",
    "SubagentFile",
    "SubagentLink",
    "Titles",
    "Usage4",
    "assistant_message",
    "extend_transcript",
    "first_session_id",
    "graph_of",
    "link_subagents",
    "listing_fields",
    "looks_like_claude_record",
    "parse_line",
    "parse_transcript",
    "pi_usage",
    "reconstruct",
    "sniff",
    "timestamp_ms",
    "to_pi_entries",
    "user_messages",
]
