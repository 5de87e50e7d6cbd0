"""The vocabulary's token counts and the compressed blocks, against their definitions.

:func:`.blocks.token_counts` is made fast (counted on bytes, an ASCII token kept without a
regular expression): here it must equal the vocabulary's definition written plainly, with a
regular expression over the decoded text — a token is a run of ASCII letters and digits and
non-ASCII characters, ASCII letters lowered, kept when it holds 3 ASCII letters or digits in a
row. And a block packed at any size and compression gives back its texts."""

from __future__ import annotations

import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiond.search import blocks

_TOKEN = re.compile(r"[0-9A-Za-z\u0080-\U0010ffff]+")
_THREE = re.compile(r"[0-9a-z]{3}")
ALPHABET = [*"abcXYZ019_-. /:\n\téÉßİ日😀→²\u0301\ue000\x00", "abc", "Bca1", "xyzw", "\ud800"]
_text = st.lists(st.sampled_from(ALPHABET), max_size=24).map("".join)


def _by_definition(texts: list[str]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for text in texts:
        for token in _TOKEN.findall(text):
            lowered = "".join(c.lower() if c.isascii() else c for c in token)
            if _THREE.search(lowered):
                counts[lowered] += 1
    return dict(counts)


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, max_size=8))
def test_token_counts_follow_the_definition(texts: list[str]) -> None:
    assert blocks.token_counts([blocks.encode(t) for t in texts]) == _by_definition(texts)


def test_token_counts_of_known_texts() -> None:
    texts = ["Parse_Leaf_ID parse leaf", "naïve café日本 ab x9z", "é1234 — ABC→abc", ""]
    assert blocks.token_counts([blocks.encode(t) for t in texts]) == {
        "parse": 2,
        "leaf": 2,
        "café日本": 1,  # a non-ASCII character joins, "caf" keeps it ("naïve" has no 3 in a row)
        "x9z": 1,
        "é1234": 1,
        "abc→abc": 1,
    }


@settings(max_examples=100, deadline=None)
@given(st.lists(_text, max_size=40), st.integers(0, 6))
def test_a_block_gives_back_its_texts(texts: list[str], repeat: int) -> None:
    encoded = [blocks.encode(t * repeat) for t in texts]  # repeated: compressed, else raw
    body, starts = blocks.unpack(blocks.pack(encoded))
    assert [body[starts[i] : starts[i + 1]] for i in range(len(encoded))] == encoded
