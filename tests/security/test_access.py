"""Access: TCP without or with a wrong token, path traversal and symlink tricks — refused with
the documented error, logged, nothing written.

A Unix-socket client of another uid is covered by
tests/rpc/test_transport.py::test_peers_of_another_uid_are_refused (refused and logged as
"refused a Unix-socket client of uid N", even with the socket's permissions loosened).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond_protocol import ErrorCode
from tests.builders import user
from tests.harness.daemon import Daemon, start_daemon
from tests.security.conftest import RawClient, assert_no_traceback, snapshot, wait_for_log


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("access"), "--tcp", "127.0.0.1:0")
    yield d
    assert d.stop() == 0, d.log_text()[-3000:]


def tcp_port(daemon: Daemon) -> int:
    assert daemon.tcp is not None
    return daemon.tcp[1]


@pytest.mark.parametrize("token", [None, "wrong", "", 12345])
def test_tcp_without_or_with_a_wrong_token(daemon: Daemon, token: object) -> None:
    c = RawClient.tcp("127.0.0.1", tcp_port(daemon))
    before = c.request("session/list", {})
    assert before["error"]["code"] == ErrorCode.SERVER_NOT_INITIALIZED
    extra = {} if token is None else {"authToken": token}
    answer = c.initialize(**extra)
    if token == 12345:  # the wrong type is an invalid param, and the connection stays unauthenticated
        assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert c.request("session/list", {})["error"]["code"] == ErrorCode.SERVER_NOT_INITIALIZED
        c.close()
        return
    assert (
        answer["error"]["code"] == ErrorCode.INVALID_REQUEST
        and "Authentication" in answer["error"]["message"]
    )
    assert c.closed_within(10)
    wait_for_log(daemon, "refused: no authToken" if token is None else "refused: a wrong authToken")


def test_tcp_with_the_token_works(daemon: Daemon) -> None:
    c = RawClient.tcp("127.0.0.1", tcp_port(daemon))
    token = (daemon.store / "tcp.token").read_text().strip()
    assert "result" in c.initialize(authToken=token)
    assert "sessions" in c.call("session/list", {})
    c.close()


@pytest.fixture(scope="module")
def work(daemon: Daemon) -> Iterator[tuple[RawClient, str, Path]]:
    """A session whose cwd holds a file, a symlinked file and a symlinked directory (to outside)."""
    cwd = daemon.store.parent / "work"
    outside = daemon.store.parent / "outside"
    (cwd / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (cwd / "src" / "a.py").write_text("print(1)\n")
    (cwd / "link.txt").symlink_to(outside / "secret.txt")
    (cwd / "linkdir").symlink_to(outside)
    c = RawClient.unix(daemon.socket)
    c.initialize()
    sid = c.call("session/new", {"cwd": str(cwd)})["sessionId"]
    c.call("session/append", {"sessionId": sid, "entries": [{"type": "message", "message": user("x")}]})
    c.call("session/list", {})  # warm the listing cache (see test_params_fuzz.Target)
    yield c, sid, cwd
    c.close()


TRICKS = [
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "/etc/passwd",
    "link.txt",
    "linkdir/secret.txt",
    "src/\x00a.py",
    "/",
]


@pytest.mark.parametrize("path", TRICKS)
@pytest.mark.parametrize("method", ["fileHistory/track", "fileHistory/diff"])
def test_file_history_paths(
    daemon: Daemon, work: tuple[RawClient, str, Path], method: str, path: str
) -> None:
    c, sid, _cwd = work
    before = snapshot(daemon.store)
    params = {"sessionId": sid, "path": path}
    if method == "fileHistory/diff":
        checkpoints = c.call("fileHistory/list", {"sessionId": sid})
        message_id = (checkpoints.get("checkpoints") or [{}])[0].get("messageId", "none")
        params["messageId"] = message_id
    answer = c.request(method, params)
    assert "secret" not in str(answer.get("result", {})).replace("secret.txt", ""), answer  # never read
    if path == "link.txt" and method == "fileHistory/track":
        # A symlink inside the cwd is recorded as a link (its target string), never followed.
        assert answer["result"]["state"]["kind"] == "symlink", answer
        return
    if "result" in answer:  # diff of a path that is not tracked: nothing to show
        assert method == "fileHistory/diff" and not any(f["changed"] for f in answer["result"]["files"]), (
            answer
        )
        return
    error = answer["error"]
    assert_no_traceback(error)
    if method == "fileHistory/track":
        assert error["code"] == ErrorCode.PATH_REFUSED, (path, error)
        assert error["data"]["path"] and error["data"]["reason"], error
        wait_for_log(daemon, f"refused {method}: ")
        assert snapshot(daemon.store) == before, path
    else:
        assert error["code"] in (ErrorCode.PATH_REFUSED, ErrorCode.CHECKPOINT_NOT_FOUND), (path, error)


def test_a_tracked_file_swapped_for_a_symlink_is_not_followed(
    daemon: Daemon, work: tuple[RawClient, str, Path]
) -> None:
    c, sid, cwd = work
    c.call("fileHistory/track", {"sessionId": sid, "path": "src/a.py"})
    (cwd / "src" / "a.py").unlink()
    (cwd / "src" / "a.py").symlink_to(daemon.store.parent / "outside" / "secret.txt")
    answer = c.request("fileHistory/track", {"sessionId": sid, "path": "src/a.py"})
    state = str(answer["result"]["state"])
    assert "symlink" in state and "'secret'" not in state, answer  # recorded as a link, not read through
    assert (daemon.store.parent / "outside" / "secret.txt").read_text() == "secret"


@pytest.mark.parametrize(
    "params,field",
    [
        ({"cwd": "relative/dir"}, "cwd"),
        ({"cwd": "../../etc"}, "cwd"),
        ({"cwd": "/tmp/x", "sessionId": "../../escape"}, "sessionId"),
        ({"cwd": "/tmp/x", "sessionId": "a/b"}, "sessionId"),
        ({"cwd": "/tmp/x", "sessionId": ".hidden"}, "sessionId"),
    ],
)
def test_session_paths(
    daemon: Daemon, work: tuple[RawClient, str, Path], params: dict[str, Any], field: str
) -> None:
    c, _sid, _cwd = work
    before = snapshot(daemon.store)
    answer = c.request("session/new", params)
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS and answer["error"]["data"]["field"] == field
    assert snapshot(daemon.store) == before
    for method in ("session/load", "session/delete"):
        if field == "sessionId":
            answer = c.request(method, {"sessionId": params["sessionId"]})
            assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS


def test_cwds_that_climb_stay_inside_the_store(daemon: Daemon, work: tuple[RawClient, str, Path]) -> None:
    """An absolute cwd full of ``..`` is only a name: the session's directory is in the store,
    and so is a fork of it."""
    c, _sid, _cwd = work
    new = c.call("session/new", {"cwd": "/tmp/../../../../etc/.."})
    sessions = (daemon.store / "sessions").resolve()
    assert Path(new["path"]).resolve().is_relative_to(sessions)
    ids = c.call(
        "session/append",
        {"sessionId": new["sessionId"], "entries": [{"type": "message", "message": user("q")}]},
    )["entryIds"]
    fork = c.call("session/fork", {"sessionId": new["sessionId"], "entryId": ids[0], "position": "at"})
    assert Path(fork["path"]).resolve().is_relative_to(sessions)
    assert not any(p.name.startswith("..") for p in Path(fork["path"]).parents)


def test_a_session_file_symlinked_out_of_the_store_is_not_followed(
    daemon: Daemon, work: tuple[RawClient, str, Path]
) -> None:
    """A link planted in the store, pointing at a session file elsewhere: loading it must not
    turn sessiond into a writer of that file."""
    c, _sid, _cwd = work
    outside = daemon.store.parent / "outside" / "planted.jsonl"
    header = (
        '{"type":"session","version":3,"id":"planted-1",'
        '"timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}\n'
    )
    outside.write_text(header)
    d = daemon.store / "sessions" / "--planted--"
    d.mkdir()
    os.symlink(outside, d / "2025-01-01T00-00-00-000Z_planted-1.jsonl")
    answer = c.request(
        "session/append", {"sessionId": "planted-1", "entries": [{"type": "message", "message": user("w")}]}
    )
    assert outside.read_text() == header, answer
    assert "error" in answer and answer["error"]["code"] in (
        ErrorCode.SESSION_NOT_FOUND,
        ErrorCode.PATH_OUTSIDE_STORE,
        ErrorCode.READ_ONLY,
    ), answer
