"""The real Codex CLI when the model's stream is cut before ``response.completed``.

Codex has already run the call the cut response asked for and recorded the items that were
done (reasoning, a partial answer, the call and its output); the turn fails. Resuming the
thread, Codex sends those items back: sessiond's context at the resumed prompt must be the same.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sessiond.store.codex import CodexSession

from .harness import Codex, Run, codex_binary, from_context, from_request, trimmed_from, user_line
from .standin import Reply, StandIn, function_call, message, reasoning


@pytest.fixture(scope="module")
def cut(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Codex, Run, Run]]:
    binary = codex_binary()
    with StandIn() as api:
        codex = Codex(tmp_path_factory.mktemp("codex-cut"), api, binary)
        api.push(
            Reply(
                [
                    reasoning("Write it", "enc-cut"),
                    message("Writing the file now."),
                    function_call("exec_command", {"cmd": "echo cut > cut.txt"}, "call_cut"),
                ],
                cut=True,
            )
        )
        failed = codex.exec("write cut.txt", fails=True)
        api.push(Reply([message("Resumed after the cut.")]))
        resumed = codex.resume(failed.thread_id, "are you there?")
        assert api.unscripted == 0 and not api.other_requests, api.other_requests
        yield codex, failed, resumed


def test_a_cut_stream_resumes_with_what_sessiond_shows(cut: tuple[Codex, Run, Run]) -> None:
    codex, failed, resumed = cut
    assert (codex.work / "cut.txt").read_text() == "cut\n", "Codex ran the call before the cut"
    rollout = codex.rollout(failed.thread_id)
    session = CodexSession.open(rollout)
    messages = session.context_for(session.branch(user_line(rollout, "are you there?"))).messages
    sent = resumed.requests[0]["input"]
    assert trimmed_from(sent[0]["content"][0]["text"], messages[0]["content"][0]["text"])
    assert from_context(messages[1:]) == from_request(sent[1:])
    assert ("call", "call_cut", "exec_command", {"cmd": "echo cut > cut.txt"}) in from_context(messages)
