"""The session tree: every node, one branch, moving the leaf (Pi's /tree), labels."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import Durability, Entry, EntryId, Result, TreeNode, WorkDone
from .base import EXAMPLE_SESSION_ID, SESSION_ERRORS, WRITE_ERRORS, MethodSpec, SessionRef


class TreeParams(SessionRef, WorkDone):
    pass


class TreeResult(Result):
    leafId: str | None
    nodes: list[TreeNode] = Field(description="Every entry, in file order.")


class BranchParams(SessionRef):
    entryId: EntryId | None = Field(None, description="Default: the leaf.")
    full: bool = Field(False, description="Include the entries, not only their ids.")


class BranchResult(Result):
    entryIds: list[str] = Field(description="Root to entry.")
    entries: list[Entry] | None = None


class NavigateParams(SessionRef):
    targetId: EntryId | None = Field(description="The entry to continue from; null: before the first entry.")
    summary: str | None = Field(
        None, description="A summary of the branch being left (becomes a branch summary)."
    )
    summaryDetails: Any = None
    label: str | None = None
    durability: Durability | None = None


class NavigateResult(Result):
    leafId: str | None
    editorText: str | None = Field(
        None, description="The text of a user message navigated to, for the editor."
    )
    summaryEntryId: str | None = None
    markerEntryId: str | None = None
    moved: bool


class LabelParams(SessionRef):
    entryId: EntryId
    label: str | None = Field(description="null or empty clears it.")
    durability: Durability | None = None


class LabelResult(Result):
    entryId: str


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "tree/get",
            TreeParams,
            TreeResult,
            "Every entry as a node (id, parentId, type, role, preview, label, timestamp, child count) and the leaf.",
            SESSION_ERRORS,
            {"sessionId": EXAMPLE_SESSION_ID},
            None,
            long_running=True,
        ),
        MethodSpec(
            "tree/branch",
            BranchParams,
            BranchResult,
            "The path root → entry (default: the leaf). For a Claude Code transcript: the chain "
            "`claude --resume` rebuilds up to the entry, parallel tool calls and results it "
            "recovers from sibling records included.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND),
            {"sessionId": EXAMPLE_SESSION_ID},
        ),
        MethodSpec(
            "tree/navigate",
            NavigateParams,
            NavigateResult,
            "Continue from another entry (Pi's /tree): a user message target leaves the leaf on its parent and "
            "returns its text for the editor; a `summary` becomes a branch summary; the move is persisted.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, *WRITE_ERRORS),
            {
                "sessionId": EXAMPLE_SESSION_ID,
                "targetId": "a1b2c3d4",
                "summary": "Tried JWT first; switched to cookies.",
            },
        ),
        MethodSpec(
            "tree/label",
            LabelParams,
            LabelResult,
            "Set or clear the label of an entry.",
            (*SESSION_ERRORS, C.ENTRY_NOT_FOUND, *WRITE_ERRORS),
            {
                "sessionId": EXAMPLE_SESSION_ID,
                "entryId": "a1b2c3d4",
                "label": "checkpoint",
            },
            {"entryId": "9c8d7e6f"},
        ),
    ]
}
