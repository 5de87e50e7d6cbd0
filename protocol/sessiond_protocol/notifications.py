"""Notifications the server sends: ``session/update`` (ACP's name and shape), progress, log."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from .models import Result


class EntriesAppended(Result):
    sessionUpdate: Literal["entries_appended"]
    entryIds: list[str] = Field(description="The new entries, in file order.")
    parentIds: list[str | None]
    types: list[str]
    leafId: str | None = Field(description="The leaf after the append.")
    external: bool = Field(
        False, description="Written by another program (watched file), not through sessiond."
    )


class LeafChanged(Result):
    sessionUpdate: Literal["leaf_changed"]
    leafId: str | None
    previousLeafId: str | None


class SessionInfoUpdate(Result):
    sessionUpdate: Literal["session_info_update"]
    title: str | None
    updatedAt: str | None = None


class LabelUpdate(Result):
    sessionUpdate: Literal["label_update"]
    entryId: str = Field(description="The labelled entry.")
    label: str | None = Field(description="null: the label was cleared.")


class UsageUpdate(Result):
    sessionUpdate: Literal["usage_update"]
    used: int | None
    size: int | None
    percent: float | None
    source: Literal["api", "estimate", "unknown"]


class ResyncRequired(Result):
    sessionUpdate: Literal["resync_required"]
    reason: str = Field(description="Updates were dropped (a slow reader) or the file changed underneath.")


SessionUpdateKind = Annotated[
    EntriesAppended | LeafChanged | SessionInfoUpdate | LabelUpdate | UsageUpdate | ResyncRequired,
    Field(discriminator="sessionUpdate"),
]


class SessionUpdate(BaseModel):
    """``session/update``: something changed in a session this connection subscribed to."""

    sessionId: str
    update: SessionUpdateKind


class ProgressValue(Result):
    kind: Literal["begin", "report", "end"]
    title: str | None = None
    message: str | None = None
    percentage: int | None = None


class Progress(BaseModel):
    """``$/progress``: work on a request that carried a ``workDoneToken``."""

    token: str | int
    value: ProgressValue


class LogMessage(BaseModel):
    """``window/logMessage``: 1 error, 2 warning, 3 info, 4 log."""

    type: int
    message: str


NOTIFICATIONS: dict[str, type[BaseModel]] = {
    "session/update": SessionUpdate,
    "$/progress": Progress,
    "window/logMessage": LogMessage,
}
