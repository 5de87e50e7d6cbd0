"""The built-in extractive summarizer: a checkpoint built from the messages themselves.

No model is involved. :func:`extract_summary` fills Pi's checkpoint headings (docs/pi-format.md §7.4)
with lines taken from the data: the user's requests and stated requirements, the files the
tools modified and read, the commands that ran, the errors of failed tool results and bash
executions, the assistant's final answers, its decisions and its stated intentions. The
result is deterministic (same input, same text), bounded in size, and never raises on odd
input.

Choices worth knowing:

* **Ordering.** Every section lists its items chronologically, oldest first: the previous
  summary's items, then items known only from ``file_ops``, then items from the messages in
  message order. Two exceptions: *Next Steps* lists the open user request first, then the
  assistant's intentions of the current turn, then the previous summary's steps; *Critical
  Context* groups the previous summary's items, the files read, the exact error messages and
  the commands, each group chronological.
* **Duplicates.** Items are compared after whitespace collapsing, case-insensitively. The
  newest occurrence wins (the item moves to its latest position, so it also survives the size
  bound longer) — except under *Goal*, where the first occurrence wins so the previous
  summary's goal lines stay first.
* **Done** holds the latest assistant conclusions — the last one or two non-question
  sentences of each final answer (an assistant message with text and no tool call that did
  not fail) — and ``Modified `path``` for each file written or edited.
* **In Progress** is the last user request when no final answer followed it.
* **Turn prefix.** *Original Request* takes the Goal items, *Progress So Far* the Done and
  Key Decisions items, *Context Needed to Continue* the constraints, errors and context.
  ``file_ops`` is not used there: it covers the whole compaction, not the prefix.
* **Merging.** A previous summary is parsed by its headings (case-insensitive, any level, the
  turn-prefix headings mapped onto the history ones); its bullets, numbered items and text
  lines become items of the matching section. Text under an unknown heading goes to
  *Critical Context* prefixed with that heading; text before any heading goes there as is.
  ``<read-files>``/``<modified-files>`` blocks become ``Read``/``Modified`` items.
* **Size bound.** The result never exceeds ``max_chars`` UTF-16 units. The headings always
  come first; the rest is shared fairly between the sections (water-filling: a section that
  needs less than its share gives the rest to the others, and what a section leaves unused
  after fitting is offered again). A section too long for its share drops whole items, the
  lowest priority first (commands before other context; otherwise the oldest first; under
  *Goal* the first request and the latest one are kept longest); only a single remaining item
  is clipped, at a word boundary where possible, with ``…``. When ``max_chars`` cannot hold
  even the headings, the headings alone are returned, cut at a line boundary.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..model.js import utf16_len, utf16_slice_head
from .file_ops import FileOps

ExtractKind = Literal["history", "turn_prefix"]

ITEM_CHARS: Final = 300
"""The longest one item may be before the size bound is applied."""
GOAL_ITEM_CHARS: Final = 400
COMMAND_CHARS: Final = 200
MAX_ITEMS: Final = 40
"""Items kept per section before the size bound (the lowest priority are dropped first)."""
SCAN_CHARS: Final = 50_000
"""How much of one message's text is scanned for sentences and error lines."""
MIN_CLIP: Final = 16
"""An item is not clipped to fewer characters than this; it is dropped instead."""

NONE_LINE: Final = "- (none)"
DEFAULT_NEXT_STEP: Final = "1. Continue from the latest request."

# Section keys.
GOAL: Final = "goal"
CONSTRAINTS: Final = "constraints"
DONE: Final = "done"
IN_PROGRESS: Final = "in_progress"
BLOCKED: Final = "blocked"
DECISIONS: Final = "decisions"
NEXT: Final = "next"
CONTEXT: Final = "context"
KEYS: Final = (GOAL, CONSTRAINTS, DONE, IN_PROGRESS, BLOCKED, DECISIONS, NEXT, CONTEXT)

# Order phases: what is older than what.
_PREVIOUS: Final = 0
_FILE_OPS: Final = 1
_MESSAGES: Final = 2

# Display groups.
_G_PREVIOUS: Final = 0
_G_READ: Final = 1
_G_ERROR: Final = 2
_G_COMMAND: Final = 3
_G_OPEN_REQUEST: Final = 0
_G_INTENT: Final = 1
_G_PREVIOUS_STEP: Final = 2

_TIER_COMMAND: Final = -1
"""Commands are the first context dropped under the size bound."""

_CONSTRAINT_RE: Final = re.compile(
    r"\b(?:must|never|always|don['’]t|do not|should|prefer(?:s|red|ably)?|avoid|only|make sure)\b",
    re.IGNORECASE,
)
_DECISION_RE: Final = re.compile(
    r"\b(?:decided|decide to|decision|chose|chosen|choose to|instead of|rather than|"
    r"switch(?:ed|ing)? to|we['’]ll use|we will use|I['’]ll use|I will use|let['’]s use|"
    r"going with|go with|opted|settled on|because)\b",
    re.IGNORECASE,
)
_INTENT_RE: Final = re.compile(
    r"\b(?:next|then I['’]ll|then I will|TODO|remaining|I['’]ll|I will|need to|let me|let['’]s|going to)\b",
    re.IGNORECASE,
)
_ERROR_LINE_RE: Final = re.compile(
    r"\b(?:[A-Z][A-Za-z]*)?(?:Error|Exception)\b|\berror\b(?:\s+TS\d+|\[\w+\])?:|"
    r"\b(?:fatal|panic):|\bERR!|\bTraceback\b|\bFAILED\b"
)
_BECAUSE_RE: Final = re.compile(r"[\s,;]+because\s+", re.IGNORECASE)


class _Words:
    """A case-insensitive word pattern, searched faster in ASCII text (most of an agent's).

    Python's ``re`` is slow at case-insensitive alternations; for ASCII text the same pattern in
    lower case, searched case-sensitively in the lowered text, finds exactly the same matches
    (ASCII has no other case foldings, and ``\\b`` sees the same word characters). Other text
    uses the original. The sentence scan of a 10,000-entry history took half its time in these
    searches (issue 30).
    """

    __slots__ = ("_lower", "_original")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        # lowering would turn an escape such as \B, \S, \W or \D into another class
        assert pattern.flags & re.IGNORECASE and not re.search(r"\\[A-Z]", pattern.pattern)
        self._original = pattern
        self._lower = re.compile(pattern.pattern.lower())

    def search(self, text: str) -> bool:
        if text.isascii():
            return self._lower.search(text.lower()) is not None
        return self._original.search(text) is not None


_CONSTRAINT_WORDS: Final = _Words(_CONSTRAINT_RE)
_DECISION_WORDS: Final = _Words(_DECISION_RE)
_INTENT_WORDS: Final = _Words(_INTENT_RE)

_SENTENCE_SPLIT_RE: Final = re.compile(r"(?<=[.!?])\s+")
_LIST_MARKER_RE: Final = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_HEADING_RE: Final = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET_RE: Final = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_RULE_RE: Final = re.compile(r"^(?:-{3,}|\*{3,}|_{3,})$")
_NOT_PROSE_RE: Final = re.compile(r"[^\w ]|[\d_]")

_HEADING_ALIASES: Final = {
    "goal": GOAL,
    "goals": GOAL,
    "original request": GOAL,
    "constraints & preferences": CONSTRAINTS,
    "constraints and preferences": CONSTRAINTS,
    "constraints": CONSTRAINTS,
    "preferences": CONSTRAINTS,
    "user preferences": CONSTRAINTS,
    "requirements": CONSTRAINTS,
    "progress": DONE,
    "done": DONE,
    "progress so far": DONE,
    "in progress": IN_PROGRESS,
    "blocked": BLOCKED,
    "key decisions": DECISIONS,
    "decisions": DECISIONS,
    "next steps": NEXT,
    "critical context": CONTEXT,
    "context needed to continue": CONTEXT,
}
_IGNORED_LINES: Final = frozenset({"**turn context (split turn):**"})
_PLACEHOLDERS: Final = frozenset(
    {"(none)", "none", "none.", "n/a", "-", "continue from the latest request.", "no prior history."}
)


# --------------------------------------------------------------------------- items


@dataclass(slots=True)
class _Item:
    text: str
    order: tuple[int, int, int]
    """(phase, message index, position in the message): what is older than what."""
    tier: int = 0
    """Lower tiers are dropped first under the size bound; ties drop the oldest first."""
    group: int = 0
    """Display group within the section (lower first)."""


class _Sections:
    def __init__(self) -> None:
        self.items: dict[str, list[_Item]] = {k: [] for k in KEYS}

    def add(
        self,
        key: str,
        text: str,
        order: tuple[int, int, int],
        *,
        tier: int = 0,
        group: int = 0,
        limit: int = ITEM_CHARS,
    ) -> _Item | None:
        text = _clip(_collapse(text), limit)
        if not text or text.casefold() in _PLACEHOLDERS:
            return None
        item = _Item(text, order, tier, group)
        self.items[key].append(item)
        return item

    def finish(self) -> dict[str, list[_Item]]:
        """Deduplicated, capped and in display order."""
        out: dict[str, list[_Item]] = {}
        for key in KEYS:
            chosen: dict[str, _Item] = {}
            for item in self.items[key]:
                k = item.text.casefold()
                seen = chosen.get(k)
                if seen is None:
                    chosen[k] = item
                elif key == GOAL:
                    if item.order < seen.order:
                        chosen[k] = item
                elif item.order > seen.order:
                    chosen[k] = item
            items = sorted(chosen.values(), key=lambda i: (i.group, i.order))
            if key == GOAL and items:
                # The first request and the latest one are kept longest.
                for item in items:
                    item.tier = 0
                items[-1].tier = 1
                items[0].tier = 2
            if len(items) > MAX_ITEMS:
                dropped = sorted(items, key=_priority)[: len(items) - MAX_ITEMS]
                ids = {id(i) for i in dropped}
                items = [i for i in items if id(i) not in ids]
            out[key] = items
        return out


def _priority(item: _Item) -> tuple[int, tuple[int, int, int]]:
    return (item.tier, item.order)


# --------------------------------------------------------------------------- text helpers


def _collapse(text: str) -> str:
    """Every run of whitespace (newlines included) as one space, trimmed."""
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` UTF-16 units, cut at a word boundary where possible, with ``…``.

    A code span or bold run left open by the cut is closed after the ellipsis."""
    if utf16_len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    for reserve in range(1, 6):
        head = _cut(text, limit - reserve)
        tail = "…" + ("`" if head.count("`") % 2 else "") + ("**" if head.count("**") % 2 else "")
        if utf16_len(tail) <= reserve:
            return head + tail
    return _cut(text, limit - 1) + "…"


def _cut(text: str, room: int) -> str:
    """A prefix of ``text`` of at most ``room`` UTF-16 units ending at a word boundary when one
    is not too far back, without trailing separators."""
    head = utf16_slice_head(text, max(0, room))
    at_boundary = len(head) < len(text) and text[len(head)].isspace()
    if not at_boundary:
        cut = head.rfind(" ")
        if cut >= room // 2:
            head = head[:cut]
    return head.rstrip(" ,;:-")


def _code(text: str) -> str:
    """``text`` as a Markdown code span."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _text_of(content: object) -> str:
    """The text of a content value: a string, or text blocks joined by newlines, images as
    ``[image]``; thinking, tool calls and anything unknown are left out."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif kind == "image":
                parts.append("[image]")
    return "\n".join(parts)


def _first_line(text: str) -> str:
    for line in text[:SCAN_CHARS].splitlines():
        stripped = line.strip()
        if stripped:
            return stripped
    return ""


def _error_line(text: str) -> str:
    """The first line that looks like an error message, or ``""``.

    A line that matches is a piece of the scanned text bounded by line ends (whitespace, which
    ``\\b`` sees as the string's edge does), so text that does not match holds no such line."""
    scanned = text[:SCAN_CHARS]
    if not _ERROR_LINE_RE.search(scanned):
        return ""
    for line in scanned.splitlines():
        stripped = line.strip()
        if stripped and _ERROR_LINE_RE.search(stripped):
            return stripped
    return ""


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    """The line without its list marker or heading marks."""
    listed: bool = False
    """A list item."""
    heading: bool = False
    """A Markdown heading, or a line that is bold and nothing else."""


def _prose_lines(text: str) -> list[_Line]:
    """Non-empty lines outside fenced code blocks and tables."""
    out: list[_Line] = []
    fenced = False
    for raw in text[:SCAN_CHARS].splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line or line.startswith("|"):
            continue
        heading = line.startswith("#") or (
            line.startswith("**") and line.rstrip(":").endswith("**") and line.count("**") == 2
        )
        line = line.lstrip("#").strip()
        bare = _LIST_MARKER_RE.sub("", line)
        if bare:
            out.append(_Line(bare, listed=bare != line, heading=heading))
    return out


def _sentences(text: str, *, prose_only: bool = False) -> list[str]:
    """The sentences of the prose lines (with ``prose_only``, of lines that read like prose,
    not like pasted code, JSON or logs)."""
    out: list[str] = []
    for line in _prose_lines(text):
        if prose_only and not _looks_like_prose(line.text):
            continue
        out.extend(s for s in _SENTENCE_SPLIT_RE.split(line.text) if s)
    return out


def _looks_like_prose(text: str) -> bool:
    if text.startswith(("{", "[", "<", "at ", "$ ", ">")) or '":' in text:
        return False
    letters = len(_NOT_PROSE_RE.sub("", text))  # letters and spaces
    return letters >= 0.6 * len(text)


def _substantive(text: str) -> bool:
    """A request rather than an acknowledgement ("ok", "yes", "wow")."""
    words = text.split()
    return len(words) >= 5 or (len(words) >= 2 and ("`" in text or "/" in text))


def _conclusion(text: str) -> str:
    """The last one or two sentences of a final answer that state something: the last line
    that is neither a question, a lead-in (``...:``) nor a heading, preferring prose over
    list items (answers often end with a list of options and a question)."""
    stating = [
        line
        for line in _prose_lines(text)
        if not line.heading and not line.text.endswith(("?", ":")) and len(line.text.split()) >= 2
    ]
    candidates = [line.text for line in stating if not line.listed] or [line.text for line in stating]
    for line_text in reversed(candidates):
        sentences = [s for s in _SENTENCE_SPLIT_RE.split(line_text) if s and not s.endswith("?")]
        if sentences:
            return " ".join(sentences[-2:])
    return ""


def _decision(sentence: str) -> str:
    """``**what**: because why`` when the sentence gives its reason, else the sentence."""
    match = _BECAUSE_RE.search(sentence)
    if match and "**" not in sentence:
        what = sentence[: match.start()].strip()
        why = sentence[match.start() :].strip(" ,;")
        if len(what.split()) >= 2:
            return f"**{what}**: {why}"
    return sentence


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value:  # NaN
        return None
    return float(value)


def _format_number(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


# --------------------------------------------------------------------------- the messages


@dataclass(slots=True)
class _Text:
    """A message's text, read for sentences after the walk (newest first, see :func:`_read_texts`)."""

    index: int
    text: str
    pos: int
    """The message's next position (after the items the walk took from it)."""
    user: bool
    final: bool = False
    """An assistant's final answer (text, no tool call, not failed): its conclusion goes to Done."""


@dataclass(slots=True)
class _Walk:
    sections: _Sections
    user_turns: list[tuple[int, str]]
    last_answer: int
    reads: dict[str, tuple[int, int, int]]
    modified: dict[str, tuple[int, int, int]]
    intents: list[tuple[int, int, str]]
    texts: list[_Text]


def _walk(messages: Sequence[Any], sections: _Sections) -> _Walk:
    """Everything but the sentences, oldest message first: files, commands, failures, which
    turns were asked and answered. What the texts say is read afterwards (:func:`_read_texts`)."""
    w = _Walk(sections, [], -1, {}, {}, [], [])
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        try:
            if role in ("user", "custom"):
                _user(w, i, message)
            elif role == "assistant":
                _assistant(w, i, message, calls)
            elif role == "toolResult":
                _tool_result(w, i, message, calls)
            elif role == "bashExecution":
                _bash_execution(w, i, message)
            elif role in ("branchSummary", "compactionSummary"):
                summary = message.get("summary")
                if isinstance(summary, str):
                    _parse_summary(summary, sections, (_MESSAGES, i))
        except (RecursionError, ValueError, TypeError):  # a shape nothing above foresaw
            continue
    return w


def _user(w: _Walk, i: int, message: dict[Any, Any]) -> None:
    text = _text_of(message.get("content"))
    if not text or text.isspace():  # (not text.strip(), without the copy)
        return
    w.user_turns.append((i, text))
    w.texts.append(_Text(i, text, 0, True))


def _user_text(w: _Walk, t: _Text, constraints: bool, errors: bool) -> None:
    """A request's stated constraints and the error it reports (each only when asked for)."""
    text, i, pos = t.text, t.index, t.pos
    # no sentence states a constraint if the text holds none of the words (see _assistant_text)
    if constraints and _CONSTRAINT_WORDS.search(text[:SCAN_CHARS]):
        for sentence in _sentences(text, prose_only=True):
            if not sentence.endswith("?") and _CONSTRAINT_WORDS.search(sentence):
                w.sections.add(CONSTRAINTS, sentence, (_MESSAGES, i, pos))
                pos += 1
    error = _error_line(text) if errors else ""
    if error:
        w.sections.add(CONTEXT, f"Reported error: {error}", (_MESSAGES, i, pos), group=_G_ERROR)


def _assistant(
    w: _Walk, i: int, message: dict[Any, Any], calls: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    content = message.get("content")
    blocks: list[Any] = content if isinstance(content, list) else [content]
    texts: list[str] = []
    has_call = False
    pos = 0
    for block in blocks:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "toolCall":
            has_call = True
            name = block.get("name")
            raw_args = block.get("arguments")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            call_id = block.get("id")
            if isinstance(name, str) and isinstance(call_id, str):
                calls[call_id] = (name, args)
            path = args.get("path")
            order = (_MESSAGES, i, pos)
            pos += 1
            if isinstance(path, str) and path:
                if name in ("write", "edit"):
                    w.modified[path] = order
                elif name == "read":
                    w.reads[path] = order
            command = args.get("command")
            if name == "bash" and isinstance(command, str) and command.strip():
                w.sections.add(
                    CONTEXT,
                    f"Ran {_code(_clip(_collapse(command), COMMAND_CHARS))}",
                    order,
                    tier=_TIER_COMMAND,
                    group=_G_COMMAND,
                )
    stop = message.get("stopReason")
    if stop == "error":
        error = message.get("errorMessage")
        line = _first_line(error) if isinstance(error, str) else ""
        w.sections.add(BLOCKED, f"Assistant error: {line or 'Unknown error'}", (_MESSAGES, i, pos))
        pos += 1
    text = "\n".join(texts)
    if not text or text.isspace():  # (not text.strip(), without the copy)
        return
    final = not has_call and stop not in ("error", "aborted")
    if final:
        w.last_answer = i
    w.texts.append(_Text(i, text, pos, False, final))


def _assistant_text(w: _Walk, t: _Text, decisions: bool, intents: bool, conclusion: bool) -> None:
    """An answer's decisions, intentions and conclusion (each only when asked for)."""
    text, i, pos = t.text, t.index, t.pos
    # A sentence is a contiguous piece of the scanned text, bounded there by whitespace, '#', a
    # list marker or a line's ends (non-word characters, as \b needs): what a sentence matches,
    # the scanned text matches. So each pattern is first looked for in the whole text; where it
    # is absent no sentence is searched for it (most messages state no decision, issue 30).
    scanned = text[:SCAN_CHARS]
    decisions = decisions and _DECISION_WORDS.search(scanned)
    intents = intents and _INTENT_WORDS.search(scanned)
    for sentence in _sentences(text) if decisions or intents else ():
        if decisions and _DECISION_WORDS.search(sentence):
            w.sections.add(DECISIONS, _decision(sentence.rstrip(":")), (_MESSAGES, i, pos))
            pos += 1
        if intents and _INTENT_WORDS.search(sentence):
            w.intents.append((i, pos, sentence.rstrip(":")))
            pos += 1
    if conclusion and t.final:
        stated = _conclusion(text)
        if stated:
            w.sections.add(DONE, stated, (_MESSAGES, i, pos))


_READ_SECTIONS: Final = (CONSTRAINTS, CONTEXT, DECISIONS, DONE)
"""The sections the texts' sentences feed (besides the intentions of the current turn)."""


def _read_texts(w: _Walk, last_user: int, *, stop_early: bool = True) -> None:
    """Read the messages' texts newest first, for what the sections can still take.

    Every item a text gives (a constraint, a reported error, a decision, a conclusion) is of
    the default tier, and a section keeps, of its distinct texts (each at its newest
    occurrence), the ``MAX_ITEMS`` of the highest (tier, order). Once a section holds that many
    distinct texts whose newest occurrence is newer than the message being read and of tier
    >= 0, nothing this message or an older one says can be kept there: an older copy of such a
    text loses to the newer one, any other text ranks below them. So the section *closes* and
    its sentences are no longer looked for; the walk ends when every section is closed and the
    current turn's intentions were read. A 10,000-message history spent ~0.6 s in sentence
    patterns for items the bound then dropped (issue 30). ``stop_early=False`` reads every
    text (the reference the tests compare with).
    """
    sections = w.sections
    # Items the walk took, per section, newest first: (message index, order, text, tier).
    taken = {
        k: sorted(
            (
                (item.order[1], item.order, item.text.casefold(), item.tier)
                for item in sections.items[k]
                if item.order[0] == _MESSAGES
            ),
            reverse=True,
        )
        for k in _READ_SECTIONS
    }
    newer = {k: _Newer() for k in _READ_SECTIONS}
    at = dict.fromkeys(_READ_SECTIONS, 0)
    open_ = list(_READ_SECTIONS)  # a closed section stays closed: older items only add to it
    for t in reversed(w.texts):
        i = t.index
        if stop_early:
            still = []
            for k in open_:
                pending, n, seen = taken[k], at[k], newer[k]
                while n < len(pending) and pending[n][0] > i:
                    _, order, text, tier = pending[n]
                    seen.add(text, order, tier)
                    n += 1
                at[k] = n
                if seen.kept < MAX_ITEMS:
                    still.append(k)
            open_ = still
            if not open_ and i <= last_user:
                break
        if t.user:
            constraints, errors = CONSTRAINTS in open_, CONTEXT in open_
            if not (constraints or errors):
                continue
        else:
            decisions, conclusion, intents = DECISIONS in open_, DONE in open_, i > last_user
            if not (decisions or conclusion or intents):
                continue
        counts = {k: len(sections.items[k]) for k in open_}
        try:
            if t.user:
                _user_text(w, t, constraints, errors)
            else:
                _assistant_text(w, t, decisions, intents, conclusion)
        except (RecursionError, ValueError, TypeError):  # a shape nothing above foresaw
            pass
        for k in open_:
            for item in sections.items[k][counts[k] :]:
                newer[k].add(item.text.casefold(), item.order, item.tier)


class _Newer:
    """A section's distinct texts at their newest occurrence so far, and how many of those are
    of tier >= 0 (the ones no older item can outrank)."""

    __slots__ = ("kept", "newest")

    def __init__(self) -> None:
        self.newest: dict[str, tuple[tuple[int, int, int], int]] = {}
        self.kept = 0

    def add(self, text: str, order: tuple[int, int, int], tier: int) -> None:
        seen = self.newest.get(text)
        if seen is not None:
            if seen[0] >= order:
                return
            self.kept -= seen[1] >= 0
        self.newest[text] = (order, tier)
        self.kept += tier >= 0


def _tool_result(
    w: _Walk, i: int, message: dict[Any, Any], calls: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    if message.get("isError") is not True:
        return
    call_id = message.get("toolCallId")
    call = calls.get(call_id) if isinstance(call_id, str) else None
    name = message.get("toolName")
    if not isinstance(name, str) or not name:
        name = call[0] if call else "tool"
    text = _text_of(message.get("content"))
    first = _first_line(text) or "(no output)"
    path = call[1].get("path") if call else None
    command = call[1].get("command") if call else None
    if isinstance(path, str) and path:
        where = f" ({_code(path)})"
    elif isinstance(command, str) and command.strip():
        where = f" ({_code(_clip(_collapse(command), 80))})"
    else:
        where = ""
    w.sections.add(BLOCKED, f"{_code(name)} failed: {_clip(_collapse(first), 240)}{where}", (_MESSAGES, i, 0))
    error = _error_line(text)
    if error and error != first:
        w.sections.add(CONTEXT, f"{_code(name)} error: {error}", (_MESSAGES, i, 1), group=_G_ERROR)


def _bash_execution(w: _Walk, i: int, message: dict[Any, Any]) -> None:
    if message.get("excludeFromContext"):
        return  # the user kept it out of the model's context
    command = message.get("command")
    cmd = _clip(_collapse(command), COMMAND_CHARS) if isinstance(command, str) else ""
    if cmd:
        w.sections.add(
            CONTEXT, f"User ran {_code(cmd)}", (_MESSAGES, i, 0), tier=_TIER_COMMAND, group=_G_COMMAND
        )
    code = _number(message.get("exitCode"))
    if code is None or code == 0 or message.get("cancelled") is True:
        return
    output = message.get("output")
    text = output if isinstance(output, str) else ""
    first = _first_line(text) or "(no output)"
    label = _code(cmd) if cmd else "A command"
    w.sections.add(
        BLOCKED,
        f"{label} exited with code {_format_number(code)}: {_clip(_collapse(first), 240)}",
        (_MESSAGES, i, 1),
    )
    error = _error_line(text)
    if error and error != first:
        w.sections.add(CONTEXT, f"Error: {error}", (_MESSAGES, i, 2), group=_G_ERROR)


# --------------------------------------------------------------------------- previous summaries


def _parse_summary(text: str, sections: _Sections, at: tuple[int, int]) -> None:
    """Add a checkpoint's items to ``sections`` (see the module notes on merging)."""
    phase, index = at
    pos = 0
    key = CONTEXT
    prefix = ""
    heading_used = True
    tag: str | None = None
    fence: list[str] | None = None
    current: list[str] = []

    def emit(value: str) -> None:
        nonlocal pos, heading_used
        value = _collapse(value)
        if not value:
            return
        heading_used = True
        if prefix:
            value = f"{prefix}: {value}"
        if key == NEXT:
            group = _G_PREVIOUS_STEP if phase == _PREVIOUS else _G_INTENT
        else:
            group = _G_PREVIOUS
        sections.add(key, value, (phase, index, pos), group=group, limit=GOAL_ITEM_CHARS)
        pos += 1

    def flush() -> None:
        nonlocal current
        if current:
            emit(" ".join(current))
            current = []

    for raw in text.splitlines():
        line = raw.strip()
        if fence is not None:
            if line.startswith(("```", "~~~")):
                emit(" ".join(fence))
                fence = None
            else:
                fence.append(line)
            continue
        if tag is not None:
            if line == f"</{tag}>":
                tag = None
            elif line:
                if tag == "read-files":
                    sections.add(CONTEXT, f"Read {_code(line)}", (phase, index, pos), group=_G_READ)
                else:
                    sections.add(DONE, f"Modified {_code(line)}", (phase, index, pos))
                pos += 1
            continue
        if line in ("<read-files>", "<modified-files>"):
            flush()
            tag = line[1:-1]
            continue
        if line.startswith(("```", "~~~")):
            flush()
            fence = []
            continue
        heading = _HEADING_RE.match(raw)
        if heading:
            flush()
            if not heading_used and prefix:
                emit_prefix, prefix = prefix, ""
                emit(emit_prefix)
            title = heading.group(2).strip()
            name = title.strip("*").strip().rstrip(":").strip().casefold()
            known = _HEADING_ALIASES.get(name)
            if known is not None:
                key, prefix = known, ""
                heading_used = True
            else:
                key, prefix = CONTEXT, _collapse(title.strip("*"))
                heading_used = False
            continue
        if not line or _RULE_RE.match(line) or line.casefold() in _IGNORED_LINES:
            flush()
            continue
        bullet = _BULLET_RE.match(raw)
        if bullet:
            flush()
            current = [bullet.group(1)]
        elif current and raw[:1].isspace():
            current.append(line)  # a bullet's continuation line
        else:
            flush()
            current = [line]
    if fence:
        emit(" ".join(fence))
    flush()
    if not heading_used and prefix:
        emit_prefix, prefix = prefix, ""
        emit(emit_prefix)


# --------------------------------------------------------------------------- collecting


def _collect(
    messages: Sequence[Any],
    previous_summary: str | None,
    file_ops: FileOps | None,
    *,
    stop_early: bool = True,
) -> dict[str, list[_Item]]:
    sections = _Sections()
    if isinstance(previous_summary, str) and previous_summary.strip():
        _parse_summary(previous_summary, sections, (_PREVIOUS, 0))
    w = _walk(messages, sections)

    # Files: those the messages show (at their latest call), then those only file_ops knows.
    modified = dict(w.modified)
    reads = dict(w.reads)
    if file_ops is not None:
        extra = 0
        for path in [*_paths(file_ops.edited), *_paths(file_ops.written)]:
            if path not in modified:
                modified[path] = (_FILE_OPS, 0, extra)
                extra += 1
        for path in _paths(file_ops.read):
            if path not in reads:
                reads[path] = (_FILE_OPS, 0, extra)
                extra += 1
    for path, order in modified.items():
        sections.add(DONE, f"Modified {_code(path)}", order)
    for path, order in reads.items():
        if path not in modified:
            sections.add(CONTEXT, f"Read {_code(path)}", order, group=_G_READ)

    # Goal: the first and the latest substantive user requests (else the first and last).
    turns = w.user_turns
    if turns:
        first = next((turn for turn in turns if _substantive(turn[1])), None)
        if first is None:
            first, last = turns[0], turns[-1]
        else:
            last = next(turn for turn in reversed(turns) if _substantive(turn[1]))
        for i, text in dict.fromkeys([first, last]):
            sections.add(GOAL, text, (_MESSAGES, i, 0), limit=GOAL_ITEM_CHARS)

    # The texts, newest first, for what the sections can still keep (after the items above).
    last_user = w.user_turns[-1][0] if w.user_turns else -1
    _read_texts(w, last_user, stop_early=stop_early)

    # In Progress / Next Steps: an unanswered last request, then the current turn's intentions.
    if w.user_turns and w.last_answer < last_user:
        text = w.user_turns[-1][1]
        sections.add(IN_PROGRESS, text, (_MESSAGES, last_user, 0))
        sections.add(
            NEXT,
            f"Finish the open request: {_collapse(text)}",
            (_MESSAGES, last_user, 0),
            tier=1,
            group=_G_OPEN_REQUEST,
        )
    for i, pos, sentence in w.intents:
        if i > last_user:
            sections.add(NEXT, sentence, (_MESSAGES, i, pos), group=_G_INTENT)
    return sections.finish()


def _paths(paths: object) -> list[str]:
    if not isinstance(paths, dict | list | tuple):
        return []
    return [p for p in paths if isinstance(p, str) and p]


# --------------------------------------------------------------------------- the size bound


_Marker = Callable[[int], str]


@dataclass(slots=True)
class _Block:
    heading: str
    items: list[_Item]
    marker: _Marker
    placeholder: str


def _bullet(prefix: str) -> _Marker:
    return lambda _index: prefix


def _numbered(index: int) -> str:
    return f"{index + 1}. "


def _lines(items: list[_Item], marker: _Marker) -> list[str]:
    return [marker(n) + item.text for n, item in enumerate(items)]


def _cost(lines: list[str]) -> int:
    """The UTF-16 length the lines add after their heading (one newline before each)."""
    return sum(utf16_len(line) + 1 for line in lines)


def _fit(block: _Block, budget: int) -> tuple[list[str], bool]:
    """The block's lines within ``budget``, and whether every item made it whole."""
    if not block.items:
        lines = [block.placeholder]
        return (lines, True) if _cost(lines) <= budget else ([], False)
    keep = list(block.items)
    lines = _lines(keep, block.marker)
    if _cost(lines) <= budget:
        return lines, True
    # _cost(_lines(keep)) kept up to date as items are dropped: the items' lengths, plus the
    # markers and newlines of as many lines (they depend only on the line's index).
    markers = [0]
    for n in range(len(keep)):
        markers.append(markers[-1] + utf16_len(block.marker(n)) + 1)
    text_cost = sum(utf16_len(item.text) for item in keep)
    drop_order = sorted(keep, key=_priority)
    while len(keep) > 1:
        victim = drop_order.pop(0)
        keep = [i for i in keep if i is not victim]
        text_cost -= utf16_len(victim.text)
        if text_cost + markers[len(keep)] <= budget:
            return _lines(keep, block.marker), False
    marker = block.marker(0)
    room = budget - 1 - utf16_len(marker)
    if room >= MIN_CLIP:
        clipped = _clip(keep[0].text, room)
        if clipped and clipped != "…":
            return [marker + clipped], False
    lines = [block.placeholder]
    return (lines, False) if _cost(lines) <= budget else ([], False)


def _share(demands: list[int], budget: int) -> list[int]:
    """Water-filling: each gets at most its demand; what the small ones leave goes to the rest."""
    alloc = [0] * len(demands)
    remaining = max(0, budget)
    ranked = sorted(range(len(demands)), key=lambda n: (demands[n], n))
    for pos, n in enumerate(ranked):
        share = remaining // (len(demands) - pos)
        alloc[n] = min(demands[n], share)
        remaining -= alloc[n]
    return alloc


def _render(blocks: list[_Block], max_chars: int) -> str:
    fixed = sum(utf16_len(b.heading) for b in blocks) + 2 * (len(blocks) - 1)
    if fixed > max_chars:
        return _headings_only(blocks, max_chars)
    budget = max_chars - fixed
    demands = [_cost(_lines(b.items, b.marker) if b.items else [b.placeholder]) for b in blocks]
    alloc = _share(demands, budget)
    fitted = [_fit(b, a) for b, a in zip(blocks, alloc, strict=True)]
    for _round in range(4):
        used = [_cost(lines) for lines, _ in fitted]
        slack = budget - sum(used)
        short = [n for n, (_, complete) in enumerate(fitted) if not complete]
        if slack <= 0 or not short:
            break
        extra = _share([demands[n] - used[n] for n in short], slack)
        if not any(extra):
            break
        for n, more in zip(short, extra, strict=True):
            if more:
                fitted[n] = _fit(blocks[n], used[n] + more)
    parts = [
        b.heading + "".join("\n" + line for line in lines)
        for b, (lines, _) in zip(blocks, fitted, strict=True)
    ]
    text = "\n\n".join(parts)
    if utf16_len(text) > max_chars:  # cannot happen; the bound is a promise, so keep it anyway
        return _headings_only(blocks, max_chars)
    return text


def _headings_only(blocks: list[_Block], max_chars: int) -> str:
    out = ""
    for line in "\n".join(b.heading for b in blocks).split("\n"):
        candidate = f"{out}\n{line}" if out else line
        if utf16_len(candidate) > max_chars:
            break
        out = candidate
    return out


# --------------------------------------------------------------------------- entry point


def extract_summary(
    messages: Sequence[Any],
    *,
    previous_summary: str | None,
    file_ops: FileOps | None,
    kind: ExtractKind,
    max_chars: int,
) -> str:
    """A checkpoint made from ``messages`` (and merged with ``previous_summary``), at most
    ``max_chars`` UTF-16 units long. ``kind`` picks the history or the turn-prefix headings."""
    if not isinstance(max_chars, int) or max_chars <= 0:
        return ""
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        messages = []
    # A turn prefix describes its own messages only; the preparation's file_ops cover the
    # whole compaction (and the assembled summary lists them anyway).
    # The walk makes thousands of small containers and no cycles: the collector's passes over
    # the daemon's heap (every parsed body it holds) were ~15% of it (issue 30).
    enabled = gc.isenabled()
    gc.disable()
    try:
        items = _collect(messages, previous_summary, None if kind == "turn_prefix" else file_ops)
    finally:
        if enabled:
            gc.enable()
    if kind == "turn_prefix":
        blocks = [
            _Block("## Original Request", items[GOAL], _bullet("- "), NONE_LINE),
            _Block("## Progress So Far", items[DONE] + items[DECISIONS], _bullet("- "), NONE_LINE),
            _Block(
                "## Context Needed to Continue",
                items[CONSTRAINTS] + items[BLOCKED] + items[CONTEXT],
                _bullet("- "),
                NONE_LINE,
            ),
        ]
    else:
        blocks = [
            _Block("## Goal", items[GOAL], _bullet("- "), NONE_LINE),
            _Block("## Constraints & Preferences", items[CONSTRAINTS], _bullet("- "), NONE_LINE),
            _Block("## Progress\n### Done", items[DONE], _bullet("- [x] "), NONE_LINE),
            _Block("### In Progress", items[IN_PROGRESS], _bullet("- [ ] "), NONE_LINE),
            _Block("### Blocked", items[BLOCKED], _bullet("- "), NONE_LINE),
            _Block("## Key Decisions", items[DECISIONS], _bullet("- "), NONE_LINE),
            _Block("## Next Steps", items[NEXT], _numbered, DEFAULT_NEXT_STEP),
            _Block("## Critical Context", items[CONTEXT], _bullet("- "), NONE_LINE),
        ]
    return _render(blocks, max_chars)
