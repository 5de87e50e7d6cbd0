"""The faster compaction paths of issue 30 decide exactly what Pi's algorithm decides.

``prepare`` no longer lists every cut point of the branch, ``context_settings`` walks from the
leaf back, the summarizer's word patterns search lowered ASCII text, and an entry's preview
(made for every entry by ``Session.open``) collapses only a prefix of a long text. Each is checked here
against a direct transcription of the algorithm it replaces, on many random inputs (seeded:
the same inputs every run), including the shapes that decide the edge cases (no cut point, a
budget never reached, compactions, empty entries, non-object lines, non-ASCII text).
"""

from __future__ import annotations

import random
import re
import sys
from typing import Any

import pytest

from sessiond.compaction import cut_points
from sessiond.compaction import extractive as X
from sessiond.compaction.cut_points import CUT_POINT_ROLES, find_cut_point, find_projected_cut_point
from sessiond.compaction.file_ops import FileOps
from sessiond.model import entries as E
from sessiond.model.js import UNDEFINED, get, to_string, utf16_len, utf16_slice_head
from sessiond.model.messages import content_text
from sessiond.model.preview import _clip, entry_preview
from sessiond.model.projection import ContextSettings, ProjectedEntry, _apply_setting, context_settings
from sessiond.model.tokens import PI

ROLES = ["user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "system"]


def _reference_cut(
    entries: list[ProjectedEntry], start: int, end: int, keep: float
) -> tuple[list[int], int, bool]:
    """Pi's steps as they were written before: every cut point listed, then the budget walk."""

    def is_compaction(i: int) -> bool:
        return bool(get(entries[i].source, "type") == E.COMPACTION)

    points = [
        i
        for i in range(start, end)
        if not is_compaction(i) and any(get(m, "role") in CUT_POINT_ROLES for m in entries[i].messages)
    ]
    if not points:
        return points, start, False
    cut = points[0]
    accumulated: float = 0
    for i in range(end - 1, start - 1, -1):
        tokens = sum(PI.message_tokens(m) for m in entries[i].messages)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep:
            return points, next((p for p in points if p >= i), points[-1]), True
    return points, cut, False


def _random_entries(rng: random.Random) -> list[ProjectedEntry]:
    out = []
    for n in range(rng.randint(0, 40)):
        if rng.random() < 0.08:
            out.append(ProjectedEntry({"type": "compaction", "id": f"c{n}"}, []))
            continue
        messages = []
        for _ in range(rng.choice((0, 0, 1, 1, 1, 2))):
            role = rng.choice(ROLES)
            text = "x" * rng.choice((0, 3, 40, 400, 4000))
            messages.append({"role": role, "content": [{"type": "text", "text": text}]})
        out.append(ProjectedEntry({"type": "message", "id": f"e{n}"}, messages))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_is_the_one_listing_every_point_gives(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        entries = _random_entries(rng)
        start = rng.randint(0, len(entries))
        keep = rng.choice((0, 1, 50, 500, 2000, 10**9))
        points, cut, exceeded = _reference_cut(entries, start, len(entries), keep)
        got = cut_points._cut(
            start,
            len(entries),
            keep,
            lambda i, e=entries: bool(get(e[i].source, "type") == E.COMPACTION),  # type: ignore[misc]
            lambda i, e=entries: e[i].messages,  # type: ignore[misc]
            PI,
        )
        assert got == (bool(points), cut, exceeded)
        # and the public functions built on it agree with themselves over raw entries too
        find_projected_cut_point(entries, start, len(entries), keep)
        find_cut_point([p.source for p in entries], start, len(entries), keep)


def _reference_settings(path: list[Any]) -> ContextSettings:
    settings = ContextSettings()
    for entry in path:
        _apply_setting(settings, entry)
    return settings


def _setting_entry(rng: random.Random, n: int) -> Any:
    k = rng.random()
    if k < 0.05:
        return rng.choice([None, 3, "line", [1]])  # a non-object line
    if k < 0.15:
        entry: dict[str, Any] = {"type": "thinking_level_change", "id": f"t{n}"}
        if rng.random() < 0.8:
            entry["thinkingLevel"] = rng.choice(["low", "high", None])
        return entry
    if k < 0.25:
        return {"type": "model_change", "id": f"m{n}", "provider": rng.choice(["a", "b"]), "modelId": str(n)}
    role = rng.choice(["user", "assistant", "toolResult"])
    message: Any = {"role": role, "provider": "p", "model": f"x{n}"} if rng.random() < 0.95 else "text"
    return {"type": "message", "id": f"e{n}", "message": message}


@pytest.mark.parametrize("seed", range(20))
def test_settings_from_the_leaf_back_are_those_applied_from_the_root(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        path = [_setting_entry(rng, n) for n in range(rng.randint(0, 30))]
        want, got = _reference_settings(path), context_settings(path)
        assert (got.thinking_level, got.model) == (want.thinking_level, want.model)
        assert (got.thinking_level is UNDEFINED) == (want.thinking_level is UNDEFINED)


WORDS = [
    "must", "never", "Always", "DON'T", "don’t", "do not", "should", "preferably", "avoid", "only",
    "make sure", "decided", "Decide to", "decision", "chose", "instead of", "rather than",
    "switching to", "we'll use", "I’ll use", "Let's use", "going with", "opted", "settled on",
    "because", "next", "then I'll", "TODO", "todo", "remaining", "need to", "let me", "going to",
]  # fmt: skip
FILLER = [
    "the",
    "a",
    "mustard",
    "unavoidable",
    "nexus",
    "x_must",
    "9next",
    "é",
    "ſhould",
    "K",
    "İ",
    "ǅ",
    ".",
    ",",
    "-",
]


@pytest.mark.parametrize(
    "pattern", [X._CONSTRAINT_RE, X._DECISION_RE, X._INTENT_RE], ids=lambda p: p.pattern[:20]
)
def test_word_patterns_find_what_the_case_insensitive_pattern_finds(pattern: re.Pattern[str]) -> None:
    words = X._Words(pattern)
    rng = random.Random(7)
    for _ in range(3000):
        parts = [rng.choice(WORDS + FILLER + FILLER) for _ in range(rng.randint(0, 8))]
        text = rng.choice([" ", "", "  ", "\n"]).join(parts)
        if rng.random() < 0.5:
            text = text.upper() if rng.random() < 0.5 else text.lower()
        assert words.search(text) == (pattern.search(text) is not None), text


def _reference_clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if utf16_len(flat) <= limit:
        return flat
    return utf16_slice_head(flat, limit - 1) + "…"


def test_a_preview_clipped_from_a_prefix_is_the_one_clipped_from_the_whole() -> None:
    """``Session.open`` previews every entry; the preview now collapses a prefix of long texts."""
    rng = random.Random(3)
    alphabet = ["a", "b", " ", "\n", "\t", "é", "😀", "\u3000", "x" * 30, " " * 50, "\u2028"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        limit = rng.choice([1, 2, 5, 20, 80])
        assert _clip(text, limit) == _reference_clip(text, limit), (text, limit)


def _reference_message_preview(message: Any) -> str:
    """The message part of a preview as it was written before (content_text, then strip)."""
    if get(message, "role") == "bashExecution":
        return f"$ {to_string(get(message, 'command'))}"
    content = get(message, "content")
    text = content_text(content) if type(content) in (str, list) else ""
    if text.strip():
        return text
    if type(content) is list:
        calls = [to_string(get(b, "name")) for b in content if get(b, "type") == "toolCall"]
        if calls:
            return "→ " + ", ".join(calls)
        if any(get(b, "type") == "image" for b in content):
            return "[image]"
        if any(get(b, "type") == "thinking" for b in content):
            return "[thinking]"
    error = get(message, "errorMessage")
    return f"[error] {to_string(error)}" if type(error) is str else ""


def test_a_messages_preview_text_is_content_text_when_it_is_not_blank() -> None:
    """Previews join text blocks without content_text's conversions when every text is a string,
    and test blankness without stripping a copy (issue 30): the same text either way."""
    rng = random.Random(5)
    texts: list[Any] = ["", " ", "\n\t", "\u3000", "\u2028", "hi", " a b ", "é😀", None, 3, True, {"x": 1}]
    # long texts too: a single text block or tool calls alone take a path of their own (issue 30)
    texts += ["lorem ipsum " * 30, "\t\tcall(x);\n" * 40, "é😀 " * 90, " " * 200 + "late", "w" * 170]
    for _ in range(5000):
        blocks: list[Any] = []
        for _ in range(rng.randint(0, 4)):
            kind = rng.choice(["text", "text", "text", "image", "toolCall", "thinking", "odd"])
            if kind == "text":
                block: Any = {"type": "text"}
                if rng.random() < 0.9:
                    block["text"] = rng.choice(texts)
            elif kind == "odd":
                block = rng.choice(["text", None, 4, {"text": "no type"}])
            else:
                block = {"type": kind}
                if rng.random() < 0.9:
                    block["name"] = rng.choice(["read", "bash", "read", None, 7, ""])
            blocks.append(block)
        content = rng.choice([blocks, blocks, rng.choice(texts)])
        message = {"role": rng.choice(["user", "assistant", "toolResult"]), "content": content}
        if rng.random() < 0.2:
            message["errorMessage"] = "boom"
        assert entry_preview({"type": "message", "message": message}) == _clip(
            _reference_message_preview(message), 80
        ), message


# --------------------------------------------------------------------------- the extractive walk

_SENTENCES = [
    "You must keep the public API stable.",
    "We should avoid touching the parser.",
    "Never commit secrets; only use the vault.",
    "I decided to use the cache because it is faster.",
    "We chose orjson instead of json.",
    "Let me run the tests next.",
    "I'll fix the failing import then.",
    "The build now passes on every platform.",
    "Everything is done and the docs are updated.",
    "Traceback (most recent call last): boom",
    "TypeError: cannot read property x",
    "Ran `npm test`",
    "Ça doit rester rapide, même en Unicode — toujours.",
    "What should happen next?",
    "ok",
]
_PATHS = ["src/a.py", "src/b.py", "src/c.py", "lib/ü.ts", "README.md"]


def _sentence(rng: random.Random, n: int) -> str:
    # A small pool (duplicates across the closing boundary) plus numbered variants (new items).
    base = rng.choice(_SENTENCES)
    return base if rng.random() < 0.5 else base.replace(".", f" #{rng.randint(0, n)}.", 1)


def _text(rng: random.Random, n: int) -> str:
    lines = []
    for _ in range(rng.randint(0, 5)):
        parts = [_sentence(rng, n) for _ in range(rng.randint(1, 3))]
        prefix = rng.choice(["", "", "- ", "1. ", "## ", "**"])
        lines.append(prefix + " ".join(parts))
    return "\n".join(lines)


def _history(rng: random.Random) -> list[Any]:
    """Messages of every role the walk reads, with enough items to fill and close sections."""
    n = rng.choice((5, 60, 300))
    out: list[Any] = []
    call = 0
    for _ in range(rng.randint(0, n)):
        role = rng.choices(
            ["user", "assistant", "toolResult", "bashExecution", "compactionSummary", "custom", "odd"],
            [5, 8, 4, 1, 0.3, 0.5, 0.3],
        )[0]
        if role in ("user", "custom"):
            content: Any = _text(rng, n) if rng.random() < 0.3 else [{"type": "text", "text": _text(rng, n)}]
            out.append({"role": role, "content": content})
        elif role == "assistant":
            blocks: list[Any] = []
            if rng.random() < 0.8:
                blocks.append({"type": "text", "text": _text(rng, n)})
            for _ in range(rng.choice((0, 0, 1, 2))):
                call += 1
                name = rng.choice(["read", "edit", "write", "bash", "grep"])
                args: dict[str, Any] = {"path": rng.choice(_PATHS)}
                if name == "bash":
                    args = {"command": rng.choice(["npm test", "git diff", f"rg x{rng.randint(0, n)}"])}
                blocks.append({"type": "toolCall", "id": f"c{call}", "name": name, "arguments": args})
            stop = rng.choice(["stop", "stop", "toolUse", "error", "aborted"])
            out.append(
                {"role": "assistant", "content": blocks, "stopReason": stop, "errorMessage": "overloaded"}
            )
        elif role == "toolResult":
            out.append(
                {
                    "role": "toolResult",
                    "toolCallId": f"c{rng.randint(1, max(call, 1))}",
                    "content": [{"type": "text", "text": _text(rng, n)}],
                    "isError": rng.random() < 0.4,
                }
            )
        elif role == "bashExecution":
            out.append(
                {"role": role, "command": "make", "exitCode": rng.choice((0, 1)), "output": _text(rng, n)}
            )
        elif role == "compactionSummary":
            out.append(
                {
                    "role": role,
                    "summary": "## Goal\n- " + _text(rng, n) + "\n## Critical Context\n- Ran `npm test`",
                }
            )
        else:
            out.append(rng.choice([None, "text", {"role": "assistant", "content": None}]))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_the_extractive_walk_that_stops_early_keeps_what_reading_everything_keeps(seed: int) -> None:
    """Sections close once they hold MAX_ITEMS newer items; the result is the full walk's."""
    rng = random.Random(seed)
    for _ in range(12):
        messages = _history(rng)
        previous = rng.choice(
            [None, "## Goal\n- ship it\n## Critical Context\n- Ran `npm test`\n- Ran `git diff`"]
        )
        ops = FileOps()
        for path in rng.sample(_PATHS, 2):
            ops.edited[path] = None
        ops.read["docs/x.md"] = None
        for file_ops in (None, ops):
            fast = X._collect(messages, previous, file_ops)
            full = X._collect(messages, previous, file_ops, stop_early=False)
            for key in X.KEYS:
                shown = [(i.text, i.tier, i.group) for i in fast[key]]
                assert shown == [(i.text, i.tier, i.group) for i in full[key]], key
                ranked = [i.text for i in sorted(fast[key], key=X._priority)]
                assert ranked == [i.text for i in sorted(full[key], key=X._priority)], key


def test_the_space_is_the_only_printable_whitespace() -> None:
    """``preview._collapse`` takes a printable text without double spaces as collapsed already:
    true only while no other whitespace character is printable (every code point checked)."""
    assert [c for c in range(sys.maxunicode + 1) if chr(c).isspace() and chr(c).isprintable()] == [32]
