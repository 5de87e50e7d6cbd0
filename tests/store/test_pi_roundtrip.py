"""Round trips with Pi's own code (pi-oracle): what sessiond writes, Pi reads the same way.

* a session written by sessiond through every operation opens in Pi with the leaf, branch
  and context sessiond reports;
* a Pi-format session appended to by sessiond (torn tails included) still opens identically;
* fork/clone (``createBranchedSession``) and ``forkFrom`` produce what Pi produces.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiond.inspection import _describe_message
from sessiond.model.js import get
from sessiond.model.js_json import stringify
from sessiond.model.tokens import PI
from sessiond.store.journal import Durability
from sessiond.store.listing import read_header
from sessiond.store.session import LEAF_MARKER, Session
from tests.builders import assistant, tool_result, user
from tests.conftest import GOLDEN, log_file, oracle_dir
from tests.oracle.pi import NodeServer, pi_result

ORACLE = oracle_dir()
pytestmark = [pytest.mark.oracle, pytest.mark.skipif(ORACLE is None, reason="pi-oracle is not installed")]
HERE = Path(__file__).parent


def harness(path: Path, *args: str) -> dict[str, Any]:
    assert ORACLE is not None
    result = pi_result(ORACLE, path, "--full", *args)
    assert "error" not in result, result.get("error")
    return result


PI_OPS = NodeServer(
    ["node", str(HERE / "pi_ops.mjs"), "--serve"],
    env={"PI_ORACLE_DIR": str(ORACLE), "PATH": "/usr/local/bin:/usr/bin:/bin"},
)
"""Pi's fork operations, one Node process for the file's ~50 (each run of its own loaded Pi)."""


@pytest.fixture(scope="module", autouse=True)
def _pi_ops_stopped() -> Iterator[None]:
    yield
    PI_OPS.close()


def pi_op(op: str, file: str, arg: str) -> dict[str, Any]:
    """``node pi_ops.mjs OP FILE ARG``, asked of :data:`PI_OPS`."""
    return PI_OPS.ask([op, file, arg, os.getcwd()], timeout=120)


def views(s: Session) -> dict[str, Any]:
    """What sessiond reports, in pi-oracle's shape."""
    projection = s.context()
    view = {
        "leafId": s.leaf_id,
        "branchIds": s.branch_ids(),
        "contextEntryIds": [get(p.source, "id") for p in projection.entries],
        "messages": [_describe_message(m, lambda t: t, PI) for m in projection.messages],
        "thinkingLevel": projection.settings.thinking_level,
        "model": projection.settings.model,
        "sessionName": s.name,
        "entryCount": s.entry_count,
    }
    sent: dict[str, Any] = json.loads(stringify(view))  # the JSON a client would get (undefined dropped)
    return sent


def leaf_markers(path: Path) -> set[str]:
    """Ids of the ``sessiond.leaf`` entries in a file."""
    out: set[str] = set()
    for line in path.read_bytes().split(b"\n"):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if type(entry) is dict and entry.get("customType") == LEAF_MARKER and type(entry.get("id")) is str:
            out.add(entry["id"])
    return out


def pi_views(result: dict[str, Any], markers: Collection[str] = ()) -> dict[str, Any]:
    """Pi's views; ``markers`` (sessiond's persisted leaf moves) are custom entries to Pi, but no
    context entries to sessiond: a leaf move must not show where Pi's in-memory one would not."""
    return {
        "leafId": result.get("leafId"),
        "branchIds": result["branchIds"],
        "contextEntryIds": [i for i in result["contextEntryIds"] if i not in markers],
        "messages": result["context"]["messages"],
        "thinkingLevel": result["context"].get("thinkingLevel"),
        "model": result["context"]["model"],
        "sessionName": result["sessionName"],
        "entryCount": result["entryCount"],
    }


def test_session_written_through_every_operation_opens_identically_in_pi(
    tmp_path: Path, store_backend: Any
) -> None:
    """On either backend: what the store holds (the file, or the stream's log as a file) is
    read by Pi as sessiond reports it."""
    s = store_backend.create(
        tmp_path / "--w--", "/w", session_id=None, parent_session=None, durability=Durability.BUFFERED
    )
    s.append_message(
        {"role": "system", "content": "You are helpful.", "toolsAdded": [{"name": "read"}], "timestamp": 1}
    )
    s.append_model_change("anthropic", "claude-sonnet")
    s.append_thinking_level_change("medium")
    u1 = s.append_message(user("读取 auth.ts 😀"))
    s.append_message(assistant("", calls=[("read", {"path": "src/auth.ts"})], total=1200))
    s.append_message(tool_result("export function login() {}\n" * 50))
    a1 = s.append_message(assistant("Login is session based.", total=1500))
    s.append_label(u1, "start")
    s.append_usage(
        "cache_warm",
        "anthropic",
        "claude-sonnet",
        {"input": 5, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 5},
    )
    u2 = s.append_message(user("switch to JWT"))
    s.append_message(assistant("done with JWT", total=1700))
    s.branch_with_summary(a1, "Tried JWT, abandoned.", {"readFiles": [], "modifiedFiles": ["src/auth.ts"]})
    s.append_message(user("use cookies"))
    a3 = s.append_message(assistant("cookies done", total=1900))
    s.append_custom("ext.state", {"n": 1})
    s.append_custom_message("ext.note", [{"type": "text", "text": "remember the tests"}], True, {"why": 1})
    s.set_name("Auth rewrite")
    failed = s.append_message(
        assistant("", stop="error", error="prompt is too long: 213000 tokens > 200000 maximum")
    )
    s.append_context_edit(failed, None)
    s.append_context_edit(a3, {"content": "cookies done (edited)"})
    s.append_compaction(
        "## Goal\nAuth", u2 if False else a1, 1900, {"readFiles": ["src/auth.ts"], "modifiedFiles": []}
    )
    s.append_message(user("continue"))
    s.move_leaf(a3)
    s.append_message(user("after the move"))
    stored = log_file(store_backend, s, tmp_path)
    pi = harness(stored)
    assert pi["fileRepair"]["modified"] is False
    assert pi_views(pi, leaf_markers(stored)) == views(s)
    assert views(Session.open(stored)) == views(s)


@pytest.mark.parametrize("name", [f"gen-{i:04d}.jsonl" for i in range(0, 220, 11)])
def test_pi_written_session_appended_by_sessiond_still_opens_identically(
    tmp_path: Path, name: str, store_backend: Any
) -> None:
    """On JetStream the Pi file is imported into the stream first, opened from the log, and
    the log is what Pi reads at the end."""
    path = tmp_path / name
    path.write_bytes((GOLDEN / "generated" / name).read_bytes())
    if store_backend.name == "jetstream":
        if (read_header(path) or {}).get("version") != 3:
            pytest.skip("an old-version Pi file is migrated before it can be imported")
        from sessiond.store.jetstream.transfer import import_file  # noqa: PLC0415

        import_file(store_backend, path)
    s = store_backend.open(path, durability=Durability.BUFFERED)
    assert pi_views(harness(path)) == views(s)  # before: sessiond reads what Pi reads
    rng = random.Random(name)
    leaf = s.leaf_id
    u = s.append_message(user("appended by sessiond"))
    a = s.append_message(assistant("ok", total=rng.randint(100, 5000)))
    s.append_label(u, "from-sessiond")
    s.append_context_edit(a, {"content": "edited by sessiond"})
    ids = s.branch_ids()
    s.move_leaf(ids[rng.randrange(len(ids))] if leaf is not None else u)
    s.append_message(user("after a persisted leaf move"))
    stored = log_file(store_backend, s, tmp_path)
    pi = harness(stored)
    assert pi["fileRepair"]["trailingNewlineAdded"] is False  # sessiond repaired any torn tail
    assert pi_views(pi, leaf_markers(stored)) == views(s)


def _without_random_ids(lines: list[dict[str, Any]]) -> list[Any]:
    """Entries of a created session minus what is random: header id/time, label ids."""
    out: list[Any] = []
    for e in lines[1:]:
        if e.get("type") == "label":
            out.append({k: v for k, v in e.items() if k not in ("id", "parentId")})
        else:
            out.append(e)
    return out


@pytest.mark.parametrize("name", [f"gen-{i:04d}.jsonl" for i in range(3, 220, 17)])
def test_create_branched_session_matches_pi(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes((GOLDEN / "generated" / name).read_bytes())
    s = Session.open(path)
    rng = random.Random(name)
    ids = s.branch_ids() or [e for e in s.tree.ids() if isinstance(e, str)]
    for leaf in {ids[-1], ids[rng.randrange(len(ids))], ids[0]}:
        ours = s.create_branched_session(leaf)
        pi = pi_op("branch", str(path), leaf)
        assert "error" not in pi, pi
        assert pi["exists"] == ours.flushed
        if not ours.flushed:
            continue
        our_lines = [json.loads(x) for x in ours.path.read_bytes().split(b"\n") if x]
        assert our_lines[0]["parentSession"] == str(path)
        # Pi resolves a missing or empty header cwd against its own process cwd; a daemon has
        # no meaningful process cwd, so sessiond keeps the source's (empty) cwd instead.
        random_or_local = ("id", "timestamp", "parentSession") + (() if s.cwd else ("cwd",))
        assert {k: v for k, v in our_lines[0].items() if k not in random_or_local} == {
            k: v for k, v in pi["lines"][0].items() if k not in random_or_local
        }
        assert _without_random_ids(our_lines) == _without_random_ids(pi["lines"])


@pytest.mark.parametrize("name", [f"gen-{i:04d}.jsonl" for i in range(5, 220, 23)])
def test_fork_from_matches_pi_on_v3_sources(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes((GOLDEN / "generated" / name).read_bytes())
    ours = Session.fork_from(path, tmp_path / "target", "/target/cwd")
    pi = pi_op("forkfrom", str(path), "/target/cwd")
    assert "error" not in pi, pi
    our_lines = [json.loads(x) for x in ours.path.read_bytes().split(b"\n") if x]
    assert our_lines[1:] == pi["lines"][1:]
    assert our_lines[0]["cwd"] == pi["lines"][0]["cwd"] == "/target/cwd"
