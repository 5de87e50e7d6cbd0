"""Random sessions: whatever the agent did across prompts, a rewind to a prompt gives back the
tree as it was then, its undo gives back the tree before it, and a history replayed from the
persisted data plans the same rewinds."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import Session, leftovers, tree

PATHS = ["a.txt", "b.bin", "d/c.txt", "d/e/f.sh"]
CONTENTS = [b"", b"x\n", b"line\n" * 3, b"\0binary\xff", b"no newline"]
MODES = [0o644, 0o755, 0o600]

op = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(PATHS), st.sampled_from(CONTENTS), st.sampled_from(MODES)),
    st.tuples(st.just("delete"), st.sampled_from(PATHS)),
    st.tuples(st.just("rename"), st.sampled_from(PATHS), st.sampled_from(PATHS)),
)
prompts = st.lists(st.lists(op, max_size=5), min_size=1, max_size=4)
initial = st.dictionaries(st.sampled_from(PATHS), st.sampled_from(CONTENTS), max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(initial=initial, prompts=prompts, order=st.lists(st.integers(0, 3), min_size=1, max_size=4))
def test_rewinds_restore_each_prompt(
    initial: dict[str, bytes], prompts: list[list[tuple[object, ...]]], order: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp, "proj")
        cwd.mkdir()
        for path, content in initial.items():
            (cwd / path).parent.mkdir(parents=True, exist_ok=True)
            (cwd / path).write_bytes(content)
        s = Session(Path(tmp, "store"), cwd)
        trees = {}
        for i, ops in enumerate(prompts):
            trees[f"p{i}"] = tree(cwd)
            s.checkpoint(f"p{i}")
            for o in ops:
                if o[0] == "write":
                    _, path, content, mode = cast("tuple[str, str, bytes, int]", o)
                    s.write(path, content, mode)
                elif o[0] == "delete" and (cwd / str(o[1])).exists():
                    s.delete(str(o[1]))
                elif o[0] == "rename" and o[1] != o[2] and (cwd / str(o[1])).exists():
                    s.rename(str(o[1]), str(o[2]))
        for n in order:
            message_id = f"p{n % len(prompts)}"
            before = tree(cwd)
            plan, result = s.rewind(message_id)
            assert result.as_json()["files"] == plan.as_json()["files"]
            assert {f.status for f in result.files} <= {"ok"}, result.as_json()
            assert tree(cwd) == trees[message_id]
            _, back = s.rewind(result.undo_id)
            assert {f.status for f in back.files} <= {"ok"}, back.as_json()
            assert tree(cwd) == before
            s.rewind(message_id)
        fresh = s.fresh()
        for message_id in s.history.checkpoints:
            assert fresh.plan(message_id).as_json() == s.history.plan(message_id).as_json()
        assert leftovers(cwd) == []
