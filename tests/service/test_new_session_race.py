"""Two ``session/new`` with the same id at once: one creates it, the other is refused.

The session is created in a worker thread, between the check that the id is free and the
moment the daemon serves the new session. A second request for the same id arriving in
between used to pass the check too, and its session replaced the first one in the registry:
the entries already acknowledged to the first went to a file nobody served any more (the
30-minute soak lost 5 of 388,959 that way at an epoch boundary, where every client of a group
asks for the next session at once).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from sessiond.errors import SessionExistsError
from sessiond.service.config import load_config
from sessiond.service.service import Service
from tests.builders import user
from tests.service.peers import FakePeer

pytestmark = pytest.mark.anyio


async def test_concurrent_creates_of_one_id_give_one_session(tmp_path: Path) -> None:
    service = Service(load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    create = service.store.create

    def slow_create(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.2)  # (in the worker thread: both requests are past the first check)
        return create(*args, **kwargs)

    service.store.create = slow_create  # type: ignore[method-assign]
    a, b = FakePeer(), FakePeer()
    outcomes: dict[str, Any] = {}

    async def new(name: str, peer: FakePeer) -> None:
        try:
            outcomes[name] = await service.new_session(peer, "/work/project", session_id="same-id")
        except SessionExistsError as exc:
            outcomes[name] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(new, "a", a)
        tg.start_soon(new, "b", b)
    refused = [n for n, o in outcomes.items() if isinstance(o, SessionExistsError)]
    created = [n for n, o in outcomes.items() if not isinstance(o, SessionExistsError)]
    assert len(refused) == 1 and len(created) == 1, outcomes
    winner = outcomes[created[0]]
    host = service.hosts["same-id"]
    assert str(host.session.path) == winner.path
    owner = a if created[0] == "a" else b
    await service.append(owner, "same-id", [{"type": "message", "message": user("hi")}])
    files = list((tmp_path / "store").rglob("*same-id*.jsonl"))
    assert [str(f) for f in files] == [winner.path]
    service.close_all()
