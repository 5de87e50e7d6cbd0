"""The index's copy of the texts, compressed many to a block, and the vocabulary of their tokens.

Texts are short (the median 64 bytes, 86% under 256): zlib on each alone keeps 0.57-0.59 of
it, zlib on a run of a file's consecutive texts keeps a fraction of that (the words of one
session repeat). So the texts a batch inserts (one file's, or one append's) are cut into
blocks of about :data:`BLOCK_BYTES` (32 KiB: 0.28 of the text in the file, 0.29 with 16 KiB
and 0.42 with 4 KiB — rows of 1-2 KiB left a third of each page empty; a block decodes in about
165 us, 95 with 16 KiB, and a query decodes few: a page's snippets, and the candidates of a
substring query the word index's match does not prove) and each block is one row of
``blocks``, keyed by the row id of its first text: a text's block is the one with the
greatest key not above its id (a batch's ids are consecutive and above every id left, and it
first drops the blocks from its first id up: what they held is gone). ``sd_text(block id, data, text
id)``, a function registered on every connection of the index, gives a text back — the
``texts`` view the word index takes its content from (snippets, deletions) — and keeps the
blocks it opened last, decoded: a query's candidates come newest first, many from one block.

The vocabulary (``vocab``) holds each distinct token of the texts once with its count, and a
trigram index over it (``vgrams``) answers substring queries (see :mod:`.index`). A token is a
run of ASCII letters and digits and non-ASCII characters, ASCII letters lowered: every other
ASCII character splits. Those split points are a subset of the word tokenizer's (unicode61
separates at every ASCII character but letters and digits), so a token is a word, or a phrase
of words, of the word index; and substring mode ignores ASCII case only, so lowering ASCII
letters loses nothing. Only tokens with 3 ASCII letters or digits in a row are kept: a
substring query asks the vocabulary with such a piece or scans. A token's count is how often
the texts hold it; a token no text holds any more leaves the vocabulary.
"""

from __future__ import annotations

import os
import re
import sqlite3
import struct
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Final

BLOCK_BYTES: Final = 32768
"""Bytes of text a block holds at most (unless one text is larger)."""
LEVEL: Final = 4
"""zlib's level: the texts of the 64 MiB corpus compress to 0.247 of their bytes at 4 and 0.238
at 6 in 63% of the time (0.18 against 0.29 s of CPU: a first build compresses every text);
1-3 (zlib's faster matcher) keep 0.26-0.28, 9 saves 0.001-0.002 more than 6."""
_RAW, _ZLIB = b"r", b"z"
NONCE: Final = 8
"""Random bytes opening every block: a block id reused after its texts went (the file read
again) is another block, and the decoded blocks a connection keeps are told apart by these."""
_CACHED: Final = 32

_TOKEN_BYTES: Final = bytes(
    c + 32 if 65 <= c <= 90 else c if c >= 0x80 or chr(c).isalnum() else 0x20 for c in range(256)
)
"""ASCII letters lowered, other ASCII characters but digits made spaces: a text's tokens are
then its ``split()`` (non-ASCII characters are made of bytes >= 0x80 only, so a token never
cuts one); a regular expression took three times as long."""
_GRAM: Final = re.compile(rb"[0-9a-z]{3}")


def pack(texts: list[bytes]) -> bytes:
    """One block: the texts' lengths then their bytes, compressed when that is smaller."""
    body = struct.pack(f"<I{len(texts)}I", len(texts), *map(len, texts)) + b"".join(texts)
    packed = zlib.compress(body, LEVEL)
    nonce = os.urandom(NONCE)
    return nonce + (_ZLIB + packed if len(packed) < len(body) else _RAW + body)


def unpack(data: bytes) -> tuple[bytes, list[int]]:
    """A block's bytes (:func:`pack`) and where each text starts in them (one more: the end);
    a text is decoded only when asked for."""
    body = zlib.decompress(data[NONCE + 1 :]) if data[NONCE : NONCE + 1] == _ZLIB else data[NONCE + 1 :]
    (count,) = struct.unpack_from("<I", body)
    at = 4 + 4 * count
    starts = [at]
    for n in struct.unpack_from(f"<{count}I", body, 4):
        at += n
        starts.append(at)
    return body, starts


def split(first: int, encoded: list[bytes]) -> Iterator[tuple[int, list[bytes]]]:
    """``(block id, texts)`` for a batch of texts whose ids start at ``first``."""
    start, size = 0, 0
    for i, text in enumerate(encoded):
        if size and size + len(text) > BLOCK_BYTES:
            yield first + start, encoded[start:i]
            start, size = i, 0
        size += len(text)
    if start < len(encoded):
        yield first + start, encoded[start:]


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def plain(text: str) -> bool:
    """Whether the word tokenizer sees in ``text`` nothing but its ASCII letters and digits: no
    non-ASCII letter, digit, mark or private-use character (what unicode61 makes words of, or
    folds), only ASCII and symbols or punctuation (``—``, ``→``, ``✓``: separators to it). A
    word of such a text is a run of its ASCII letters and digits, as it is written."""
    if text.isascii():
        return True
    for c in set(text):
        if ord(c) > 127:
            category = unicodedata.category(c)
            if category[0] in "LNM" or category == "Co":
                return False
    return True


def token_counts(encoded: Iterable[bytes]) -> dict[str, int]:
    """Each token of the texts with how often they hold it (the vocabulary's counts: what an
    insert adds a deletion takes off), only tokens with 3 ASCII letters or digits in a row.

    Counted on bytes, and each distinct token decoded once; an ASCII token (of letters and
    digits only, after the translation) of 3 or more is kept without a regular expression."""
    counts = Counter(b"\n".join(encoded).translate(_TOKEN_BYTES).split())
    gram = _GRAM.search
    return {
        t.decode("utf-8", "surrogatepass"): n
        for t, n in counts.items()
        if len(t) > 2 and (t.isascii() or gram(t))
    }


def register(db: sqlite3.Connection) -> None:
    """``sd_text`` on ``db`` (the ``texts`` view needs it), with this connection's cache."""
    cache: dict[tuple[int, bytes], tuple[bytes, list[int]]] = {}

    def sd_text(block: int, data: bytes, doc: int) -> str | None:
        key = (block, data[:NONCE])
        found = cache.get(key)
        if found is None:
            found = unpack(data)
            if len(cache) >= _CACHED:
                cache.pop(next(iter(cache)))
            cache[key] = found
        body, starts = found
        i = doc - block
        if not 0 <= i < len(starts) - 1:
            return None
        return body[starts[i] : starts[i + 1]].decode("utf-8", "surrogatepass")

    db.create_function("sd_text", 3, sd_text, deterministic=True)
