"""``tree/navigate`` through the real daemon: the persisted leaf marker changes no Pi-derived view.

Pi's ``/tree`` moves its leaf in memory; sessiond persists the move as a ``sessiond.leaf``
entry below the target, which becomes the leaf. Navigating back to a compaction must leave
the session "already compacted" (Pi's answer), with the context and usage it had right after
the compaction (issue 14 item 9). The differential check against Pi's own code is
``tests/oracle/test_navigate.py``.
"""

from __future__ import annotations

import pytest

from sessiond_client import RpcError
from sessiond_protocol import ErrorCode
from tests.harness.calls import call
from tests.rpc.conftest import Daemon
from tests.rpc.test_compaction import session_with_turns, turn

pytestmark = pytest.mark.anyio


async def test_navigating_back_to_a_compaction_keeps_it_compacted(daemon: Daemon) -> None:
    client = await daemon.client()
    sid, _ = await session_with_turns(client, 6)
    ran = await call(client, "compaction/run", {"sessionId": sid})
    checkpoint = ran["entryId"]
    at_checkpoint = await call(client, "context/get", {"sessionId": sid})
    usage_at_checkpoint = await call(client, "context/usage", {"sessionId": sid})
    already = {"prepared": False, "reason": "already_compacted", "message": "Already compacted"}
    assert await call(client, "compaction/prepare", {"sessionId": sid}) == already
    for i in range(6, 9):
        await call(client, "session/append", {"sessionId": sid, "entries": turn(i)})
    assert (await call(client, "compaction/prepare", {"sessionId": sid}))["prepared"] is True

    nav = await call(client, "tree/navigate", {"sessionId": sid, "targetId": checkpoint})
    assert nav["moved"] and nav["markerEntryId"] == nav["leafId"] != checkpoint
    assert await call(client, "compaction/prepare", {"sessionId": sid}) == already
    with pytest.raises(RpcError) as exc:
        await client.request("compaction/run", {"sessionId": sid})
    assert exc.value.code == ErrorCode.NOTHING_TO_COMPACT and exc.value.data["reason"] == "already_compacted"
    assert await call(client, "context/get", {"sessionId": sid}) == at_checkpoint
    assert await call(client, "context/usage", {"sessionId": sid}) == usage_at_checkpoint

    # Reopened from its file (the marker is the file's last line), the session says the same.
    await client.request("session/close", {"sessionId": sid})
    await client.close()
    client = await daemon.client()
    loaded = await call(client, "session/load", {"sessionId": sid})
    assert loaded["leafId"] == nav["markerEntryId"]
    assert await call(client, "compaction/prepare", {"sessionId": sid}) == already
    assert await call(client, "context/get", {"sessionId": sid}) == at_checkpoint
    assert await call(client, "context/usage", {"sessionId": sid}) == usage_at_checkpoint
    await client.close()
