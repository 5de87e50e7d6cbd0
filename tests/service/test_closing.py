"""A long-lived daemon must stay flat: closing a session drops everything kept for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiond.service.config import load_config
from sessiond.service.service import Service
from tests.builders import assistant, user
from tests.service.peers import FakePeer

pytestmark = pytest.mark.anyio


async def test_closed_sessions_leave_nothing_behind(tmp_path: Path) -> None:
    service = Service(load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    client = FakePeer()
    ids = []
    for n in range(12):
        sid = (await service.new_session(client, "/work/project")).sessionId
        ids.append(sid)
        for turn in range(3):
            await service.append(client, sid, [{"type": "message", "message": user(f"ask {n}.{turn}")}])
            await service.append(
                client, sid, [{"type": "message", "message": assistant("x " * 4000, total=9000)}]
            )
        await service.configure(client, sid, 200_000)
        prepared = await service.compactor.prepare(client, sid, 10, None, None)
        assert prepared.prepared, prepared
    assert len(service.hosts) == 12 and service.compactor._preparations

    service.release(client)

    assert not service.hosts
    assert not service.registry._paths
    assert not service.settings._cache
    assert not service.compactor._preparations
    assert not service.compactor.recovery
    assert not service.file_history._open
    assert not service.hub._subs
    # what was closed is only forgotten in memory: reopening finds the file and its settings
    again = FakePeer()
    loaded = await service.load(again, ids[0], subscribe=False)
    assert loaded.sessionId == ids[0]
    assert service.settings.get(ids[0])["contextWindow"] == 200_000
    service.close_all()
