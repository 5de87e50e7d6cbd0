"""The typed client's surface against the protocol package, without a daemon.

These fail when ``sessiond_protocol`` grows a method, a param field, an error code or changes a
result model that the facade does not follow.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

from sessiond_client import (
    UNSET,
    Client,
    InvalidParams,
    RpcError,
    SessiondClient,
    SessiondError,
    SessiondSyncClient,
    SessionNotFound,
    errors,
)
from sessiond_client.discovery import (
    StdioConnector,
    TcpConnector,
    UnixConnector,
    default_store,
    socket_path,
    token_path,
)
from sessiond_client.params import _camel
from sessiond_client.sync import SyncStream
from sessiond_client.typed import StdioOptions, TcpOptions, UnixOptions, _Stream, build_params, python_name
from sessiond_protocol import METHODS, NOTIFICATIONS, ErrorCode
from sessiond_protocol.notifications import SERVER_REQUESTS, LogMessage


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_has_a_typed_method(method: str) -> None:
    name = python_name(method)
    assert SessiondClient.METHOD_NAMES.get(method) == name, f"SessiondClient lacks {name}() for {method}"
    fn = getattr(SessiondClient, name)
    assert fn.__sessiond_method__ == method
    assert inspect.iscoroutinefunction(fn)
    spec = METHODS[method]
    # One argument per field of the params model, named in snake_case, and nothing else.
    args = [p for p in inspect.signature(fn).parameters if p != "self"]
    assert sorted(_camel(a) for a in args) == sorted(spec.params.model_fields), method
    # Required fields are required arguments (or have a fixed default, like protocolVersion);
    # the result is the method's result model.
    parameters = {_camel(p.name): p for p in inspect.signature(fn).parameters.values() if p.name != "self"}
    required = {k for k, f in spec.params.model_fields.items() if f.is_required()}
    for key, parameter in parameters.items():
        if parameter.default is parameter.empty:
            assert key in required, f"{method}: {key} is optional in the protocol"
        elif key in required:
            assert parameter.default is not None, f"{method}: {key} is required by the protocol"
    hints = typing.get_type_hints(fn)
    assert hints["return"] is (type(None) if spec.result is None else spec.result), method
    # And the blocking twin has it too, with the same signature.
    twin = getattr(SessiondSyncClient, name)
    assert inspect.signature(twin) == inspect.signature(fn)
    # ...declared in a class body (not added at run time), so type checkers see it too.
    assert inspect.getattr_static(SessiondSyncClient, name).method is fn


def test_no_typed_method_without_a_protocol_method() -> None:
    assert set(SessiondClient.METHOD_NAMES) == set(METHODS)


def _item_type(stream: Any) -> Any:
    """What a stream class (or a parametrised ``ModelStream[X]``) yields."""
    args = typing.get_args(stream)
    if args:
        return args[0]
    for klass in stream.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if typing.get_origin(base) in (_Stream, SyncStream):
                return typing.get_args(base)[0]
    raise AssertionError(f"{stream} is not a stream")


def _mentions(hint: Any, model: type) -> bool:
    if isinstance(hint, list):  # Callable[[params], result]
        return any(_mentions(arg, model) for arg in hint)
    return hint is model or any(_mentions(arg, model) for arg in typing.get_args(hint))


@pytest.mark.parametrize("method", sorted(NOTIFICATIONS))
def test_every_notification_has_a_typed_stream(method: str) -> None:
    name = SessiondClient.NOTIFICATION_STREAMS.get(method)
    assert name is not None, f"SessiondClient has no typed stream of {method}"
    # The stream yields the protocol's model of that notification (session/update: SessionUpdate,
    # whose ``update`` is the discriminated union of every update kind).
    returned = typing.get_type_hints(getattr(SessiondClient, name))["return"]
    assert _item_type(returned) is NOTIFICATIONS[method], method
    twin = typing.get_type_hints(getattr(SessiondSyncClient, name))["return"]
    assert _item_type(twin) is NOTIFICATIONS[method], f"the sync client's {name}"


def test_no_typed_stream_without_a_protocol_notification() -> None:
    assert set(SessiondClient.NOTIFICATION_STREAMS) == set(NOTIFICATIONS)
    assert set(SessiondClient.SERVER_REQUEST_HANDLERS) == set(SERVER_REQUESTS)


@pytest.mark.parametrize("method", sorted(SERVER_REQUESTS))
def test_every_server_request_has_a_typed_handler(method: str) -> None:
    name = SessiondClient.SERVER_REQUEST_HANDLERS.get(method)
    assert name is not None, f"SessiondClient cannot register a handler for {method}"
    params_model, result_model = SERVER_REQUESTS[method]
    handler_hint = typing.get_type_hints(getattr(SessiondClient, name))["fn"]
    assert _mentions(handler_hint, params_model) and _mentions(handler_hint, result_model), method


@pytest.mark.anyio
async def test_model_streams_yield_parsed_notifications_and_filter() -> None:
    # The daemon sends no window/logMessage in any situation a test can provoke, so this feeds
    # the dispatcher directly: parsing, filtering by token, skipping what does not fit.
    c = SessiondClient.unix(socket="/nonexistent/sessiond.sock", start=False)
    logs, mine, every = c.log_messages(), c.progress("t1"), c.progress()
    c._dispatch("window/logMessage", {"type": 2, "message": "disk almost full"})
    c._dispatch("window/logMessage", {"kind": "not a log message"})
    c._dispatch("$/progress", {"token": "t2", "value": {"kind": "begin", "title": "Loading"}})
    c._dispatch("$/progress", {"token": "t1", "value": {"kind": "end"}})
    assert logs.pending() == [LogMessage(type=2, message="disk almost full")]
    assert [p.token for p in mine.pending()] == ["t1"]
    assert [(p.token, p.value.kind) for p in every.pending()] == [("t2", "begin"), ("t1", "end")]


def test_python_names() -> None:
    assert python_name("session/setName") == "session_set_name"
    assert python_name("fileHistory/rewind") == "file_history_rewind"
    assert python_name("compaction/microcompact") == "compaction_microcompact"
    assert SessiondClient.append is SessiondClient.session_append
    assert SessiondClient.context is SessiondClient.context_get


# --------------------------------------------------------------------------- params


def test_unset_and_none_differ_where_the_protocol_says_so() -> None:
    entry = {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1, "extra": [1]}}
    assert build_params("session/append", {"session_id": "s", "entries": [entry]}) == {
        "sessionId": "s",
        "entries": [entry],  # sent as given: unknown fields and key order survive
    }
    wire = build_params(
        "session/append", {"session_id": "s", "entries": [entry], "parent_id": None, "expect_leaf_id": UNSET}
    )
    assert wire["parentId"] is None and "expectLeafId" not in wire
    # Optional fields whose default is null are simply left out when None...
    assert build_params("tree/branch", {"session_id": "s", "entry_id": None}) == {"sessionId": "s"}
    # ...but required nullable ones are sent as null.
    assert build_params("tree/label", {"session_id": "s", "entry_id": "e", "label": None}) == {
        "sessionId": "s",
        "entryId": "e",
        "label": None,
    }
    assert build_params("session/new", {"cwd": Path("/w")}) == {"cwd": "/w"}


@pytest.mark.parametrize(
    ("method", "args", "field"),
    [
        ("session/append", {"session_id": "s", "entries": []}, "entries"),
        (
            "session/append",
            {"session_id": "s", "entries": [{"type": "message", "message": {"role": "robot"}}]},
            "entries.0.message.role",
        ),
        ("session/new", {"cwd": "/w", "session_id": "bad id!"}, "sessionId"),
        ("session/list", {"limit": 0}, "limit"),
        ("compaction/run", {"session_id": "s", "summarizer": "gpt"}, "summarizer"),
    ],
)
def test_invalid_params_are_refused_before_sending(method: str, args: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidParams) as exc:
        build_params(method, args)
    assert exc.value.field == field
    assert exc.value.client_side and exc.value.method == method
    assert exc.value.code == ErrorCode.INVALID_PARAMS
    assert exc.value.message.startswith(f"Invalid params: {field}: ")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_error_code_has_its_class(code: ErrorCode) -> None:
    cls = errors.ERROR_CLASSES.get(code)
    assert cls is not None, f"no exception class for {code.name}"
    assert cls.error_code == code
    exc = errors.error_from(int(code), "boom", {"x": 1}, method="m")
    assert type(exc) is cls and exc.code == code and exc.data == {"x": 1} and exc.method == "m"
    assert isinstance(exc, SessiondError) and isinstance(exc, RpcError)


def test_unknown_codes_raise_the_base_class() -> None:
    exc = errors.error_from(-31999, "new in a later version")
    assert type(exc) is SessiondError and exc.code == -31999 and exc.data == {}


def test_error_details() -> None:
    leaf = errors.error_from(ErrorCode.LEAF_MISMATCH, "no", {"currentLeafId": "e9"})
    assert isinstance(leaf, errors.LeafMismatch) and leaf.current_leaf_id == "e9"
    missing = errors.error_from(ErrorCode.SESSION_NOT_FOUND, "no", {"sessionId": "s"})
    assert isinstance(missing, SessionNotFound) and isinstance(missing, errors.NotFound)
    assert missing.session_id == "s"
    storage = errors.error_from(ErrorCode.STORAGE_ERROR, "disk", {"errno": 28})
    assert isinstance(storage, errors.StorageError) and storage.errno == 28
    assert errors.from_rpc_error(RpcError(-32019, "ro")).__class__ is errors.ReadOnly
    # The transport's names still work.
    assert issubclass(errors.ConnectionClosed, ConnectionError)
    assert Client is not None


# --------------------------------------------------------------------------- discovery


@pytest.mark.parametrize("case", ["default", "home", "xdg-data", "runtime", "runtime-other-store"])
def test_the_socket_is_found_where_the_daemon_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from sessiond.service.config import load_config  # noqa: PLC0415 (the daemon's own rule)

    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (tmp_path / "none.toml").write_text("")
    for name in ("SESSIOND_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SESSIOND_CONFIG", str(tmp_path / "none.toml"))
    store: Path | None = None
    if case == "home":
        monkeypatch.setenv("SESSIOND_HOME", str(tmp_path / "h"))
    elif case == "xdg-data":
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    elif case == "runtime":
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    elif case == "runtime-other-store":
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        store = tmp_path / "other"
    expected = load_config(root=store).socket
    assert socket_path(store) == expected
    assert socket_path(store if store is not None else default_store()) == expected
    if case == "runtime":
        assert expected == runtime / "sessiond" / "sessiond.sock"
    else:
        assert expected.name == "sessiond.sock" and expected.parent.name == "run"
    assert token_path(tmp_path / "s") == tmp_path / "s" / "tcp.token"


def test_each_way_to_reach_the_daemon_is_declared_once_and_split_from_the_client_options(
    tmp_path: Path,
) -> None:
    """The async constructors and the blocking client take the same ``UnixOptions`` /
    ``TcpOptions`` / ``StdioOptions``; what reaches the connector and what the client keeps."""
    for name, options in (("connect", UnixOptions), ("connect_tcp", TcpOptions), ("spawn", StdioOptions)):
        for cls in (SessiondClient, SessiondSyncClient):
            kwargs = inspect.signature(getattr(cls, name)).parameters["options"]
            assert kwargs.annotation == f"Unpack[{options.__name__}]", (cls, name)
    unix = SessiondClient.unix(
        tmp_path, socket=tmp_path / "s.sock", start=False, daemon_argv=["x"], start_timeout=2.5, name="n"
    )
    assert isinstance(unix.connector, UnixConnector)
    assert (unix.connector.socket, unix.connector.start, unix.connector.daemon_argv) == (
        tmp_path / "s.sock",
        False,
        ("x",),
    )
    assert (unix.connector.start_timeout, unix._name) == (2.5, "n")
    tcp = SessiondClient.tcp("127.0.0.1", 1, store=tmp_path, queue_size=7)
    assert isinstance(tcp.connector, TcpConnector)
    assert (tcp.connector.token, tcp.connector.token_file, tcp._queue_size) == (
        None,
        tmp_path / "tcp.token",
        7,
    )
    stdio = SessiondClient.stdio(None, store=tmp_path, env={"A": "1"}, framing="ndjson")
    assert isinstance(stdio.connector, StdioConnector)
    assert (stdio.connector.env, stdio.connector.log, stdio._framing) == (
        {"A": "1"},
        tmp_path / "daemon.log",
        "ndjson",
    )
