"""From a preparation to summary requests, and from summaries to the checkpoint text.

The pieces around the model call in Pi's ``compact()`` (pi-format §5.5): which requests to
make (a history summary; with a split turn also a summary of the turn's beginning), when a
summarizer's answer must be refused (an error, a ``length`` stop — the text is cut off —, a
tool call, nothing at all), and how the answers become the stored summary (history, the
split-turn separator, the turn prefix, then the ``<read-files>``/``<modified-files>`` lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..model.entries import Message
from ..model.messages import convert_to_llm
from . import prompts
from .file_ops import FileOps, compute_file_lists, format_file_operations
from .prepare import CompactionPreparation
from .serialize import serialize_conversation

SummaryKind = Literal["history", "turn_prefix"]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a summarizer gets. Clients and models see the texts; the extractive summarizer
    also reads the messages themselves."""

    kind: SummaryKind
    system_prompt: str
    prompt: str
    """The full user message: the conversation in tags, the previous summary, instructions."""
    conversation: str
    """The serialized conversation alone."""
    previous_summary: str | None
    custom_instructions: str | None
    max_tokens: int
    """The output budget (the summary must fit in the reserve it frees)."""
    messages: list[Message] = field(default_factory=list)
    file_ops: FileOps | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "systemPrompt": self.system_prompt,
            "prompt": self.prompt,
            "conversation": self.conversation,
            "previousSummary": self.previous_summary,
            "customInstructions": self.custom_instructions,
            "maxTokens": self.max_tokens,
        }


@dataclass(slots=True)
class SummaryResponse:
    text: str
    stop_reason: str = "stop"
    error_message: str | None = None
    tool_call: bool = False
    usage: dict[str, Any] | None = None


class SummarizationError(Exception):
    """A summary that must not become a checkpoint; nothing is written."""


def failure(response: SummaryResponse, label: str) -> str | None:
    """Why a summarizer's answer is refused (Pi's rules plus "empty"), or ``None``."""
    if response.stop_reason == "error":
        return f"{label} failed: {response.error_message or 'Unknown error'}"
    if response.stop_reason == "length":
        return f"{label} failed: generation hit the token cap and the summary is incomplete"
    if response.tool_call:
        return f"{label} attempted to call a tool"
    if not response.text.strip():
        return f"{label} failed: the summarizer returned no text"
    return None


def requests_for(
    prep: CompactionPreparation, custom_instructions: str | None, max_tokens: int
) -> list[SummaryRequest]:
    """The summary requests a preparation needs, in the order they are made."""
    out: list[SummaryRequest] = []
    previous = prep.previous_summary if isinstance(prep.previous_summary, str) else None
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)
    if not split or prep.messages_to_summarize:
        conversation = serialize_conversation(convert_to_llm(prep.messages_to_summarize))
        out.append(
            SummaryRequest(
                kind="history",
                system_prompt=prompts.SYSTEM_PROMPT,
                prompt=prompts.history_prompt(conversation, previous, custom_instructions),
                conversation=conversation,
                previous_summary=previous,
                custom_instructions=custom_instructions,
                max_tokens=max_tokens,
                messages=prep.messages_to_summarize,
                file_ops=prep.file_ops,
            )
        )
    if split:
        conversation = serialize_conversation(convert_to_llm(prep.turn_prefix_messages))
        out.append(
            SummaryRequest(
                kind="turn_prefix",
                system_prompt=prompts.SYSTEM_PROMPT,
                prompt=prompts.turn_prefix_prompt(conversation, custom_instructions),
                conversation=conversation,
                previous_summary=None,
                custom_instructions=custom_instructions,
                max_tokens=max_tokens,
                messages=prep.turn_prefix_messages,
                file_ops=prep.file_ops,
            )
        )
    return out


def assemble(
    prep: CompactionPreparation, history: str | None, turn_prefix: str | None
) -> tuple[str, dict[str, list[str]]]:
    """The stored summary and its ``details`` from the summarizers' texts (Pi's layout)."""
    if prep.is_split_turn and prep.turn_prefix_messages and turn_prefix is not None:
        previous = prep.previous_summary if isinstance(prep.previous_summary, str) else None
        head = history if history is not None else (previous or prompts.NO_PRIOR_HISTORY)
        summary = head + prompts.SPLIT_TURN_SEPARATOR + turn_prefix
    else:
        summary = history or ""
    read_files, modified_files = compute_file_lists(prep.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return summary, {"readFiles": read_files, "modifiedFiles": modified_files}


def combine_usage(usages: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The usage of several summary calls added up (numbers summed, nested ``cost`` too)."""
    present = [u for u in usages if isinstance(u, dict)]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    total: dict[str, Any] = {}
    for usage in present:
        for name, value in usage.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
            elif isinstance(value, dict):
                inner = total.setdefault(name, {})
                for k, v in value.items():
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        inner[k] = inner.get(k, 0) + v
    return total


def _tokens(value: float) -> int:
    return int(value) if value == value and value not in (float("inf"), float("-inf")) else 0


def describe_preparation(
    prep: CompactionPreparation, custom_instructions: str | None, max_tokens: int
) -> dict[str, Any]:
    """A preparation as ``compaction/prepare`` returns it: the data and the exact texts."""
    read_files, modified_files = compute_file_lists(prep.file_ops)
    requests = requests_for(prep, custom_instructions, max_tokens)
    texts = {r.kind: r.prompt for r in requests}
    previous = prep.previous_summary if isinstance(prep.previous_summary, str) else None
    return {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": _tokens(prep.tokens_before),
        "previousSummary": previous,
        "messagesToSummarize": prep.messages_to_summarize,
        "turnPrefixMessages": prep.turn_prefix_messages,
        "conversation": prep.serialized_history(),
        "turnPrefix": prep.serialized_turn_prefix() if prep.turn_prefix_messages else None,
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        "fileOps": {  # first-seen order, like the JS sets they mirror
            "read": list(prep.file_ops.read),
            "written": list(prep.file_ops.written),
            "edited": list(prep.file_ops.edited),
        },
        "prompts": {
            "systemPrompt": prompts.SYSTEM_PROMPT,
            "history": texts.get("history"),
            "turnPrefix": texts.get("turn_prefix"),
        },
        "settings": prep.settings.as_json(),
    }
