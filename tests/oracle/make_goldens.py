"""Regenerate the Pi-oracle golden files under tests/golden/.

    .venv/bin/python -m tests.oracle.make_goldens [--oracle .cache/pi-oracle] [--count 220] [--seed 1]
                                                  [--refresh-fixtures]

1. tests/golden/generated/gen-*.jsonl  <- generate_sessions.generate(random.Random(seed + i), i)
2. tests/golden/fixtures/<name>.jsonl.gz <- Pi's migrated (v1 -> v3) copy of each
   tests/fixtures/pi/*.v1.jsonl, as written by the harness (--emit). Migration assigns
   RANDOM ids, so existing copies are kept unless --refresh-fixtures is given (or one is missing).
3. tests/golden/oracle/<variant>.jsonl[.gz] <- harness results (one JSON object per line, sorted
   by file basename, "file" = basename) for every generated file and every migrated fixture, in
   the variants below.
4. Prints a coverage summary (and exits non-zero if the harness reported errors or a generated
   line is not what JSON.stringify would write).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.conftest import GOLDEN, PI_FIXTURES, REPO
from tests.oracle.compare import VARIANT_ARGS as VARIANTS
from tests.oracle.generate_sessions import generate
from tests.oracle.pi import harness_command

GENERATED = GOLDEN / "generated"
FIXTURES = GOLDEN / "fixtures"
ORACLE_OUT = GOLDEN / "oracle"
FIXTURE_SRC = PI_FIXTURES
GZIP_THRESHOLD = 10 * 1024 * 1024  # total bytes of the three oracle outputs
PI_PACKAGE = Path("node_modules") / "@earendil-works" / "pi-coding-agent" / "package.json"

# Checks that every parseable line is byte-identical to JSON.stringify(JSON.parse(line)).
STRINGIFY_CHECK_JS = r"""
const fs = require("fs");
let bad = 0, checked = 0;
for (const f of process.argv.slice(1)) {
  const lines = fs.readFileSync(f, "utf8").split("\n");
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let v;
    try { v = JSON.parse(line); } catch { return; }
    checked++;
    const again = JSON.stringify(v);
    if (again !== line && again !== line.replace(/\r+$/, "")) {
      bad++;
      if (bad <= 5) console.error(`${f}:${i + 1}: not JSON.stringify output`,
                                  `\n  file: ${line.slice(0, 200)}\n  js:   ${again.slice(0, 200)}`);
    }
  });
}
console.log(JSON.stringify({ checked, bad }));
"""


def run_harness(oracle: Path, args: list[str], files: list[Path]) -> subprocess.Popen[str]:
    cmd = harness_command(oracle, *args, "--jsonl", *map(str, files))
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")


def collect(proc: subprocess.Popen[str], what: str) -> list[str]:
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"harness failed for {what} (exit {proc.returncode}):\n{err[-4000:]}")
    return [line for line in out.split("\n") if line]


# JSON.stringify leaves these unescaped, but Python's str.splitlines() (and some editors) break
# lines on them. They can only occur inside JSON strings, so escaping them is JSON-equivalent.
LINE_BREAKERS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def rebase(line: str) -> tuple[str, str, dict[str, Any]]:
    """Replace the absolute "file" path by its basename, keeping Pi's bytes otherwise
    (except that U+2028/U+2029/U+0085 are written as JSON escapes)."""
    obj = json.loads(line)
    prefix = '{"file":' + json.dumps(obj["file"], ensure_ascii=False)
    if not line.startswith(prefix):
        raise SystemExit(f"unexpected harness output: {line[:200]}")
    base = Path(obj["file"]).name
    obj["file"] = base
    out = '{"file":' + json.dumps(base, ensure_ascii=False) + line[len(prefix) :]
    for ch, esc in LINE_BREAKERS.items():
        out = out.replace(ch, esc)
    if json.loads(out) != obj:
        raise SystemExit(f"rebasing changed the harness result for {base}")
    return base, out, obj


# --------------------------------------------------------------------------- features

EMOJI_CJK = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]")


def _reject(name: str) -> Any:
    raise ValueError(name)


def parse_lines(text: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Pi-like tolerant parse: split on \\n, skip blank lines, skip lines JSON.parse rejects."""
    stats: collections.Counter[str] = collections.Counter()
    entries: list[dict[str, Any]] = []
    for line in text.split("\n"):
        if not line.strip(" \t\r\n\ufeff\u00a0"):
            stats["blank"] += 1
            continue
        try:
            v = json.loads(line, parse_constant=_reject)
        except ValueError:
            stats["junk"] += 1
            if not entries:
                stats["leading_junk"] += 1
            continue
        entries.append(v)
    return entries, stats


def file_features(text: str) -> set[str]:
    feats: set[str] = set()
    entries, stats = parse_lines(text)
    if stats["junk"] - stats["leading_junk"]:
        feats.add("junk lines")
    if stats["leading_junk"]:
        feats.add("leading junk")
    if stats["blank"] > 1 or "\n\n" in text:
        feats.add("blank/whitespace lines")
    if not text.endswith("\n"):
        feats.add("torn tail (no final newline)")
    if "\r\n" in text:
        feats.add("CRLF lines")
    if EMOJI_CJK.search(text):
        feats.add("emoji/CJK")
    if "<|endoftext|>" in text:
        feats.add("<|endoftext|>")
    if "\u2028" in text or "\u2029" in text:
        feats.add("U+2028/2029")
    body = entries[1:]
    ids = [e.get("id") for e in body]
    idset = set(ids)
    if len(ids) != len(idset):
        feats.add("duplicate ids")
    if len(body) >= 100:
        feats.add(">=100 entries")
    children: collections.Counter[Any] = collections.Counter()
    roots = 0
    compactions = 0
    for e in body:
        t = e.get("type")
        p = e.get("parentId")
        if p is None:
            roots += 1
        elif p not in idset:
            feats.add("orphans")
        children[p] += 1
        ts = e.get("timestamp")
        if not (isinstance(ts, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", ts)):
            feats.add("bad timestamps")
        if t == "message":
            m = e.get("message") or {}
            role = m.get("role")
            feats.add(f"role {role}")
            if "content" in m and m["content"] is None:
                feats.add("null content")
            c = m.get("content")
            if isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in c):
                feats.add("images")
            if role == "assistant" and "too long" in str(m.get("errorMessage", "")):
                feats.add("overflow error")
            if role == "toolResult" and "nestedCalls" in m:
                feats.add("nestedCalls")
            if role == "bashExecution" and m.get("exitCode") is None:
                feats.add("bash exitCode null")
        elif t == "compaction":
            compactions += 1
            feats.add("compaction")
            if e.get("firstKeptEntryId") == e.get("id"):
                feats.add("retain-none compaction")
            if e.get("firstKeptEntryId") not in idset:
                feats.add("compaction firstKept unknown id")
            if "systemMessage" in e:
                feats.add("compaction systemMessage")
            if e.get("fromHook"):
                feats.add("compaction fromHook")
        elif t == "context_edit":
            feats.add("context_edit")
            feats.add("context_edit null" if e.get("replacement") is None else "context_edit content")
        elif t == "label":
            feats.add("label")
            if not e.get("label"):
                feats.add("label clear")
        elif t in (
            "branch_summary",
            "session_info",
            "custom",
            "custom_message",
            "usage",
            "model_change",
            "thinking_level_change",
        ):
            feats.add(t)
            if t == "branch_summary" and not e.get("summary"):
                feats.add("empty branch_summary")
        else:
            feats.add("unknown entry type")
        known = {
            "type",
            "id",
            "parentId",
            "timestamp",
            "message",
            "thinkingLevel",
            "provider",
            "modelId",
            "kind",
            "model",
            "usage",
            "note",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "fromHook",
            "systemMessage",
            "fromId",
            "customType",
            "data",
            "content",
            "display",
            "targetId",
            "label",
            "name",
            "replacement",
        }
        if set(e) - known and t not in (
            "decision",
            "model_change_rejected",
            "configuration_update",
            "title",
            "bookmark",
        ):
            feats.add("unknown extra fields")
    if roots > 1 or any(n > 1 for n in children.values()):
        feats.add("branches (fan-out or several roots)")
    if compactions > 1:
        feats.add("several compactions")
    if body and body[-1].get("type") == "compaction" and text.endswith("\n"):
        feats.add("last entry is a compaction")
    dup_edits = collections.Counter(e.get("targetId") for e in body if e.get("type") == "context_edit")
    if any(n > 1 for n in dup_edits.values()):
        feats.add("several edits of one target")
    return feats


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Regenerate tests/golden (generated sessions + Pi oracle outputs)"
    )
    ap.add_argument("--oracle", type=Path, default=REPO / ".cache" / "pi-oracle", help="Pi's install")
    ap.add_argument("--count", type=int, default=220)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--refresh-fixtures",
        action="store_true",
        help="re-migrate the v1 fixtures with Pi (new random ids) even if copies exist",
    )
    args = ap.parse_args(argv)
    oracle: Path = args.oracle
    if not (oracle / PI_PACKAGE).exists():
        raise SystemExit(f"Pi is not installed in {oracle} (run scripts/setup-oracle)")

    # 1. generated sessions
    GENERATED.mkdir(parents=True, exist_ok=True)
    for old in GENERATED.glob("gen-*.jsonl"):
        old.unlink()
    gen_files: list[Path] = []
    for i in range(args.count):
        path = GENERATED / f"gen-{i:04d}.jsonl"
        path.write_bytes(generate(random.Random(args.seed + i), i).encode("utf-8"))
        gen_files.append(path)

    with tempfile.TemporaryDirectory(prefix="make-goldens-") as tmp_s:
        tmp = Path(tmp_s)

        # 2. migrated fixtures
        FIXTURES.mkdir(parents=True, exist_ok=True)
        sources = sorted(FIXTURE_SRC.glob("*.v1.jsonl"))
        if not sources:
            raise SystemExit(f"no fixtures in {FIXTURE_SRC}")
        todo = [s for s in sources if args.refresh_fixtures or not (FIXTURES / f"{s.name}.gz").exists()]
        if todo:
            emit = tmp / "emit"
            for line in collect(run_harness(oracle, ["--emit", str(emit)], todo), "fixture migration"):
                obj = json.loads(line)
                if "error" in obj:
                    raise SystemExit(f"harness error on {obj['file']}: {obj['error']}")
            for s in todo:
                data = (emit / s.name).read_bytes()
                (FIXTURES / f"{s.name}.gz").write_bytes(gzip.compress(data, mtime=0))
        fixture_copies: list[Path] = []
        for gz in sorted(FIXTURES.glob("*.jsonl.gz")):
            out = tmp / "fixtures" / gz.name[: -len(".gz")]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(gzip.decompress(gz.read_bytes()))
            fixture_copies.append(out)

        # 3. oracle outputs
        inputs = gen_files + fixture_copies
        procs = {name: run_harness(oracle, vargs, inputs) for name, vargs in VARIANTS.items()}
        check = subprocess.Popen(
            ["node", "-e", STRINGIFY_CHECK_JS, *map(str, gen_files)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        results: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
        for name, proc in procs.items():
            rows = sorted((rebase(line) for line in collect(proc, name)), key=lambda r: r[0])
            if [r[0] for r in rows] != sorted(p.name for p in inputs):
                raise SystemExit(f"{name}: harness returned {len(rows)} results for {len(inputs)} files")
            results[name] = rows
        check_out, check_err = check.communicate()

    ORACLE_OUT.mkdir(parents=True, exist_ok=True)
    blobs = {name: ("\n".join(r[1] for r in rows) + "\n").encode("utf-8") for name, rows in results.items()}
    compress = sum(len(b) for b in blobs.values()) > GZIP_THRESHOLD
    for name, blob in blobs.items():
        plain, gz = ORACLE_OUT / f"{name}.jsonl", ORACLE_OUT / f"{name}.jsonl.gz"
        plain.unlink(missing_ok=True)
        gz.unlink(missing_ok=True)
        if compress:
            gz.write_bytes(gzip.compress(blob, mtime=0))
        else:
            plain.write_bytes(blob)
    pi_version = results["plain"][0][2].get("piVersion", "?")
    write_readme(pi_version, compress, args)

    # 4. summary
    print(
        f"files: {len(gen_files)} generated + {len(fixture_copies)} migrated fixtures "
        f"({', '.join(p.name for p in fixture_copies)}); Pi {pi_version}"
    )
    stringify = json.loads(check_out.strip().splitlines()[-1]) if check_out.strip() else {"bad": -1}
    if check_err.strip():
        print(check_err.strip())
    print(f"JSON.stringify check: {stringify.get('checked')} parseable lines, {stringify.get('bad')} differ")
    errors = 0
    for name, rows in results.items():
        n_err = sum(1 for r in rows if "error" in r[2])
        errors += n_err
        line = f"[{name}] harness errors: {n_err}"
        if name != "plain":
            preps = [r[2]["compaction"]["preparation"] for r in rows if r[0].startswith("gen-")]
            non_null = sum(1 for p in preps if p is not None)
            split = sum(1 for p in preps if p is not None and p["isSplitTurn"])
            should = sum(1 for r in rows if r[0].startswith("gen-") and r[2]["compaction"]["shouldCompact"])
            prev = sum(1 for p in preps if p is not None and p["previousSummary"] is not None)
            line += (
                f"; preparation != null: {non_null}/{len(preps)} ({100 * non_null // max(len(preps), 1)}%)"
                f"; isSplitTurn: {split}; with previousSummary: {prev}; shouldCompact: {should}"
            )
        print(line)
        for r in rows:
            if "error" in r[2]:
                print(f"    {r[0]}: {str(r[2]['error'])[:300]}")
    plain_rows = [r[2] for r in results["plain"] if r[0].startswith("gen-")]
    repaired = sum(1 for r in plain_rows if r.get("fileRepair", {}).get("trailingNewlineAdded"))
    off_leaf = sum(1 for r in plain_rows if r.get("branchIds") and r.get("leafId") not in r["branchIds"])
    print(
        f"Pi repaired a torn tail in {repaired} files; empty context in "
        f"{sum(1 for r in plain_rows if not r.get('context', {}).get('messages'))} files; "
        f"leaf not on its own branch in {off_leaf} files"
    )
    counts: collections.Counter[str] = collections.Counter()
    for p in gen_files:
        counts.update(file_features(p.read_text(encoding="utf-8")))
    print("feature coverage (files of", len(gen_files), "):")
    for k in sorted(counts):
        print(f"  {k:40s} {counts[k]}")
    size = sum(f.stat().st_size for f in GOLDEN.rglob("*") if f.is_file())
    print(
        f"tests/golden total size: {size / 1e6:.2f} MB (oracle outputs {'gzipped' if compress else 'plain'})"
    )
    return 1 if errors or stringify.get("bad") != 0 else 0


def write_readme(pi_version: str, compressed: bool, args: argparse.Namespace) -> None:
    ext = ".jsonl.gz" if compressed else ".jsonl"
    variants = "\n".join(
        f"* `{name}{ext}`: `node tests/oracle/harness.mjs {' '.join(v)} --jsonl FILE...`"
        for name, v in VARIANTS.items()
    )
    text = f"""# Pi oracle goldens

What Pi's own session code (`@earendil-works/pi-coding-agent` **{pi_version}**, run through
`tests/oracle/harness.mjs`) derives from every session file in
`../generated/gen-*.jsonl` and from Pi's migrated copies of its own v1 fixtures
(`../fixtures/*.jsonl.gz`, decompressed; `file` = basename without `.gz`).

One JSON object per line, sorted by `file` (basename; all other bytes exactly as the harness printed
them, `piVersion` included, except that U+2028/U+2029/U+0085 inside strings are written as `\\uXXXX`
escapes so that any line splitter works){", gzip-compressed" if compressed else ""}:

{variants}

Regenerate (needs the oracle installed by `scripts/setup-oracle`; takes a few seconds):

    .venv/bin/python -m tests.oracle.make_goldens --count {args.count} --seed {args.seed}

The generated sessions are deterministic in `--seed`; the migrated fixtures are only re-created with
`--refresh-fixtures` (Pi's v1 migration assigns random ids, so re-migrating changes every id).
"""
    (ORACLE_OUT / "README.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
