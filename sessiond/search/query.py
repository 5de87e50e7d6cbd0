"""The query language people type -> what SQLite's FTS5 runs, checked before SQLite sees it.

Words mode (the default): ``word`` (every word must occur; case and accents ignored),
``"a phrase"`` (the words in this order), ``pref*`` (a word starting so), ``-word`` or
``-"a phrase"`` (none may occur). Words are what Unicode calls letters and digits: ``_``, ``.``
and the like separate them, so ``parse_leaf_id`` in words mode is the phrase
``parse leaf id``. Substring mode (``mode: "substring"``, for code): the whole query is one
literal piece of text of at least 3 characters, found anywhere (ASCII letters in any case).

Everything a person types is turned into quoted FTS5 strings, so FTS5's own operators and
column filters cannot be injected and a malformed query is refused here, with -32602 naming
``query`` — SQLite's error never reaches a client.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from ..errors import InvalidArgumentError

MIN_SUBSTRING: Final = 3
"""The trigram index finds pieces of at least this many characters."""
MAX_QUERY_CHARS: Final = 1000
MAX_TERMS: Final = 32


@dataclass(frozen=True, slots=True)
class Term:
    text: str
    phrase: bool = False
    prefix: bool = False
    excluded: bool = False


def _is_word_char(c: str) -> bool:
    return c.isalnum()


def _has_token(text: str) -> bool:
    return any(_is_word_char(c) for c in text)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def parse_terms(query: str) -> list[Term]:
    """Split a words-mode query into its terms (quotes, ``-`` and ``*`` honoured)."""
    terms: list[Term] = []
    i, n = 0, len(query)
    while i < n:
        c = query[i]
        if c.isspace():
            i += 1
            continue
        excluded = False
        if c == "-" and i + 1 < n and not query[i + 1].isspace():
            excluded = True
            i += 1
        if query[i] == '"':
            end = query.find('"', i + 1)
            if end < 0:
                raise InvalidArgumentError('the query has a " that is not closed', field="query")
            text = query[i + 1 : end]
            i = end + 1
            prefix = i < n and query[i] == "*"
            if prefix:
                i += 1
            terms.append(Term(text, phrase=True, prefix=prefix, excluded=excluded))
            continue
        start = i
        while i < n and not query[i].isspace() and query[i] != '"':
            i += 1
        word = query[start:i]
        prefix = word.endswith("*")
        word = word.rstrip("*")
        if "*" in word:
            raise InvalidArgumentError("* may only end a word (a prefix: pars*)", field="query")
        terms.append(Term(word, prefix=prefix, excluded=excluded))
    return terms


def words_match(query: str) -> str:
    """The FTS5 MATCH expression of a words-mode query, or -32602 naming ``query``."""
    check_length(query)
    terms = [t for t in parse_terms(query) if _has_token(t.text)]
    if len(terms) > MAX_TERMS:
        raise InvalidArgumentError(f"a query has at most {MAX_TERMS} terms", field="query")
    wanted = [t for t in terms if not t.excluded]
    if not wanted:
        raise InvalidArgumentError(
            "the query has no word to look for (letters or digits, not only excluded ones)", field="query"
        )

    def fts(t: Term) -> str:
        return _quote(t.text) + (" *" if t.prefix else "")

    expression = " AND ".join(fts(t) for t in wanted)
    excluded = [t for t in terms if t.excluded]
    if excluded:
        expression = f"({expression})" + "".join(f" NOT {fts(t)}" for t in excluded)
    return expression


def substring_needle(query: str) -> str:
    """The literal a substring-mode query looks for, or -32602 naming ``query``."""
    check_length(query)
    needle = query.strip()
    if len(needle) < MIN_SUBSTRING:
        raise InvalidArgumentError(
            f"a substring query needs at least {MIN_SUBSTRING} characters", field="query"
        )
    return needle


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of a substring query between ASCII characters other than letters and digits:
    any text holding the query holds a vocabulary token (see :mod:`.blocks`) holding ``text``,
    starting with it when the query has a separator before it (``starts``), ending with it
    when one follows (``ends``)."""

    text: str
    """ASCII letters lowered, as the vocabulary keeps tokens."""
    starts: bool
    ends: bool
    gram: str
    """Its longest run of ASCII letters and digits: what the vocabulary's trigram index is asked
    for when 3 or more (plain ASCII: SQLite 3.40's trigram LIKE crashed the process on some
    patterns mixing multi-byte characters and wildcards, found by tests/search/test_query.py's
    fuzzing)."""


def substring_pieces(needle: str) -> list[Piece]:
    """The pieces of ``needle``; the vocabulary is asked for those with 3 ASCII letters or
    digits in a row (:attr:`Piece.gram`)."""
    pieces: list[Piece] = []
    for m in _RUN.finditer(needle):
        gram = max(_GRAM.findall(m.group()), key=len, default="")
        if gram:
            pieces.append(
                Piece(
                    ascii_lower(m.group()),
                    starts=m.start() > 0,
                    ends=m.end() < len(needle),
                    gram=ascii_lower(gram),
                )
            )
    return pieces


def ascii_lower(text: str) -> str:
    """``text`` with ASCII letters lowered, nothing else (as SQLite's ``lower``)."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_RUN: Final = re.compile(r"[0-9A-Za-z\x80-\U0010ffff]+")
_GRAM: Final = re.compile(r"[0-9A-Za-z]+")


def check_length(query: str) -> None:
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(f"a query has at most {MAX_QUERY_CHARS} characters", field="query")
    if not query.strip():
        raise InvalidArgumentError("the query is empty", field="query")
    if "\x00" in query:
        raise InvalidArgumentError("the query holds a NUL character", field="query")


def parse_time(value: str, field: str, *, end: bool) -> int:
    """``since``/``until`` (an ISO 8601 date or date-time) as epoch milliseconds.

    A date alone means the whole day in local time: ``until`` 2026-03-01 includes that day.
    A date-time without an offset is local time too.
    """
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime.combine(day + timedelta(days=1) if end else day, time()).astimezone()
            return int(moment.timestamp() * 1000) - (1 if end else 0)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(
            f"{field} must be an ISO 8601 date or date-time (2026-03-01, 2026-03-01T14:00:00Z)", field=field
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.astimezone(UTC).timestamp() * 1000)


_CURSOR_PREFIX: Final = "s1:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The offset a ``nextCursor`` stands for, or -32602 naming ``cursor``."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if raw.startswith(_CURSOR_PREFIX):
            offset = int(raw[len(_CURSOR_PREFIX) :])
            if offset >= 0:
                return offset
    except (ValueError, binascii.Error, UnicodeDecodeError):
        pass
    raise InvalidArgumentError("cursor is not a nextCursor this server gave", field="cursor")
