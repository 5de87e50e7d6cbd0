"""Generated Pi v3 sessions of a given size, deterministic in their seed, cached on disk.

Realistic agent work: turns with thinking and tool calls whose results quote a pool of
code-like files, branches with summaries, compactions, labels, model and thinking changes. Lines
are written the way Pi writes them (``JSON.stringify``: compact, non-ASCII unescaped, Pi's key
order, docs/pi-format.md §1.3). Used by ``inspect_bench`` and ``journal`` (the session files)
and ``compaction`` (the text corpus). Stdlib only.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import MIB, priced_usage

GEN_VERSION = 1
"""Bump when the generator changes: cached files are named with it."""

_WORDS = (  # noqa: SIM905
    "session entry branch leaf parent context model token usage compaction summary tree label "
    "cursor buffer stream reader writer index offset payload handler request response error "
    "config option value result state cache queue worker timer client server socket message "
    "render widget theme color border layout panel editor footer header selector provider "
    "agent tool call args path file line column range diff patch hunk commit merge rebase"
).split()
_PROSE = (  # noqa: SIM905
    "the a this that we it should could will then now first next also because so but if when "
    "which still already only just maybe probably actually instead again here there"
).split()
_UNICODE = ["→", "—", "✓", "é", "ü", "…", "🚀", "≥", "λ", "中文", "✗"]
_EXTS = [".ts", ".ts", ".ts", ".py", ".md", ".json", ".tsx"]
_DIRS = [
    "src",
    "src/core",
    "src/tools",
    "src/ui",
    "src/utils",
    "packages/agent/src",
    "test",
    "docs",
    "scripts",
]
_MODELS = [
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("anthropic", "claude-opus-4-1", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
]
_THINKING = ["off", "minimal", "low", "medium", "high"]
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_B64 = _B62 + "+/"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class Corpus:
    """A pool of synthetic source files that tool results quote from (fast and code-like)."""

    def __init__(self, rng: random.Random, nfiles: int = 160) -> None:
        self.rng = rng
        self.files: list[tuple[str, list[str]]] = []
        for i in range(nfiles):
            ext = rng.choice(_EXTS)
            name = f"{rng.choice(_DIRS)}/{rng.choice(_WORDS)}-{rng.choice(_WORDS)}{i}{ext}"
            nlines = int(math.exp(rng.uniform(math.log(30), math.log(900))))
            self.files.append((name, self._lines(ext, nlines)))

    def ident(self) -> str:
        r = self.rng
        a, b = r.choice(_WORDS), r.choice(_WORDS)
        return a + b.capitalize() if r.random() < 0.7 else f"{a}_{b}"

    def _lines(self, ext: str, n: int) -> list[str]:
        r = self.rng
        out: list[str] = []
        if ext == ".md":
            for _ in range(n):
                k = r.random()
                if k < 0.1:
                    out.append(f"## {self.ident()} {r.choice(_WORDS)}")
                elif k < 0.25:
                    out.append(
                        f"| `{self.ident()}` | {' '.join(r.choices(_WORDS, k=4))} | `{r.randint(0, 999)}` |"
                    )
                elif k < 0.35:
                    out.append("")
                else:
                    out.append(self.sentence())
            return out
        if ext == ".json":
            out.append("{")
            for _ in range(n - 2):
                out.append(f'  "{self.ident()}": "{r.choice(_WORDS)}/{r.randint(0, 99)}",')
            out.append('  "version": "1.6.0"\n}')
            return out
        py = ext == ".py"
        indent = 0
        for _ in range(n):
            k = r.random()
            pad = ("    " if py else "\t") * indent
            name = self.ident()
            if k < 0.08 and indent < 3:
                if py:
                    a, b = r.choice(_WORDS), r.choice(_WORDS)
                    out.append(f"{pad}def {name}(self, {a}: str, *, {b}: int = 0) -> dict:")
                else:
                    a = r.choice(_WORDS)
                    opts = name.capitalize() + "Options"
                    out.append(f"{pad}export function {name}({a}: string, opts?: {opts}): void {{")
                indent += 1
            elif k < 0.14 and indent > 0:
                indent -= 1
                out.append(pad[: -4 if py else -1] + ("" if py else "}"))
            elif k < 0.3:
                call = f'{self.ident()}("{r.choice(_WORDS)}", {r.randint(0, 4096)})'
                out.append(
                    f"{pad}const {name} = await this.{call};" if not py else f"{pad}{name} = self.{call}"
                )
            elif k < 0.42:
                out.append(
                    f"{pad}if ({name} === undefined || {name}.length > {r.randint(1, 99)}) return null;"
                    if not py
                    else f"{pad}if {name} is None or len({name}) > {r.randint(1, 99)}:"
                )
            elif k < 0.5:
                out.append(f"{pad}// {self.sentence()}" if not py else f"{pad}# {self.sentence()}")
            elif k < 0.58:
                out.append(
                    f'{pad}throw new Error(`{r.choice(_WORDS)} "${{{name}}}" not found\\n`);'
                    if not py
                    else f'{pad}raise KeyError(f"{r.choice(_WORDS)} {{{name}!r}} not found\\n")'
                )
            elif k < 0.64:
                out.append("")
            else:
                method, arg, kw, v = self.ident(), self.ident(), r.choice(_WORDS), r.randint(0, 9)
                out.append(
                    f"{pad}{name}.{method}({arg}, {{ {kw}: {v} }});"
                    if not py
                    else f"{pad}{name}.{method}({arg}, {kw}={v})"
                )
        return out

    def sentence(self) -> str:
        r = self.rng
        words = [r.choice(_PROSE if r.random() < 0.4 else _WORDS) for _ in range(r.randint(5, 16))]
        if r.random() < 0.05:
            words.insert(r.randrange(len(words)), r.choice(_UNICODE))
        if r.random() < 0.2:
            words.append(f"`{self.ident()}()`")
        s = " ".join(words)
        return s[0].upper() + s[1:] + r.choice([".", ".", ".", ":", "?"])

    def prose(self, nbytes: int) -> str:
        parts: list[str] = []
        size = 0
        while size < nbytes:
            s = self.sentence()
            if self.rng.random() < 0.12:
                s += "\n\n"
            parts.append(s)
            size += len(s) + 1
        return " ".join(parts)

    def file_slice(self, nbytes: int) -> tuple[str, str, int]:
        """(path, text, first line) of about ``nbytes`` consecutive lines of one file."""
        r = self.rng
        path, lines = r.choice(self.files)
        start = r.randrange(len(lines))
        out: list[str] = []
        size = 0
        i = start
        while size < nbytes:
            line = lines[i % len(lines)]
            out.append(line)
            size += len(line) + 1
            i += 1
        return path, "\n".join(out), start + 1

    def grep_output(self, nbytes: int) -> str:
        r = self.rng
        out: list[str] = []
        size = 0
        while size < nbytes:
            path, lines = r.choice(self.files)
            n = r.randrange(len(lines))
            line = f"{path}:{n + 1}:{lines[n]}"
            out.append(line)
            size += len(line) + 1
        return "\n".join(out)


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.corpus = Corpus(self.rng)
        self.ids: set[str] = set()
        self.now_ms = 1772442000000 + self.rng.randrange(86_400_000)  # 2026-03-02
        self.leaf: str | None = None
        # current branch: [id, cumulative bytes, is user message]
        self.path: list[tuple[str, int, bool]] = []
        self.bytes_written = 0
        self.since_compaction = 0
        self.last_compaction_pos = 0
        self.model = _MODELS[0]
        self.thinking = "medium"
        self.stats = {
            "lines": 0,
            "branches": 0,
            "branchSummaries": 0,
            "compactions": 0,
            "labels": 0,
            "modelChanges": 0,
            "thinkingChanges": 0,
            "turns": 0,
        }
        self.out: list[str] = []

    # ---- helpers
    def new_id(self) -> str:
        while True:
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i

    def tick(self, lo_ms: int, hi_ms: int) -> int:
        self.now_ms += self.rng.randint(lo_ms, hi_ms)
        return self.now_ms

    @staticmethod
    def iso(ms: int) -> str:
        d = _dt.datetime.fromtimestamp(ms // 1000, _dt.UTC)
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"

    def uuid7(self) -> str:
        h = f"{self.now_ms:012x}" + "7" + f"{self.rng.getrandbits(12):03x}"
        h += f"{8 | self.rng.getrandbits(2):x}" + f"{self.rng.getrandbits(62 - 2):015x}"[:15]
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def call_id(self) -> str:
        r = self.rng
        if self.model[0] == "anthropic":
            return "toolu_01" + "".join(r.choices(_B62, k=22))
        return "call_" + "".join(r.choices(_B62, k=24))

    def sized(self, lo: int, hi: int) -> int:
        """Log-uniform size in [lo, hi]."""
        return int(math.exp(self.rng.uniform(math.log(lo), math.log(hi))))

    def emit(self, entry: dict[str, Any], *, user: bool = False) -> str:
        line = _dumps(entry) + "\n"
        n = len(line.encode("utf-8"))
        self.out.append(line)
        self.bytes_written += n
        self.since_compaction += n
        self.stats["lines"] += 1
        if entry["type"] != "session":
            self.leaf = entry["id"]
            cum = (self.path[-1][1] if self.path else 0) + n
            self.path.append((entry["id"], cum, user))
        eid: str = entry.get("id", "")
        return eid

    def base(self, type_: str, lo_ms: int = 50, hi_ms: int = 2000) -> dict[str, Any]:
        return {
            "type": type_,
            "id": self.new_id(),
            "parentId": self.leaf,
            "timestamp": self.iso(self.tick(lo_ms, hi_ms)),
        }

    def message(self, msg: dict[str, Any], lo_ms: int = 200, hi_ms: int = 5000) -> str:
        e = self.base("message", lo_ms, hi_ms)
        msg["timestamp"] = self.now_ms
        e["message"] = msg
        return self.emit(e, user=msg["role"] == "user")

    # ---- entries
    def header(self) -> None:
        self.emit(
            {
                "type": "session",
                "version": 3,
                "id": self.uuid7(),
                "timestamp": self.iso(self.now_ms),
                "cwd": "/home/dev/projects/webapp",
            }
        )

    def setup(self) -> None:
        self.model_change()
        self.thinking_change()
        tools = [
            {
                "name": n,
                "description": self.corpus.prose(self.sized(80, 400)),
                "parameters": {
                    "type": "object",
                    "properties": {p: {"type": "string", "description": self.corpus.sentence()} for p in ps},
                    "required": [ps[0]],
                },
            }
            for n, ps in (
                ("read", ["path", "offset", "limit"]),
                ("bash", ["command", "timeout"]),
                ("edit", ["path", "edits"]),
                ("write", ["path", "content"]),
                ("grep", ["pattern", "path"]),
                ("find", ["pattern", "path"]),
                ("ls", ["path"]),
            )
        ]
        sections = {
            "base": self.corpus.prose(3000),
            "environment": self.corpus.prose(400),
            "agents": self.corpus.prose(1500),
        }
        self.message({"role": "system", "content": "", "sections": sections, "toolsAdded": tools})

    def model_change(self) -> None:
        self.model = self.rng.choice(_MODELS)
        e = self.base("model_change")
        e["provider"], e["modelId"] = self.model[0], self.model[1]
        self.emit(e)
        self.stats["modelChanges"] += 1

    def thinking_change(self) -> None:
        self.thinking = self.rng.choice(_THINKING)
        e = self.base("thinking_level_change")
        e["thinkingLevel"] = self.thinking
        self.emit(e)
        self.stats["thinkingChanges"] += 1

    def usage(self, output: int) -> dict[str, Any]:
        r = self.rng
        ctx = max(2000, self.since_compaction // 4 + r.randint(3000, 9000))
        cache_read = int(ctx * r.uniform(0.7, 0.98)) if r.random() < 0.9 else 0
        inp = ctx - cache_read
        write = r.randint(0, 3000)
        return priced_usage(inp, output, cache_read, write)

    def assistant(self, content: list[dict[str, Any]], stop: str, extra: dict[str, Any] | None = None) -> str:
        provider, model, api = self.model
        out_tokens = sum(len(_dumps(b)) for b in content) // 4 + self.rng.randint(5, 60)
        request_start = self.tick(100, 1500)
        duration = self.rng.randint(1500, 40000)
        self.now_ms += duration
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": self.usage(out_tokens),
            "stopReason": stop,
            "timestamp": request_start,
        }
        if extra:
            msg.update(extra)
        msg["durationMs"] = duration
        e = {
            "type": "message",
            "id": self.new_id(),
            "parentId": self.leaf,
            "timestamp": self.iso(self.now_ms),
            "message": msg,
        }
        return self.emit(e)

    def thinking_block(self) -> dict[str, Any]:
        r = self.rng
        block: dict[str, Any] = {"type": "thinking", "thinking": self.corpus.prose(self.sized(80, 2500))}
        if self.model[0] == "anthropic":
            block["thinkingSignature"] = "".join(r.choices(_B64, k=self.sized(300, 1800)))
        return block

    def tool_call(self) -> tuple[dict[str, Any], str, str]:
        """A toolCall block plus the result text (and tool name) it will get."""
        r, c = self.rng, self.corpus
        k = r.random()
        size = self.sized(200, 20000)
        if k < 0.42:
            path, text, first = c.file_slice(size)
            args: dict[str, Any] = {"path": path}
            if r.random() < 0.4:
                args.update(offset=first, limit=text.count("\n") + 1)
            name = "read"
        elif k < 0.7:
            cmd = r.choice(
                [
                    f"npm test -- {r.choice(_WORDS)}",
                    f"rg -n '{c.ident()}' {r.choice(_DIRS)}",
                    "git diff --stat",
                    f"npx tsc --noEmit -p {r.choice(_DIRS)}",
                    "git log --oneline -20",
                    f"python -m pytest tests/test_{r.choice(_WORDS)}.py -x -q",
                ]
            )
            args = {"command": cmd}
            if r.random() < 0.2:
                args["timeout"] = r.choice([60, 120, 300])
            size = self.sized(200, 8000)  # command output is usually shorter than a file read
            text = c.grep_output(size) if r.random() < 0.6 else c.file_slice(size)[1]
            name = "bash"
        elif k < 0.85:
            path, old, first = c.file_slice(self.sized(40, 1500))
            new = (
                old.replace(r.choice(_WORDS), r.choice(_WORDS)) + "\n" + c.file_slice(self.sized(20, 800))[1]
            )
            args = {"path": path, "edits": [{"oldText": old, "newText": new}]}
            text = f"Successfully replaced 1 block(s) in {path}."
            name = "edit"
        elif k < 0.92:
            path, content, _ = c.file_slice(self.sized(300, 12000))
            args = {"path": path, "content": content}
            text = f"Successfully wrote {len(content.encode())} bytes to {path}"
            name = "write"
        else:
            name = r.choice(["grep", "find", "ls"])
            args = (
                {"pattern": c.ident(), "path": r.choice(_DIRS)} if name != "ls" else {"path": r.choice(_DIRS)}
            )
            text = c.grep_output(size) if name == "grep" else "\n".join(p for p, _ in r.sample(c.files, 40))
        return {"type": "toolCall", "id": self.call_id(), "name": name, "arguments": args}, text, name

    def tool_result(self, call: dict[str, Any], text: str, name: str) -> None:
        r = self.rng
        err = r.random() < 0.04
        msg: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": name,
            "content": [{"type": "text", "text": ("Error: " if err else "") + text}],
        }
        if name == "edit" and not err:
            old = call["arguments"]["edits"][0]["oldText"].split("\n")
            new = call["arguments"]["edits"][0]["newText"].split("\n")
            diff = "\n".join([f"-{ln}" for ln in old[:40]] + [f"+{ln}" for ln in new[:60]])
            msg["details"] = {"diff": diff, "firstChangedLine": r.randint(1, 400)}
        msg["isError"] = err
        self.message(msg, 5, 8000)

    def turn(self) -> None:
        r, c = self.rng, self.corpus
        self.stats["turns"] += 1
        text = c.prose(self.sized(30, 1500))
        if r.random() < 0.15:
            text += "\n\n```\n" + c.file_slice(self.sized(100, 3000))[1] + "\n```"
        self.message({"role": "user", "content": [{"type": "text", "text": text}]}, 5000, 300000)
        if r.random() < 0.02:  # an aborted / failed request before the real answer
            stop = r.choice(["aborted", "error"])
            extra = {
                "errorMessage": "Request was aborted"
                if stop == "aborted"
                else "529 overloaded_error: Overloaded"
            }
            self.assistant([], stop, extra)
        for _ in range(r.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8])):
            blocks: list[dict[str, Any]] = []
            if self.thinking != "off" and r.random() < 0.6:
                blocks.append(self.thinking_block())
            if r.random() < 0.5:
                blocks.append({"type": "text", "text": c.prose(self.sized(30, 400))})
            calls = [self.tool_call() for _ in range(r.choice([1, 1, 1, 2, 3]))]
            blocks.extend(b for b, _, _ in calls)
            self.assistant(blocks, "toolUse")
            for call, result, name in calls:
                self.tool_result(call, result, name)
        blocks = []
        if self.thinking != "off" and r.random() < 0.5:
            blocks.append(self.thinking_block())
        answer = c.prose(self.sized(60, 2500))
        if r.random() < 0.25:
            answer += "\n\n```ts\n" + c.file_slice(self.sized(100, 2000))[1] + "\n```\n"
        blocks.append({"type": "text", "text": answer})
        self.assistant(blocks, "stop")
        if r.random() < 0.02:
            e = self.base("message", 1000, 60000)
            cmd = f"git status --short {r.choice(_DIRS)}"
            e["message"] = {
                "role": "bashExecution",
                "command": cmd,
                "output": c.grep_output(self.sized(50, 3000)),
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
                "timestamp": self.now_ms,
            }
            self.emit(e)

    def compaction(self) -> None:
        """Compact the current branch, keeping roughly the last 80 KB (about 20k tokens)."""
        tail = self.path[-1][1]
        keep = None
        for i in range(len(self.path) - 1, self.last_compaction_pos, -1):
            eid, cum, user = self.path[i]
            if user and tail - cum >= 80_000:
                keep = eid
                break
        if keep is None:
            return
        e = self.base("compaction", 20000, 90000)
        c = self.corpus
        e["summary"] = (
            "## Goal\n"
            + c.prose(400)
            + "\n\n## Progress\n"
            + c.prose(self.sized(1500, 6000))
            + "\n\n## Next Steps\n"
            + c.prose(500)
        )
        e["firstKeptEntryId"] = keep
        e["tokensBefore"] = self.since_compaction // 4
        e["details"] = {
            "readFiles": sorted({p for p, _ in self.rng.sample(c.files, 12)}),
            "modifiedFiles": sorted({p for p, _ in self.rng.sample(c.files, 5)}),
        }
        self.emit(e)
        self.since_compaction = tail - next(cum for eid, cum, _ in self.path if eid == keep)
        self.last_compaction_pos = len(self.path) - 1
        self.stats["compactions"] += 1

    def branch(self) -> None:
        """Move the leaf back to before a recent user message and continue from there."""
        users = [i for i in range(self.last_compaction_pos + 1, len(self.path)) if self.path[i][2]]
        if len(users) < 3:
            return
        i = self.rng.choice(users[-6:-1])
        old_leaf = self.leaf
        back_bytes = self.path[-1][1] - self.path[i - 1][1]
        del self.path[i:]
        self.leaf = self.path[-1][0]
        self.since_compaction = max(0, self.since_compaction - back_bytes)
        self.stats["branches"] += 1
        if self.rng.random() < 0.5:
            e = self.base("branch_summary", 2000, 20000)
            e["fromId"] = old_leaf
            e["summary"] = "## Abandoned approach\n" + self.corpus.prose(self.sized(300, 2500))
            self.emit(e)
            self.stats["branchSummaries"] += 1

    def label(self) -> None:
        users = [p[0] for p in self.path if p[2]]
        e = self.base("label")
        e["targetId"] = self.rng.choice(users[-20:])
        if self.rng.random() < 0.85:
            e["label"] = self.rng.choice(
                ["checkpoint", "before-refactor", "works", "bug-repro", "v2 api", "✓ green"]
            )
        self.emit(e)
        self.stats["labels"] += 1

    def session_info(self) -> None:
        e = self.base("session_info")
        e["name"] = f"{self.corpus.ident()}: {self.corpus.sentence()[:60]}"
        self.emit(e)

    def generate(self, target_bytes: int, write: Any) -> None:
        r = self.rng
        self.header()
        self.setup()
        n = 0
        while self.bytes_written < target_bytes:
            self.turn()
            n += 1
            if n == 1 or r.random() < 0.003:
                self.session_info()
            if self.since_compaction > 700_000:
                self.compaction()
            k = r.random()
            if k < 0.05 or (n == 12 and not self.stats["branches"]):
                self.branch()
            elif k < 0.08 or (n == 8 and not self.stats["labels"]):
                self.label()
            elif k < 0.09:
                self.model_change()
            elif k < 0.10:
                self.thinking_change()
            if len(self.out) > 2000:
                write("".join(self.out))
                self.out.clear()
        write("".join(self.out))
        self.out.clear()


def session_file(out_dir: Path, size_mb: float, seed: int) -> Path:
    return out_dir / f"pi-v3-{size_mb:g}mb-seed{seed}-g{GEN_VERSION}.jsonl"


def ensure_session(
    out_dir: Path, size_mb: float, seed: int, log: Callable[[str], None]
) -> tuple[Path, dict[str, Any]]:
    """Generate (or reuse) the session file of ``size_mb`` MiB for ``seed``."""
    path = session_file(out_dir, size_mb, seed)
    meta_path = path.with_suffix(".meta.json")
    target = int(size_mb * MIB)
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if path.stat().st_size == meta.get("bytes") and meta.get("target") == target:
            return path, meta
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"generating {path.name} ...")
    t0 = time.perf_counter()
    gen = Generator(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        gen.generate(target, f.write)
    os.replace(tmp, path)
    meta = {
        "bytes": path.stat().st_size,
        "target": target,
        "seed": seed,
        "generator": GEN_VERSION,
        **gen.stats,
    }
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    log(f"  {meta['bytes'] / MIB:.1f} MiB, {meta['lines']} lines in {time.perf_counter() - t0:.1f} s")
    return path, meta
