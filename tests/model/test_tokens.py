"""Token estimates: Pi's chars/4 rules, usage anchoring, and the tiktoken estimator."""

from __future__ import annotations

import math
import random

import pytest

from sessiond.model.projection import project
from sessiond.model.tokens import (
    PI,
    TiktokenEstimator,
    UsageTracker,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    get_estimator,
    last_assistant_usage,
    should_compact,
)
from tests.builders import Ledger, assistant, usage


def test_pi_estimate_per_role() -> None:
    assert PI.message_tokens({"role": "user", "content": "abcd" * 10}) == 10
    assert PI.message_tokens({"role": "user", "content": "😀"}) == 1  # 2 UTF-16 units -> ceil(2/4)
    img = {"type": "image", "data": "x", "mimeType": "image/png"}
    assert PI.message_tokens({"role": "user", "content": [img, {"type": "text", "text": "abcd"}]}) == 1201
    call = {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "a.ts"}}
    # "read" (4) + '{"path":"a.ts"}' (15) = 19 -> 5
    assert PI.message_tokens({"role": "assistant", "content": [call]}) == 5
    thinking = {"type": "thinking", "thinking": "x" * 8}
    assert PI.message_tokens({"role": "assistant", "content": [thinking]}) == 2
    assert PI.message_tokens({"role": "bashExecution", "command": "ls", "output": "abcdef"}) == 2
    assert PI.message_tokens({"role": "compactionSummary", "summary": "x" * 9}) == 3
    assert PI.message_tokens({"role": "unknown"}) == 0
    system = {
        "role": "system",
        "content": "abcd",
        "sections": {"a": "abcd", "b": None},
        "toolsAdded": [{"name": "x"}],
    }
    # 4 + 4 + len('[{"name":"x"}]') = 14 -> 22 -> 6
    assert PI.message_tokens(system) == 6


def test_malformed_text_gives_nan_like_pi() -> None:
    assert math.isnan(PI.message_tokens({"role": "assistant", "content": [{"type": "text"}]}))


def test_calculate_context_tokens_prefers_total() -> None:
    assert calculate_context_tokens(usage(total=500, inp=1, out=2)) == 500
    assert (
        calculate_context_tokens({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 0})
        == 10
    )


def test_last_assistant_usage_skips_aborted_error_and_zero() -> None:
    s = Ledger()
    s.user("x")
    s.assistant("ok", total=100)
    s.assistant("aborted", total=999, stop="aborted")
    s.assistant("error", total=999, stop="error")
    s.assistant("zero", total=0)
    assert last_assistant_usage(s.entries)["totalTokens"] == 100


def test_estimate_anchors_on_last_usage() -> None:
    msgs = [
        {"role": "user", "content": "x" * 400},
        assistant("y", total=1000),
        {"role": "user", "content": "z" * 40},
    ]
    est = estimate_context_tokens(msgs)
    assert (est.tokens, est.usage_tokens, est.trailing_tokens, est.last_usage_index) == (1010, 1000, 10, 1)
    pure = estimate_context_tokens([msgs[0], msgs[2]])
    assert (pure.tokens, pure.last_usage_index) == (110, None)


def test_projected_estimate_distrusts_usage_before_a_compaction_or_edit() -> None:
    s = Ledger()
    s.user("q" * 400)
    s.assistant("a", total=50_000)
    u2 = s.user("r" * 40)
    s.assistant("b", total=60_000)
    tree = s.tree()
    branch = tree.branch()
    assert estimate_projected_context_tokens(project(branch), branch).tokens == 60_000
    s.compaction("s" * 40, u2)
    tree = s.tree()
    branch = tree.branch()
    est = estimate_projected_context_tokens(project(branch), branch)
    assert est.last_usage_index is None
    assert est.tokens == 10 + 10 + 1  # summary + "r"*40 + "b"
    s.assistant("fresh", total=7_000)
    branch = s.tree().branch()
    assert estimate_projected_context_tokens(project(branch), branch).tokens == 7_000


def test_should_compact() -> None:
    assert should_compact(95_000, 100_000, True, 10_000)
    assert not should_compact(89_000, 100_000, True, 10_000)
    assert not should_compact(95_000, 100_000, False, 10_000)


def test_tiktoken_estimator_counts_cl100k_tokens_offline() -> None:
    est = get_estimator("tiktoken")
    assert isinstance(est, TiktokenEstimator)
    assert est.message_tokens({"role": "user", "content": "hello world"}) == 2
    # special-token text is ordinary text, never an error
    assert est.message_tokens({"role": "user", "content": "<|endoftext|>"}) > 1
    assert (
        est.message_tokens({"role": "user", "content": [{"type": "image", "data": "", "mimeType": "x"}]})
        == 1200
    )
    anchored = estimate_context_tokens(
        [assistant("x", total=100), {"role": "user", "content": "hello world"}], est
    )
    assert anchored.tokens == 102


def test_unknown_estimator_is_a_clear_error() -> None:
    try:
        get_estimator("words")
    except ValueError as exc:
        assert "pi" in str(exc) and "tiktoken" in str(exc)
    else:
        raise AssertionError("expected ValueError")


@pytest.mark.parametrize("read_every", [1, 3])
def test_usage_tracker_matches_a_full_computation_at_every_step(read_every: int) -> None:
    """Read after every append, or fed appends unread in between (its estimates are made
    when read, and only for the messages after the latest anchor)."""
    for seed in range(20):
        rng = random.Random(seed)
        s = Ledger()
        tracker = UsageTracker()
        for step in range(120):
            r = rng.random()
            if r < 0.3:
                s.user("u" * rng.randint(0, 400))
            elif r < 0.55:
                s.assistant(
                    "a" * rng.randint(0, 300),
                    total=rng.choice([0, rng.randint(1, 90_000)]),
                    stop=rng.choice(["stop", "stop", "aborted", "error", "toolUse"]),
                )
            elif r < 0.62:
                s.tool_result("r" * rng.randint(0, 3000))
            elif r < 0.66:
                s.message({"role": "system", "content": "sys" * rng.randint(1, 50), "timestamp": step})
            elif r < 0.7:
                s.custom_message("note", "n" * rng.randint(1, 100))
            elif r < 0.73:
                s.compaction("sum" * rng.randint(1, 30), rng.choice([e["id"] for e in s.entries]))
            elif r < 0.76:
                targets = [e["id"] for e in s.entries if e.get("message", {}).get("role") == "user"]
                if targets:
                    s.context_edit(rng.choice(targets), rng.choice([None, {"content": "edited"}]))
            elif r < 0.8:
                s.custom("state")
            else:
                s.message(
                    {
                        "role": "bashExecution",
                        "command": "ls",
                        "output": "o" * rng.randint(0, 200),
                        "exitCode": 0,
                        "cancelled": False,
                        "truncated": False,
                        "timestamp": step,
                    }
                )
            branch = s.tree().branch()
            projection = project(branch)
            expected = estimate_projected_context_tokens(projection, branch)
            if step and rng.randrange(read_every):
                grown = len(projection.messages) >= tracker.messages and len(branch) >= tracker.branch
                new = projection.messages[tracker.messages :] if grown else []
                if not grown or not tracker.append(new, branch[tracker.branch :]):
                    tracker.reset(projection, branch)
                continue
            got = tracker.extend(projection, branch) if step else tracker.reset(projection, branch)
            assert got == expected, (seed, step)
