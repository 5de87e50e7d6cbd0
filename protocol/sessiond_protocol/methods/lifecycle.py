"""The connection's lifecycle: ``initialize`` (version, client info, capabilities) and ``shutdown``."""

from __future__ import annotations

from pydantic import Field, StrictInt

from ..errors import ErrorCode as C
from ..models import Open, Params, Result
from .base import Empty, MethodSpec


class ClientInfo(Params):
    name: str
    version: str | None = None


class NotificationOptions(Params):
    optOut: list[str] = Field(
        default_factory=list,
        description="Notification methods or `session/update` kinds (e.g. `usage_update`) not to send.",
    )


class ClientCapabilities(Params):
    notifications: NotificationOptions | None = None
    summarizer: bool = Field(False, description="The client can answer `compaction/summarize` requests.")


class InitializeParams(Params):
    protocolVersion: StrictInt = Field(
        ge=1, description="The protocol version the client speaks (1); a number, never a string."
    )
    clientInfo: ClientInfo | None = None
    capabilities: ClientCapabilities | None = None
    authToken: str | None = Field(
        None,
        description="Required on TCP and the viewer's WebSocket: the content of the server's token file, a "
        "one-time code of `daemon/viewerCode` (good once, for a minute), or a `viewerToken` an earlier "
        "`initialize` returned.",
    )


class ServerInfo(Result):
    name: str
    version: str


class InitializeResult(Result):
    protocolVersion: int
    serverInfo: ServerInfo
    capabilities: Open
    viewerToken: str | None = Field(
        None,
        description="Only when `authToken` was a one-time code: the token to present instead when this client "
        "connects again (kept in memory by the daemon; it ends an hour after its last connection closed, when "
        "the token is rotated, and when the daemon stops).",
    )


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in [
        MethodSpec(
            "initialize",
            InitializeParams,
            InitializeResult,
            "Start the connection: protocol version, client info and capabilities (incl. notification opt-out).",
            (C.INVALID_PARAMS,),
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "my-editor", "version": "1.0"},
                "capabilities": {"notifications": {"optOut": ["usage_update"]}},
            },
            {
                "protocolVersion": 1,
                "serverInfo": {"name": "sessiond", "version": "0.1.0"},
                "capabilities": {"framing": ["content-length", "ndjson"]},
            },
        ),
        MethodSpec(
            "shutdown",
            Empty,
            None,
            "Prepare to close: no more requests are accepted on this connection.",
            (),
            {},
            None,
        ),
    ]
}
