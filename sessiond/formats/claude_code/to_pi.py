"""Every chain entry of every branch as a Pi v3 entry, so sessiond's tree machinery can show the file.

The ids are Claude Code's uuids, so clients can name entries; the conversation the model
sees is not built from these entries (that is :mod:`.reconstruct`), they are what the tree
shows.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Final

import orjson

from ..pi import paused_gc
from .graph import graph_of
from .messages import EMPTY_USAGE, Usage4, assistant_message, epoch_ms, max_usage, usage_tuple, user_messages
from .records import ASSISTANT, SYSTEM, USER, ClaudeTranscript, attachment_type, message_id


def to_pi_entries(t: ClaudeTranscript, only: Container[str] | None = None) -> list[dict[str, Any]]:
    """Every chain entry of every branch as a Pi v3 entry, in first-seen file order.

    * ids are the Claude Code uuids; ``parentId`` is the parent after progress bridging and
      ``preservedSegment`` relinks (``null`` for roots and compact boundaries; a parent missing
      from the file is kept, so the tree shows the entry as an orphan root);
    * a user entry is a ``message`` entry: role ``user`` for prompts, role ``toolResult`` when
      it holds exactly one tool result and nothing else (the common case); an entry with
      several results, or results plus text, is a ``custom`` entry ``claude-code.user/tool-results``
      whose ``data.messages`` holds its Pi messages;
    * an assistant entry (one streamed piece) is a ``message`` entry with that piece's blocks;
      the usage of an API message sits on its last piece in the file, the other pieces carry
      zero usage, so usage summed over entries counts each API message once;
    * system and attachment entries are ``custom`` entries ``claude-code.system/<subtype>`` and
      ``claude-code.attachment/<type>`` with a small ``data`` summary; progress entries are
      bridged away. Each entry carries ``claudeCode`` with the record type and its flags.

    ``only`` converts just those uuids (the ones a follower has not seen yet).
    """
    with paused_gc():
        return _to_pi_entries(t, only)


def _to_pi_entries(t: ClaudeTranscript, only: Container[str] | None = None) -> list[dict[str, Any]]:
    g = graph_of(t)
    chain = t.chain
    carrier: dict[str, str] = {}
    group_usage: dict[str, Usage4] = {}
    for u in g.order:
        e = chain[u]
        if e.get("type") != ASSISTANT:
            continue
        mid = message_id(e) or u
        carrier[mid] = u
        piece = EMPTY_USAGE if u in g.zero_usage else usage_tuple(e.get("message"))
        prev = group_usage.get(mid)
        group_usage[mid] = piece if prev is None else max_usage(prev, piece)
    out: list[dict[str, Any]] = []
    for u in g.order:
        if only is not None and u not in only:
            continue
        e = chain[u]
        usage: Usage4 | None = None
        if e.get("type") == ASSISTANT:
            mid = message_id(e) or u
            usage = group_usage[mid] if carrier[mid] == u else EMPTY_USAGE
        out.append(pi_entry(u, e, g.parent[u], usage, g.tool_names))
    return out


def pi_entry(
    u: str, e: dict[str, Any], parent: str | None, usage: Usage4 | None, tool_names: dict[str, str]
) -> dict[str, Any]:
    """One chain entry as a Pi v3 entry (see :func:`to_pi_entries`): ``parent`` is its effective
    parent, ``usage`` (assistants) what its message carries (the API message's usage on the
    message's last piece, zero on the others)."""
    etype = e.get("type")
    ts = e.get("timestamp")
    timestamp = ts if type(ts) is str else ""
    meta = _cc_meta(e)
    base: dict[str, Any]
    if etype == ASSISTANT:
        message = assistant_message(e, usage=usage if usage is not None else EMPTY_USAGE)
        base = {"type": "message", "id": u, "parentId": parent, "timestamp": timestamp, "message": message}
    elif etype == USER:
        msgs = user_messages(e, tool_names)
        if len(msgs) == 1:
            base = {
                "type": "message",
                "id": u,
                "parentId": parent,
                "timestamp": timestamp,
                "message": msgs[0],
            }
        elif not msgs:
            base = {
                "type": "message",
                "id": u,
                "parentId": parent,
                "timestamp": timestamp,
                "message": {"role": "user", "content": [], "timestamp": epoch_ms(ts)},
            }
        else:
            base = {
                "type": "custom",
                "customType": "claude-code.user/tool-results",
                "data": {"messages": msgs},
                "id": u,
                "parentId": parent,
                "timestamp": timestamp,
            }
    else:
        if etype == SYSTEM:
            custom_type = f"claude-code.system/{e.get('subtype') or 'none'}"
            data = _system_data(e)
        else:
            custom_type = f"claude-code.attachment/{attachment_type(e) or 'none'}"
            data = _attachment_data(e)
        base = {
            "type": "custom",
            "customType": custom_type,
            "data": data,
            "id": u,
            "parentId": parent,
            "timestamp": timestamp,
        }
    base["claudeCode"] = meta
    return base


_FLAGS: Final = (
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "isVisibleInTranscriptOnly",
    "isApiErrorMessage",
)


def _cc_meta(e: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"type": e.get("type")}
    for flag in _FLAGS:
        if e.get(flag) is True:
            meta[flag] = True
    for name in ("agentId", "promptId", "requestId"):
        value = e.get(name)
        if type(value) is str:
            meta[name] = value
    mid = message_id(e)
    if mid is not None and e.get("type") == ASSISTANT:
        meta["messageId"] = mid
    raw_parent = e.get("parentUuid")
    if type(raw_parent) is str:
        meta["parentUuid"] = raw_parent
    return meta


def _clip(value: Any, limit: int = 200) -> Any:
    if type(value) is str and len(value) > limit:
        return value[: limit - 3] + "..."
    return value


def _system_data(e: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in (
        "subtype",
        "level",
        "content",
        "durationMs",
        "retryAttempt",
        "logicalParentUuid",
        "toolUseID",
    ):
        if name in e:
            data[name] = _clip(e[name])
    meta = e.get("compactMetadata")
    if type(meta) is dict:
        data["compactMetadata"] = {k: meta[k] for k in ("trigger", "preTokens", "postTokens") if k in meta}
        if type(meta.get("preservedSegment")) is dict:
            data["compactMetadata"]["preservedSegment"] = meta["preservedSegment"]
    error = e.get("error")
    if type(error) is dict:
        data["error"] = _clip(orjson.dumps(error).decode(), 300)
    return data


def _attachment_data(e: dict[str, Any]) -> dict[str, Any]:
    att = e.get("attachment")
    if type(att) is not dict:
        return {}
    data: dict[str, Any] = {}
    for name in ("type", "hookName", "hookEvent", "toolUseID"):
        value = att.get(name)
        if type(value) is str:
            data[name] = value
    content = att.get("content")
    if type(content) is str:
        data["content"] = _clip(content)
    return data
