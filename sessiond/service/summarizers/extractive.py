"""The built-in summarizer: offline and deterministic, the default when nothing else is set up.

It does not read the prompt; it reads the request's messages, previous summary and file
operations and fills Pi's checkpoint headings from them
(:func:`sessiond.compaction.extractive.extract_summary`).
"""

from __future__ import annotations

import functools
from typing import Final

import anyio.to_thread

from ...compaction.extractive import extract_summary
from ...compaction.summary import SummaryRequest, SummaryResponse

DEFAULT_MAX_CHARS: Final = 12_000
"""The longest summary written, whatever the budget: a checkpoint is meant to be brief."""

CHARS_PER_TOKEN: Final = 4
"""The request's budget is in tokens, the bound in characters. Four characters per token is
the estimate Pi itself uses for context sizes (``chars / 4``), so ``max_tokens * 4`` characters
is what the reserved output budget is expected to hold."""

THREAD_THRESHOLD: Final = 2_000
"""Above this many messages the extraction runs in a worker thread, off the event loop."""


class ExtractiveSummarizer:
    name: str = "extractive"

    def __init__(
        self, *, max_chars: int = DEFAULT_MAX_CHARS, thread_threshold: int = THREAD_THRESHOLD
    ) -> None:
        self.max_chars = max_chars
        self.thread_threshold = thread_threshold

    def max_chars_for(self, request: SummaryRequest) -> int:
        """The size bound of one request's summary, in UTF-16 units."""
        return max(0, min(self.max_chars, request.max_tokens * CHARS_PER_TOKEN))

    async def summarize(self, request: SummaryRequest) -> SummaryResponse:
        work = functools.partial(
            extract_summary,
            request.messages,
            previous_summary=request.previous_summary,
            file_ops=request.file_ops,
            kind=request.kind,
            max_chars=self.max_chars_for(request),
        )
        if len(request.messages) > self.thread_threshold:
            text = await anyio.to_thread.run_sync(work)
        else:
            text = work()
        return SummaryResponse(text, "stop")
