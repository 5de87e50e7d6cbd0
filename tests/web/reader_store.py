"""The store the reader's end-to-end test looks at: real transcripts and a hostile one.

* the Claude Code fixture ``spotter-2.1.39`` (2.7 MB: Bash, Edit, Read, Write calls) and the
  Codex fixture ``localpush-0.104`` (exec_command, apply_patch), copied into the daemon's
  Claude and Codex roots;
* a Claude Code transcript written here whose every text is hostile: ``<script>``, ``onerror=``,
  ``javascript:`` links, raw HTML in Markdown, in tool output and in an edit — next to what the
  reader must render: Markdown with a code block, thinking, a terminal with ANSI colours, an
  edit as a diff, a read as numbered code, an error, an image, injected context;
* a Claude Code transcript that grows while the test watches (follow mode).
"""

from __future__ import annotations

import base64
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.web.stores import ClaudeWriter

FIXTURES = Path(__file__).parents[1] / "fixtures"
CLAUDE_FIXTURE = FIXTURES / "claude-code" / "spotter-2.1.39"
CLAUDE_FIXTURE_ID = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
CODEX_FIXTURE_ID = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
CODEX_FIXTURE = (
    FIXTURES / "codex" / "localpush-0.104" / f"rollout-2026-02-23T12-54-34-{CODEX_FIXTURE_ID}.jsonl"
)

# A 1x1 PNG: what an image block holds (base64)
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5dd8c7e0000000049454e44ae426082"
    )
).decode()

XSS_MARKDOWN = """Here is the fix.

<script>window.__xss = "script tag"</script>
<img src="x" onerror="window.__xss = 'onerror'">
<a href="javascript:window.__xss='link'">a javascript: link in HTML</a>
[a javascript: link in Markdown](javascript:window.__xss='markdown-link')
<iframe src="javascript:window.__xss='iframe'"></iframe>
<div onmouseover="window.__xss='hover'" style="position:fixed;inset:0">cover</div>

```python
def greet(name: str) -> str:
    return f"hello {name}"
```

See [the docs](https://example.com/docs), [a javascript: link](javascript:window.__xss='markdown-link')
and ![an image from elsewhere](https://example.com/track.png).
"""

ANSI_OUTPUT = (
    "\x1b[32mPASSED\x1b[0m tests/test_app.py::test_greet\n"
    "\x1b[1;31mFAILED\x1b[0m tests/test_app.py::test_xss <script>window.__xss='terminal'</script>\n"
    + "".join(f"line {i}\n" for i in range(60))
)


@dataclass
class ReaderStore:
    hostile: ClaudeWriter
    live: ClaudeWriter
    hostile_ids: dict[str, str]


class RichClaudeWriter(ClaudeWriter):
    """A ClaudeWriter that also writes thinking, several tool kinds, errors and images."""

    def call(self, name: str, args: dict[str, Any], output: Any, *, error: bool = False) -> list[str]:
        call_id = f"toolu_{next(self._ids):020d}"
        records = [
            self._assistant(
                [{"type": "tool_use", "id": call_id, "name": name, "input": args}], 400, "tool_use"
            ),
            self._record(
                "user",
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call_id, "content": output, "is_error": error}
                    ],
                },
            ),
        ]
        return self._write(records)

    def raw(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        [uid] = self._write([self._record(kind, message, **extra)])
        return uid


def hostile_transcript(projects: Path, cwd: str) -> tuple[ClaudeWriter, dict[str, str]]:
    w = RichClaudeWriter(projects, cwd)
    ids: dict[str, str] = {}
    ids["reminder"] = w.raw(
        "user",
        {
            "role": "user",
            "content": "<system-reminder>injected by the agent "
            "<script>window.__xss='reminder'</script></system-reminder>",
        },
        isMeta=True,
    )
    ids["prompt"] = w.raw(
        "user",
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Fix the greeting <img src=x onerror=\"window.__xss='prompt'\">"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
            ],
        },
    )
    [ids["answer"]] = w._write(
        [
            w._assistant(
                [
                    {
                        "type": "thinking",
                        "thinking": "The user wants a greeting. <script>window.__xss='thinking'</script>",
                        "signature": "sig",
                    },
                    {"type": "text", "text": XSS_MARKDOWN},
                ],
                500,
                "end_turn",
            )
        ]
    )
    ids["bash"] = w.call("Bash", {"command": "pytest -q", "description": "Run the tests"}, ANSI_OUTPUT)[0]
    ids["edit"] = w.call(
        "Edit",
        {
            "file_path": "/src/app.py",
            "old_string": "def main():\n    pass\n",
            "new_string": "def main(name):\n"
            "    print(f'hello {name}')  # <script>window.__xss='edit'</script>\n",
        },
        "The file /src/app.py has been updated.",
    )[0]
    ids["read"] = w.call(
        "Read",
        {"file_path": "/src/app.py"},
        "     1→def main(name):\n     2→    print(f'hello {name}')\n     3→\n",
    )[0]
    ids["error"] = w.call(
        "Bash", {"command": "cat missing.txt"}, "cat: missing.txt: No such file or directory", error=True
    )[0]
    last = w._assistant([{"type": "text", "text": "All done. **Bold** and `code`."}], 300, "end_turn")
    [ids["last"]] = w._write([last])
    return w, ids


def build_reader_store(tmp: Path) -> ReaderStore:
    projects = tmp / "claude" / "projects"
    fixture_dir = projects / "-fixture-spotter"
    fixture_dir.mkdir(parents=True)
    shutil.copy(CLAUDE_FIXTURE / f"{CLAUDE_FIXTURE_ID}.jsonl", fixture_dir)
    shutil.copytree(CLAUDE_FIXTURE / CLAUDE_FIXTURE_ID, fixture_dir / CLAUDE_FIXTURE_ID)
    codex_dir = tmp / "codex" / "sessions" / "2026" / "02" / "23"
    codex_dir.mkdir(parents=True)
    shutil.copy(CODEX_FIXTURE, codex_dir)
    hostile, ids = hostile_transcript(projects, "/work/hostile")
    live = ClaudeWriter(projects, "/work/live")
    for i in range(30):
        live.turn(f"step {i}: look at the parser", f"Looked at step {i}.", grow=800)
    return ReaderStore(hostile, live, ids)
