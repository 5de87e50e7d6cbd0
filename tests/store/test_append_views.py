"""Every view of a session after appends equals the same view of a cold load of its file.

The append path indexes part of what it writes later (previews when a tree view asks) and
extends cached views in place (the light context, the projection, the usage trackers). Here
random appends of every entry type — below the leaf, below an earlier entry, after persisted
leaf moves — are interleaved with random reads (so caches are warm, cold or dropped by the
memory budget at any point) and, at checkpoints, every view is compared with the session
opened afresh from its file.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import pytest

from sessiond.errors import SessiondError
from sessiond.model.js import get
from sessiond.model.tokens import PI
from sessiond.store.session import Session
from tests.builders import assistant, tool_result, usage, user


def views(s: Session) -> dict[str, Any]:
    """What a client can read of the session, every view the index or a cache feeds."""
    head = s.context_view()  # what the after-append checks read without the projection
    ctx = s.context()
    view = s.usage_view(PI)
    return {
        "head": (head.model, *(get(head.first, k) for k in ("id", "type", "timestamp"))),
        "leaf": s.leaf_id,
        "count": s.entry_count,
        "name": s.name,
        "tree": s.tree_view(),
        "nodes": repr(s.tree_nodes()),
        "previews": list(s.index.previews),
        "light": [dict(e) if type(e) is dict else e for e in s.tree.entries],
        "entries": s.entries(),
        "context": [(get(p.source, "id"), p.messages) for p in ctx.entries],
        "messages": ctx.messages,
        "settings": (ctx.settings.thinking_level, ctx.settings.model),
        "usage": s.context_usage(PI).as_json(),
        "view": (view.estimate.as_json(), view.model, view.messages),
        "branch": [get(e, "id") for e in s.current_branch()],
    }


def _append_one(s: Session, rng: random.Random, turn: int) -> None:
    ids = [get(e, "id") for e in s.tree.entries if type(e) is dict and "id" in e]
    branch = [get(e, "id") for e in s.current_branch()]
    kind = rng.random()
    text = rng.choice(["hi", "héllo 👋", "a\n\tb  c", "x" * rng.randint(0, 300), ""])
    if kind < 0.30 or not ids:
        s.append_message(user(f"{text} {turn}", ts=turn))
    elif kind < 0.55:
        msg = assistant(text, total=rng.randint(0, 200_000))
        msg["usage"] = usage(rng.randint(0, 200_000), rng.randint(0, 9_000), rng.randint(0, 900))
        msg["stopReason"] = rng.choice(["stop", "toolUse", "length", "error", "aborted"])
        msg["timestamp"] = turn
        s.append_message(msg)
    elif kind < 0.62:
        s.append_message(tool_result(text))
    elif kind < 0.66:
        s.append_model_change(rng.choice(["anthropic", "openai"]), rng.choice(["m1", "m2"]))
    elif kind < 0.69:
        s.append_thinking_level_change(rng.choice(["low", "high"]))
    elif kind < 0.72:
        s.append_label(rng.choice(ids), rng.choice(["keep", "", "other"]))
    elif kind < 0.74:
        s.set_name(f"name {turn}")
    elif kind < 0.78:
        s.append_context_edit(rng.choice(ids), rng.choice([None, [user("replaced")]]))
    elif kind < 0.82 and len(branch) > 2:
        s.append_compaction(f"summary {turn}", rng.choice(branch[1:]), rng.randint(0, 100_000))
    elif kind < 0.86:
        s.append_entries([{"type": "message", "message": user(f"aside {turn}")}], parent_id=rng.choice(ids))
    elif kind < 0.90:
        s.move_leaf(rng.choice(ids))
    elif kind < 0.93:
        s.branch_with_summary(rng.choice(ids), f"left {turn}")
    elif kind < 0.96:
        s.append_custom("ext", {"n": turn})
    else:
        batch = [{"type": "message", "message": user(f"batch {turn}.{i}")} for i in range(rng.randint(2, 5))]
        s.append_entries(batch)


def _read_some(s: Session, rng: random.Random) -> None:
    """A random reader, or the memory budget dropping what is cached."""
    r = rng.random()
    if r < 0.15:
        s.context()
    elif r < 0.30:
        s.context_usage(PI)
    elif r < 0.40:
        s.usage_view(PI)
    elif r < 0.48:
        s.tree_view()
    elif r < 0.53:
        s.index._drop_bodies()  # the budget's call: bodies (pending previews too) read back from the file
    elif r < 0.56:
        s._drop_projection()


@pytest.mark.parametrize("seed", range(6))
def test_views_after_appends_equal_a_cold_load(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    session = Session.create(tmp_path, cwd="/w")
    session.append_message(user("first"))
    try:
        for turn in range(1, 260):
            # a refused random append (not on the branch, not editable) writes nothing
            with contextlib.suppress(SessiondError):
                _append_one(session, rng, turn)
            _read_some(session, rng)
            if turn % 37 == 0 or turn == 259:
                cold = Session.open(session.path, read_only="test")
                try:
                    assert views(session) == views(cold), f"turn {turn}"
                finally:
                    cold.close()
    finally:
        session.close()


def test_previews_of_appends_come_from_the_file_once_the_bodies_are_gone(tmp_path: Path) -> None:
    session = Session.create(tmp_path, cwd="/w")
    for turn in range(80):  # more than a batched read's minimum
        session.append_message(user(f"ask {turn} ✓ " + "y" * turn))
    session.index._drop_bodies()
    previews = list(session.index.previews)
    cold = Session.open(session.path, read_only="test")
    assert previews == list(cold.index.previews)
    assert previews[-1].startswith("ask 79 ✓")
    cold.close()
    session.close()
