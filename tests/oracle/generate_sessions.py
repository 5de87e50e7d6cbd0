#!/usr/bin/env python3
"""Deterministic generator of Pi session files (JSONL, format version 3).

The files are meant for differential testing of sessiond against Pi's own code
(see tests/oracle/harness.mjs and tests/oracle/make_goldens.py). Every line is
written exactly as Pi's ``JSON.stringify`` would write it (compact separators, no
ASCII escaping, JS key insertion order of Pi 1.6.0, no integral floats).

Usage::

    python tests/oracle/generate_sessions.py --out DIR --count N --seed S

File ``i`` (``DIR/gen-%04d.jsonl``) is ``generate(random.Random(S + i), i)``.
Only the standard library is used; the output depends only on the seed.

Each file draws a "profile" (a set of enabled features) from its rng: realistic
agent turns with tools, branches and branch summaries, labels, session names,
model/thinking changes, usage/custom/custom_message entries, compactions (every
kind of ``firstKeptEntryId``), context edits, the overflow-recovery pattern,
system messages, and in a minority of files robustness cases (junk, blank and
torn lines, orphans, duplicate ids, unknown types/fields, null content, invalid
timestamps). Parent cycles and self-parents are never generated (Pi hangs on
them), every entry has an ``id``, and every parseable line is a JSON object.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["dumps", "generate", "main"]


def dumps(obj: Any) -> str:
    """JSON.stringify-compatible serialisation (for the value shapes generated here)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _check_numbers(obj: Any) -> None:
    """Guard: only values whose Python and JS renderings agree may be written."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str | int):
        return
    if isinstance(obj, float):
        if obj == int(obj) or not (1e-4 <= abs(obj) < 1e15):
            raise ValueError(f"float {obj!r} would not serialise like JSON.stringify")
        return
    if isinstance(obj, dict):
        for v in obj.values():
            _check_numbers(v)
        return
    if isinstance(obj, list):
        for v in obj:
            _check_numbers(v)
        return
    raise TypeError(f"unexpected value type {type(obj).__name__}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parses(s: str) -> bool:
    """Would JSON.parse accept this line? (Python's json also accepts NaN/Infinity: reject those.)"""
    try:
        json.loads(s, parse_constant=_reject_constant)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- vocabulary

_WORDS_TEXT = (
    "the a an to of and in for with on is are was be it this that we you they function class "
    "module import export const let return async await promise error result value session entry "
    "branch leaf parent compaction summary context token tokens message assistant user tool call "
    "read write edit bash grep file path directory config test tests failing passing build "
    "compile type types interface schema json parse stringify buffer stream chunk line lines "
    "newline header version migrate index map set array string number boolean null undefined "
    "object key keys order sort filter reduce loop check fix refactor rename move delete create "
    "update handle handler event events queue retry timeout abort cancel signal process spawn "
    "exit code output input cache usage cost model provider thinking level window budget estimate "
    "cut point turn split kept history label name info custom data details system prompt section "
    "sections checkpoint projection replacement target edit edits overflow recover recovery retry "
    "now then first last next previous before after because so but also just only maybe probably "
    "should could would will can cannot need needs want let's look see find found works"
)
WORDS = tuple(_WORDS_TEXT.split())

SPECIALS = (
    "😀",
    "🚀",
    "✅",
    "🔥👍",
    "中文",
    "测试代码",
    "修复错误",
    "日本語のテキスト",
    "한국어",
    "café",
    "naïve",
    "Ærøskøbing",
    "Ünïcödé façade",
    "Ελληνικά",
    "Привет мир",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "“smart quotes”",
    "«guillemets»",
    "tab\there",
    "back\\slash",
    '"quoted"',
    "a/b/c",
    "1 < 2 && 3 > 2",
    "€ £ ¥",
    "e\u0301 (combining)",
    "\u00a0nbsp",
    "zero\u200bwidth",
)

SPECIALS_RARE = (
    "<|endoftext|>",
    "\u2028line-sep",
    "para\u2029sep",
    "\x1b[31mred\x1b[0m",
    "\x7f",
    "\r",
    "\x00nul",
)

CODE_KEYWORDS = ("const", "let", "return", "await", "export", "function", "if", "for", "import", "type")

FILES = (
    "src/a.ts",
    "src/index.ts",
    "src/core/session-manager.ts",
    "src/core/compaction/compaction.ts",
    "src/utils/json.ts",
    "packages/ai/src/stream.ts",
    "packages/tui/src/editor.ts",
    "README.md",
    "docs/compaction.md",
    "test/session.test.ts",
    "package.json",
    "tsconfig.json",
    "src/cli.ts",
    "src/modes/interactive.ts",
    "src/tools/bash.ts",
    "src/tools/edit.ts",
    "lib/parser.py",
    "docs/café.md",
    "src/中文/模块.ts",
    "assets/logo.png",
    "src/Ünïcode.ts",
    "scripts/build.sh",
    "/etc/hosts",
    "/home/dev/proj/notes with spaces.txt",
)

MODELS = (
    ("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
    ("anthropic-messages", "anthropic", "claude-opus-4-5"),
    ("openai-responses", "openai", "gpt-5.1-codex"),
    ("openai-completions", "openrouter", "qwen/qwen3-coder"),
    ("google-generative-ai", "google", "gemini-2.5-pro"),
    ("bedrock-converse-stream", "amazon-bedrock", "anthropic.claude-sonnet-4-5"),
)

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

OVERFLOW_ERRORS = (
    "prompt is too long: 213000 tokens > 200000 maximum",
    "prompt is too long: 204871 tokens > 200000 maximum",
    "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "131072 tokens. Please reduce the length of the messages.",
)

OTHER_ERRORS = (
    "Connection error.",
    "overloaded_error: Overloaded",
    "Request was aborted",
    "Service unavailable: upstream connect error",
    "429 rate limit exceeded, retry after 20s",
    "terminated",
)

TOOL_DEFS = (
    ("read", "Read the contents of a file."),
    ("write", "Write content to a file, creating it if needed."),
    ("edit", "Replace exact text in a file."),
    ("bash", "Execute a bash command in the working directory."),
    ("grep", "Search file contents for a pattern."),
    ("find", "Find files by glob pattern."),
    ("ls", "List directory contents."),
    ("web_search", "Search the web."),
)

CUSTOM_TYPES = ("todo-state", "plan-mode", "git-checkpoint", "ext:metrics", "subagent/run", "pi-notify")

UNKNOWN_TYPES = ("decision", "model_change_rejected", "configuration_update", "title", "bookmark")

BAD_TIMESTAMPS = ("not-a-date", "2026-13-45T99:99:99.999Z", "", "yesterday", "2026-02-30T25:61:00Z", "0")


# --------------------------------------------------------------------------- generator


class _Gen:
    def __init__(self, rng: random.Random, index: int) -> None:
        self.rng = rng
        self.index = index
        r = rng.random
        kitchen = r() < 0.16
        robust = r() < 0.17

        def feat(p: float) -> bool:
            return kitchen or r() < p

        self.f = {
            "branches": feat(0.4),
            "branch_summary": feat(0.35),
            "labels": feat(0.35),
            "session_info": feat(0.3),
            "meta": feat(0.55),
            "usage": feat(0.25),
            "custom": feat(0.3),
            "custom_message": feat(0.3),
            "compaction": feat(0.45),
            "context_edit": feat(0.38),
            "overflow": feat(0.1),
            "system": feat(0.5),
            "bash": feat(0.4),
            "images": feat(0.36),
            "nested": feat(0.2),
            "thinking": feat(0.5),
            "extra_fields": feat(0.12),
            "unknown_types": feat(0.05),
        }
        self.robust: dict[str, bool] = {}
        if robust:
            keys = [
                "blank",
                "whitespace",
                "junk",
                "torn",
                "leading_junk",
                "orphans",
                "dups",
                "unknown_types",
                "extra_fields",
                "null_content",
                "bad_timestamps",
                "crlf",
            ]
            chosen = {k for k in keys if r() < 0.45}
            if not chosen:
                chosen.add(rng.choice(keys))
            self.robust = {k: (k in chosen) for k in keys}
            if self.robust["unknown_types"]:
                self.f["unknown_types"] = True
            if self.robust["extra_fields"]:
                self.f["extra_fields"] = True
        self.special_p = 0.0 if r() < 0.4 else rng.choice((0.02, 0.05, 0.1, 0.2))
        self.rare_specials = r() < 0.12  # <|endoftext|>, U+2028/2029, ANSI escapes, DEL, CR
        self.verbosity = rng.choice((0.2, 0.35, 0.5, 0.8, 1.1, 1.6))
        self.long = r() < 0.075
        self.target_entries = rng.randint(100, 170) if self.long else rng.randint(8, 32)
        if self.verbosity > 1 and not self.long:
            self.target_entries = rng.randint(8, 25)
        self.id_mode = rng.choices(("hex", "numeric", "testid", "uuid", "mixed"), weights=(76, 7, 6, 5, 6))[0]
        # hidden prompt tokens (system prompt, tool schemas) in usage numbers; sometimes huge
        self.sys_overhead = rng.randint(1500, 9000) if r() < 0.7 else rng.randint(20000, 60000)
        self.model = rng.choice(MODELS)

        start = datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000
        self.now = int(start) + rng.randint(0, 300 * 86400 * 1000)
        self.lines: list[str] = []
        self.by_id: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.leaf: str | None = None
        self.size: dict[str, int] = {}
        self.used_ids: set[str] = set()
        self.id_counter = 0
        self.call_counter = 0
        self.labelled: list[str] = []
        self.edited: list[str] = []
        self.tools = list(TOOL_DEFS[:5])
        self.done: set[str] = set()

    # ------------------------------------------------------------------ basics

    def new_id(self) -> str:
        rng = self.rng
        mode = self.id_mode
        if mode == "mixed":
            mode = rng.choice(("hex", "hex", "hex", "numeric", "testid", "uuid"))
        while True:
            self.id_counter += 1
            if mode == "hex":
                s = f"{rng.getrandbits(32):08x}"
            elif mode == "numeric":
                s = str(self.id_counter)
            elif mode == "testid":
                s = f"test-id-{self.id_counter - 1}"
            else:
                s = self.uuid()
            if s not in self.used_ids:
                self.used_ids.add(s)
                return s

    def uuid(self, version: int = 4) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        variant = "89ab"[self.rng.randint(0, 3)]
        return f"{h[:8]}-{h[8:12]}-{version}{h[13:16]}-{variant}{h[17:20]}-{h[20:32]}"

    def tick(self, lo: int = 300, hi: int = 60000) -> int:
        r = self.rng.random()
        if r < 0.05:
            pass  # equal timestamp
        elif r < 0.07:
            self.now -= self.rng.randint(1, 5000)  # out of order
        elif r < 0.09:
            self.now += self.rng.randint(3600_000, 3 * 86400_000)  # came back later
        else:
            self.now += self.rng.randint(lo, hi)
        return self.now

    @staticmethod
    def iso(ms: int) -> str:
        d = datetime.fromtimestamp(ms // 1000, tz=UTC)
        return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"

    def entry_ts(self) -> str:
        if self.robust.get("bad_timestamps") and self.rng.random() < 0.08:
            return self.rng.choice(BAD_TIMESTAMPS)
        return self.iso(self.now)

    def emit(self, entry: dict[str, Any], size: int = 0) -> str:
        if self.f["extra_fields"] and self.rng.random() < 0.06:
            entry[self.rng.choice(("meta", "x-extension", "_debug"))] = self.rng.choice(
                ({"source": "fork"}, "kept", 7, [1, "two"], {"nested": {"deep": True}}, None)
            )
        _check_numbers(entry)
        self.lines.append(dumps(entry))
        eid: str = entry["id"]
        if eid not in self.by_id:
            self.order.append(eid)
        self.by_id[eid] = entry
        self.size[eid] = size
        return eid

    def base(self, etype: str, parent: str | bool | None = False, eid: str | None = None) -> dict[str, Any]:
        self.tick()
        return {
            "type": etype,
            "id": eid if eid is not None else self.new_id(),
            "parentId": self.leaf if parent is False else parent,
            "timestamp": self.entry_ts(),
        }

    def append(self, etype: str, fields: dict[str, Any], size: int = 0, **kw: Any) -> str:
        e = self.base(etype, **kw)
        e.update(fields)
        eid = self.emit(e, size)
        self.leaf = eid
        return eid

    def append_id_after(self, etype: str, fields: dict[str, Any], size: int = 0) -> str:
        """custom / custom_message entries: id, parentId, timestamp come AFTER the payload."""
        self.tick()
        e: dict[str, Any] = {"type": etype}
        e.update(fields)
        e["id"] = self.new_id()
        e["parentId"] = self.leaf
        e["timestamp"] = self.entry_ts()
        eid = self.emit(e, size)
        self.leaf = eid
        return eid

    def path(self, leaf: str | bool | None = False) -> list[dict[str, Any]]:
        cur = self.leaf if leaf is False else leaf
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        while isinstance(cur, str) and cur in self.by_id and cur not in seen:
            seen.add(cur)
            e = self.by_id[cur]
            out.append(e)
            cur = e.get("parentId")
        out.reverse()
        return out

    # ------------------------------------------------------------------ text

    def special(self) -> str:
        if self.rare_specials and self.rng.random() < 0.15:
            return self.rng.choice(SPECIALS_RARE)
        return self.rng.choice(SPECIALS)

    def prose(self, n: int) -> str:
        rng = self.rng
        out: list[str] = []
        length = 0
        sentence = 0
        while length < n:
            if self.special_p and rng.random() < self.special_p:
                w = self.special()
            else:
                w = rng.choice(WORDS)
            if sentence == 0:
                w = w[:1].upper() + w[1:]
            sentence += 1
            if sentence > rng.randint(4, 18):
                w += rng.choice((".", ".", ".", "?", "!", ":", "."))
                sentence = 0
                if rng.random() < 0.15:
                    w += "\n\n" if rng.random() < 0.5 else "\n"
            elif rng.random() < 0.06:
                w += ","
            out.append(w)
            length += len(w) + 1
        s = " ".join(out).replace("\n ", "\n")
        return s[: max(n, 1)].rstrip(" ") or "ok"

    def code(self, n: int) -> str:
        rng = self.rng
        lines: list[str] = []
        length = 0
        depth = 0
        while length < n:
            kw = rng.choice(CODE_KEYWORDS)
            a, b, c = rng.choice(WORDS), rng.choice(WORDS).capitalize(), rng.choice(WORDS)
            if rng.random() < 0.15 and depth < 4:
                line = f"{kw} {a}{b}({c}: string) {{"
                depth += 1
            elif rng.random() < 0.15 and depth > 0:
                depth -= 1
                line = "}"
            elif self.special_p and rng.random() < self.special_p:
                line = f'// {self.special()} {a} "{c}"'
            else:
                line = f'{kw} {a}{b} = await {c}("{rng.choice(WORDS)}", {rng.randint(0, 999)});'
            line = "\t" * depth + line
            lines.append(line)
            length += len(line) + 1
        return "\n".join(lines)

    def rand_len(self, kind: str) -> int:
        r = self.rng.random()
        table: tuple[tuple[float, int, int], ...]
        if kind == "tool":
            table = ((0.15, 0, 20), (0.6, 20, 300), (0.88, 300, 1500), (0.98, 1500, 5000), (1.0, 5000, 9000))
        elif kind == "user":
            table = ((0.15, 1, 20), (0.7, 20, 250), (0.95, 250, 1200), (1.0, 1200, 5000))
        elif kind == "thinking":
            table = ((0.3, 1, 60), (0.85, 60, 400), (1.0, 400, 2000))
        else:
            table = ((0.15, 1, 30), (0.65, 30, 250), (0.93, 250, 1000), (1.0, 1000, 4000))
        for p, lo, hi in table:
            if r < p:
                n = self.rng.randint(lo, hi)
                return max(int(n * self.verbosity), min(n, 1))
        return 100

    def sized(self, lo: int, hi: int) -> int:
        """randint(lo, hi) scaled by the file's verbosity."""
        return max(1, int(self.rng.randint(lo, hi) * self.verbosity))

    def image(self) -> dict[str, Any]:
        raw = bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(9, 60)))
        mime = self.rng.choice(("image/png", "image/png", "image/jpeg", "image/webp"))
        return {"type": "image", "data": base64.b64encode(raw).decode("ascii"), "mimeType": mime}

    def path_arg(self) -> str:
        return self.rng.choice(FILES)

    # ------------------------------------------------------------------ usage

    def context_tokens(self) -> int:
        """Rough model-visible token count of the current branch (for realistic usage numbers)."""
        path = self.path()
        start = 0
        extra = 0
        for i in range(len(path) - 1, -1, -1):
            e = path[i]
            if e["type"] == "compaction":
                extra = len(e.get("summary", "")) // 4
                ids = [p["id"] for p in path[:i]]
                start = ids.index(e["firstKeptEntryId"]) if e["firstKeptEntryId"] in ids else i
                break
        total = self.sys_overhead + extra
        for e in path[start:]:
            total += self.size.get(e["id"], 0)
        return total

    def usage(self, output: int, ctx: int | None = None, zero: bool = False) -> dict[str, Any]:
        rng = self.rng
        if zero:
            inp = out = cr = cw = 0
        else:
            if ctx is None:
                ctx = self.context_tokens()
            ctx = max(ctx + rng.randint(-200, 600), 50)
            out = max(output + rng.randint(0, 80), 1)
            if self.model[1] in ("anthropic", "amazon-bedrock") and rng.random() < 0.85:
                cr = int(ctx * rng.uniform(0.6, 0.97))
                cw = rng.randint(0, ctx - cr)
                inp = ctx - cr - cw
            elif rng.random() < 0.6:
                cr = int(ctx * rng.uniform(0.3, 0.9))
                cw = 0
                inp = ctx - cr
            else:
                inp, cr, cw = ctx, 0, 0
        u: dict[str, Any] = {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw}
        u["totalTokens"] = inp + out + cr + cw
        costs = {
            "input": self.cost(inp * 3e-6),
            "output": self.cost(out * 15e-6),
            "cacheRead": self.cost(cr * 0.3e-6),
            "cacheWrite": self.cost(cw * 3.75e-6),
        }
        costs["total"] = self.cost(inp * 3e-6 + out * 15e-6 + cr * 0.3e-6 + cw * 3.75e-6)
        u["cost"] = costs
        return u

    @staticmethod
    def cost(x: float) -> float | int:
        x = round(x, 7)
        if x < 1e-4:
            return 0
        if x == int(x):
            return int(x)
        return x

    # ------------------------------------------------------------------ messages

    def maybe_null_content(self, content: Any) -> Any:
        if self.robust.get("null_content") and self.rng.random() < 0.1:
            return None
        return content

    def msg_extra(self, msg: dict[str, Any]) -> dict[str, Any]:
        if self.f["extra_fields"] and self.rng.random() < 0.08:
            msg[self.rng.choice(("x-client", "annotations", "origin"))] = self.rng.choice(
                ("web", {"pinned": True}, ["a", 1], 42)
            )
        return msg

    def add_message(self, msg: dict[str, Any], size: int, parent: str | bool | None = False) -> str:
        return self.append("message", {"message": self.msg_extra(msg)}, size, parent=parent)

    def user_message(self, parent: str | bool | None = False, text: str | None = None) -> str:
        rng = self.rng
        if text is None:
            n = self.rand_len("user")
            text = self.prose(n)
        ts = self.tick(2000, 120000)
        size = len(text) // 4 + 1
        r = rng.random()
        content: Any
        if r < 0.4:
            content = text
        else:
            content = [{"type": "text", "text": text}]
            if self.f["images"] and rng.random() < 0.35:
                for _ in range(rng.randint(1, 2)):
                    content.append(self.image())
                    size += 4800
                if rng.random() < 0.3:
                    content.append({"type": "text", "text": self.prose(rng.randint(5, 80))})
        msg = {
            "role": "user",
            "content": self.maybe_null_content(content),
            "timestamp": ts - rng.randint(0, 3),
        }
        return self.add_message(msg, size, parent)

    def tool_call(self) -> dict[str, Any]:
        rng = self.rng
        self.call_counter += 1
        if self.model[1] in ("anthropic", "amazon-bedrock"):
            cid = "toolu_" + "".join(rng.choice("abcdefghijkABCDEFGHJK0123456789") for _ in range(24))
        elif rng.random() < 0.5:
            cid = f"call_{self.call_counter}"
        else:
            cid = f"call_{rng.getrandbits(48):012x}|fc_{rng.getrandbits(32):08x}"
        name = rng.choices(
            ("read", "write", "edit", "bash", "grep", "find", "ls", "web_search"),
            weights=(35, 10, 18, 20, 8, 3, 3, 3),
        )[0]
        args: dict[str, Any]
        if name == "read":
            args = {"path": self.path_arg()}
            if rng.random() < 0.2:
                args["offset"] = rng.randint(1, 400)
                args["limit"] = rng.randint(20, 200)
        elif name == "write":
            args = {"path": self.path_arg(), "content": self.code(self.rand_len("assistant"))}
        elif name == "edit":
            args = {
                "path": self.path_arg(),
                "oldText": self.code(self.sized(10, 300)),
                "newText": self.code(self.sized(10, 400)),
            }
        elif name == "bash":
            args = {
                "command": rng.choice(
                    (
                        "npm test",
                        "ls -la",
                        "git status",
                        "npx tsc --noEmit",
                        f"cat {self.path_arg()}",
                        "rg -n TODO src",
                        "pytest -x -q",
                    )
                )
            }
            if rng.random() < 0.3:
                args["timeout"] = rng.choice((30, 60, 120))
        elif name in ("grep", "find"):
            args = {
                "pattern": rng.choice(("TODO", "export function", "*.ts", "firstKeptEntryId")),
                "path": rng.choice(("src", ".", "packages/ai")),
            }
        elif name == "ls":
            args = {"path": rng.choice(("src", ".", "docs"))}
        else:
            args = {"query": self.prose(rng.randint(10, 60))}
        if rng.random() < 0.03:
            args = {}
        block: dict[str, Any] = {"type": "toolCall", "id": cid, "name": name, "arguments": args}
        if rng.random() < 0.05:
            block["thoughtSignature"] = base64.b64encode(
                bytes(rng.getrandbits(8) for _ in range(12))
            ).decode()
        return block

    def assistant(
        self,
        n_calls: int = 0,
        stop: str | None = None,
        text: bool = True,
        error: str | None = None,
        parent: str | bool | None = False,
    ) -> tuple[str, list[dict[str, Any]]]:
        rng = self.rng
        content: list[dict[str, Any]] = []
        size = 0
        if self.f["thinking"] and rng.random() < 0.5:
            th = self.prose(self.rand_len("thinking"))
            block: dict[str, Any] = {"type": "thinking", "thinking": th}
            if rng.random() < 0.7:
                block["thinkingSignature"] = base64.b64encode(
                    bytes(rng.getrandbits(8) for _ in range(rng.randint(16, 90)))
                ).decode()
            if rng.random() < 0.04:
                block["redacted"] = True
            content.append(block)
            size += len(th) // 4
        if text or n_calls == 0:
            t = self.prose(self.rand_len("assistant"))
            tb: dict[str, Any] = {"type": "text", "text": t}
            if rng.random() < 0.05:
                tb["textSignature"] = f"msg_{rng.getrandbits(40):010x}"
            content.append(tb)
            size += len(t) // 4
        calls = []
        for _ in range(n_calls):
            c = self.tool_call()
            calls.append(c)
            content.append(c)
            size += (len(c["name"]) + len(dumps(c["arguments"]))) // 4
        if stop is None:
            stop = "toolUse" if calls else ("length" if rng.random() < 0.04 else "stop")
        if stop in ("error", "aborted") and rng.random() < 0.5:
            content = content[:1] if rng.random() < 0.5 else []
            calls = [c for c in calls if c in content]
        request_ts = self.now + rng.randint(1, 50)
        self.tick(1500, 90000)
        api, provider, model = self.model
        if rng.random() < 0.03:
            api, provider, model = rng.choice(MODELS)
        zero = stop in ("error", "aborted") and rng.random() < 0.8
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": self.maybe_null_content(content),
            "api": api,
            "provider": provider,
            "model": model,
            "usage": self.usage(size, zero=zero),
            "stopReason": stop,
            "timestamp": request_ts,
        }
        if rng.random() < 0.3:
            msg["responseId"] = f"msg_{rng.getrandbits(64):016x}"
        if stop in ("error", "aborted"):
            msg["errorMessage"] = error or (
                "Request was aborted" if stop == "aborted" else rng.choice(OTHER_ERRORS)
            )
        elif error:
            msg["errorMessage"] = error
        if rng.random() < 0.2:
            msg["durationMs"] = self.now - request_ts
        return self.add_message(msg, size, parent), calls

    def tool_result(self, call: dict[str, Any]) -> str:
        rng = self.rng
        name = call["name"]
        is_error = rng.random() < 0.08
        if is_error:
            body = rng.choice(
                (
                    "ENOENT: no such file or directory, open '" + self.path_arg() + "'",
                    "Could not find the exact text to replace.",
                    "Command timed out after 30s",
                    self.prose(rng.randint(20, 300)),
                )
            )
        elif name == "read":
            body = self.code(self.rand_len("tool"))
        elif name == "bash":
            body = (
                self.prose(self.rand_len("tool")) if rng.random() < 0.5 else self.code(self.rand_len("tool"))
            )
        elif name in ("write", "edit"):
            verb = "wrote" if name == "write" else "replaced text in"
            body = f"Successfully {verb} {call['arguments'].get('path')}"
        else:
            body = self.prose(self.rand_len("tool"))
        content: list[dict[str, Any]] = [{"type": "text", "text": body}]
        size = len(body) // 4 + 1
        if self.f["images"] and name == "read" and rng.random() < 0.25:
            content.append(self.image())
            size += 4800
        elif rng.random() < 0.04:
            content = []
        msg: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": name,
            "content": self.maybe_null_content(content),
        }
        if rng.random() < 0.25:
            if name == "edit":
                msg["details"] = {
                    "diff": self.code(self.sized(20, 300)),
                    "firstChangedLine": rng.randint(1, 300),
                }
            elif name == "bash":
                msg["details"] = {"truncation": {"truncated": False, "totalLines": rng.randint(1, 90)}}
            else:
                msg["details"] = {"lines": rng.randint(1, 900)}
        if rng.random() < 0.05:
            msg["usage"] = self.usage(rng.randint(10, 500), ctx=rng.randint(100, 3000))
        msg["isError"] = is_error
        if rng.random() < 0.2:
            msg["durationMs"] = rng.randint(3, 9000)
        msg["timestamp"] = self.tick(5, 20000)
        if self.f["nested"] and rng.random() < 0.25:
            calls = []
            for _ in range(rng.randint(1, 4)):
                nm = rng.choice(("read", "read", "write", "edit", "grep"))
                c: dict[str, Any] = {
                    "id": f"nested_{rng.getrandbits(32):08x}",
                    "name": nm,
                    "arguments": {"path": self.path_arg()},
                    "status": "ok",
                }
                if rng.random() < 0.15:
                    c["status"] = rng.choice(("error", "unfinished"))
                if rng.random() < 0.3:
                    c["durationMs"] = rng.randint(1, 500)
                calls.append(c)
            msg["nestedCalls"] = {"calls": calls, "complete": rng.random() < 0.9}
        return self.add_message(msg, size)

    def bash_execution(self) -> str:
        rng = self.rng
        cmd = rng.choice(
            (
                "ls",
                "git status",
                "npm run build",
                "cat package.json",
                "echo 'héllo 😀'",
                "make -j8",
                "pytest -q",
                "sleep 100",
                "git log --oneline -5",
            )
        )
        r = rng.random()
        output = (
            ""
            if r < 0.12
            else (self.prose(self.rand_len("tool")) if r < 0.6 else self.code(self.rand_len("tool")))
        )
        if rng.random() < 0.1:
            output = "\x1b[32m✓\x1b[0m " + output
        exit_code: int | None = rng.choice((0, 0, 0, 0, 1, 2, 127, None))
        cancelled = exit_code is None and rng.random() < 0.7
        truncated = rng.random() < 0.12
        msg: dict[str, Any] = {
            "role": "bashExecution",
            "command": cmd,
            "output": output,
            "exitCode": exit_code,
            "cancelled": cancelled,
            "truncated": truncated,
        }
        if truncated and rng.random() < 0.85:
            msg["fullOutputPath"] = f"/tmp/pi-bash-{rng.getrandbits(32):08x}.log"
        msg["timestamp"] = self.tick()
        if rng.random() < 0.25:
            msg["excludeFromContext"] = rng.random() < 0.8
        return self.add_message(msg, (len(cmd) + len(output)) // 4)

    def system_message(self, initial: bool) -> str:
        rng = self.rng
        sections: dict[str, Any] = {}
        msg: dict[str, Any] = {"role": "system"}
        if initial:
            sections["identity"] = "You are an expert coding assistant operating inside pi. " + self.prose(
                rng.randint(100, 600)
            )
            sections["guidelines"] = self.prose(self.sized(200, 1500))
            if rng.random() < 0.6:
                sections["agents_md"] = "# AGENTS.md\n" + self.prose(self.sized(100, 2000))
            sections["environment"] = f"Current working directory: /home/dev/proj{self.index}"
            tools = [self.tool_def(n, d) for n, d in self.tools]
            msg["content"] = "" if rng.random() < 0.8 else self.prose(self.sized(20, 200))
            msg["sections"] = sections
            msg["toolsAdded"] = tools
        else:
            r = rng.random()
            msg["content"] = "" if rng.random() < 0.7 else self.prose(self.sized(10, 300))
            if r < 0.4:
                sections[rng.choice(("agents_md", "skills", "environment"))] = self.prose(self.sized(50, 800))
                if rng.random() < 0.3:
                    sections["guidelines"] = None
                msg["sections"] = sections
            elif r < 0.7:
                new = [t for t in TOOL_DEFS if t not in self.tools]
                if new:
                    t = rng.choice(new)
                    self.tools.append(t)
                    msg["toolsAdded"] = [self.tool_def(*t)]
                else:
                    msg["sections"] = {"skills": None}
            elif len(self.tools) > 1:
                t = rng.choice(self.tools)
                self.tools.remove(t)
                msg["toolsRemoved"] = [{"name": t[0]}]
            else:
                msg["sections"] = {"environment": "cwd changed"}
            if rng.random() < 0.1:
                msg["content"] = [{"type": "text", "text": self.prose(self.sized(10, 200))}]
        msg["timestamp"] = self.tick()
        size = len(dumps(msg)) // 4
        return self.add_message(msg, size)

    def tool_def(self, name: str, desc: str) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.rng.random() < 0.6:
            params = {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "File path"}},
                "required": ["path"],
            }
        return {"name": name, "description": desc, "parameters": params}

    def current_system_snapshot(self, ts_ms: int) -> dict[str, Any] | None:
        content: list[str] = []
        sections: dict[str, Any] = {}
        tools: dict[str, dict[str, Any]] = {}
        seen = False
        for e in self.path():
            m = e.get("message") if e["type"] == "message" else None
            if not isinstance(m, dict) or m.get("role") != "system":
                continue
            seen = True
            c = m.get("content")
            text = c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c or [])
            if text:
                content.append(text)
            for k, v in (m.get("sections") or {}).items():
                if v is None:
                    sections.pop(k, None)
                else:
                    sections[k] = v
            for t in m.get("toolsRemoved") or []:
                tools.pop(t["name"], None)
            for t in m.get("toolsAdded") or []:
                tools[t["name"]] = t
        if not seen:
            return None
        snap: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
        if sections:
            snap["sections"] = sections
        if tools:
            snap["toolsAdded"] = list(tools.values())
        snap["timestamp"] = ts_ms
        return snap

    # ------------------------------------------------------------------ turns

    def turn(self) -> None:
        rng = self.rng
        r = rng.random()
        if self.f["bash"] and r < 0.12:
            self.bash_execution()
            if rng.random() < 0.6:
                return
        elif self.f["custom_message"] and r < 0.18:
            self.custom_message()
            if rng.random() < 0.5:
                return
        self.user_message()
        if rng.random() < 0.04:
            return  # no reply (e.g. pi exited)
        r = rng.random()
        if r < 0.3:
            rounds = 0
        elif r < 0.8:
            rounds = rng.randint(1, 4)
        else:
            rounds = rng.randint(4, 10)
        for _ in range(rounds):
            if rng.random() < 0.04:
                stop = rng.choice(("error", "aborted", "length"))
                self.assistant(n_calls=rng.randint(0, 1), stop=stop, text=True)
                if stop == "error" and self.f["context_edit"] and rng.random() < 0.6:
                    self.retry_after_error()
                    continue
                return
            n_calls = rng.choices((1, 2, 3, 4), weights=(60, 25, 10, 5))[0]
            _, calls = self.assistant(n_calls=n_calls, text=rng.random() < 0.5)
            for c in calls:
                self.tool_result(c)
            self.interleave_meta(0.08)
        self.assistant()

    def retry_after_error(self) -> None:
        """Pi's auto-retry: the failed attempt is omitted with context_edit(null), then retried."""
        failed = self.leaf
        if failed is not None:
            self.context_edit(target=failed, replacement=None)

    def interleave_meta(self, p: float) -> None:
        if self.rng.random() >= p:
            return
        choices = []
        if self.f["usage"]:
            choices.append(self.usage_entry)
        if self.f["custom"]:
            choices.append(self.custom_entry)
        if self.f["labels"]:
            choices.append(self.label)
        if self.f["meta"]:
            choices.append(self.thinking_change)
        if choices:
            self.rng.choice(choices)()

    # ------------------------------------------------------------------ other entry types

    def thinking_change(self) -> None:
        self.append("thinking_level_change", {"thinkingLevel": self.rng.choice(THINKING_LEVELS)})

    def model_change(self) -> None:
        self.model = self.rng.choice(MODELS)
        self.append("model_change", {"provider": self.model[1], "modelId": self.model[2]})

    def usage_entry(self) -> None:
        rng = self.rng
        fields: dict[str, Any] = {
            "kind": rng.choice(("cache_warm", "cache_warm", "cache_warm", "subagent", "ext:probe")),
            "provider": self.model[1],
            "model": self.model[2],
            "usage": self.usage(rng.randint(1, 20), ctx=rng.randint(1000, 60000)),
        }
        if rng.random() < 0.3:
            fields["note"] = rng.choice(("keep-alive", "warm cache before idle timeout", "☕"))
        self.append("usage", fields)

    def custom_entry(self) -> None:
        rng = self.rng
        fields: dict[str, Any] = {"customType": rng.choice(CUSTOM_TYPES)}
        if rng.random() < 0.9:
            fields["data"] = rng.choice(
                (
                    {
                        "todos": [
                            {"text": self.prose(rng.randint(5, 40)), "done": rng.random() < 0.5}
                            for _ in range(rng.randint(0, 4))
                        ]
                    },
                    {"enabled": rng.random() < 0.5, "count": rng.randint(0, 99), "ratio": 0.25},
                    [1, 2, 3],
                    "string data 中文",
                    None,
                    {"commit": f"{rng.getrandbits(160):040x}", "files": [self.path_arg()]},
                )
            )
        self.append_id_after("custom", fields)

    def custom_message(self) -> None:
        rng = self.rng
        text = self.prose(self.rand_len("user"))
        size = len(text) // 4
        content: Any
        if rng.random() < 0.5:
            content = text
        else:
            content = [{"type": "text", "text": text}]
            if self.f["images"] and rng.random() < 0.2:
                content.append(self.image())
                size += 4800
        fields: dict[str, Any] = {
            "customType": rng.choice(CUSTOM_TYPES),
            "content": self.maybe_null_content(content),
            "display": rng.random() < 0.6,
        }
        if rng.random() < 0.3:
            fields["details"] = {"source": rng.choice(("extension", "hook")), "n": rng.randint(0, 9)}
        self.append_id_after("custom_message", fields, size)

    def label(self) -> None:
        rng = self.rng
        if self.labelled and rng.random() < 0.3:
            target = rng.choice(self.labelled)
            if rng.random() < 0.7:
                self.append("label", {"targetId": target})  # clear: no label key
            else:
                self.append("label", {"targetId": target, "label": ""})
            return
        path = self.path()
        if path and rng.random() < 0.8:
            target = rng.choice(path)["id"]
        else:
            target = rng.choice(self.order)
        name = rng.choice(
            (
                "checkpoint",
                "good state",
                "before refactor",
                "✅ works",
                "试验",
                "v1",
                self.prose(rng.randint(3, 30)),
            )
        )
        self.labelled.append(target)
        self.append("label", {"targetId": target, "label": name})

    def session_info(self) -> None:
        rng = self.rng
        name = rng.choice(
            (
                "Refactor session manager",
                "fix: compaction cut point",
                "",
                "  padded name  ",
                "调试 pi 会话",
                "😀 emoji session",
                self.prose(rng.randint(5, 60)),
            )
        )
        self.append("session_info", {"name": name})

    def unknown_entry(self) -> None:
        rng = self.rng
        self.done.add("unknown")
        t = rng.choice(UNKNOWN_TYPES)
        self.append(t, {"decision": self.prose(rng.randint(5, 100)), "confidence": rng.randint(0, 100)})

    def branch(self) -> None:
        rng = self.rng
        old = self.leaf
        path = self.path()
        r = rng.random()
        target: str | None
        if r < 0.75 and len(path) > 2:
            # users mostly rewind a few steps: bias towards the recent end of the branch
            target = path[int((1 - rng.random() ** 2) * (len(path) - 1))]["id"]
        elif r < 0.95 or not self.order:
            target = rng.choice(self.order) if self.order else None
        else:
            target = None
        new_leaf = target
        if target is not None:
            e = self.by_id[target]
            m = e.get("message") if e["type"] == "message" else None
            is_prompt = (isinstance(m, dict) and m.get("role") == "user") or e["type"] == "custom_message"
            if is_prompt and rng.random() < 0.6:
                # navigating to a prompt puts its text back in the editor: the leaf is its parent
                new_leaf = e.get("parentId")
                if new_leaf is not None and new_leaf not in self.by_id:
                    new_leaf = target
        self.leaf = new_leaf
        if self.f["branch_summary"] and rng.random() < 0.6:
            self.branch_summary(old)
        if rng.random() < 0.85:
            self.turn()

    def branch_summary(self, old: str | None) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.08:
            summary = ""
        elif r < 0.14:
            summary = "No content to summarize"
        else:
            summary = (
                "The user explored a different conversation branch before returning here.\n"
                "Summary of that exploration:\n\n" + self.structured_summary(False)
            )
        fields: dict[str, Any] = {
            "fromId": old if old is not None and rng.random() < 0.9 else "root",
            "summary": summary,
        }
        if rng.random() < 0.6:
            fields["details"] = self.file_details()
        if rng.random() < 0.2:
            fields["usage"] = self.usage(rng.randint(100, 900), ctx=rng.randint(1000, 30000))
        if rng.random() < 0.15:
            fields["fromHook"] = rng.random() < 0.8
        self.append("branch_summary", fields, len(summary) // 4)

    def file_details(self) -> dict[str, Any]:
        rng = self.rng
        read = sorted({self.path_arg() for _ in range(rng.randint(0, 4))})
        mod = sorted({self.path_arg() for _ in range(rng.randint(0, 3))} - set(read))
        return {"readFiles": read, "modifiedFiles": mod}

    def structured_summary(self, compaction: bool) -> str:
        rng = self.rng
        parts = [
            "## Goal\n" + self.prose(self.sized(30, 300)),
            "## Constraints & Preferences\n- " + self.prose(self.sized(10, 120)),
            "## Progress\n### Done\n- [x] "
            + self.prose(self.sized(10, 200))
            + "\n\n### In Progress\n- [ ] "
            + self.prose(self.sized(10, 150))
            + "\n\n### Blocked\n- (none)",
            "## Key Decisions\n- **"
            + self.prose(self.sized(5, 30))
            + "**: "
            + self.prose(self.sized(10, 200)),
            "## Next Steps\n1. "
            + self.prose(self.sized(10, 120))
            + "\n2. "
            + self.prose(self.sized(10, 120)),
        ]
        if compaction:
            parts.append("## Critical Context\n- " + self.prose(self.sized(10, 400)))
        s = "\n\n".join(parts)
        if rng.random() < 0.5:
            d = self.file_details()
            if d["readFiles"]:
                s += "\n\n<read-files>\n" + "\n".join(d["readFiles"]) + "\n</read-files>"
            if d["modifiedFiles"]:
                s += "\n\n<modified-files>\n" + "\n".join(d["modifiedFiles"]) + "\n</modified-files>"
        return s

    def compaction(self, first_kept: str | None = None) -> str | None:
        rng = self.rng
        path = self.path()
        prev = 0
        for i in range(len(path) - 1, -1, -1):
            if path[i]["type"] == "compaction":
                prev = i + 1
                break
        window = path[prev:]
        if len(window) < 3 and first_kept is None:
            return None
        eid = self.new_id()
        if first_kept is None:

            def role_of(e: dict[str, Any]) -> str:
                m = e.get("message")
                return m.get("role", "") if e["type"] == "message" and isinstance(m, dict) else ""

            later = window[len(window) // 4 : max(len(window) * 3 // 4, len(window) // 4 + 1)]
            users = [e["id"] for e in later if role_of(e) == "user"]
            assistants = [e["id"] for e in later if role_of(e) == "assistant"]
            others = [e["id"] for e in later if role_of(e) not in ("user", "assistant")]
            off_path = [i for i in self.order if i not in {p["id"] for p in path}]
            r = rng.random()
            if r < 0.55 and users:
                first_kept = rng.choice(users)
            elif r < 0.7 and assistants:
                first_kept = rng.choice(assistants)
            elif r < 0.8 and others:
                first_kept = rng.choice(others)
            elif r < 0.9:
                first_kept = eid  # retain-none
            elif r < 0.95 and off_path:
                first_kept = rng.choice(off_path)
            elif r < 0.97:
                first_kept = rng.choice([p["id"] for p in path[:prev]] or [eid])  # before previous boundary
            else:
                first_kept = rng.choice(("deadbeef", "missing-entry", "00000000"))
        r = rng.random()
        summary = "" if r < 0.03 else self.structured_summary(True)
        tokens_before = self.context_tokens() + rng.randint(0, 2000)
        fields: dict[str, Any] = {
            "summary": summary,
            "firstKeptEntryId": first_kept,
            "tokensBefore": tokens_before,
        }
        from_hook = rng.random() < 0.12
        if rng.random() < 0.85:
            fields["details"] = self.file_details() if not from_hook or rng.random() < 0.5 else {"hook": "x"}
        if rng.random() < 0.5:
            fields["usage"] = self.usage(rng.randint(300, 2500), ctx=min(tokens_before, 190000))
        if from_hook:
            fields["fromHook"] = True
        elif rng.random() < 0.05:
            fields["fromHook"] = False
        e = self.base("compaction", eid=eid)
        if rng.random() < 0.75:
            snap = self.current_system_snapshot(self.now)
            if snap is not None:
                fields["systemMessage"] = snap
        e.update(fields)
        self.emit(e, len(summary) // 4)
        self.leaf = eid
        return eid

    def context_edit(self, target: str | None = None, replacement: Any = 0) -> None:
        rng = self.rng
        if target is None:
            path = self.path()
            prev = 0
            for i in range(len(path) - 1, -1, -1):
                if path[i]["type"] == "compaction":
                    prev = i
                    break

            def editable(e: dict[str, Any]) -> bool:
                if e["type"] == "custom_message":
                    return True
                m = e.get("message")
                return (
                    e["type"] == "message"
                    and isinstance(m, dict)
                    and m.get("role") in ("user", "assistant", "toolResult")
                )

            r = rng.random()
            if self.edited and r < 0.2:
                target = rng.choice(self.edited)
            elif r < 0.92:
                pool = [e["id"] for e in (path[prev:] if rng.random() < 0.75 else path) if editable(e)]
                if not pool:
                    return
                target = rng.choice(pool)
            else:
                # hand-written edits Pi's API would refuse: other roles/types, off-path targets
                pool = [e["id"] for e in path if not editable(e)] or self.order
                target = rng.choice(pool)
        if replacement == 0:
            r = rng.random()
            te = self.by_id.get(target, {})
            role = (te.get("message") or {}).get("role") if te.get("type") == "message" else None
            if r < 0.4:
                replacement = None
            elif r < 0.7:
                text = self.prose(rng.randint(0, 200)) if rng.random() < 0.9 else ""
                if role in ("assistant", "toolResult") and rng.random() < 0.8:
                    replacement = {"content": [{"type": "text", "text": text}]}  # Pi normalizes strings
                else:
                    replacement = {"content": text}
            else:
                blocks: list[dict[str, Any]] = [{"type": "text", "text": self.prose(rng.randint(1, 300))}]
                if rng.random() < 0.15:
                    blocks.append({"type": "text", "text": "[image omitted]"})
                replacement = {"content": blocks}
        self.edited.append(target)
        self.append("context_edit", {"targetId": target, "replacement": replacement})
        if self.rng.random() < 0.2:
            # edit the same target again (the last edit wins)
            again = None if replacement is not None else {"content": self.prose(self.sized(5, 200))}
            self.append("context_edit", {"targetId": target, "replacement": again})

    def overflow_recovery(self) -> None:
        """assistant error (overflow) -> context_edit(null) -> compaction -> retried reply."""
        rng = self.rng
        self.done.add("overflow")
        if rng.random() < 0.6:
            self.user_message()
        failed, _ = self.assistant(stop="error", error=rng.choice(OVERFLOW_ERRORS), text=rng.random() < 0.2)
        self.context_edit(target=failed, replacement=None)
        path = self.path()
        users = [
            e["id"]
            for e in path
            if e["type"] == "message"
            and isinstance(e.get("message"), dict)
            and e["message"].get("role") == "user"
        ]
        fk = rng.choice(users[-3:]) if users and rng.random() < 0.85 else None
        cid = self.compaction(first_kept=fk if fk is not None else failed)
        if cid is None or rng.random() < 0.05:
            return
        # the retry continues the same turn
        rounds = rng.randint(0, 3)
        for _ in range(rounds):
            _, calls = self.assistant(n_calls=rng.randint(1, 2), text=rng.random() < 0.5)
            for c in calls:
                self.tool_result(c)
        self.assistant()

    def orphan(self) -> None:
        rng = self.rng
        self.done.add("orphan")
        missing = f"gone-{rng.getrandbits(32):08x}"
        keep = self.leaf
        r = rng.random()
        if r < 0.5:
            self.user_message(parent=missing)
            if rng.random() < 0.6:
                self.assistant()
        elif r < 0.8:
            self.append("label", {"targetId": rng.choice(self.order), "label": "orphaned"}, parent=missing)
        else:
            self.add_message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "orphan reply"}],
                    "api": self.model[0],
                    "provider": self.model[1],
                    "model": self.model[2],
                    "usage": self.usage(5),
                    "stopReason": "stop",
                    "timestamp": self.tick(),
                },
                2,
                parent=missing,
            )
        if rng.random() < 0.5:
            self.leaf = keep  # continue on the main chain; otherwise stay on the orphan chain

    def duplicate(self) -> None:
        rng = self.rng
        if len(self.order) < 3:
            return
        self.done.add("dup")
        dup_id = rng.choice(self.order[:-1])
        orig = self.by_id[dup_id]
        parent = orig.get("parentId")  # earlier (lower-rank) id: no cycle possible
        keep = self.leaf
        r = rng.random()
        if r < 0.5:
            text = self.prose(rng.randint(5, 300))
            self.tick()
            e = {
                "type": "message",
                "id": dup_id,
                "parentId": parent,
                "timestamp": self.entry_ts(),
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": text}],
                    "timestamp": self.now,
                },
            }
            self.emit(e, len(text) // 4)
        elif r < 0.75:
            self.tick()
            self.emit(
                {
                    "type": "custom",
                    "customType": "dup",
                    "data": {"n": 1},
                    "id": dup_id,
                    "parentId": parent,
                    "timestamp": self.entry_ts(),
                }
            )
        else:
            self.tick()
            self.emit(
                {
                    "type": "thinking_level_change",
                    "id": dup_id,
                    "parentId": parent,
                    "timestamp": self.entry_ts(),
                    "thinkingLevel": rng.choice(THINKING_LEVELS),
                }
            )
        self.leaf = dup_id if rng.random() < 0.5 else keep

    # ------------------------------------------------------------------ driver

    def header(self) -> str:
        rng = self.rng
        h: dict[str, Any] = {"type": "session", "version": 3}
        ms = self.now - rng.randint(0, 5000)
        r = rng.random()
        if r < 0.8:
            h["id"] = self.uuid(7)
        elif r < 0.9:
            h["id"] = self.uuid(4)
        else:
            h["id"] = rng.choice(("abc-123_def.456", f"sess{self.index}", "custom.session-id"))
        h["timestamp"] = self.iso(ms)
        if rng.random() < 0.97:
            h["cwd"] = rng.choice(
                (
                    "/home/dev/proj",
                    "/Users/mario/workspaces/pi-mono",
                    "/home/u/my proj",
                    "/tmp/中文项目",
                    "C:\\Users\\x\\code",
                    "/srv/app",
                    "",
                )
            )
        if rng.random() < 0.08:
            h["parentSession"] = f"/home/dev/.pi/agent/sessions/--home-dev-proj--/{self.uuid(7)}.jsonl"
        return dumps(h)

    def build(self) -> str:
        rng = self.rng
        f = self.f
        header = self.header()
        if f["meta"] and rng.random() < 0.7:
            self.model_change()
            self.thinking_change()
        if f["system"]:
            self.system_message(True)
        if f["session_info"] and rng.random() < 0.3:
            self.session_info()

        actions: list[tuple[Any, float]] = [(self.turn, 10.0)]
        if f["branches"]:
            actions.append((self.branch, 1.3))
        if f["labels"]:
            actions.append((self.label, 1.0))
        if f["session_info"]:
            actions.append((self.session_info, 0.35))
        if f["meta"]:
            actions += [(self.thinking_change, 0.4), (self.model_change, 0.3)]
        if f["usage"]:
            actions.append((self.usage_entry, 0.5))
        if f["custom"]:
            actions.append((self.custom_entry, 0.6))
        if f["custom_message"]:
            actions.append((self.custom_message, 0.5))
        if f["compaction"]:
            actions.append((self.compaction, 0.5))
        if f["context_edit"]:
            actions.append((self.context_edit, 1.2))
        if f["overflow"]:
            actions.append((self.overflow_recovery, 0.5))
        if f["system"]:
            actions.append((lambda: self.system_message(False), 0.3))
        if f["bash"]:
            actions.append((self.bash_execution, 0.8))
        if f["unknown_types"]:
            actions.append((self.unknown_entry, 0.3))
        if self.robust.get("orphans"):
            actions.append((self.orphan, 0.4))
        if self.robust.get("dups"):
            actions.append((self.duplicate, 0.4))
        funcs = [a for a, _ in actions]
        weights = [w for _, w in actions]

        self.turn()
        guard = 0
        while len(self.lines) < self.target_entries and guard < 5000:
            guard += 1
            action = rng.choices(funcs, weights=weights)[0]
            if action == self.compaction and len(self.lines) > 0.7 * self.target_entries:
                action = self.turn  # leave room for a kept tail after the last compaction
            action()
        # guaranteed features (so a profile's feature really appears)
        done_types = {json.loads(line)["type"] for line in self.lines}
        if f["compaction"] and "compaction" not in done_types:
            self.turn()
            self.compaction()
            self.turn()
        if f["context_edit"] and "context_edit" not in done_types:
            self.context_edit()
        if f["labels"] and "label" not in done_types:
            self.label()
        if f["branch_summary"] and "branch_summary" not in done_types:
            self.branch()
            if "branch_summary" not in {json.loads(line)["type"] for line in self.lines}:
                self.branch_summary(self.leaf)
                self.turn()
        if self.robust.get("orphans") and "orphan" not in self.done:
            self.orphan()
        if self.robust.get("dups") and "dup" not in self.done:
            self.duplicate()
        if f["overflow"] and "overflow" not in self.done:
            self.overflow_recovery()
        if f["unknown_types"] and "unknown" not in self.done:
            self.unknown_entry()
            self.turn()
        # endings
        r = rng.random()
        if f["compaction"] and r < 0.1:
            self.compaction()  # last entry is a compaction
        elif r < 0.36 and f["labels"]:
            self.label()
        elif r < 0.4 and f["session_info"]:
            self.session_info()
        elif r < 0.45 and f["custom"]:
            self.custom_entry()
        return self.finish(header)

    def junk_line(self) -> str:
        rng = self.rng
        frag = rng.choice(self.lines) if self.lines else '{"type":"message"}'
        choices = [
            "not json",
            frag[: rng.randint(1, max(1, len(frag) - 1))],
            "{",
            '{"type":"message","id":"trunc',
            "}{",
            "<<<<<<< HEAD",
            "undefined",
            "\ufeff" + frag,
            '{"type":"label","id":"nan-1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","n":NaN}',
            "{'single': 'quotes'}",
            '{"a":1,}',
        ]
        while True:
            s = rng.choice(choices)
            if not _parses(s) and "\n" not in s and s.strip():
                return s

    def finish(self, header: str) -> str:
        rng = self.rng
        rb = self.robust
        lines = [header, *self.lines]
        extra_after = 0
        if rb.get("junk"):
            for _ in range(rng.randint(1, 5)):
                lines.insert(rng.randint(1, len(lines)), self.junk_line())
                extra_after += 1
        if rb.get("blank"):
            for _ in range(rng.randint(1, 4)):
                lines.insert(rng.randint(1, len(lines)), "")
        if rb.get("whitespace"):
            for _ in range(rng.randint(1, 3)):
                lines.insert(rng.randint(1, len(lines)), rng.choice((" ", "\t", "   \t  ", "\r")))
        if rb.get("crlf"):
            for _ in range(rng.randint(1, 4)):
                i = rng.randint(1, len(lines) - 1)
                lines[i] = lines[i] + "\r"
        if rb.get("leading_junk"):
            lead = [
                rng.choice(("not json", "", "  ", "#!/pi", '{"type":"session"', "{", "\ufeff"))
                for _ in range(rng.randint(1, 3))
            ]
            lines = lead + lines
        text = "\n".join(lines) + "\n"
        if rb.get("torn"):
            r = rng.random()
            if r < 0.5:
                src = rng.choice(self.lines)
                frag = src[: rng.randint(1, max(1, len(src) - 2))]
                if not _parses(frag):
                    text += frag  # torn append: unterminated junk fragment
            elif r < 0.85:
                text = text[:-1]  # last complete line without its newline
            else:
                text += rng.choice((" ", "\t", "  "))  # whitespace-only torn tail
        return text


def generate(rng: random.Random, index: int) -> str:
    """Return the text of one generated Pi session file (deterministic in ``rng``'s state)."""
    return _Gen(rng, index).build()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--count", type=int, default=220)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(args.count):
        text = generate(random.Random(args.seed + i), i)
        (args.out / f"gen-{i:04d}.jsonl").write_bytes(text.encode("utf-8"))
    print(f"wrote {args.count} files to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
