#!/usr/bin/env python3
"""Cold ``inspect`` (load + context) of 1, 10 and 50 MB Pi sessions: sessiond vs. the floor vs. Pi.

For each generated session file, every method runs in a fresh process (best of ``--runs``):

* ``orjson floor`` - read the bytes, ``split(b"\\n")``, ``orjson.loads`` every non-empty line
  (objects kept in a list): what merely parsing every line costs, the reference.
* ``sessiond core`` - ``load_session`` + ``SessionTree`` + ``project(tree.context_path())``,
  timed inside the child after its imports (the imports are the separate "imports" figure).
* ``sessiond CLI`` - wall time of ``sessiond inspect --jsonl FILE > /dev/null`` (interpreter
  start, imports, the whole inspect report and its JSON output).
* ``Pi core`` - ``benchmarks/pi_load.mjs`` in a fresh ``node``: Pi 1.6.0's own
  ``SessionManager.open()`` + ``buildSessionContext()``, timed after its imports, from a
  pi-oracle install (``--oracle``; skipped with a note when there is none).

Goal (issue): 50 MB load + context no slower than Pi's own code (``core/Pi`` <= 1.0).

Run: ``.venv/bin/python benchmarks/inspect.py [--sizes 1,10,50] [--runs 3] [--quick] [--json]``.
Generated sessions are cached in ``benchmarks/out/`` (gitignored), named by size, seed and
generator version. See ``benchmarks/README.md`` for the columns.
"""

# This file is named like the stdlib module ``inspect``: keep its directory off sys.path so
# that stdlib imports (dataclasses -> inspect, ...) get the real module.
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.append(_HERE)  # last: the stdlib's inspect wins, our sibling modules are still found

import argparse  # noqa: E402
import datetime as _dt  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pi_oracle import find_oracle  # noqa: E402

REPO = Path(_HERE).parent
OUT_DIR = Path(_HERE) / "out"
MIB = 1 << 20
GEN_VERSION = 1
"""Bump when the generator changes: cached files are named with it."""

# --------------------------------------------------------------------------- child programs
# Each runs as ``python -c CODE FILE`` in a fresh interpreter with cwd = repo root and prints
# one JSON line. ru_maxrss is KiB on Linux. "base" = peak RSS right after the imports.

FLOOR_CHILD = r"""
import sys, time, resource
t0 = time.perf_counter()
import orjson
t1 = time.perf_counter()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = sys.argv[1]
t2 = time.perf_counter()
with open(path, "rb") as f:
    data = f.read()
loads = orjson.loads
values = [loads(line) for line in data.split(b"\n") if line]
t3 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stdout.write(orjson.dumps({
    "importMs": (t1 - t0) * 1e3, "coreMs": (t3 - t2) * 1e3, "lines": len(values),
    "baseRssKB": base, "maxRssKB": peak,
}).decode() + "\n")
"""

CORE_CHILD = r"""
import sys, time, resource
t0 = time.perf_counter()
from sessiond.formats.pi import load_session
from sessiond.model.tree import SessionTree
from sessiond.model.projection import project
import orjson
t1 = time.perf_counter()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = sys.argv[1]
t2 = time.perf_counter()
loaded = load_session(path)
t3 = time.perf_counter()
tree = SessionTree(loaded.entries)
ctx_path = tree.context_path()
t4 = time.perf_counter()
projection = project(ctx_path)
t5 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stdout.write(orjson.dumps({
    "importMs": (t1 - t0) * 1e3, "coreMs": (t5 - t2) * 1e3,
    "loadMs": (t3 - t2) * 1e3, "treeMs": (t4 - t3) * 1e3, "projectMs": (t5 - t4) * 1e3,
    "entries": len(loaded.entries), "contextMessages": len(projection.messages),
    "leafId": tree.leaf_id, "baseRssKB": base, "maxRssKB": peak,
}).decode() + "\n")
"""

PROFILE_CHILD = r"""
import sys, cProfile, pstats
from sessiond.formats.pi import load_session
from sessiond.model.tree import SessionTree
from sessiond.model.projection import project
path, top = sys.argv[1], int(sys.argv[2])
def core():
    loaded = load_session(path)
    tree = SessionTree(loaded.entries)
    return project(tree.context_path())
prof = cProfile.Profile()
prof.runcall(core)
stats = pstats.Stats(prof, stream=sys.stdout)
stats.strip_dirs()
print("== by cumulative time ==")
stats.sort_stats("cumulative").print_stats(top)
print("== by own time ==")
stats.sort_stats("tottime").print_stats(top)
"""


# --------------------------------------------------------------------------- generator
# Deterministic (seeded), stdlib only. Pi v3 lines, key order per docs/pi-format.md §1.3, written like
# JSON.stringify (compact, non-ASCII unescaped).

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


class _Corpus:
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


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.corpus = _Corpus(self.rng)
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
        return entry.get("id", "")

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
        cost = {
            "input": round(inp * 3e-6, 6),
            "output": round(output * 15e-6, 6),
            "cacheRead": round(cache_read * 3e-7, 6),
            "cacheWrite": round(write * 3.75e-6, 6),
        }
        cost["total"] = round(sum(cost.values()), 6)
        return {
            "input": inp,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": write,
            "totalTokens": inp + output + cache_read + write,
            "cost": cost,
        }

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


def ensure_session(out_dir: Path, size_mb: float, seed: int, log: Any) -> tuple[Path, dict[str, Any]]:
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
    gen = _Generator(seed)
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


# --------------------------------------------------------------------------- running children


# Linux keeps a process's peak RSS across execve(), and a spawned child starts from its
# parent's RSS: spawned directly from this (large) process, every child's ru_maxrss would be at
# least ours. So each run goes through this minimal launcher (python -S, ~8 MiB), which forks,
# execs the command and reports wall time and the child's ru_maxrss from wait4().
LAUNCHER = r"""
import os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
t1 = time.perf_counter()
code = os.waitstatus_to_exitcode(status)
with open(report, "w") as f:
    f.write('{"wallMs": %r, "waitMaxRssKB": %d, "exit": %d}' % ((t1 - t0) * 1e3, ru.ru_maxrss, code))
sys.exit(code)
"""


def run_child(cmd: list[str], *, capture: bool = True) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process: wall ms and peak RSS (wait4), plus its JSON stdout."""
    with tempfile.TemporaryDirectory(prefix="sessiond-bench-") as tmp:
        report = os.path.join(tmp, "report.json")
        out_path = os.path.join(tmp, "stdout")
        err_path = os.path.join(tmp, "stderr")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.run(
                [sys.executable, "-S", "-c", LAUNCHER, report, *cmd],
                stdout=out if capture else subprocess.DEVNULL,
                stderr=err,
                cwd=REPO,
                check=False,
            )
        if proc.returncode != 0:
            with open(err_path, "rb") as f:
                tail = f.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(cmd[:2])} ... exited {proc.returncode}:\n{tail}")
        with open(report) as f:
            result: dict[str, Any] = {}
            launched = json.load(f)
        if capture:
            with open(out_path, "rb") as f:
                result = json.loads(f.read().decode().strip().splitlines()[-1])
    result["wallMs"] = launched["wallMs"]
    result["waitMaxRssKB"] = launched["waitMaxRssKB"]
    return result


def find_cli() -> str | None:
    for c in (Path(sys.executable).parent / "sessiond", REPO / ".venv/bin/sessiond"):
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("sessiond")


METHODS = ("floor", "core", "cli", "pi")
LABELS = {"floor": "orjson floor", "core": "sessiond core", "cli": "sessiond CLI", "pi": "Pi core (node)"}


def measure(
    path: Path, runs: int, pi_pkg: Path | None, node: str | None, cli: str | None, log: Any
) -> dict[str, list[dict[str, Any]]]:
    py = sys.executable
    cmds: dict[str, list[str]] = {
        "floor": [py, "-c", FLOOR_CHILD, str(path)],
        "core": [py, "-c", CORE_CHILD, str(path)],
    }
    if cli:
        cmds["cli"] = [cli, "inspect", "--jsonl", str(path)]
    if pi_pkg and node:
        cmds["pi"] = [node, str(Path(_HERE) / "pi_load.mjs"), str(pi_pkg), str(path)]
    with open(path, "rb") as f:  # the page cache is warm for every method alike
        while f.read(MIB):
            pass
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in cmds}
    for i in range(runs):  # interleaved, so drift hits every method alike
        for m, cmd in cmds.items():
            results[m].append(run_child(cmd, capture=m != "cli"))
        log(
            f"  run {i + 1}/{runs}: "
            + ", ".join(f"{m} {r[-1].get('coreMs', r[-1]['wallMs']):.0f} ms" for m, r in results.items())
        )
    return results


def summarize(path: Path, meta: dict[str, Any], raw: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    size_mib = path.stat().st_size / MIB
    s: dict[str, Any] = {
        "file": str(path),
        "bytes": path.stat().st_size,
        "mib": size_mib,
        "generator": meta,
        "methods": {},
        "ratios": {},
        "checks": [],
    }
    for m, runs in raw.items():
        best = min(runs, key=lambda r: r.get("coreMs", r["wallMs"]))
        peak_kb = max(max(r.get("maxRssKB", 0), r["waitMaxRssKB"]) for r in runs)
        d: dict[str, Any] = {
            "timeMs": best.get("coreMs", best["wallMs"]),
            "wallMs": min(r["wallMs"] for r in runs),
            "peakRssMiB": peak_kb / 1024,
            "rssPerMiB": peak_kb / 1024 / size_mib,
            "runs": runs,
        }
        if "importMs" in best:
            d["importMs"] = min(r["importMs"] for r in runs)
            d["otherMs"] = min(r["wallMs"] - r["coreMs"] for r in runs)  # boot, imports, output, exit
        base_kb = best.get("baseRssKB", best.get("maxRssAfterImportKB"))
        if base_kb is not None:
            d["baseRssMiB"] = base_kb / 1024
            d["deltaRssPerMiB"] = (peak_kb - base_kb) / 1024 / size_mib
        for k in ("loadMs", "treeMs", "projectMs", "openMs", "contextMs"):
            if k in best:
                d[k] = best[k]
        for k in ("entries", "contextMessages", "leafId", "lines"):
            if k in best:
                d[k] = best[k]
        s["methods"][m] = d
    ms = s["methods"]
    s["entries"] = ms.get("core", {}).get("entries", meta.get("lines", 1) - 1)
    s["contextMessages"] = ms.get("core", {}).get("contextMessages")
    ratios = s["ratios"]
    if "core" in ms:
        ratios["coreOverFloor"] = ms["core"]["timeMs"] / ms["floor"]["timeMs"]
    if "core" in ms and "pi" in ms:
        ratios["coreOverPi"] = ms["core"]["timeMs"] / ms["pi"]["timeMs"]
        for k in ("entries", "contextMessages", "leafId"):
            if ms["core"].get(k) != ms["pi"].get(k):
                s["checks"].append(f"{k}: sessiond {ms['core'].get(k)!r} != Pi {ms['pi'].get(k)!r}")
    if "cli" in ms and "pi" in ms:
        ratios["cliWallOverPiWall"] = ms["cli"]["wallMs"] / ms["pi"]["wallMs"]
    if "core" in ms and "pi" in ms:
        ratios["coreRssOverPiRss"] = ms["core"]["peakRssMiB"] / ms["pi"]["peakRssMiB"]
    return s


# --------------------------------------------------------------------------- output


def _fmt(v: Any, spec: str = ".0f") -> str:
    return "-" if v is None else format(v, spec)


def print_table(results: list[dict[str, Any]], runs: int, pi_note: str, cli_note: str | None) -> None:
    p = print
    p(
        f"\nsessiond inspect benchmark: cold process per run, best of {runs} "
        f"(time = best run; RSS = max over runs); {pi_note}"
    )
    if cli_note:
        p(cli_note)
    for s in results:
        p(
            f"\n{Path(s['file']).name}: {s['mib']:.1f} MiB, {s['entries']} entries, "
            f"{s['contextMessages']} context messages"
        )
        p(
            f"  {'method':<15} {'time ms':>9} {'imports ms':>10} {'wall ms':>9} {'peak RSS MiB':>12} "
            f"{'base RSS MiB':>12} {'RSS/MiB':>8} {'ΔRSS/MiB':>9}   detail"
        )
        for m in METHODS:
            d = s["methods"].get(m)
            if d is None:
                p(f"  {LABELS[m]:<15} {'(skipped)':>9}")
                continue
            if m == "core":
                detail = f"load {d['loadMs']:.0f} + tree {d['treeMs']:.0f} + project {d['projectMs']:.0f}"
            elif m == "pi":
                detail = f"open {d['openMs']:.0f} + context {d['contextMs']:.0f}"
            elif m == "cli":
                detail = "inspect --jsonl > /dev/null, whole process"
            else:
                detail = f"{d['lines']} lines"
            p(
                f"  {LABELS[m]:<15} {d['timeMs']:>9.0f} {_fmt(d.get('importMs')):>10} {d['wallMs']:>9.0f} "
                f"{d['peakRssMiB']:>12.1f} {_fmt(d.get('baseRssMiB'), '.1f'):>12} {d['rssPerMiB']:>8.2f} "
                f"{_fmt(d.get('deltaRssPerMiB'), '.2f'):>9}   {detail}"
            )
        for c in s["checks"]:
            p(f"  MISMATCH {c}")
    p("\nsummary (ratios < 1.00 = sessiond faster / smaller)")
    p(
        f"  {'MiB':>5} {'entries':>8} {'floor ms':>9} {'core ms':>8} {'Pi ms':>7} {'core/floor':>10} "
        f"{'core/Pi':>8} {'CLI wall/Pi wall':>16} {'core RSS/Pi RSS':>15} "
        f"{'core RSS/MiB':>12} {'Pi RSS/MiB':>10}"
    )
    for s in results:
        ms, r = s["methods"], s["ratios"]
        pi = ms.get("pi", {})
        p(
            f"  {s['mib']:>5.1f} {s['entries']:>8} "
            f"{ms['floor']['timeMs']:>9.0f} {ms['core']['timeMs']:>8.0f} "
            f"{_fmt(pi.get('timeMs')):>7} {r['coreOverFloor']:>9.2f}x {_fmt(r.get('coreOverPi'), '.2f'):>7}x "
            f"{_fmt(r.get('cliWallOverPiWall'), '.2f'):>15}x {_fmt(r.get('coreRssOverPiRss'), '.2f'):>14}x "
            f"{ms['core']['rssPerMiB']:>12.2f} {_fmt(pi.get('rssPerMiB'), '.2f'):>10}"
        )
    big = max(results, key=lambda s: s["mib"])
    if "coreOverPi" in big["ratios"]:
        ok = big["ratios"]["coreOverPi"] <= 1.0
        p(
            f"\ngoal (largest file, {big['mib']:.0f} MiB: sessiond load+context no slower than Pi): "
            f"{'MET' if ok else 'NOT MET'} (core/Pi = {big['ratios']['coreOverPi']:.2f}x)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--sizes", default="1,10,50", help="session sizes in MiB, comma-separated (default 1,10,50)"
    )
    ap.add_argument(
        "--runs", type=int, default=3, help="fresh-process runs per method and size; best is kept (default 3)"
    )
    ap.add_argument("--quick", action="store_true", help="only 1 and 10 MiB, 1 run")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument(
        "--oracle",
        metavar="DIR",
        help="pi-oracle install dir (default: $PI_ORACLE_DIR, <repo>/.cache/pi-oracle, /tmp/pi-oracle)",
    )
    ap.add_argument("--out", metavar="DIR", default=str(OUT_DIR), help="cache dir for generated sessions")
    ap.add_argument(
        "--json", action="store_true", help="print machine-readable results (JSON) instead of tables"
    )
    ap.add_argument(
        "--json-out", metavar="PATH", help="also write the JSON results to PATH (report printed as usual)"
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile sessiond's core step on the largest file (top 10 functions)",
    )
    ap.add_argument("--generate-only", action="store_true", help="only generate the session files")
    args = ap.parse_args(argv)

    sizes = [1.0, 10.0] if args.quick else [float(x) for x in args.sizes.split(",") if x.strip()]
    runs = 1 if args.quick else max(1, args.runs)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    files = [ensure_session(Path(args.out), size, args.seed, log) for size in sizes]
    if args.generate_only:
        for path, meta in files:
            print(f"{path}  {meta['bytes'] / MIB:.1f} MiB  {meta['lines']} lines")
        return 0

    pi_pkg, pi_note = find_oracle(args.oracle)
    node = shutil.which("node")
    if pi_pkg and not node:
        pi_pkg, pi_note = None, "node not found on PATH: Pi column skipped"
    elif not pi_pkg:
        pi_note += ": Pi column skipped"
    cli = find_cli()
    cli_note = None if cli else "sessiond executable not found next to this Python: CLI row skipped"
    log(pi_note)

    results = []
    for path, meta in files:
        log(f"{path.name}:")
        raw = measure(path, runs, pi_pkg, node, cli, log)
        results.append(summarize(path, meta, raw))

    profile_text = None
    if args.profile:
        big = max(files, key=lambda f: f[1]["bytes"])[0]
        log(f"profiling sessiond core on {big.name} ...")
        proc = subprocess.run(
            [sys.executable, "-c", PROFILE_CHILD, str(big), "10"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        profile_text = proc.stdout

    res = {
        "python": sys.version.split()[0],
        "runs": runs,
        "seed": args.seed,
        "pi": pi_note,
        "results": results,
        "profile": profile_text,
    }
    if args.json_out:  # for run_all.py: machine-readable results beside the human report
        Path(args.json_out).write_text(json.dumps(res, indent=1) + "\n")
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print_table(results, runs, pi_note, cli_note)
        if profile_text:
            print("\ncProfile of sessiond core (load + tree + project) on the largest file:")
            print(profile_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
