"""Every method's params, mangled from the JSON Schema, sent to the real daemon.

For each method of ``protocol/sessiond.schema.json``: params that are not an object, with a
required field missing, with a field of the wrong type, with huge strings and nested junk, with
garbage keys beside them; and valid-shaped nonsense (unknown session ids, bogus entry ids). The
daemon must answer every one with an error its schema documents for that method (-32602 naming
the field for invalid params), never an internal error, never a traceback, never hang, keep
serving — and write nothing: the store is snapshotted (names, sizes, mtimes) around every call.

The generator is small and written here (rather than ``hypothesis-jsonschema``): the cases
needed are the *invalid* neighbours of each schema, which a valid-instance generator does not
produce, and pydantic's lax coercions (``"7"`` is an integer, ``true`` is ``1``) decide which
wrong values really are wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiond_protocol import ErrorCode
from tests.builders import assistant, user
from tests.conftest import REPO
from tests.harness.daemon import Daemon, start_daemon
from tests.security.conftest import MISSING, RawClient, assert_no_traceback, snapshot
from tests.security.fuzz import fuzz

SCHEMA = json.loads((REPO / "protocol" / "sessiond.schema.json").read_text())
DEFS: dict[str, Any] = SCHEMA["$defs"]
METHODS: dict[str, Any] = SCHEMA["x-sessiond"]["methods"]
CONNECTED = sorted(m for m in METHODS if m not in ("initialize", "shutdown"))
"""Methods tried on one long-lived, initialized connection (initialize has its own test)."""

UNKNOWN = "no-such-session-0000"
BOGUS = "bogus-entry-id"

# The smallest valid params besides ``sessionId`` (entry ids are bogus on purpose).
BASE: dict[str, dict[str, Any]] = {
    "session/append": {"entries": [{"type": "message", "message": user("hi")}]},
    "session/setName": {"name": "n"},
    "session/fork": {"entryId": BOGUS},
    "tree/navigate": {"targetId": BOGUS},
    "tree/label": {"entryId": BOGUS, "label": "l"},
    "context/edit": {"targetId": BOGUS, "replacement": {"content": "x"}},
    "compaction/commit": {"summary": "s", "firstKeptEntryId": BOGUS, "tokensBefore": 1},
    "compaction/snip": {"fromEntryId": BOGUS, "toEntryId": BOGUS},
    "fileHistory/track": {"path": "a.txt"},
    "fileHistory/checkpoint": {"messageId": BOGUS},
    "fileHistory/diff": {"messageId": BOGUS},
    "fileHistory/rewind": {"messageId": BOGUS},
    "search/query": {"query": "hi"},
}

# Valid-shaped params on the *real* session that name entries that do not exist.
BOGUS_ON_REAL: dict[str, dict[str, Any]] = {
    "session/append": {"entries": [{"type": "message", "message": user("hi")}], "parentId": BOGUS},
    "session/entries": {"afterId": BOGUS},
    "session/fork": {"entryId": BOGUS},
    "tree/branch": {"entryId": BOGUS},
    "tree/navigate": {"targetId": BOGUS},
    "tree/label": {"entryId": BOGUS, "label": "l"},
    "context/get": {"leafId": BOGUS},
    "context/edit": {"targetId": BOGUS, "replacement": {"content": "x"}},
    "compaction/commit": {"summary": "s", "firstKeptEntryId": BOGUS, "tokensBefore": 1},
    "compaction/snip": {"fromEntryId": BOGUS, "toEntryId": BOGUS},
    "fileHistory/checkpoint": {"messageId": BOGUS},
    "fileHistory/diff": {"messageId": BOGUS},
    "fileHistory/rewind": {"messageId": BOGUS, "dryRun": False},
}


def params_schema(method: str) -> dict[str, Any]:
    return resolve(METHODS[method]["params"])


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = DEFS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def types_of(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a property accepts; ``None`` when anything goes (open objects)."""
    schema = resolve(schema)
    if "type" in schema:
        t = schema["type"]
        return set(t) if isinstance(t, list) else {t}
    if "anyOf" in schema or "oneOf" in schema:
        out: set[str] = set()
        for option in schema.get("anyOf", []) + schema.get("oneOf", []):
            sub = types_of(option)
            if sub is None:
                return None
            out |= sub
        return out
    if "properties" in schema:
        return {"object"}
    return None


WRONG_VALUES: list[tuple[Any, set[str]]] = [
    ("zzz", {"string"}),
    (7, {"integer", "number"}),
    (2.5, {"number"}),
    (True, {"boolean", "integer", "number"}),  # pydantic's lax mode takes true as 1
    ([1, "x"], {"array"}),
    ({"junk": [1]}, {"object"}),
    (None, {"null"}),
]
"""A value and the schema types (under pydantic's lax coercions) that would accept it."""


def wrong_values(schema: dict[str, Any]) -> list[Any]:
    types = types_of(schema)
    if types is None:
        return []
    return [v for v, accepted_by in WRONG_VALUES if not accepted_by & types]


def valid_base(method: str, session_id: str) -> dict[str, Any]:
    base = {**BASE.get(method, {})}
    if "sessionId" in params_schema(method).get("properties", {}):
        base["sessionId"] = session_id
    if method == "session/new":
        base = {"cwd": "/tmp/somewhere"}
    return base


# ------------------------------------------------------------------ the daemon under attack


class Target:
    """One daemon, one initialized connection, one real session with a few entries."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.client = RawClient.unix(daemon.socket)
        assert "result" in self.client.initialize()
        new = self.client.call("session/new", {"cwd": str(daemon.store.parent / "work")})
        self.session_id: str = new["sessionId"]
        appended = self.client.call(
            "session/append",
            {
                "sessionId": self.session_id,
                "entries": [
                    {"type": "message", "message": user("hello")},
                    {"type": "message", "message": assistant("hi")},
                ],
            },
        )
        self.entry_ids: list[str] = appended["entryIds"]
        # The listing cache (<store>/cache/listing.json) is refreshed by any lookup after a
        # session file changed; warm it so that every later write would be the attack's.
        self.client.call("session/list", {})

    def attack(self, method: str, params: Any) -> dict[str, Any]:
        """Send, check the invariants every answer obeys, and return the error."""
        before = snapshot(self.daemon.store)
        answer = self.client.request(method, params)
        after = snapshot(self.daemon.store)
        assert before == after, f"{method} {str(params)[:300]} wrote to the store: {diff(before, after)}"
        assert "error" in answer, f"{method} {str(params)[:300]} succeeded: {str(answer)[:300]}"
        error: dict[str, Any] = answer["error"]
        assert error["code"] != ErrorCode.INTERNAL_ERROR, (method, str(params)[:300], error)
        documented = set(METHODS[method]["errors"]) | {ErrorCode.INVALID_PARAMS}
        assert error["code"] in documented, (method, str(params)[:300], error)
        assert_no_traceback(error)
        return error


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    daemon = start_daemon(tmp_path_factory.mktemp("params"))
    try:
        yield Target(daemon)
    finally:
        code = daemon.stop()
        assert code == 0, daemon.log_text()[-3000:]
        assert "internal error" not in daemon.log_text(), daemon.log_text()[-3000:]


def names_field(error: dict[str, Any], field: str) -> bool:
    data = error.get("data") or {}
    fields = [data.get("field", "")] + [e.get("field", "") for e in data.get("errors", [])]
    return any(f == field or f.startswith(field + ".") for f in fields)


# ------------------------------------------------------------------ invalid params


@pytest.mark.parametrize("method", CONNECTED)
@given(data=st.data())
@fuzz(6)
def test_invalid_params_are_refused_precisely(target: Target, method: str, data: st.DataObject) -> None:
    schema = params_schema(method)
    props: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    session = data.draw(st.sampled_from([UNKNOWN, target.session_id]), label="session")
    base = valid_base(method, session)
    keys = st.text(min_size=1, max_size=8).filter(lambda k: k not in props)
    garbage = data.draw(
        st.dictionaries(keys, st.integers(), max_size=3),
        label="garbage keys",
    )
    kinds = ["not an object"]
    if required:
        kinds.append("missing")
    if any(wrong_values(s) for s in props.values()):
        kinds.append("wrong type")
    kind = data.draw(st.sampled_from(kinds), label="kind")
    if kind == "not an object":
        params = data.draw(st.sampled_from([[1, 2], "params", 42, True, [{"sessionId": session}]]))
        error = target.attack(method, params)
        assert error["code"] == ErrorCode.INVALID_PARAMS and error["data"]["field"] == "params"
        return
    if kind == "missing":
        field = data.draw(st.sampled_from(required), label="field")
        params = {k: v for k, v in base.items() if k != field} | garbage
    else:
        field = data.draw(st.sampled_from([p for p, s in props.items() if wrong_values(s)]), label="field")
        params = base | garbage | {field: data.draw(st.sampled_from(wrong_values(props[field])))}
    error = target.attack(method, params)
    assert error["code"] == ErrorCode.INVALID_PARAMS, (method, params, error)
    assert names_field(error, field), (method, params, error)
    assert field in error["message"] or "params" in error["message"], error


@pytest.mark.parametrize("method", [m for m in CONNECTED if m != "session/new"])
@given(data=st.data())
@fuzz(3)
def test_huge_strings_and_nested_junk(target: Target, method: str, data: st.DataObject) -> None:
    """On an unknown session (so a valid-shaped request has nothing to write to)."""
    props: dict[str, Any] = params_schema(method).get("properties", {})
    if not props:
        pytest.skip("no params")
    base = valid_base(method, UNKNOWN)
    field = data.draw(st.sampled_from(sorted(props)), label="field")
    depth = data.draw(st.integers(1, 900), label="depth")
    junk = data.draw(
        st.sampled_from(
            [
                "x" * (1 << 20),
                "\ud800" * 1000,
                "../" * 5000,
                json.loads("[" * depth + "]" * depth),
                {"a": {"b": {"c": ["\x00" * 100, -(2**80), 1e308]}}},
            ]
        ),
        label="junk",
    )
    if field == "sessionId" and isinstance(junk, str) and junk.startswith("x"):
        junk = "x" * 300  # over maxLength 256 but still the id pattern
    target.attack(method, base | {field: junk})


# ------------------------------------------------------------------ valid-shaped nonsense


WITH_SESSION = [m for m in CONNECTED if "sessionId" in params_schema(m).get("properties", {})]


@pytest.mark.parametrize("method", WITH_SESSION)
def test_unknown_session_ids(target: Target, method: str) -> None:
    if method == "session/new":
        pytest.skip("a new session may have any id")
    error = target.attack(method, valid_base(method, UNKNOWN))
    assert error["code"] == ErrorCode.SESSION_NOT_FOUND, (method, error)
    assert error["data"]["sessionId"] == UNKNOWN


@pytest.mark.parametrize("method", sorted(BOGUS_ON_REAL))
def test_bogus_entry_ids_on_a_real_session(target: Target, method: str) -> None:
    params = {"sessionId": target.session_id, **BOGUS_ON_REAL[method]}
    error = target.attack(method, params)
    if error["code"] == ErrorCode.INVALID_PARAMS:  # Pi's "Invalid entry ID for forking"
        assert method == "session/fork" and error["data"]["field"] == "entryId", error
        return
    assert error["code"] in (
        ErrorCode.ENTRY_NOT_FOUND,
        ErrorCode.CHECKPOINT_NOT_FOUND,
        ErrorCode.NOT_ON_BRANCH,
        ErrorCode.PREPARATION_STALE,
    ), (method, error)
    assert BOGUS in error["message"] or BOGUS in json.dumps(error.get("data")), error


def test_the_daemon_still_serves_after_all_that(target: Target) -> None:
    """A second connection works and the session is intact (exactly its two entries)."""
    other = RawClient.unix(target.daemon.socket)
    assert "result" in other.initialize()
    entries = other.call("session/entries", {"sessionId": target.session_id})
    assert [e["id"] for e in entries["entries"]] == target.entry_ids
    other.close()


# ------------------------------------------------------------------ initialize


@given(
    params=st.sampled_from(
        [
            {},
            {"protocolVersion": "one"},
            {"protocolVersion": 1, "clientInfo": "me"},
            {"protocolVersion": 1, "capabilities": {"notifications": {"optOut": "all"}}},
            {"protocolVersion": 1, "authToken": 5},
            {"protocolVersion": [1]},
            [1],
        ]
    )
)
@fuzz(7)
def test_invalid_initialize_leaves_the_connection_uninitialized(target: Target, params: Any) -> None:
    c = RawClient.unix(target.daemon.socket)
    try:
        answer = c.request("initialize", params)
        assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, answer
        assert_no_traceback(answer["error"])
        after = c.request("session/list", {})
        assert after["error"]["code"] == ErrorCode.SERVER_NOT_INITIALIZED
    finally:
        c.close()


def test_params_missing_entirely(target: Target) -> None:
    for method in CONNECTED:
        required = params_schema(method).get("required", [])
        answer = target.client.request(method, MISSING)
        if required:
            assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, (method, answer)
            assert names_field(answer["error"], required[0]) or answer["error"]["data"]["field"] in required


def test_schema_covers_every_method() -> None:
    """The generator walks the same method table the daemon serves (nothing left untried)."""
    from sessiond.rpc.methods import HANDLERS  # noqa: PLC0415

    assert set(HANDLERS) == set(METHODS)
    assert Path(REPO / "protocol" / "sessiond.schema.json").exists()
