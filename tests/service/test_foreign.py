"""Another agent's session (a Codex rollout) served through the registry, in-process.

The rules the read-only roots added to the service — the window the agent recorded, a delete
that never moves their files, a fork that exports into the store — hold below the transport
(tests/rpc/test_agents_live.py checks them end to end through a daemon).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiond.errors import ReadOnlySessionError
from sessiond.service.results import wire
from sessiond.service.service import Service
from sessiond.service.windows import context_window
from tests.conftest import FIXTURES
from tests.service.peers import FakePeer, make_service

pytestmark = pytest.mark.anyio

ROLLBACK_ID = "019c9000-0000-7000-8000-00000000000a"


def codex_service(tmp_path: Path) -> Service:
    shutil.copytree(FIXTURES / "codex" / "synthetic-home", tmp_path / "codex")
    env = {
        "HOME": str(tmp_path),
        "CODEX_HOME": str(tmp_path / "codex"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    return make_service(tmp_path, env)


async def test_a_codex_session_uses_the_window_its_agent_recorded_unless_configured(tmp_path: Path) -> None:
    service = codex_service(tmp_path)
    peer = FakePeer()
    loaded = await service.load(peer, ROLLBACK_ID, subscribe=False)
    assert loaded.format == "codex" and loaded.root == "codex" and loaded.readOnly

    usage = await service.usage(peer, ROLLBACK_ID)
    assert usage.model == {"provider": "openai", "modelId": "gpt-5.2-codex"}
    table = context_window("openai", "gpt-5.2-codex", {})
    assert usage.size == 258_400 != table, "the rollout's model_context_window, not the table's"

    await service.configure(peer, ROLLBACK_ID, 100_000)
    assert (await service.usage(peer, ROLLBACK_ID)).size == 100_000, "the session's own setting wins"
    service.close_all()


async def test_deleting_another_agents_session_is_refused_and_moves_nothing(tmp_path: Path) -> None:
    service = codex_service(tmp_path)
    peer = FakePeer()
    path = Path((await service.load(peer, ROLLBACK_ID, subscribe=True)).path)
    before = path.read_bytes()

    for opened in (True, False):
        if not opened:
            await service.close(peer, ROLLBACK_ID)
            assert ROLLBACK_ID not in service.hosts
        with pytest.raises(ReadOnlySessionError) as refused:
            await service.delete(peer, ROLLBACK_ID)
        assert refused.value.data["sessionId"] == ROLLBACK_ID
        assert path.read_bytes() == before
        assert not service.layout.trash_dir.exists() or not any(service.layout.trash_dir.iterdir())
        if opened:
            assert service.hosts[ROLLBACK_ID].users == {peer.id}, "still open for its user"
            assert "resync_required" not in peer.kinds(ROLLBACK_ID)
    service.close_all()


async def test_forking_another_agents_session_exports_it_into_the_store_for_the_peer(tmp_path: Path) -> None:
    service = codex_service(tmp_path)
    peer = FakePeer()
    forked = await service.fork(peer, ROLLBACK_ID, "L25", "at")

    assert forked.saved and Path(forked.path).is_relative_to(service.layout.root)
    host = service.hosts[forked.sessionId]
    assert host.users == {peer.id} and host.session.read_only is None
    theirs = await service.context(peer, ROLLBACK_ID, "L25")
    ours = await service.context(peer, forked.sessionId, None)
    roles = [m["message"]["role"] for m in wire(ours)["messages"]]
    assert roles == [m["message"]["role"] for m in wire(theirs)["messages"]]
    appended = await service.append(
        peer, forked.sessionId, [{"type": "message", "message": {"role": "user", "content": "go on"}}]
    )
    assert appended.entryIds
    service.close_all()
