"""Requests as the integration tests make them: every answer checked against its schema.

A daemon answer that parses as JSON but breaks the method's result model is a protocol bug
even when the test's own assertions would pass; so the tests call through :func:`call`
rather than ``client.request``.
"""

from __future__ import annotations

from typing import Any

from sessiond_client import Client
from sessiond_protocol import METHODS


def msg(message: dict[str, Any]) -> dict[str, Any]:
    """A ``message`` entry for ``session/append`` (``message`` from :mod:`tests.builders`)."""
    return {"type": "message", "message": message}


async def call(client: Client, method: str, params: dict[str, Any]) -> Any:
    """A request whose result must validate against the method's result model."""
    result = await client.request(method, params)
    spec = METHODS[method]
    if spec.result is not None:
        spec.result.model_validate(result)
    return result


async def append_entries(client: Client, sid: str, *entries: dict[str, Any]) -> list[str]:
    """Append ``entries`` at the leaf; their new ids, in order."""
    ids: list[str] = (await call(client, "session/append", {"sessionId": sid, "entries": list(entries)}))[
        "entryIds"
    ]
    return ids
