"""From a preparation to summary requests, and from summaries to the checkpoint text.

The pieces around the model call in Pi's ``compact()`` (docs/pi-format.md §7.4): which requests to
make (a history summary; with a split turn also a summary of the turn's beginning), when a
summarizer's answer must be refused (an error, a ``length`` stop — the text is cut off —, a
tool call, nothing at all), and how the answers become the stored summary (history, the
split-turn separator, the turn prefix, then the ``<read-files>``/``<modified-files>`` lists).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..model.entries import Message
from ..model.messages import convert_to_llm
from . import prompts
from .file_ops import FileOps, compute_file_lists, format_file_operations
from .prepare import CompactionPreparation
from .serialize import serialize_conversation

SummaryKind = Literal["history", "turn_prefix"]


Text = str | Callable[[], str]


class SummaryRequest:
    """What a summarizer gets. Clients and models read the texts; the extractive summarizer
    reads the messages themselves — so the texts (a serialization of maybe megabytes) are only
    built when first read."""

    __slots__ = (
        "_conversation",
        "_prompt",
        "custom_instructions",
        "file_ops",
        "kind",
        "max_tokens",
        "messages",
        "previous_summary",
        "system_prompt",
    )

    def __init__(
        self,
        *,
        kind: SummaryKind,
        system_prompt: str,
        prompt: Text,
        conversation: Text,
        previous_summary: str | None,
        custom_instructions: str | None,
        max_tokens: int,
        messages: list[Message] | None = None,
        file_ops: FileOps | None = None,
    ) -> None:
        self.kind: SummaryKind = kind
        self.system_prompt = system_prompt
        self._prompt = prompt
        self._conversation = conversation
        self.previous_summary = previous_summary
        self.custom_instructions = custom_instructions
        self.max_tokens = max_tokens
        """The output budget (the summary must fit in the reserve it frees)."""
        self.messages: list[Message] = messages if messages is not None else []
        self.file_ops = file_ops

    @property
    def conversation(self) -> str:
        """The serialized conversation alone."""
        if not isinstance(self._conversation, str):
            self._conversation = self._conversation()
        return self._conversation

    @property
    def prompt(self) -> str:
        """The full user message: the conversation in tags, the previous summary, instructions."""
        if not isinstance(self._prompt, str):
            self._prompt = self._prompt()
        return self._prompt

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


class _Serialized:
    """Messages serialized once, on first use (shared by a request's prompt and conversation)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.text: str | None = None

    def __call__(self) -> str:
        if self.text is None:
            self.text = serialize_conversation(convert_to_llm(self.messages))
        return self.text


def requests_for(
    prep: CompactionPreparation, custom_instructions: str | None, max_tokens: int
) -> list[SummaryRequest]:
    """The summary requests a preparation needs, in the order they are made."""
    out: list[SummaryRequest] = []
    previous = prep.previous_summary if isinstance(prep.previous_summary, str) else None
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)
    if not split or prep.messages_to_summarize:
        history = _Serialized(prep.messages_to_summarize)
        out.append(
            SummaryRequest(
                kind="history",
                system_prompt=prompts.SYSTEM_PROMPT,
                prompt=lambda: prompts.history_prompt(history(), previous, custom_instructions),
                conversation=history,
                previous_summary=previous,
                custom_instructions=custom_instructions,
                max_tokens=max_tokens,
                messages=prep.messages_to_summarize,
                file_ops=prep.file_ops,
            )
        )
    if split:
        prefix = _Serialized(prep.turn_prefix_messages)
        out.append(
            SummaryRequest(
                kind="turn_prefix",
                system_prompt=prompts.SYSTEM_PROMPT,
                prompt=lambda: prompts.turn_prefix_prompt(prefix(), custom_instructions),
                conversation=prefix,
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
    requests = {r.kind: r for r in requests_for(prep, custom_instructions, max_tokens)}
    history, prefix = requests.get("history"), requests.get("turn_prefix")
    previous = prep.previous_summary if isinstance(prep.previous_summary, str) else None
    return {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": _tokens(prep.tokens_before),
        "previousSummary": previous,
        "messagesToSummarize": prep.messages_to_summarize,
        "turnPrefixMessages": prep.turn_prefix_messages,
        "conversation": history.conversation if history is not None else prep.serialized_history(),
        "turnPrefix": prefix.conversation if prefix is not None else None,
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        "fileOps": {  # first-seen order, like the JS sets they mirror
            "read": list(prep.file_ops.read),
            "written": list(prep.file_ops.written),
            "edited": list(prep.file_ops.edited),
        },
        "prompts": {
            "systemPrompt": prompts.SYSTEM_PROMPT,
            "history": history.prompt if history is not None else None,
            "turnPrefix": prefix.prompt if prefix is not None else None,
        },
        "settings": prep.settings.as_json(),
    }
