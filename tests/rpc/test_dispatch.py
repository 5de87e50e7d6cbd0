"""The method table's declarations, in-process: a handler cannot drift from its spec, every
method has exactly one, and a typed result goes out as the fields its builder set."""

from __future__ import annotations

from typing import Any

import pytest

from sessiond.rpc import dispatch
from sessiond.rpc.dispatch import Caller, Json, MethodTable
from sessiond.rpc.methods import HANDLERS
from sessiond_protocol import METHODS
from sessiond_protocol import methods as M

SPECS = {name: METHODS[name] for name in ("session/close", "shutdown")}


def test_the_daemons_table_has_one_handler_per_protocol_method() -> None:
    assert set(HANDLERS) == set(METHODS)
    for name, method in HANDLERS.items():
        assert method.spec is METHODS[name]
    assert {name for name, m in HANDLERS.items() if m.immediate} == {"initialize", "shutdown"}
    assert {name for name, m in HANDLERS.items() if m.takes_raw} == {
        "session/append",
        "context/edit",
        "compaction/commit",
        "compaction/settings",
    }
    progress = {name for name, m in HANDLERS.items() if m.reports_progress}
    assert {"compaction/run", "session/list"} <= progress
    assert "session/append" not in progress
    assert progress == {name for name, spec in METHODS.items() if "workDoneToken" in spec.params.model_fields}


def test_a_method_outside_the_protocol_is_refused() -> None:
    with pytest.raises(ValueError, match="session/archive is not a method of the protocol"):
        MethodTable(SPECS).method("session/archive")


def test_the_params_model_must_be_the_specs() -> None:
    table = MethodTable(SPECS)
    with pytest.raises(TypeError, match=r"must take SessionRef, not .*LoadParams"):

        @table.method("session/close")
        async def close(call: Caller, p: M.LoadParams) -> M.EmptyResult:
            raise AssertionError


def test_the_result_model_must_be_the_specs() -> None:
    table = MethodTable(SPECS)
    with pytest.raises(TypeError, match=r"must return EmptyResult, not .*LoadResult"):

        @table.method("session/close")
        async def close(call: Caller, p: M.SessionRef) -> M.LoadResult:
            raise AssertionError

    with pytest.raises(TypeError, match="must return EmptyResult"):

        @table.method("session/close")
        async def untyped(call: Caller, p: M.SessionRef) -> Json:
            raise AssertionError

    with pytest.raises(TypeError, match="must return NoneType"):

        @table.method("shutdown")
        def shutdown(call: Caller, p: M.Empty) -> M.EmptyResult:
            raise AssertionError


def test_one_handler_per_method_and_none_missing() -> None:
    table = MethodTable(SPECS)

    @table.method("session/close")
    async def close(call: Caller, p: M.SessionRef) -> M.EmptyResult:
        return M.EmptyResult.model_construct()

    with pytest.raises(ValueError, match="session/close already has a handler"):

        @table.method("session/close")
        async def again(call: Caller, p: M.SessionRef) -> M.EmptyResult:
            raise AssertionError

    with pytest.raises(ValueError, match="methods without a handler: shutdown"):
        table.complete()

    @table.method("shutdown")
    def shutdown(call: Caller, p: M.Empty) -> None:
        return None

    assert table.complete() is table
    assert not table["session/close"].immediate and table["shutdown"].immediate


@pytest.mark.anyio
async def test_the_answer_is_the_set_fields_of_the_typed_result() -> None:
    """One conversion, in ``dispatch.answer``: the fields the builder set (an unset optional
    one omitted), nested values untouched (no ``model_dump`` walk, no copy)."""
    table = MethodTable({name: METHODS[name] for name in ("tree/branch", "tree/navigate")})
    entry: dict[str, Any] = {"type": "message", "id": "e1", "odd": [1.5, {"as": "is"}]}

    @table.method("tree/branch")
    async def branch(call: Caller, p: M.BranchParams) -> M.BranchResult:
        if p.full:
            return M.BranchResult.model_construct(entryIds=["e1"], entries=[entry])
        return M.BranchResult.model_construct(entryIds=["e1"])

    @table.method("tree/navigate")
    async def navigate(call: Caller, p: M.NavigateParams, raw: Json) -> M.NavigateResult:
        assert "summary" not in p.model_fields_set and raw == {"sessionId": "s1", "targetId": "e1"}
        return M.NavigateResult.model_construct(leafId=p.targetId, moved=True)

    caller: Any = None  # neither handler looks at its connection
    sent = await dispatch.answer(table["tree/branch"], caller, {"sessionId": "s1", "full": True}, {})
    assert sent == {"entryIds": ["e1"], "entries": [entry]}
    assert sent["entries"][0] is entry
    sent = await dispatch.answer(table["tree/branch"], caller, {"sessionId": "s1"}, {})
    assert sent == {"entryIds": ["e1"]}
    sent = await dispatch.answer(table["tree/navigate"], caller, {"sessionId": "s1", "targetId": "e1"}, {})
    assert sent == {"leafId": "e1", "moved": True}
