"""JavaScript value semantics the Pi-compatible core relies on."""

from __future__ import annotations

import math
import time

import pytest

from sessiond.model.js import (
    UNDEFINED,
    date_ms,
    iso_from_ms,
    iso_now,
    key,
    number_to_string,
    to_string,
    trim,
    truthy,
    utf16_len,
    utf16_slice,
    utf16_slice_head,
    utf16_sort_key,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (2.5e-5, "0.000025"),
        (1e16, "10000000000000000"),
        (12345678901234567890.0, "12345678901234567000"),
        (2**53 + 1, "9007199254740992"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.nan, "NaN"),
        (-math.inf, "-Infinity"),
        (42, "42"),
    ],
)
def test_number_to_string_matches_ecmascript(value: float, expected: str) -> None:
    assert number_to_string(value) == expected


def test_utf16_lengths_count_surrogate_pairs() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("😀") == 2
    assert utf16_len("中文") == 2
    assert utf16_len("a😀b") == 4


def test_utf16_slice_can_split_a_pair_like_js() -> None:
    s = "ab😀cd"
    assert utf16_slice(s, 0, 3) == "ab\ud83d"
    assert utf16_slice(s, 3) == "\ude00cd"
    assert utf16_slice_head(s, 3) == "ab"  # never splits a pair
    assert utf16_slice_head(s, 4) == "ab😀"


def test_utf16_sort_order_differs_from_code_points() -> None:
    # U+FF5E sorts before U+1F600 by code point, after it by UTF-16 unit (0xD83D < 0xFF5E).
    items = ["\uff5e", "\U0001f600"]
    assert sorted(items) == ["\uff5e", "\U0001f600"]
    assert sorted(items, key=utf16_sort_key) == ["\U0001f600", "\uff5e"]


def test_trim_uses_ecmascript_whitespace() -> None:
    assert trim("\ufeff\u00a0 x \u2028\n") == "x"
    assert trim("\x1cx\x1c") == "\x1cx\x1c"  # Python's strip() would remove these


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, False),
        (0.0, False),
        (math.nan, False),
        ("", False),
        (None, False),
        (UNDEFINED, False),
        ([], True),
        ({}, True),
        ("0", True),
        (-1, True),
    ],
)
def test_truthiness(value: object, expected: bool) -> None:
    assert truthy(value) is expected


def test_to_string() -> None:
    assert to_string(UNDEFINED) == "undefined"
    assert to_string(None) == "null"
    assert to_string([1, None, "a"]) == "1,,a"
    assert to_string({"a": 1}) == "[object Object]"
    assert to_string(1.0) == "1"


def test_map_keys_keep_js_identity() -> None:
    assert key("a") == "a"
    assert key(1) != key("1")
    assert key(True) != key(1)
    assert key(None) != key(UNDEFINED)
    assert key(1) == key(1.0)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1970-01-01T00:00:00.000Z", 0.0),
        ("2025-12-08T22:41:05.306Z", 1765233665306.0),
        ("2026-07-29T09:00:00Z", 1785315600000.0),
        ("2026-07-29", 1785283200000.0),
        ("2026-07-29T11:00:00+02:00", 1785315600000.0),
        ("2024-02-29T00:00:00Z", 1709164800000.0),
        ("-000400-03-01T00:00:00Z", -74784816000000.0),
        ("+275760-09-13T00:00:00Z", 8.64e15),
        ("0000-01-01T00:00:00Z", -62167219200000.0),
    ],
)
def test_date_parse(text: str, ms: float) -> None:
    assert date_ms(text) == ms


@pytest.mark.parametrize("text", ["not a date", "2023-02-29T00:00:00Z", "2026-13-01", ""])
def test_date_parse_invalid_is_nan(text: str) -> None:
    assert math.isnan(date_ms(text))


def test_date_of_non_strings() -> None:
    assert date_ms(None) == 0
    assert math.isnan(date_ms(UNDEFINED))
    assert date_ms(1765233665292) == 1765233665292


def test_iso_now_is_the_current_millisecond_in_dates_format() -> None:
    """``iso_now`` formats the date once per second (a cache): every stamp must still be the
    instant it was taken, truncated to the millisecond, across second boundaries too."""
    seen_seconds: set[str] = set()
    deadline = time.monotonic() + 1.5  # two seconds' stamps at least: one boundary crossed
    while len(seen_seconds) < 2 or time.monotonic() < deadline - 1.0:
        before = time.time_ns() // 1_000_000
        stamp = iso_now()
        after = time.time_ns() // 1_000_000
        assert date_ms(stamp) in range(before, after + 1)
        assert stamp in {iso_from_ms(ms) for ms in range(before, after + 1)}
        seen_seconds.add(stamp[:19])
    assert len(seen_seconds) >= 2
