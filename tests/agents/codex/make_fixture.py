"""Writes ``tests/fixtures/codex/real-0.169/``: a Codex home produced by the real Codex CLI.

Codex (``scripts/setup-codex``) runs offline against the stand-in: a first turn with reasoning
and two parallel commands, a resumed turn with an ``apply_patch`` edit, then ``codex exec
fork`` (a paginated fork: no copy of the parent's history) and a resumed turn of the fork. The
rollouts are copied byte for byte (the fork points into its parent by byte offset). Run after
a Codex upgrade, then review the diff and regenerate the goldens::

    .venv/bin/python -m tests.agents.codex.make_fixture
    .venv/bin/python -m tests.formats.make_agent_goldens
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .harness import ROOT, Codex, codex_binary, version
from .standin import Reply, StandIn, Usage, custom_tool_call, function_call, message, reasoning

WORK = Path("/tmp/sessiond-codex-fixture")
TARGET = ROOT / "tests" / "fixtures" / "codex" / "real-0.169"


def main() -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    with StandIn() as api:
        codex = Codex(WORK, api, codex_binary())
        api.push(
            Reply(
                [
                    reasoning("Look before writing", "enc-look"),
                    function_call("exec_command", {"cmd": "echo one > a.txt"}, "call_a"),
                    function_call("exec_command", {"cmd": "ls missing"}, "call_b"),
                ],
                Usage(1200, 0, 40, 10),
            ),
            Reply([message("One wrote a.txt, one failed.")], Usage(2000, 1100, 30)),
        )
        first = codex.exec("make a file")
        patch = "*** Begin Patch\n*** Add File: b.txt\n+two\n*** End Patch\n"
        api.push(
            Reply([reasoning("Patch it", "enc-patch"), custom_tool_call("apply_patch", patch, "call_c")]),
            Reply([message("Patched.")], Usage(3000, 2500, 40, 5)),
        )
        codex.resume(first.thread_id, "now add b.txt")
        api.push(Reply([message("Forked answer.")], Usage(4000, 100, 10)))
        fork = codex.fork(first.thread_id, "in the fork")
        api.push(Reply([message("The fork continues.")], Usage(5000, 4000, 15)))
        codex.resume(fork.thread_id, "continue the fork")
    shutil.rmtree(TARGET, ignore_errors=True)
    for rollout in (codex.rollout(first.thread_id), codex.rollout(fork.thread_id)):
        dest = TARGET / rollout.relative_to(codex.home)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rollout, dest)
        print(f"wrote {dest.relative_to(ROOT)} (Codex {version()})")


if __name__ == "__main__":
    main()
