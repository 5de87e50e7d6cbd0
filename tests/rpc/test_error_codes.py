"""Every exception type the daemon raises on purpose carries its own JSON-RPC code, listed in SPEC.

The error answer is built from the exception's ``error_code`` by one function; there is no table
to forget a type in. An exception without a code is a bug and must come out as an internal error
(logged with its traceback here, never sent), not as a plausible-looking INVALID_PARAMS.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

import sessiond
from sessiond import errors as E
from sessiond.errors import SessiondError
from sessiond.filehistory import errors as FE
from sessiond.rpc.errors import error_answer
from sessiond_protocol import ERRORS, ErrorCode

REPO = Path(__file__).resolve().parents[2]


def _all_error_types() -> list[type[SessiondError]]:
    for module in pkgutil.walk_packages(sessiond.__path__, "sessiond."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    seen: list[type[SessiondError]] = []
    stack: list[type[SessiondError]] = [SessiondError]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return sorted(seen, key=lambda c: f"{c.__module__}.{c.__qualname__}")


ERROR_TYPES = _all_error_types()


def test_the_walk_finds_the_error_types() -> None:
    names = {cls.__name__ for cls in ERROR_TYPES}
    assert {"SessionNotFoundError", "PathRefusedError", "ConfigError", "LeafMismatchError"} <= names


@pytest.mark.parametrize("cls", ERROR_TYPES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_error_type_declares_a_code_listed_in_the_spec(cls: type[SessiondError]) -> None:
    code = cls.error_code
    assert code is not None, f"{cls.__qualname__} declares no error_code"
    assert isinstance(code, ErrorCode) and code in ERRORS
    spec = (REPO / "protocol" / "SPEC.md").read_text(encoding="utf-8")
    assert re.search(rf"^\| {int(code)} \| `{code.name}` \|", spec, re.MULTILINE), (
        f"{code.name} ({int(code)}) of {cls.__qualname__} is not in SPEC.md's error table"
    )


@pytest.mark.parametrize(
    ("exc", "code", "data"),
    [
        (E.SessionNotFoundError("abc"), ErrorCode.SESSION_NOT_FOUND, {"sessionId": "abc"}),
        (E.LeafMismatchError("a", "b"), ErrorCode.LEAF_MISMATCH, {"currentLeafId": "b"}),
        (E.InvalidArgumentError("bad", field="x"), ErrorCode.INVALID_PARAMS, {"field": "x"}),
        (FE.PathRefusedError("/etc/passwd", "outside"), ErrorCode.PATH_REFUSED, None),
        (FE.BlobMissingError("ab" * 32), ErrorCode.STORAGE_ERROR, {"blob": "ab" * 32}),
        (E.JournalBrokenError("flush failed", "/s.jsonl", 5), ErrorCode.STORAGE_ERROR, {"errno": 5}),
        (E.ProtocolVersionError(2, 1), ErrorCode.PROTOCOL_VERSION_MISMATCH, {"clientVersion": 2}),
    ],
)
def test_the_answer_carries_the_types_code_and_data(
    exc: SessiondError, code: ErrorCode, data: dict[str, object] | None
) -> None:
    answer = error_answer(exc, "some/method")
    assert answer.code == code and answer.message == exc.message
    for key, value in (data or {}).items():
        assert answer.data is not None and answer.data[key] == value


def test_an_error_without_a_code_is_an_internal_error_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Unmapped(SessiondError):
        pass

    try:
        raise Unmapped("something the daemon did not expect", field="cwd")
    except Unmapped as exc:
        with caplog.at_level(logging.ERROR, logger="sessiond.rpc"):
            answer = error_answer(exc, "session/new")
    assert answer.code == ErrorCode.INTERNAL_ERROR, "a bug must not pass for a client's mistake"
    assert answer.message == "Internal error in session/new: Unmapped: something the daemon did not expect"
    assert "Traceback" not in answer.message
    assert answer.data == {"method": "session/new"}, "data always, but not the exception's own (field=cwd)"
    assert any(r.exc_info and r.exc_info[0] is Unmapped for r in caplog.records)


def test_a_type_whose_code_is_internal_error_is_logged_as_a_bug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="sessiond.rpc"):
        answer = error_answer(FE.RewindOrderError("execute before undo_data"), "fileHistory/rewind")
    assert answer.code == ErrorCode.INTERNAL_ERROR
    assert caplog.records and caplog.records[-1].exc_info is not None


def test_validation_errors_and_os_errors() -> None:
    class P(BaseModel):
        limit: int

    with pytest.raises(ValidationError) as invalid:
        P.model_validate({"limit": "x"})
    answer = error_answer(invalid.value, "session/list", {"limit": "x"})
    assert answer.code == ErrorCode.INVALID_PARAMS
    assert answer.data is not None and answer.data["field"] == "limit"

    answer = error_answer(OSError(28, "No space left on device", "/store/x"), "session/append")
    assert answer.code == ErrorCode.STORAGE_ERROR and answer.data == {"errno": 28, "path": "/store/x"}


@pytest.mark.parametrize(
    ("exc", "code", "message", "data"),
    [
        (
            E.NotASessionError("/s/a b.jsonl", "line 3: not JSON"),
            ErrorCode.NOT_A_SESSION,
            "/s/a b.jsonl is not a valid Pi session: line 3: not JSON",
            {"path": "/s/a b.jsonl", "reason": "line 3: not JSON"},
        ),
        (
            E.SessionChangedError("/s/{x}.jsonl", "it was truncated"),
            ErrorCode.SESSION_CHANGED,
            "Session file /s/{x}.jsonl changed underneath sessiond: it was truncated",
            {"path": "/s/{x}.jsonl", "reason": "it was truncated"},
        ),
        (
            FE.PathRefusedError("/etc/pass'wd", "outside the roots"),
            ErrorCode.PATH_REFUSED,
            'Refused "/etc/pass\'wd": outside the roots',
            {"path": "/etc/pass'wd", "reason": "outside the roots"},
        ),
        (
            FE.RootChangedError("/repo", "it is another directory now", {"dev": 1, "ino": 2}, None),
            ErrorCode.PATH_REFUSED,
            "Refused '/repo': it is another directory now",
            {
                "path": "/repo",
                "reason": "it is another directory now",
                "recorded": {"dev": 1, "ino": 2},
                "current": None,
            },
        ),
        (
            FE.FileAccessError("/repo/a.txt", "Permission denied", 13),
            ErrorCode.STORAGE_ERROR,
            "Cannot access '/repo/a.txt': Permission denied",
            {"path": "/repo/a.txt", "reason": "Permission denied", "errno": 13},
        ),
        (
            FE.FileChangedError("/repo/a.txt", "it was modified meanwhile"),
            ErrorCode.STORAGE_ERROR,
            "'/repo/a.txt' changed: it was modified meanwhile",
            {"path": "/repo/a.txt", "reason": "it was modified meanwhile"},
        ),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, SessiondError) else "",
)
def test_errors_about_one_path_keep_their_messages_and_data(
    exc: E.PathError, code: ErrorCode, message: str, data: dict[str, object]
) -> None:
    """The types built on ``PathError`` (a template instead of a constructor each) say exactly
    what they said before, in the same order of ``data`` keys (answers are compared as bytes)."""
    answer = error_answer(exc, "fileHistory/rewind")
    assert (answer.code, answer.message, str(exc)) == (code, message, message)
    assert list(exc.data.items()) == list(data.items())
    assert answer.data == {k: v for k, v in data.items() if v is not None}
    assert (exc.path, exc.reason) == (data["path"], data["reason"])
