"""Full-text search across sessions: ``search/query`` (docs/search.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..errors import ErrorCode as C
from ..models import Result, WorkDone
from .base import MethodSpec


class SearchParams(WorkDone):
    """With a ``workDoneToken``, a query sent while the first build of the index runs waits for
    it, reporting ``$/progress`` (``percentage``, ``message`` "N/M session files"); without one
    it answers at once from what is indexed so far, with ``indexing`` set."""

    query: str = Field(
        description='Words mode: `word`, `"a phrase"`, `pref*`, `-excluded` (every term must match). '
        "Substring mode: the whole query is one literal of at least 3 characters."
    )
    mode: Literal["words", "substring"] = Field("words", description="`substring`: for code and identifiers.")
    agent: str | None = Field(
        None,
        description="Only this agent's sessions: `pi`, `claude-code`, `codex`, `opencode` (or a root name).",
    )
    root: Literal["sessiond", "pi", "claude", "codex", "opencode"] | None = Field(
        None, description="Only this root."
    )
    cwd: str | None = Field(None, description="Only sessions of this directory (the project) or below it.")
    since: str | None = Field(None, description="ISO 8601 date or date-time; a date alone is local midnight.")
    until: str | None = Field(None, description="ISO 8601 date (the whole day included) or date-time.")
    role: (
        Literal[
            "user",
            "assistant",
            "toolResult",
            "bashExecution",
            "custom",
            "compactionSummary",
            "branchSummary",
            "session",
        ]
        | None
    ) = Field(None, description="Only texts of this role (`session`: titles and labels).")
    sessionId: str | None = Field(None, description="Only this session.")
    limit: int = Field(20, ge=1, le=200)
    cursor: str | None = Field(None, description="The `nextCursor` of the previous page.")
    rebuild: bool = Field(
        False,
        description="First throw the index away and build it again from the sessions (`sessiond search "
        "--rebuild`); answered at once unless a `workDoneToken` makes it wait for the build.",
    )


class SearchHit(Result):
    sessionId: str
    entryId: str
    agent: str = Field(description="`pi`, `claude-code`, `codex` or `opencode`.")
    root: str = Field(description="`sessiond`, `pi`, `claude`, `codex` or `opencode`.")
    cwd: str
    timestamp: str | None = Field(description="The entry's time, ISO 8601 UTC (null if it has none).")
    role: str
    kind: str = Field(
        description="`text`, `thinking`, `toolCall`, `toolResult`, `error`, `summary`, `title` or `label`."
    )
    title: str = Field(description="The session's name, else its first prompt (clipped).")
    snippet: str = Field(
        description="The text around the match; each matched span between U+0002 and U+0003, no other markup."
    )
    onBranch: bool = Field(description="The entry is on the session's current branch (root to leaf).")
    resume: str | None = Field(description="A shell command resuming the session in its own agent.")


class SearchProgress(Result):
    done: int
    total: int


class SearchResult(Result):
    hits: list[SearchHit]
    total: int = Field(description="Matches found, counted up to the server's cap (1000).")
    nextCursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last.")
    indexing: SearchProgress | None = Field(
        None, description="Session files indexed so far while the first build runs; null once built."
    )


METHODS = {
    m.name: m
    for m in (
        MethodSpec(
            "search/query",
            SearchParams,
            SearchResult,
            "Full-text search across every session of every root (words, phrases, prefixes, "
            "exclusions; or a substring), ranked by bm25 with the newest first among equals. A bad "
            "query is -32602 with `data.field` naming `query`; a `sessionId` filter naming no "
            "session is -32010.",
            (C.INVALID_PARAMS, C.SESSION_NOT_FOUND),
            {"query": '"leaf id" parse*', "cwd": "/home/dev/webapp", "limit": 20},
            {
                "hits": [
                    {
                        "sessionId": "019ad3e1-7c4e-7a51-9d2b-5be0c1a4f001",
                        "entryId": "a1b2c3d4",
                        "agent": "pi",
                        "root": "sessiond",
                        "cwd": "/home/dev/webapp",
                        "timestamp": "2026-03-01T14:02:11.000Z",
                        "role": "assistant",
                        "kind": "text",
                        "title": "Fix the tree walk",
                        "snippet": "…the \u0002leaf\u0003 \u0002id\u0003 is \u0002parsed\u0003 from…",
                        "onBranch": True,
                        "resume": "cd /home/dev/webapp && pi --session /home/dev/.sessiond/sessions/x.jsonl",
                    }
                ],
                "total": 1,
                "nextCursor": None,
                "indexing": None,
            },
            long_running=True,
        ),
    )
}
