"""The real Codex CLI compacting a thread, and resuming it after the compaction.

With ``model_auto_compact_token_limit`` below what the stand-in reports, Codex compacts before
the next turn: it asks the model for a summary (the stand-in answers it), writes a
``compacted`` record whose ``replacement_history`` holds the re-injected context, the user's
prompts and the summary as a user message, and sends that history from then on. The first
request after the compaction and the first request of a later ``codex exec resume`` are what
Codex rebuilt; sessiond's context at the prompt each of them added must be the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from sessiond.store.codex import CodexSession
from tests.harness.daemon import Daemon, start_daemon

from .harness import Codex, Run, codex_binary, from_context, from_request, trimmed_from, user_line
from .standin import Reply, StandIn, Usage, message

pytestmark = pytest.mark.anyio

SUMMARY = "SUMMARY: the user asked for a first thing and got it."


@dataclass
class Compacted:
    codex: Codex
    daemon: Daemon
    api: StandIn
    runs: dict[str, Run]


def play(codex: Codex, api: StandIn) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    api.push(Reply([message("first answer")], Usage(5000, 0, 50)))
    runs["first"] = codex.exec("first prompt")
    sid = runs["first"].thread_id
    api.push(
        Reply([message(SUMMARY)], Usage(600, 0, 20)),  # the summary request
        Reply([message("second answer")], Usage(900, 0, 10)),
    )
    runs["second"] = codex.resume(sid, "second prompt")
    api.push(Reply([message("third answer")], Usage(1000, 800, 10)))
    runs["third"] = codex.resume(sid, "third prompt")
    return runs


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compacted]:
    binary = codex_binary()
    tmp = tmp_path_factory.mktemp("codex-compact")
    with StandIn() as api:
        codex = Codex(tmp, api, binary, "model_auto_compact_token_limit = 3000\n")
        runs = play(codex, api)
        daemon = start_daemon(tmp)
        try:
            yield Compacted(codex, daemon, api, runs)
        finally:
            assert daemon.stop() == 0, daemon.log_text()
        assert api.unscripted == 0, f"Codex made {api.unscripted} requests the script did not expect"
        assert not api.other_requests, api.other_requests


def test_codex_asked_for_a_summary_and_recorded_the_compaction(compacted: Compacted) -> None:
    summary_request = compacted.runs["second"].requests[0]["input"]
    assert summary_request[-1]["role"] == "user" and "COMPACTION" in summary_request[-1]["content"][0]["text"]
    session = CodexSession.open(compacted.codex.rollout(compacted.runs["first"].thread_id))
    assert session.thread.diagnostics.compactions == 1
    assert any(e.get("customType") == "codex.compacted" for e in session.entries())


@pytest.mark.parametrize(
    ("turn", "index", "prompt"), [("second", 1, "second prompt"), ("third", 0, "third prompt")]
)
async def test_after_a_compaction_sessiond_context_is_what_codex_sends(
    compacted: Compacted, turn: str, index: int, prompt: str
) -> None:
    sid = compacted.runs["first"].thread_id
    sent = compacted.runs[turn].requests[index]["input"]
    leaf = user_line(compacted.codex.rollout(sid), prompt)
    client = await compacted.daemon.client()
    try:
        context = await client.request("context/get", {"sessionId": sid, "leafId": leaf})
    finally:
        await client.close()
    messages = [m["message"] for m in context["messages"]]
    assert messages[0]["customType"] == "codex.instructions"
    assert trimmed_from(sent[0]["content"][0]["text"], messages[0]["content"][0]["text"])
    assert from_context(messages[1:]) == from_request(sent[1:])
    summaries = [r for r in from_request(sent) if r[0] == "user" and SUMMARY in r[1][0]]
    assert len(summaries) == 1, "the summary is in the history as a user message"
