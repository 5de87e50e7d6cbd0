"""Two ``session/new`` with the same id at once: one creates it, the other is refused.

The session is created in a worker thread, between the check that the id is free and the
moment the daemon serves the new session. A second request for the same id arriving in
between used to pass the check too, and its session replaced the first one in the registry:
the entries already acknowledged to the first went to a file nobody served any more (the
30-minute soak lost 5 of 388,959 that way at an epoch boundary, where every client of a group
asks for the next session at once).
"""

from __future__ import annotations

import threading
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


async def test_a_second_create_of_one_id_waits_and_creates_nothing(tmp_path: Path) -> None:
    """Under the id's lock the second request never creates a session object it would then
    have to throw away: the store's ``create`` runs once."""
    service = Service(load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    create = service.store.create
    created: list[str | None] = []

    def counting_create(*args: Any, **kwargs: Any) -> Any:
        created.append(kwargs.get("session_id"))
        time.sleep(0.1)  # (in the worker thread: the other request arrives meanwhile)
        return create(*args, **kwargs)

    service.store.create = counting_create  # type: ignore[method-assign]
    outcomes: list[Any] = []

    async def new() -> None:
        try:
            outcomes.append(await service.new_session(FakePeer(), "/work/project", session_id="one-id"))
        except SessionExistsError as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(new)
        tg.start_soon(new)
    assert created == ["one-id"]
    assert sum(isinstance(o, SessionExistsError) for o in outcomes) == 1
    service.close_all()


async def test_creates_of_different_ids_do_not_wait_for_each_other(tmp_path: Path) -> None:
    """The lock is the id's, not the daemon's: while ``first`` is being created (its worker
    thread holds it until ``second`` has started being created), ``second`` goes ahead. With
    one lock for every id, ``second`` would start only after ``first`` gave up waiting."""
    service = Service(load_config({}, root=tmp_path / "store", socket=tmp_path / "s.sock"))
    create = service.store.create
    second_started = threading.Event()
    first_saw_second: list[bool] = []

    def gated_create(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("session_id") == "first":
            first_saw_second.append(second_started.wait(10))
        else:
            second_started.set()
        return create(*args, **kwargs)

    service.store.create = gated_create  # type: ignore[method-assign]

    async def new(session_id: str) -> None:
        await service.new_session(FakePeer(), "/work/project", session_id=session_id)

    async with anyio.create_task_group() as tg:
        tg.start_soon(new, "first")
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(new, "second")
    assert first_saw_second == [True]
    assert {"first", "second"} <= set(service.hosts)
    service.close_all()
