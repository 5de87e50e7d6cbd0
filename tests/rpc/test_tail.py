"""``session/tail``: the newest entries without opening the session, the same ids and parents
as the opened session's, for Pi and Claude Code files; other formats are opened."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.tail import tail_entries
from sessiond.service.tail import read_tail
from sessiond_client import RpcError
from sessiond_protocol import METHODS, ErrorCode
from tests.builders import assistant, user
from tests.harness.calls import append_entries, call, msg
from tests.harness.daemon import start_daemon
from tests.web.reader_store import CODEX_FIXTURE, CODEX_FIXTURE_ID
from tests.web.stores import ClaudeWriter

pytestmark = pytest.mark.anyio


def check(result: dict[str, Any]) -> None:
    model = METHODS["session/tail"].result
    assert model is not None
    model.model_validate(result)


async def test_tail_reads_the_end_of_unopened_files_like_the_open_session(tmp_path: Path) -> None:
    claude = ClaudeWriter(tmp_path / "claude" / "projects", "/work/claude")
    for i in range(40):
        claude.turn(f"step {i}", f"done {i}", grow=500)
    with open(claude.path, "ab") as f:
        f.write(b'{"type": "user", "uuid": "torn", "message": {"role": "us')  # a torn last line
    codex_dir = tmp_path / "codex" / "sessions" / "2026" / "02" / "23"
    codex_dir.mkdir(parents=True)
    shutil.copy(CODEX_FIXTURE, codex_dir)
    daemon = start_daemon(tmp_path)
    try:
        writer = await daemon.client()
        created = await call(writer, "session/new", {"cwd": "/work/pi"})
        pi = created["sessionId"]
        await append_entries(writer, pi, *(msg(user(f"q{i}")) for i in range(30)), msg(assistant("a")))
        await call(writer, "session/close", {"sessionId": pi})
        await writer.close()

        reader = await daemon.client()
        for sid, cwd, root in ((pi, "/work/pi", "sessiond"), (claude.session_id, "/work/claude", "claude")):
            preview = await call(reader, "session/tail", {"sessionId": sid, "limit": 25})
            check(preview)
            assert preview["exact"] is False  # read from the file, the session not opened
            assert (preview["cwd"], preview["root"]) == (cwd, root)
            assert preview["readOnly"] is (root == "claude")
            await call(reader, "session/subscribe", {"sessionId": sid})
            tree = await call(reader, "tree/get", {"sessionId": sid})
            newest = tree["nodes"][-25:]
            assert [e["id"] for e in preview["entries"]] == [n["id"] for n in newest]
            assert [e.get("parentId") for e in preview["entries"]] == [n["parentId"] for n in newest]
            opened = await call(reader, "session/tail", {"sessionId": sid, "limit": 25})
            assert opened["exact"] is True
            assert (
                opened["entries"]
                == (
                    await call(
                        reader, "session/entries", {"sessionId": sid, "offset": len(tree["nodes"]) - 25}
                    )
                )["entries"]
            )

        # Codex's rollouts need the whole file: the session is opened and its end served
        codex = await call(reader, "session/tail", {"sessionId": CODEX_FIXTURE_ID, "limit": 10})
        assert codex["exact"] is True and codex["format"] == "codex" and len(codex["entries"]) == 10

        with pytest.raises(RpcError) as exc:
            await call(reader, "session/tail", {"sessionId": "no-such-session"})
        assert exc.value.code == ErrorCode.SESSION_NOT_FOUND
        with pytest.raises(RpcError) as exc:
            await call(reader, "session/tail", {"sessionId": pi, "limit": 0})
        assert exc.value.code == ErrorCode.INVALID_PARAMS and exc.value.data["field"] == "limit"
        await reader.close()
    finally:
        assert daemon.stop() == 0, daemon.log_text()
    assert "Traceback" not in daemon.log_text()


def test_a_cut_first_line_and_junk_are_skipped() -> None:
    lines = [b'{"type":"session","id":"s","cwd":"/w"}', b'{"type":"message","id":"a","parentId":null}']
    lines += [b"junk", b'{"type":"message","id":"b","parentId":"a"}', b'{"type":"message","id":"c"']
    data = b"\n".join(lines)
    whole = tail_entries(data, "pi", 10, whole=True)
    assert [e["id"] for e in whole or []] == ["a", "b"]  # the header, junk and a torn tail skipped
    cut = tail_entries(data[20:], "pi", 10, whole=False)  # starts inside the header line
    assert [e["id"] for e in cut or []] == ["a", "b"]
    assert [e["id"] for e in tail_entries(data, "pi", 1, whole=True) or []] == ["b"]
    assert tail_entries(data, "codex", 10, whole=True) is None


def test_only_regular_files_are_read_and_never_through_a_symlink(tmp_path: Path) -> None:
    """A FIFO named like a transcript would block a plain open forever; a symlink may point
    anywhere: both are left to the ordinary open of the session (and its rules)."""
    real = tmp_path / "s.jsonl"
    real.write_bytes(b'{"type":"session","id":"s","cwd":"/w"}\n{"type":"message","id":"a","parentId":null}\n')
    assert read_tail(real, "pi", 10) == ([{"type": "message", "id": "a", "parentId": None}], "/w")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert read_tail(link, "pi", 10) is None
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert read_tail(fifo, "claude-code", 10) is None  # at once, not blocked waiting for a writer
    assert read_tail(tmp_path / "missing.jsonl", "pi", 10) is None
