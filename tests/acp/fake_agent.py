"""A scripted ACP agent for the relay tests: NDJSON on stdio, no SDK, no model.

It writes its lines in unusual but valid JSON (spaces after separators, escaped non-ASCII, a
``_meta``), so a proxy that re-serialised anything would be caught, and it logs every line it
received and sent, byte for byte, to ``$FAKE_AGENT_LOG.in`` / ``.out``. ``loadSession`` and
``session/list`` it does not implement. A prompt runs one scripted turn: a thought, text, a
tool call, a permission request (answered ``cancelled``: the turn ends ``cancelled``) and an
``fs/write_text_file`` request to the editor (its ids
start at 0, overlapping the editor's), the tool's result, an extension notification, a plan,
then the answer. The notification ``_fake/exit`` ends it with the status in its params.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

LOG = os.environ.get("FAKE_AGENT_LOG")
_in = open(LOG + ".in", "ab") if LOG else None  # noqa: SIM115
_out = open(LOG + ".out", "ab") if LOG else None  # noqa: SIM115
COUNTERS = {"id": 0, "sessions": 0}


def send(msg: dict[str, Any]) -> None:
    line = (json.dumps(msg, ensure_ascii=True, separators=(", ", ": ")) + "\n").encode()
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    if _out:
        _out.write(line)
        _out.flush()


def receive() -> dict[str, Any] | None:
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    if _in:
        _in.write(line)
        _in.flush()
    return json.loads(line)  # type: ignore[no-any-return]


def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request to the editor; returns its answer (other messages meanwhile are handled)."""
    rid = COUNTERS["id"]
    COUNTERS["id"] += 1
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        msg = receive()
        if msg is None:
            sys.exit(0)
        if msg.get("id") == rid and "method" not in msg:
            return msg
        handle(msg)


def update(sid: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": body}})


def turn(sid: str, rid: Any, prompt: list[Any]) -> None:
    text = " ".join(b.get("text", "") for b in prompt if isinstance(b, dict))
    update(
        sid, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Thinking about "}}
    )
    update(
        sid,
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "it \u2014 carefully."}},
    )
    update(
        sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "I will write "}}
    )
    update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "out.txt."}})
    call = {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "Write out.txt",
        "kind": "edit",
        "status": "pending",
        "rawInput": {"path": "out.txt", "text": text},
    }
    update(sid, call)
    answer = ask(
        "session/request_permission",
        {
            "sessionId": sid,
            "toolCall": {"toolCallId": "call-1", "title": "Write out.txt"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        },
    )
    outcome = (answer.get("result") or {}).get("outcome", {})
    if outcome.get("outcome") == "cancelled":  # the editor cancelled the turn meanwhile
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "failed"})
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "cancelled"}})
        return
    allowed = outcome.get("optionId") == "allow"
    if allowed:
        path = os.path.join(os.environ.get("FAKE_AGENT_CWD", "."), "out.txt")
        ask("fs/write_text_file", {"sessionId": sid, "path": path, "content": text + "\n"})
    update(
        sid,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "status": "completed" if allowed else "failed",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "wrote it" if allowed else "refused"}}
            ],
        },
    )
    send({"jsonrpc": "2.0", "method": "_fake/progress", "params": {"sessionId": sid, "_meta": {"x": 1}}})
    update(
        sid,
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "write", "priority": "high", "status": "completed"}],
        },
    )
    update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}})
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn", "_meta": {"fake": True}}})


def handle(msg: dict[str, Any]) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": False,
                        "promptCapabilities": {"image": False},
                        "_meta": {"fake": "\u00e9"},
                    },
                    "agentInfo": {"name": "fake-agent", "version": "1.0"},
                    "authMethods": [],
                },
            }
        )
    elif method == "session/new":
        COUNTERS["sessions"] += 1
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"sessionId": f"fake-{os.getpid()}-{COUNTERS['sessions']}"},
            }
        )
    elif method == "session/prompt":
        turn(params["sessionId"], rid, params.get("prompt") or [])
    elif method == "_fake/echo":
        send({"jsonrpc": "2.0", "id": rid, "result": params})
    elif method == "_fake/exit":
        sys.exit(int(params.get("status", 0)))
    elif method == "$/cancel_request" or (method is not None and rid is None):
        pass
    elif rid is not None and method is not None:
        send(
            {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
        )


def main() -> None:
    print("fake agent: started", file=sys.stderr, flush=True)
    while (msg := receive()) is not None:
        handle(msg)


if __name__ == "__main__":
    main()
