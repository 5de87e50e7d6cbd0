"""The pure compaction policy: overflow detection, recovery windows, the threshold."""

from __future__ import annotations

from typing import Any

import pytest

from sessiond.compaction import policy
from sessiond.compaction.micro import PLACEHOLDER, plan_microcompact, plan_snip
from sessiond.compaction.overflow import is_context_overflow, is_recoverable_length
from sessiond.errors import InvalidArgumentError
from sessiond.model.projection import project
from sessiond.model.tokens import PI, estimate_projected_context_tokens
from tests.builders import Ledger, assistant, tool_result, usage, user


@pytest.mark.parametrize(
    "error",
    [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "This model's maximum context length is 128000 tokens. However, you requested 130000 tokens",
        "Your input exceeds the context window of this model",
        "input token count 1050000 exceeds the maximum number of tokens allowed",
        "413 Request Entity Too Large",
        "ThrottlingException: Too many tokens, please wait",
        "model_context_window_exceeded",
    ],
)
def test_overflow_messages_are_recognised(error: str) -> None:
    assert is_context_overflow(assistant(stop="error", error=error))


@pytest.mark.parametrize(
    "error",
    [
        "429 rate limit: too many tokens per minute",
        "Too many requests, slow down",
        "Throttling error: too many tokens",
        "Service unavailable: prompt is too long",
        "Connection reset by peer",
    ],
)
def test_rate_limits_and_other_errors_are_not_overflows(error: str) -> None:
    assert not is_context_overflow(assistant(stop="error", error=error))


def test_silent_overflow_and_length_rules() -> None:
    big = assistant("ok")
    big["usage"] = {**usage(0), "input": 150_000, "cacheRead": 60_000}
    assert is_context_overflow(big, 200_000) and not is_context_overflow(big)
    cut = assistant(stop="length")
    cut["usage"] = {**usage(0), "input": 199_000, "output": 0}
    assert is_context_overflow(cut, 200_000)
    partial = assistant(stop="length")
    partial["usage"] = {**usage(0), "output": 900}
    assert is_recoverable_length(partial, 4096) and not is_recoverable_length(partial, 900)
    assert not is_recoverable_length(partial, 0)


def _decide(s: Ledger, entry_id: str, **kw: Any) -> policy.Decision:
    branch = s.tree().branch()
    projection = project(branch)
    entries = {e["id"]: e for e in s.entries}
    ids = [e["id"] for e in branch]
    tail = [entries[i] for i in ids[ids.index(entry_id) + 1 :]]
    args: dict[str, Any] = {
        "enabled": True,
        "context_window": 10_000,
        "reserve_tokens": 2_000,
        "max_output_tokens": None,
        "recovery_attempted": False,
        **kw,
    }
    return policy.check(
        entry=entries[entry_id],
        tail=tail,
        projection=projection,
        estimate=estimate_projected_context_tokens(projection, branch, PI),
        estimator=PI,
        **args,
    )


def test_threshold_uses_the_provider_usage() -> None:
    s = Ledger()
    s.user("hi")
    low = s.message(assistant("fine", total=7_000))
    assert _decide(s, low).action == "none"
    high = s.message(assistant("big", total=8_500))
    decision = _decide(s, high)
    assert decision.action == "threshold" and decision.tokens == 8_500
    assert _decide(s, high, enabled=False).action == "none"
    assert _decide(s, high, context_window=None).action == "none"


def test_overflow_omits_the_attempt_and_its_tool_results_then_gives_up() -> None:
    s = Ledger()
    s.user("hi")
    failed = assistant(stop="error", error="prompt is too long", calls=[("read", {"path": "a"})])
    failed_id = s.message(failed)
    result_id = s.message(tool_result("x", "call_0"))
    decision = _decide(s, failed_id)
    assert decision.action == "overflow" and decision.will_retry
    assert decision.omit == [failed_id, result_id]
    again = _decide(s, failed_id, recovery_attempted=True)
    assert again.action == "recovery_failed" and again.error == policy.OVERFLOW_FAILED


def test_silent_overflow_compacts_without_retry() -> None:
    s = Ledger()
    s.user("hi")
    answer = assistant("ok")
    answer["usage"] = {**usage(0), "input": 12_000}
    decision = _decide(s, s.message(answer))
    assert decision.action == "overflow" and not decision.will_retry and decision.omit == []


def test_answers_older_than_the_checkpoint_are_ignored() -> None:
    s = Ledger()
    s.user("hi")
    s.message(assistant("a", total=100))
    s.compaction("summary", "e1")
    stale = assistant("old", total=9_999)
    stale["timestamp"] = 1  # long before the checkpoint
    assert _decide(s, s.message(stale)).action == "none"


def test_recovery_resets() -> None:
    assert policy.resets_recovery(user("x"))
    assert policy.resets_recovery(assistant("done"))
    assert not policy.resets_recovery(assistant(stop="error", error="e"))
    assert not policy.resets_recovery(assistant(stop="length"))
    assert not policy.resets_recovery(tool_result("r"))


def _tools(n: int) -> Ledger:
    s = Ledger()
    s.user("go")
    for i in range(n):
        call = assistant(calls=[("read", {"path": f"f{i}"})])
        call["content"][0]["id"] = f"t{i}"
        s.message(call)
        s.message(tool_result("data " * 100, f"t{i}"))
    s.message(assistant("done"))
    return s


def test_microcompact_plan_keeps_the_newest_and_is_deterministic() -> None:
    s = _tools(5)
    projection = project(s.tree().branch())
    plan = plan_microcompact(projection, 2, ["read"])
    assert len(plan) == 3 and all(c.tokens_saved > 0 for c in plan)
    assert plan == plan_microcompact(projection, 2, ["read"])
    assert plan_microcompact(projection, 0, ["read"])[-1].entry_id != plan[-1].entry_id  # floor of 1
    assert plan_microcompact(projection, 2, ["bash"]) == []
    for c in plan:
        s.context_edit(c.entry_id, {"content": [{"type": "text", "text": PLACEHOLDER}]})
    assert plan_microcompact(project(s.tree().branch()), 2, ["read"]) == []


def test_snip_refuses_to_split_pairs() -> None:
    s = _tools(2)
    branch = s.tree().branch()
    ids = [e["id"] for e in branch]
    projection = project(branch)
    with pytest.raises(InvalidArgumentError) as exc:
        plan_snip(branch, projection, ids[1], ids[1])
    assert exc.value.field == "toEntryId"
    with pytest.raises(InvalidArgumentError) as exc:
        plan_snip(branch, projection, ids[2], ids[3])
    assert exc.value.field == "fromEntryId"
    assert plan_snip(branch, projection, ids[1], ids[4]) == ids[1:5]


def test_a_length_stop_below_the_output_limit_is_recovered_once() -> None:
    s = Ledger()
    s.user("hi")
    cut = assistant("partial", stop="length")
    cut["usage"] = {**usage(0), "output": 900}
    cut_id = s.message(cut)
    assert _decide(s, cut_id).action == "none"  # the output limit is not known
    decision = _decide(s, cut_id, max_output_tokens=4096)
    assert decision.action == "overflow" and decision.will_retry and decision.omit == [cut_id]
    again = _decide(s, cut_id, max_output_tokens=4096, recovery_attempted=True)
    assert again.action == "recovery_failed" and again.error == policy.LENGTH_FAILED
