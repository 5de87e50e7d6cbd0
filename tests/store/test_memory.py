"""The memory budget for parsed session content (store/memory.py) and what sessions do under it.

The budget's rules are checked on holders directly; then on real sessions: a Pi session that
is appended to and never read holds no materialised context (usage is still exact), a session
whose content is dropped rebuilds the same context from its file, and a session dropped
without being closed stops counting.
"""

from __future__ import annotations

import gc
import shutil
import time
import weakref
from pathlib import Path
from typing import Any

from sessiond.model.tokens import PI, estimate_projected_context_tokens
from sessiond.store.claude import ClaudeSession
from sessiond.store.memory import MemoryBudget
from sessiond.store.session import Session
from tests.builders import assistant, user
from tests.conftest import CLAUDE_FIXTURES

COMPACTED = CLAUDE_FIXTURES / "spotter-2.1.39" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


class Held:
    def __init__(self, budget: MemoryBudget, name: str) -> None:
        self.dropped = 0
        self.holder = budget.holder(name, self.drop)

    def drop(self) -> None:
        self.dropped += 1


def test_over_the_limit_the_least_recently_used_drop_first() -> None:
    budget = MemoryBudget(limit=100, idle=3600)
    a, b, c = Held(budget, "a"), Held(budget, "b"), Held(budget, "c")
    a.holder.hold(40)
    b.holder.hold(40)
    a.holder.touch()  # b is now the least recently used
    c.holder.hold(40)  # 120 > 100: b goes, a and c stay
    assert (a.dropped, b.dropped, c.dropped) == (0, 1, 0)
    assert budget.total == 80 and b.holder.bytes == 0
    c.holder.hold(200)  # more than the whole budget: everyone else goes, c keeps its own
    assert a.dropped == 1 and c.dropped == 0 and budget.total == 200


def test_idle_holders_drop_what_they_hold() -> None:
    budget = MemoryBudget(limit=10_000, idle=0.05)
    a, b = Held(budget, "a"), Held(budget, "b")
    a.holder.hold(10)
    b.holder.hold(10)
    time.sleep(0.1)
    b.holder.touch()
    assert budget.sweep() == 1
    assert (a.dropped, b.dropped) == (1, 0) and budget.total == 10


def test_closed_and_collected_holders_stop_counting() -> None:
    budget = MemoryBudget(limit=10_000, idle=3600)
    a, b = Held(budget, "a"), Held(budget, "b")
    a.holder.hold(10)
    b.holder.hold(20)
    a.holder.close()
    assert budget.total == 20
    del b
    gc.collect()
    Held(budget, "c").holder.hold(1)  # the next report buries the collected holder
    assert budget.total == 1 and [name for name, _ in budget.holders()] == ["c"]


def test_a_closed_session_is_freed_without_the_collector(tmp_path: Path) -> None:
    """A closed session must not wait for the collector's next full collection (rare in a daemon
    holding large sessions), held in a cycle through its memory holders."""
    gc.collect()
    gc.disable()
    try:
        s = Session.create(tmp_path / "--w--", "/w")
        grow(s, 20)
        s.context()
        s.tree_view()
        path = s.path
        s.close()
        session, index = weakref.ref(s), weakref.ref(s.index)
        del s
        assert session() is None and index() is None
        opened = Session.open(path)
        opened.context()
        opened.close()
        again = weakref.ref(opened)
        del opened
        assert again() is None
    finally:
        gc.enable()


def grow(session: Session, n: int) -> None:
    for i in range(n):
        session.append_message(user(f"question {i} " + "word " * 50, i))
        session.append_message(assistant(f"answer {i} " + "word " * 80, total=5000 + 100 * i))


def test_a_pi_session_appended_to_keeps_no_context_and_exact_usage(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "--w--", "/w")
    grow(s, 3)
    s.usage_view(PI)  # the trackers start from one projection
    s._projection = None  # (as the budget would drop it)
    grow(s, 200)
    view = s.usage_view(PI)
    assert s._projection is None, "usage after appends needs no materialised context"
    cold = Session.open(s.path)
    want = estimate_projected_context_tokens(cold.context(), cold.current_branch(), PI)
    assert view.estimate == want and view.messages == len(cold.context().messages)
    assert view.model == cold.context().settings.model
    cold.close()
    s.close()


def test_a_pi_sessions_body_cache_keeps_only_recent_bodies(tmp_path: Path) -> None:
    budget = MemoryBudget(idle=0.2)
    s = Session.create(tmp_path / "--w--", "/w")
    index = s._index
    index._cache._holder = budget.holder("bodies", index._cache.clear)  # (a short idle time)
    grow(s, 20)
    full = index.cache_bytes_used
    assert full > 0
    time.sleep(0.3)
    grow(s, 1)  # appending evicts bodies older than the idle time
    assert 0 < index.cache_bytes_used < full / 5
    s.close()


def claude_state(s: ClaudeSession) -> dict[str, Any]:
    ctx = s.context()
    return {
        "messages": ctx.messages,
        "sources": [p.source for p in ctx.entries],
        "usage": s.context_usage(PI).as_json(),
        "view": s.usage_view(PI).estimate.as_json(),
    }


def test_a_claude_session_rebuilds_the_same_context_after_dropping_it(tmp_path: Path) -> None:
    path = tmp_path / COMPACTED.name
    shutil.copyfile(COMPACTED, path)
    budget = MemoryBudget(limit=1 << 30, idle=3600)
    s = ClaudeSession.open(path, budget=budget)
    before = claude_state(s)
    assert budget.total > 0  # the context's lines count against the budget
    s._holder.drop()  # (what the budget does to an idle session)
    assert s.live.conversation is None and s._context is None
    assert claude_state(s) == before
    s.close()
    assert budget.total == 0  # a closed session no longer counts


def test_over_budget_a_claude_session_drops_its_context_and_still_follows(tmp_path: Path) -> None:
    path = tmp_path / COMPACTED.name
    lines = COMPACTED.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-40]))
    budget = MemoryBudget(limit=1, idle=3600)  # nothing fits: every other holder is dropped
    s = ClaudeSession.open(path, budget=budget)
    other = ClaudeSession.open(path, budget=budget)
    s.usage_view(PI)
    other.usage_view(PI)  # this one reports last: the first session's context goes
    assert s.live.conversation is None and other.live.conversation is not None
    with open(path, "ab") as f:
        for line in lines[-40:]:
            f.write(line)
            f.flush()
            assert s.ingest().reload_required is None
    cold = ClaudeSession.open(path)
    assert claude_state(s) == claude_state(cold)
    for session in (s, other, cold):
        session.close()


def test_appends_alone_do_not_keep_a_pi_sessions_context_in_use(tmp_path: Path) -> None:
    """The soak's failure: a watched session grown by appends kept its context materialised
    because every append that extended the projection marked it used."""
    budget = MemoryBudget(limit=1 << 30, idle=0.2)
    s = Session.create(tmp_path / "--w--", "/w")
    s._context_holder = budget.holder("context", s._drop_projection)  # (a short idle time)
    grow(s, 3)
    s.context()
    assert s._projection is not None and budget.total > 0
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:  # appended to (and usage asked) all the time, never read
        grow(s, 1)
        s.usage_view(PI)
        time.sleep(0.02)
    assert budget.sweep() == 1
    assert s._projection is None
    cold = Session.open(s.path)
    assert s.context().messages == cold.context().messages
    cold.close()
    s.close()


def test_a_resize_counts_without_marking_use() -> None:
    budget = MemoryBudget(limit=100, idle=3600)
    a, b = Held(budget, "a"), Held(budget, "b")
    a.holder.hold(10)
    b.holder.hold(10)
    a.holder.resize(50)  # a grew but was not used: still the least recently used
    assert budget.total == 60
    b.holder.hold(80)  # 130 > 100: a goes
    assert (a.dropped, b.dropped) == (1, 0) and budget.total == 80


def test_the_allocator_gives_freed_memory_back() -> None:
    """``malloc_trim`` behind one function: freed chunks go back to the system (RSS drops)."""
    from sessiond.store import allocator  # noqa: PLC0415

    if not allocator.available():
        assert allocator.release_free_memory() is False  # a no-op where glibc is absent
        return

    def rss() -> int:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * 4096

    allocator.release_free_memory()
    blocks = [bytes(2000) + bytes([i % 256]) for i in range(40_000)]  # ~80 MB of malloc'd chunks
    keep = blocks[-1:]  # the top of the heap stays in use: only a trim gives the rest back
    del blocks
    before, calls = rss(), allocator.TRIMMER.calls
    assert allocator.release_free_memory() is True
    assert allocator.TRIMMER.calls == calls + 1
    assert rss() < before - 40 * 1024 * 1024, (before, rss())
    del keep
