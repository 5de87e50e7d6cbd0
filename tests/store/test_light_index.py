"""The compact light index answers what the full entries say (store/index.py, store/packed.py).

The index keeps per entry a light dict whose id-naming fields share the named entry's id
string, and its previews packed in one UTF-8 buffer. Checked against ``load_session`` (every
entry parsed) on Pi's fixtures and on a file with everything odd a file can hold: every light
field equals the full entry's, every preview equals one computed from the full entry, bodies
read back equal, positions are the last line of each id, and the tree is the full tree.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from sessiond.formats.pi import load_session
from sessiond.model.js import UNDEFINED, key
from sessiond.model.preview import entry_preview
from sessiond.model.tree import SessionTree
from sessiond.store.packed import PackedStrings
from sessiond.store.session import Session
from tests.builders import assistant, user
from tests.conftest import PI_FIXTURES


def _odd_file(path: Path) -> Path:
    header = {"type": "session", "version": 3, "id": "odd", "timestamp": "2026-01-01T00:00:00.000Z"}
    lines: list[Any] = [{**header, "cwd": "/w"}]
    ts = "2026-01-01T00:00:01.000Z"

    def other(kind: str, eid: str, parent: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "id": eid, "parentId": parent, "timestamp": ts, **fields}

    def msg(eid: Any, parent: Any, message: dict[str, Any], stamp: str = ts) -> dict[str, Any]:
        return {"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": message}

    lines += [
        msg("a1", None, user("héllo 👋 " + "x" * 200)),
        msg("a2", "a1", assistant("answer\n\twith   spaces")),  # same timestamp as a1: shared
        msg("a3", "a2", user("second"), "2026-01-01T00:00:02.000Z"),
        msg("b1", "a1", user("a branch")),
        other("label", "l1", "b1", targetId="a2", label="keep"),
        other("compaction", "c1", "a3", summary="s", firstKeptEntryId="a2"),
        other("branch_summary", "s1", "c1", fromId="b1", summary="bs"),
        other("context_edit", "e1", "s1", targetId="a1", replacement=None),
        other("model_change", "m1", "e1", provider="p", modelId="m"),
        msg("a2", "m1", assistant("a duplicate id: the last line wins")),
        msg("o1", "nowhere", user("an orphan")),
        msg(7, "a3", user("a numeric id")),
        msg("n1", 7, user("child of a numeric id")),
        other("session_info", "i1", "n1", name="the name"),
        [1, 2, 3],
        "a string line",
        {"type": "custom", "customType": "x"},
    ]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def _files(tmp_path: Path) -> list[Path]:
    return [_odd_file(tmp_path / "odd.jsonl"), *sorted(PI_FIXTURES.glob("*.jsonl"))]


@pytest.mark.parametrize("which", range(3))
def test_the_index_answers_what_the_full_entries_say(tmp_path: Path, which: int) -> None:
    files = _files(tmp_path)
    if which >= len(files):
        pytest.skip("fewer fixtures")
    path = files[which]
    loaded = load_session(path)
    session = Session.open(path, read_only="test")  # (v1/v2 fixtures are migrated in memory)
    index, tree = session.index, session.tree
    full_tree = SessionTree(list(loaded.entries))
    assert len(index) == len(loaded.entries) == len(tree.entries)
    last: dict[Any, int] = {}
    duplicated = full_tree.diagnostics().duplicate_ids
    for pos, (light, full) in enumerate(zip(tree.entries, loaded.entries, strict=True)):
        assert index.previews[pos] == entry_preview(full)
        assert index.full_at(pos) == full
        if type(full) is not dict:
            assert light == full
            last[UNDEFINED] = pos
            continue
        for name in ("type", "id", "parentId", "timestamp"):
            assert (name in light) == (name in full) and light.get(name) == full.get(name)
        for name, value in light.items():
            if name == "message":
                summary = {k: v for k, v in full["message"].items() if k in ("role", "provider", "model")}
                assert value == summary
            elif name == "replacement":
                assert (value is None) == (full[name] is None)
            else:
                assert value == full[name], name
        last[key(full.get("id", UNDEFINED))] = pos
        parent = light.get("parentId")
        if type(parent) is str and parent in tree and parent not in duplicated:
            named = tree.get(parent)
            assert named is not None and parent is named["id"]  # one string per id
    for k, pos in last.items():
        assert index.position(tree.entries[pos]) == pos, k
    assert list(tree.ids()) == list(full_tree.ids())
    assert [e.get("id") for e in tree.branch()] == [e.get("id") for e in full_tree.branch()]
    assert tree.diagnostics() == full_tree.diagnostics()
    nodes = session.tree_view()["nodes"]
    assert [n["preview"] for n in nodes] == [entry_preview(e) for e in loaded.entries]
    session.close()


def test_the_index_of_appended_entries_matches_a_reopen(tmp_path: Path) -> None:
    """Appends go through ``add`` one at a time (not the bulk open): the same answers."""
    session = Session.create(tmp_path, cwd="/w")
    for turn in range(30):
        session.append_message(user(f"ask {turn} ✓"))
        session.append_message(assistant("réponse " * turn))
    grown = [dict(e) if type(e) is dict else e for e in session.tree.entries]
    previews = list(session.index.previews)
    path = session.path
    session.close()
    reopened = Session.open(path)
    assert reopened.tree.entries == grown
    assert list(reopened.index.previews) == previews
    reopened.close()


def test_packed_strings_behave_as_a_list() -> None:
    rng = random.Random(5)
    alphabet = ["a", "é", "👋", "\n", " ", "\ud800", "中"]  # a lone surrogate survives too
    packed, model = PackedStrings(), list[str]()
    for _ in range(2000):
        op = rng.random()
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 12)))
        if op < 0.7 or not model:
            packed.append(text)
            model.append(text)
        elif op < 0.85:
            packed[-1] = text  # the newest, rewritten in place
            model[-1] = text
        else:
            pos = rng.randrange(len(model))
            packed[pos] = text
            model[pos] = text
        if rng.random() < 0.05:
            assert list(packed) == model
    assert list(packed) == model and len(packed) == len(model)
    assert packed[-1] == model[-1] and packed[0] == model[0]
    with pytest.raises(IndexError):
        packed[len(model)]
    assert packed.nbytes < sum(len(s.encode("utf-8", "surrogatepass")) for s in model) + 8 * len(model) + 1
