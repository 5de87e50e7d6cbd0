"""``session/list`` and ``session/load`` answered from sessiond's record of ACP sessions.

Only sessions this proxy recorded are offered (their first entry is the ``acp.session``
custom entry); a load replays, as ``session/update`` notifications, each recorded prompt (as
``user_message_chunk`` updates) and every raw update in the order the editor first saw them.
"""

from __future__ import annotations

from typing import Any, Final

from .convert import PROMPT, SESSION, UPDATES
from .link import DaemonLink

PAGE: Final = 50


async def recorded_entries(link: DaemonLink, store_id: str) -> list[dict[str, Any]]:
    """Every entry of a session, in file order (paged through ``session/entries``)."""
    entries: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = await link.call("session/entries", {"sessionId": store_id, "offset": offset, "limit": 500})
        got = page.get("entries") or []
        entries.extend(got)
        if not got or not isinstance(page.get("nextOffset"), int):
            return entries
        offset = page["nextOffset"]


def acp_header(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    for entry in entries:
        if entry.get("type") == "custom" and entry.get("customType") == SESSION:
            data = entry.get("data")
            return data if isinstance(data, dict) else None
    return None


def replay(entries: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """The ``session/update`` params a load sends, in order, for the editor's ``session_id``."""
    out: list[dict[str, Any]] = []
    for entry in entries:
        if entry.get("type") != "custom":
            continue
        data = entry.get("data")
        if not isinstance(data, dict):
            continue
        if entry.get("customType") == PROMPT:
            for block in data.get("prompt") or []:
                out.append(
                    {
                        "sessionId": session_id,
                        "update": {"sessionUpdate": "user_message_chunk", "content": block},
                    }
                )
        elif entry.get("customType") == UPDATES:
            for params in data.get("notifications") or []:
                if isinstance(params, dict):
                    out.append({**params, "sessionId": session_id})
    return out


async def list_sessions(link: DaemonLink, params: dict[str, Any]) -> dict[str, Any]:
    """An ACP ``session/list`` result: the recorded ACP sessions (of ``cwd``), newest first."""
    cursor = params.get("cursor")
    query: dict[str, Any] = {"limit": PAGE, "root": "sessiond"}
    if isinstance(params.get("cwd"), str):
        query["cwd"] = params["cwd"]
    if isinstance(cursor, str):
        query["cursor"] = cursor
    page = await link.call("session/list", query)
    sessions: list[dict[str, Any]] = []
    for summary in page.get("sessions") or []:
        first = await link.call(
            "session/entries", {"sessionId": summary["sessionId"], "offset": 0, "limit": 1}
        )
        header = acp_header(first.get("entries") or [])
        if header is None:
            continue
        info: dict[str, Any] = {
            "sessionId": header.get("sessionId", summary["sessionId"]),
            "cwd": summary["cwd"],
        }
        if summary.get("title") or summary.get("firstMessage"):
            info["title"] = summary.get("title") or summary.get("firstMessage")
        if summary.get("updatedAt"):
            info["updatedAt"] = summary["updatedAt"]
        sessions.append(info)
    result: dict[str, Any] = {"sessions": sessions}
    if page.get("nextCursor"):
        result["nextCursor"] = page["nextCursor"]
    return result
