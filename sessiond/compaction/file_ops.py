"""Which files the summarised history read and modified.

Summaries are lossy, so the file lists are not left to the model's memory: they are collected
from the tool calls themselves (assistant ``toolCall`` blocks and calls nested in a tool
result) and carried from one compaction to the next through ``details``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.entries import Message
from ..model.js import get, truthy, utf16_sort_key


@dataclass(slots=True)
class FileOps:
    """Paths seen per operation, in first-seen order (sets, ordered like JS ``Set``)."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    def add(self, tool_name: Any, args: Any) -> None:
        path = get(args, "path")
        if type(path) is not str or not path:
            return
        if tool_name == "read":
            self.read[path] = None
        elif tool_name == "write":
            self.written[path] = None
        elif tool_name == "edit":
            self.edited[path] = None


def extract_file_ops(message: Message, ops: FileOps) -> None:
    """Add the file operations a message records (assistant tool calls, nested tool calls)."""
    if type(message) is not dict:
        return
    role = message.get("role")
    if role == "toolResult":
        nested = get(message, "nestedCalls")
        calls = get(nested, "calls")
        for call in calls if type(calls) is list else ():
            ops.add(get(call, "name"), get(call, "arguments"))
        return
    if role != "assistant":
        return
    content = message.get("content")
    if type(content) is not list:
        return
    for block in content:
        if type(block) is not dict or block.get("type") != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        ops.add(block["name"], block["arguments"])


def extract_all_file_ops(messages: list[Message], ops: FileOps) -> None:
    """:func:`extract_file_ops` of every message, in order, in one loop (the summarised history
    of a long branch is tens of thousands of messages; a call per message was most of
    ``prepare``'s time, issue 30). Only assistant tool calls and nested calls count."""
    add = ops.add
    for message in messages:
        if type(message) is not dict:
            continue
        role = message.get("role")
        if role == "assistant":
            content = message.get("content")
            if type(content) is not list:
                continue
            for block in content:
                if (
                    type(block) is dict
                    and block.get("type") == "toolCall"
                    and "arguments" in block
                    and "name" in block
                ):
                    add(block["name"], block["arguments"])
        elif role == "toolResult":
            nested = message.get("nestedCalls")
            calls = get(nested, "calls")
            for call in calls if type(calls) is list else ():
                add(get(call, "name"), get(call, "arguments"))


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """``(readFiles, modifiedFiles)``: modified = edited ∪ written; read-only = read − modified.

    Both sorted in UTF-16 code-unit order (JavaScript's default sort).
    """
    modified = dict.fromkeys([*ops.edited, *ops.written])
    read_only = sorted((p for p in ops.read if p not in modified), key=utf16_sort_key)
    return read_only, sorted(modified, key=utf16_sort_key)


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """The suffix appended to a summary: ``<read-files>`` and ``<modified-files>`` blocks."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


def file_ops_from_details(details: Any, ops: FileOps) -> None:
    """Carry the lists of a previous (sessiond- or Pi-generated) compaction forward."""
    if not truthy(details):
        return
    read_files = get(details, "readFiles")
    if type(read_files) is list:
        for f in read_files:
            if type(f) is str:
                ops.read[f] = None
    modified_files = get(details, "modifiedFiles")
    if type(modified_files) is list:
        for f in modified_files:
            if type(f) is str:
                ops.edited[f] = None
