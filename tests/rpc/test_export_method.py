"""``session/export`` through the real daemon: any root's session as a new Pi session in the store."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import RpcError
from sessiond_protocol import ErrorCode
from tests.conftest import FIXTURES
from tests.harness.calls import call
from tests.harness.daemon import start_daemon

pytestmark = pytest.mark.anyio

CODEX_FILE = (
    FIXTURES
    / "codex"
    / "cpolar-0.36"
    / "rollout-2025-09-16T12-47-48-9cd28a74-da7e-4458-a91a-fffec2be9d7a.jsonl"
)
CODEX_ID = "9cd28a74-da7e-4458-a91a-fffec2be9d7a"


async def test_a_codex_session_exported_holds_its_context_and_the_source_is_untouched(tmp_path: Path) -> None:
    day = tmp_path / "codex" / "sessions" / "2025" / "09" / "16"
    day.mkdir(parents=True)
    source = day / CODEX_FILE.name
    shutil.copyfile(CODEX_FILE, source)
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        original = await call(client, "context/get", {"sessionId": CODEX_ID})
        exported = await call(client, "session/export", {"sessionId": CODEX_ID})
        assert exported["source"]["sessionId"] == CODEX_ID and exported["source"]["root"] == "codex"
        assert Path(exported["path"]).is_file() and Path(exported["path"]).is_relative_to(daemon.store)
        copy = await call(client, "context/get", {"sessionId": exported["sessionId"]})

        def roles(ctx: Any) -> list[Any]:
            return [m["message"].get("role") for m in ctx["messages"]]

        assert roles(copy)[-5:] == roles(original)[-5:]
        assert len(copy["messages"]) >= len(original["messages"]) - 1
        same = await call(client, "session/export", {"sessionId": CODEX_ID})
        assert same["existing"] is True and same["sessionId"] == exported["sessionId"]
        another = await call(client, "session/export", {"sessionId": CODEX_ID, "again": True})
        assert another["existing"] is False and another["sessionId"] != exported["sessionId"]
        listed = await call(client, "session/list", {"root": "sessiond"})
        assert exported["sessionId"] in {s["sessionId"] for s in listed["sessions"]}
        # the copy is an ordinary store session: it can be continued
        loaded = await call(client, "session/load", {"sessionId": exported["sessionId"]})
        assert loaded["readOnly"] is False
        with pytest.raises(RpcError) as err:
            await client.request("session/export", {"sessionId": CODEX_ID, "leafId": "no-such-entry"})
        assert err.value.code == ErrorCode.ENTRY_NOT_FOUND
        with pytest.raises(RpcError) as err:
            await client.request("session/export", {"sessionId": "missing-session"})
        assert err.value.code == ErrorCode.SESSION_NOT_FOUND
        await client.close()
    finally:
        assert daemon.stop() == 0, daemon.log_text()
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before
