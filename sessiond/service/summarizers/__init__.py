"""Who writes a compaction summary: all summarizers answer the same request the same way.

* ``client``  — a connected client that declared the ``summarizer`` capability, asked with a
  server->client ``compaction/summarize`` request (the agent uses its own model);
* ``command`` — a configured program: the prompt on stdin, the summary on stdout;
* ``http``    — an OpenAI-compatible chat-completions endpoint;
* ``extractive`` — built in, offline, deterministic; the default when nothing else is set up.

A summarizer returns a :class:`~sessiond.compaction.summary.SummaryResponse`; whether that
answer may become a checkpoint is decided in one place (``compaction.summary.failure``).
Cancelling the awaiting task aborts the summarizer (a client is sent ``$/cancelRequest``, a
command is killed, an HTTP request is abandoned).
"""

from __future__ import annotations

from typing import Protocol

from ...compaction.summary import SummaryRequest, SummaryResponse
from ...errors import SummarizerUnavailableError

__all__ = ["Summarizer", "SummarizerUnavailableError"]


class Summarizer(Protocol):
    name: str

    async def summarize(self, request: SummaryRequest) -> SummaryResponse: ...
