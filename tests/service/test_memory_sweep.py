"""The daemon gives back an idle session's parsed content on its own, following enabled or not.

The memory budget (sessiond/store/memory.py) only looks at idle holders when one of them
reports; a daemon where nothing happens must still drop what an idle session keeps parsed,
and it must still stop promptly when there is nothing to follow.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sessiond.service.config import load_config
from sessiond.service.following import Follower
from sessiond.service.service import Service
from sessiond.store.memory import BUDGET
from sessiond.store.session import Session
from tests.builders import assistant, user
from tests.service.peers import FakePeer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("watch", [True, False])
async def test_an_idle_sessions_context_is_dropped_without_any_other_activity(
    tmp_path: Path, watch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit, idle = BUDGET.limit, BUDGET.idle
    monkeypatch.setattr(Follower, "SWEEP_INTERVAL", 0.05)
    config = tmp_path / "config.toml"
    config.write_text(f"[watch]\nenabled = {str(watch).lower()}\n[memory]\nidle_seconds = 0.2\n")
    env = {"SESSIOND_CONFIG": str(config), "HOME": str(tmp_path / "home")}
    service = Service(load_config(env, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    assert BUDGET.idle == 0.2
    try:
        client = FakePeer()
        sid = (await service.new_session(client, "/work/project")).sessionId
        for turn in range(5):
            await service.append(client, sid, [{"type": "message", "message": user(f"ask {turn}")}])
            await service.append(client, sid, [{"type": "message", "message": assistant("x " * 500)}])
        session = service.hosts[sid].session
        assert isinstance(session, Session)
        before = session.context()
        assert session._projection is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(service.follower.run)
            with anyio.fail_after(30):  # a hang guard, not a timing assertion
                while session._projection is not None:
                    await anyio.sleep(0.05)
            service.follower.stop()  # run() must return: the task group would wait for ever
        assert session.context().messages == before.messages  # rebuilt from the file
        service.close_all()
    finally:
        BUDGET.configure(limit, idle)


async def test_a_usage_update_does_not_materialise_the_context(tmp_path: Path) -> None:
    """``usage_update`` follows every append: it must come from the usage view, or every
    session with a subscriber would keep its whole context parsed (the soak's RSS failure)."""
    service = Service(load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    client = FakePeer()
    sid = (await service.new_session(client, "/work/project")).sessionId
    host = service.hosts[sid]
    session = host.session
    assert isinstance(session, Session)
    await service.append(client, sid, [{"type": "message", "message": user("ask")}])
    host.usage()  # the trackers start from one projection
    session._drop_projection()  # (what the budget does to an idle session)
    for turn in range(5):
        await service.append(client, sid, [{"type": "message", "message": user(f"ask {turn}")}])
        await service.append(client, sid, [{"type": "message", "message": assistant("x " * 50, total=900)}])
        # (the automatic-compaction check after an assistant append reads the context: a
        # session its agent is appending to is in use; only the usage path is checked here)
        session._drop_projection()
        usage = host.usage()
        assert session._projection is None
    assert usage.used == 900 and usage.source == "api"
    service.close_all()
