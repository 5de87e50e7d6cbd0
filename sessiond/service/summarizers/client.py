"""The ``client`` summarizer: ask a connected agent to summarise with its own model.

The daemon sends the server -> client request ``compaction/summarize`` (system prompt, the
full prompt, the conversation alone, the previous summary, the output budget) to a client
that declared the ``summarizer`` capability, and takes its answer::

    {"summary": "## Goal ...", "stopReason"?: "stop", "errorMessage"?: ..., "usage"?: {...}}

or Pi's assistant-message shape (``content`` blocks; text blocks joined with a newline, a
``toolCall`` block marks the answer as a tool call). The answer is judged like any other
summarizer's (``compaction.summary.failure``). A client that does not answer within the
timeout gets ``$/cancelRequest`` and the compaction fails; one that disconnects makes the
summarizer unavailable.
"""

from __future__ import annotations

from typing import Any

import anyio

from ...compaction.summary import SummaryRequest, SummaryResponse
from ...errors import ClientRequestError, SummarizerUnavailableError
from ..peer import Peer

SummarizingClient = Peer
"""A peer that declared the ``summarizer`` capability (the service chooses it)."""


def _text_of(content: Any) -> tuple[str, bool]:
    if isinstance(content, str):
        return content, False
    texts: list[str] = []
    tool_call = False
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") == "toolCall":
                tool_call = True
    return "\n".join(texts), tool_call


def parse_answer(answer: Any) -> SummaryResponse:
    """A client's answer as a summarizer response (a malformed one is an ``error``)."""
    if isinstance(answer, str):
        return SummaryResponse(text=answer)
    if not isinstance(answer, dict):
        return SummaryResponse("", "error", "the client's answer is not an object with a summary")
    if isinstance(answer.get("summary"), str):
        text, tool_call = answer["summary"], False
    elif "content" in answer:
        text, tool_call = _text_of(answer["content"])
    else:
        return SummaryResponse("", "error", "the client's answer has neither summary nor content")
    stop = answer.get("stopReason", "stop")
    error = answer.get("errorMessage")
    usage = answer.get("usage")
    return SummaryResponse(
        text=text,
        stop_reason=stop if isinstance(stop, str) else "stop",
        error_message=error if isinstance(error, str) else None,
        tool_call=tool_call,
        usage=usage if isinstance(usage, dict) else None,
    )


class ClientSummarizer:
    name = "client"

    def __init__(
        self, client: SummarizingClient, session_id: str, compaction_id: str, timeout: float
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.compaction_id = compaction_id
        self.timeout = timeout

    async def summarize(self, request: SummaryRequest) -> SummaryResponse:
        params = {"sessionId": self.session_id, "compactionId": self.compaction_id, **request.to_wire()}
        try:
            with anyio.fail_after(self.timeout):
                answer = await self.client.request_client("compaction/summarize", params)
        except TimeoutError:
            return SummaryResponse(
                "", "error", f"the client did not answer within {self.timeout:g} s (request cancelled)"
            )
        except ClientRequestError as exc:
            return SummaryResponse("", "error", exc.message)
        except ConnectionError:
            raise SummarizerUnavailableError(
                "The summarizing client disconnected before answering", "client"
            ) from None
        return parse_answer(answer)
