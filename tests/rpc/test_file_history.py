"""File history through the real daemon, on real temporary workspaces."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from sessiond_client import Client, RpcError
from sessiond_protocol import ErrorCode
from tests.builders import assistant, user
from tests.conftest import CLAUDE_FIXTURES
from tests.harness.calls import call
from tests.harness.daemon import Daemon, start_daemon
from tests.harness.fixtures import SharedDaemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def daemon(shared_daemon: SharedDaemon) -> SharedDaemon:
    """One daemon for the file's tests (each test edits a workspace of its own under ``tmp_path``
    through sessions of its own; ``shared_daemon``
    checks that none leaves a connection behind); a test that configures its daemon starts its own."""
    return shared_daemon


CLAUDE_SAMPLE = CLAUDE_FIXTURES / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
CLAUDE_CWD = "/home/USER/projects/spotter-worktrees/spotter-4te"


class Agent:
    """An agent that edits files in a workspace and tells sessiond, as the protocol asks."""

    def __init__(self, client: Client, sid: str, ws: Path) -> None:
        self.client, self.sid, self.ws = client, sid, ws

    async def prompt(self, text: str) -> str:
        appended = await call(
            self.client,
            "session/append",
            {"sessionId": self.sid, "entries": [{"type": "message", "message": user(text)}]},
        )
        prompt_id: str = appended["leafId"]
        await call(self.client, "fileHistory/checkpoint", {"sessionId": self.sid, "messageId": prompt_id})
        return prompt_id

    async def write(self, rel: str, content: bytes, mode: int | None = None) -> None:
        await call(self.client, "fileHistory/track", {"sessionId": self.sid, "path": rel})
        path = self.ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        if mode is not None:
            os.chmod(path, mode)
        await call(self.client, "fileHistory/track", {"sessionId": self.sid, "path": rel, "phase": "after"})

    async def delete(self, rel: str) -> None:
        await call(self.client, "fileHistory/track", {"sessionId": self.sid, "path": rel})
        (self.ws / rel).unlink()
        await call(self.client, "fileHistory/track", {"sessionId": self.sid, "path": rel, "phase": "after"})

    async def answer(self) -> None:
        await call(
            self.client,
            "session/append",
            {"sessionId": self.sid, "entries": [{"type": "message", "message": assistant("done")}]},
        )


def snapshot(ws: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for p in sorted(ws.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(ws))] = (p.read_bytes(), p.stat().st_mode & 0o7777)
    return out


def workspace(tmp: Path, files: dict[str, str] | None = None) -> Path:
    """``<tmp>/ws``, the agent's working directory, holding ``files`` (name -> text)."""
    ws = tmp / "ws"
    ws.mkdir()
    for name, text in (files or {}).items():
        (ws / name).write_text(text)
    return ws


async def new_agent(client: Client, ws: Path) -> Agent:
    created = await call(client, "session/new", {"cwd": str(ws), "subscribe": True})
    return Agent(client, created["sessionId"], ws)


async def test_edit_create_delete_rename_and_rewind_each_checkpoint(daemon: Daemon, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('v0')\n")
    (ws / "old.txt").write_text("to be renamed\n")
    client = await daemon.client()
    agent = await new_agent(client, ws)
    states = []
    p1 = await agent.prompt("make it v1")
    states.append(snapshot(ws))
    await agent.write("src/app.py", b"print('v1')\n")
    await agent.write("run.sh", b"#!/bin/sh\necho hi\n", mode=0o755)
    await agent.answer()
    p2 = await agent.prompt("rename old.txt and add a binary")
    states.append(snapshot(ws))
    await agent.delete("old.txt")
    await agent.write("new.txt", b"to be renamed\n")
    await agent.write("data.bin", bytes(range(256)) * 64)
    await agent.answer()
    p3 = await agent.prompt("v2 and drop run.sh")
    states.append(snapshot(ws))
    await agent.write("src/app.py", b"print('v2')\n")
    await agent.delete("run.sh")
    await agent.answer()
    final = snapshot(ws)

    listed = await call(client, "fileHistory/list", {"sessionId": agent.sid})
    assert [c["messageId"] for c in listed["checkpoints"] if c["kind"] == "checkpoint"] == [p1, p2, p3]
    assert listed["checkpoints"][1]["prompt"] == "rename old.txt and add a binary"
    assert set(listed["tracked"]) == {"src/app.py", "run.sh", "old.txt", "new.txt", "data.bin"}

    diff = await call(client, "fileHistory/diff", {"sessionId": agent.sid, "messageId": p1})
    by_path = {f["path"]: f for f in diff["files"]}
    assert "-print('v0')" in by_path["src/app.py"]["diff"] and "+print('v2')" in by_path["src/app.py"]["diff"]
    assert by_path["data.bin"]["binary"] is True

    for prompt_id, expected in zip([p1, p2, p3], states, strict=True):
        dry = await call(
            client, "fileHistory/rewind", {"sessionId": agent.sid, "messageId": prompt_id, "dryRun": True}
        )
        done = await call(client, "fileHistory/rewind", {"sessionId": agent.sid, "messageId": prompt_id})
        assert [(f["path"], f["action"]) for f in dry["files"]] == [
            (f["path"], f["action"]) for f in done["files"]
        ]
        assert done["conflicts"] == 0 and done["refused"] == 0
        assert snapshot(ws) == expected, prompt_id
        back = await call(client, "fileHistory/rewind", {"sessionId": agent.sid, "messageId": done["undoId"]})
        assert back["conflicts"] == 0
        assert snapshot(ws) == final, f"undo of {prompt_id}"
    await client.close()


_STATE_KINDS = {"file", "symlink", "missing"}


async def test_track_reports_a_file_state_and_whether_it_backed_it_up(daemon: Daemon, tmp_path: Path) -> None:
    """SPEC: ``state`` is a file state (file, symlink, missing) — never an internal record."""
    ws = workspace(tmp_path, {"a.txt": "v0\n"})
    client = await daemon.client()
    agent = await new_agent(client, ws)
    await agent.prompt("edit a.txt")
    ref = {"sessionId": agent.sid, "path": "a.txt"}
    first = await call(client, "fileHistory/track", ref)
    blob0 = hashlib.sha256(b"v0\n").hexdigest()
    assert first["backedUp"] is True
    assert first["state"] == {"kind": "file", "blob": blob0, "mode": 0o644 & ~_umask(), "size": 3}
    again = await call(client, "fileHistory/track", ref)  # the prompt has it already
    assert again["backedUp"] is False and again["state"] == {"kind": "file", "blob": blob0}
    (ws / "a.txt").write_text("v1!\n")
    after = await call(client, "fileHistory/track", {**ref, "phase": "after"})
    assert after["backedUp"] is False
    assert after["state"] == {"kind": "file", "blob": hashlib.sha256(b"v1!\n").hexdigest()}
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to("elsewhere")
    linked = await call(client, "fileHistory/track", {**ref, "phase": "after"})
    assert linked["state"] == {"kind": "symlink", "target": "elsewhere"}
    (ws / "a.txt").unlink()
    gone = await call(client, "fileHistory/track", {**ref, "phase": "after"})
    assert gone["state"] == {"kind": "missing"}
    for answer in (first, again, after, linked, gone):
        assert answer["state"]["kind"] in _STATE_KINDS
    await client.close()


async def test_diff_of_a_file_that_cannot_be_read_says_unknown_not_unchanged(
    daemon: Daemon, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, {"a.txt": "v0\n"})
    client = await daemon.client()
    agent = await new_agent(client, ws)
    p1 = await agent.prompt("edit a.txt")
    await agent.write("a.txt", b"v1\n")
    (ws / "a.txt").unlink()
    (ws / "a.txt").mkdir()  # refused now: a directory where the file was
    diff = await call(client, "fileHistory/diff", {"sessionId": agent.sid, "messageId": p1})
    [entry] = diff["files"]
    assert entry["changed"] is None and entry["to"] is None and entry["newSize"] is None
    assert entry["diff"] is None and "directory" in entry["error"]
    assert entry["from"]["kind"] == "file" and entry["oldSize"] == 3
    await client.close()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


async def test_rewinding_one_session_never_reverts_anothers_edit(daemon: Daemon, tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"shared.py": "base\n"})
    client = await daemon.client()
    a = await new_agent(client, ws)
    b = await new_agent(client, ws)
    pa = await a.prompt("A edits")
    await a.write("shared.py", b"edited by A\n")
    await b.prompt("B edits")
    await b.write("shared.py", b"edited by B\n")
    result = await call(client, "fileHistory/rewind", {"sessionId": a.sid, "messageId": pa})
    [f] = result["files"]
    assert f["status"] == "conflict" and result["conflicts"] == 1 and result["written"] == 0
    assert (ws / "shared.py").read_text() == "edited by B\n"
    forced = await call(client, "fileHistory/rewind", {"sessionId": a.sid, "messageId": pa, "force": True})
    assert forced["written"] == 1 and (ws / "shared.py").read_text() == "base\n"
    await client.close()


async def test_paths_outside_the_workspace_are_refused(daemon: Daemon, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep\n")
    (ws / "link").symlink_to(outside)
    client = await daemon.client()
    agent = await new_agent(client, ws)
    await agent.prompt("try to escape")
    for path in ("../outside/secret.txt", str(outside / "secret.txt"), "link/secret.txt"):
        with pytest.raises(RpcError) as exc:
            await client.request("fileHistory/track", {"sessionId": agent.sid, "path": path})
        assert exc.value.code == ErrorCode.PATH_REFUSED, path
        assert exc.value.data["path"]
    assert (outside / "secret.txt").read_text() == "keep\n"
    await client.close()


async def test_rewind_with_conversation_moves_the_leaf_and_notifies(daemon: Daemon, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    client = await daemon.client()
    agent = await new_agent(client, ws)
    first = await agent.prompt("first")
    await agent.write("a.txt", b"one\n")
    await agent.answer()
    await agent.prompt("second")
    await agent.write("a.txt", b"two\n")
    client.drain_notifications()
    result = await call(
        client, "fileHistory/rewind", {"sessionId": agent.sid, "messageId": first, "conversation": True}
    )
    assert result["editorText"] == "first"
    loaded = await call(client, "session/load", {"sessionId": agent.sid})
    entries = await call(client, "tree/branch", {"sessionId": agent.sid})
    assert first not in entries["entryIds"] and loaded["leafId"] == result["leafId"]
    assert not (ws / "a.txt").exists()  # created after the first prompt
    updates = [p["update"] for m, p in client.drain_notifications() if m == "session/update"]
    rewinds = [u for u in updates if u["sessionUpdate"] == "file_history_update" and u["event"] == "rewind"]
    assert rewinds and rewinds[0]["undoId"] == result["undoId"] and rewinds[0]["paths"] == ["a.txt"]
    with pytest.raises(RpcError) as exc:
        await client.request("fileHistory/rewind", {"sessionId": agent.sid, "messageId": "nope"})
    assert exc.value.code == ErrorCode.CHECKPOINT_NOT_FOUND
    await client.close()


async def test_a_fork_can_rewind_its_history(daemon: Daemon, tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"f.txt": "original\n"})
    client = await daemon.client()
    agent = await new_agent(client, ws)
    p1 = await agent.prompt("change it")
    await agent.write("f.txt", b"changed\n")
    await agent.answer()
    forked = await call(
        client,
        "session/fork",
        {
            "sessionId": agent.sid,
            "entryId": (await call(client, "session/load", {"sessionId": agent.sid}))["leafId"],
            "position": "at",
        },
    )
    result = await call(client, "fileHistory/rewind", {"sessionId": forked["sessionId"], "messageId": p1})
    assert result["written"] == 1 and (ws / "f.txt").read_text() == "original\n"
    await client.close()


def _tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return out


async def test_a_workspace_replaced_by_a_symlink_is_refused_and_nothing_written(
    daemon: Daemon, tmp_path: Path
) -> None:
    """Issue 14 item 6: the rewind must not follow the session's swapped directory elsewhere."""
    ws = workspace(tmp_path, {"a.txt": "a0\n"})
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("not yours\n")
    client = await daemon.client()
    agent = await new_agent(client, ws)
    p1 = await agent.prompt("edit")
    await agent.write("a.txt", b"a1\n")
    await agent.write("b.txt", b"new\n")
    await agent.answer()
    before = _tree(other)
    os.rename(ws, tmp_path / "ws.real")
    ws.symlink_to(other)
    for params in ({"dryRun": True}, {}, {"force": True}):
        with pytest.raises(RpcError) as exc:
            await client.request("fileHistory/rewind", {"sessionId": agent.sid, "messageId": p1, **params})
        assert exc.value.code == ErrorCode.PATH_REFUSED, params
        assert exc.value.data["path"] == str(ws)
        assert set(exc.value.data["recorded"]) == {"dev", "ino"} and exc.value.data["current"]
        assert "not the directory" in exc.value.message
    assert _tree(other) == before
    listed = await call(client, "fileHistory/list", {"sessionId": agent.sid})
    assert [c["kind"] for c in listed["checkpoints"]] == ["checkpoint"]  # no undo snapshot was written
    await client.close()


async def test_undo_of_a_rewind_that_restored_a_symlink(daemon: Daemon, tmp_path: Path) -> None:
    """Issue 14 item 7: the session had replaced a link by a file; rewind restores the link, and
    its undo brings the session's file back."""
    ws = workspace(tmp_path, {"real.txt": "real\n"})
    (ws / "ln").symlink_to("real.txt")
    client = await daemon.client()
    agent = await new_agent(client, ws)
    await call(client, "fileHistory/track", {"sessionId": agent.sid, "path": "ln"})
    p1 = await agent.prompt("make ln a file")
    await call(client, "fileHistory/track", {"sessionId": agent.sid, "path": "ln"})
    (ws / "ln").unlink()
    (ws / "ln").write_text("the session's file\n")
    await call(client, "fileHistory/track", {"sessionId": agent.sid, "path": "ln", "phase": "after"})
    rewound = await call(client, "fileHistory/rewind", {"sessionId": agent.sid, "messageId": p1})
    assert rewound["written"] == 1 and os.readlink(ws / "ln") == "real.txt"
    undone = await call(
        client, "fileHistory/rewind", {"sessionId": agent.sid, "messageId": rewound["undoId"]}
    )
    assert (undone["written"], undone["refused"], undone["conflicts"]) == (1, 0, 0), undone
    assert not (ws / "ln").is_symlink() and (ws / "ln").read_text() == "the session's file\n"
    await client.close()


def _claude_workspace(tmp_path: Path) -> tuple[Path, Path, str]:
    """The 2.1.39 fixture moved to a temp workspace, with synthetic backups named by the real rule."""
    ws = workspace(tmp_path)
    text = CLAUDE_SAMPLE.read_text().replace(CLAUDE_CWD, str(ws))
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    sid = CLAUDE_SAMPLE.stem
    backups = tmp_path / "claude" / "file-history" / sid
    backups.mkdir(parents=True)
    for rec in records:
        if rec.get("type") != "file-history-snapshot":
            continue
        for rel, backup in rec["snapshot"]["trackedFileBackups"].items():
            if backup.get("backupFileName") is None:
                continue
            absolute = str(ws / rel) if not os.path.isabs(rel) else rel
            name = hashlib.sha256(absolute.encode()).hexdigest()[:16] + f"@v{backup['version']}"
            backup["backupFileName"] = name
            (backups / name).write_text(f"{rel} as backed up at v{backup['version']}\n")
    project = tmp_path / "claude" / "projects" / "-ws"
    project.mkdir(parents=True)
    (project / CLAUDE_SAMPLE.name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return ws, project / CLAUDE_SAMPLE.name, sid


async def test_claude_code_checkpoints_list_diff_and_rewind(tmp_path: Path) -> None:
    from sessiond.filehistory.claude import snapshot_records, written_contents  # noqa: PLC0415
    from sessiond.store.claude_files import load_transcript  # noqa: PLC0415

    ws, transcript_path, sid = _claude_workspace(tmp_path)
    transcript = load_transcript(transcript_path)
    # The workspace holds what the session last wrote (its Write/Edit results).
    written = {k: v for k, v in written_contents(transcript).items() if v is not None}
    for rel, content in written.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    prompts = list(snapshot_records(transcript))
    daemon = start_daemon(tmp_path)
    try:
        client = await daemon.client()
        listed = await call(client, "fileHistory/list", {"sessionId": sid})
        assert [c["messageId"] for c in listed["checkpoints"]] == prompts
        dry = await call(
            client, "fileHistory/rewind", {"sessionId": sid, "messageId": prompts[-1], "dryRun": True}
        )
        by_path = {f["path"]: f for f in dry["files"]}
        for rel in written:
            assert by_path[rel]["status"] != "conflict", rel  # the session's own last writes are recognised
        result = await call(
            client, "fileHistory/rewind", {"sessionId": sid, "messageId": prompts[-1], "force": False}
        )
        last = snapshot_records(transcript)[prompts[-1]]
        for rel, backup in last.items():
            if rel in written and backup["backupFileName"] is not None:
                assert (ws / rel).read_text() == f"{rel} as backed up at v{backup['version']}\n"
        assert result["undoId"]
        with pytest.raises(RpcError) as exc:  # the transcript itself stays read-only
            await client.request("fileHistory/track", {"sessionId": sid, "path": "mix.exs"})
        assert exc.value.code == ErrorCode.READ_ONLY
        undone = await call(client, "fileHistory/rewind", {"sessionId": sid, "messageId": result["undoId"]})
        assert undone["conflicts"] == 0
        for rel, content in written.items():
            assert (ws / rel).read_text() == content
        await client.close()
    finally:
        assert daemon.stop() == 0
        shutil.rmtree(ws, ignore_errors=True)
