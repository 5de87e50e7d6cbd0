"""JavaScript value semantics that Pi's behaviour depends on.

Pi is TypeScript: lengths are UTF-16 code units, ``trim()`` has its own whitespace set,
truthiness differs from Python's (``[]`` and ``{}`` are truthy, ``NaN`` is not), a missing
property (``undefined``) is not ``null``, and ``new Date(x)`` parses timestamps its own way.
Reproducing Pi's numbers and choices means reproducing these rules, so they live here, once.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import Any, Final


class _Undefined:
    """JavaScript's ``undefined``: a property that is absent, as opposed to one set to ``null``."""

    __slots__ = ()
    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()
"""The single ``undefined`` value (falsy; omitted from JSON objects, ``null`` in arrays)."""


def get(obj: Any, key: str) -> Any:
    """``obj?.[key]``: the property, or :data:`UNDEFINED` when absent or ``obj`` is not an object."""
    if type(obj) is dict:
        return obj.get(key, UNDEFINED)
    return UNDEFINED


def truthy(value: Any) -> bool:
    """JavaScript truthiness: only ``false, 0, -0, NaN, "", null, undefined`` are falsy."""
    if value is None or value is UNDEFINED or value is False:
        return False
    t = type(value)
    if t is str or t is int:
        return bool(value)
    if t is float:
        return bool(value) and value == value  # NaN is falsy in JS
    return True  # objects, arrays (even empty), True


def nullish(value: Any) -> bool:
    """``value == null`` in JavaScript (``null`` or ``undefined``)."""
    return value is None or value is UNDEFINED


def utf16_len(text: str) -> int:
    """``text.length``: the number of UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_slice(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` with UTF-16 indices (may split a surrogate pair, like JS)."""
    if text.isascii():
        return text[start:end]
    raw = text.encode("utf-16-le", "surrogatepass")
    n = len(raw) // 2
    s = _clamp_index(start, n)
    e = n if end is None else _clamp_index(end, n)
    if e <= s:
        return ""
    return raw[2 * s : 2 * e].decode("utf-16-le", "surrogatepass")


def _clamp_index(i: int, n: int) -> int:
    if i < 0:
        return max(0, n + i)
    return min(i, n)


def utf16_slice_head(text: str, max_units: int) -> str:
    """At most ``max_units`` UTF-16 units from the start, never splitting a surrogate pair."""
    if text.isascii():
        return text[: max(0, max_units)]
    raw = text.encode("utf-16-le", "surrogatepass")
    end = max(0, max_units)
    if 0 < end < len(raw) // 2:
        hi = int.from_bytes(raw[2 * end - 2 : 2 * end], "little")
        lo = int.from_bytes(raw[2 * end : 2 * end + 2], "little")
        if 0xD800 <= hi <= 0xDBFF and 0xDC00 <= lo <= 0xDFFF:
            end -= 1
    return raw[: 2 * end].decode("utf-16-le", "surrogatepass")


def utf16_sort_key(text: str) -> bytes:
    """Key that orders strings like JavaScript's default ``sort()`` (UTF-16 code unit order)."""
    return text.encode("utf-16-be", "surrogatepass")


# ECMAScript WhiteSpace + LineTerminator, the set String.prototype.trim removes.
_JS_WS: Final = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def trim(text: str) -> str:
    """``text.trim()``."""
    return text.strip(_JS_WS)


def to_string(value: Any) -> str:
    """``String(value)`` / template-literal interpolation."""
    t = type(value)
    if t is str:
        return str(value)
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if t is int or t is float:
        return number_to_string(value)
    if t is list:
        return ",".join("" if nullish(v) else to_string(v) for v in value)
    return "[object Object]"


def number_to_string(value: float) -> str:
    """``Number.prototype.toString()`` (ECMAScript Number::toString, radix 10)."""
    if type(value) is int:
        if -(2**53) <= value <= 2**53:
            return str(value)
        value = float(value)
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    k = len(digits)
    n = exponent  # value = 0.d1d2...dk * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = mantissa + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + body


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of a positive finite float and its exponent ``n``.

    Python's ``repr`` and V8 both produce the shortest digit string that round-trips, so only
    the layout differs; this extracts digits and exponent from ``repr``.
    """
    r = repr(value)
    mant, _, exp = r.partition("e")
    e = int(exp) if exp else 0
    intpart, _, frac = mant.partition(".")
    if frac == "0":
        frac = ""
    digits = (intpart + frac).lstrip("0")
    # position of the decimal point relative to the start of intpart+frac
    point = len(intpart) + e
    leading_zeros = len(intpart + frac) - len((intpart + frac).lstrip("0"))
    n = point - leading_zeros
    digits = digits.rstrip("0")
    return digits, n


def ceil(value: float) -> float:
    """``Math.ceil`` that lets ``NaN`` through (Python's ``math.ceil`` raises on it)."""
    if value != value or value in (math.inf, -math.inf):
        return value
    return math.ceil(value)


# --------------------------------------------------------------------------- Map keys


def key(value: Any) -> Hashable:
    """A hashable key with JavaScript ``Map`` (SameValueZero) identity for any JSON id value.

    Real ids are strings (returned as is, the fast path). Anything else a file may hold is
    kept distinct the way a JS ``Map`` keeps it: ``1`` and ``"1"`` and ``true`` differ, ``null``
    and ``undefined`` differ, and each object or array is only equal to itself.
    """
    if type(value) is str:
        return value
    return _slow_key(value)


def _slow_key(value: Any) -> Hashable:
    if value is None or value is UNDEFINED:
        return value
    t = type(value)
    if t is bool:
        return ("\0bool", value)
    if t is int or t is float:
        f = float(value)
        return ("\0num", "NaN" if f != f else f)
    return ("\0obj", id(value))


# --------------------------------------------------------------------------- Date


_ISO_RE: Final = re.compile(
    r"^(?P<y>[+-]\d{6}|\d{4})(?:-(?P<mo>\d{2})(?:-(?P<d>\d{2}))?)?"
    r"(?:T(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d+))?)?"
    r"(?P<tz>Z|[+-]\d{2}:\d{2})?)?$"
)
_MAX_TIME: Final = 8.64e15


def date_ms(value: Any) -> float:
    """``new Date(value).getTime()``: milliseconds since the epoch, or NaN.

    Strings follow the ECMAScript date-time format (what ``toISOString`` writes and what
    every agent stores). A date-time without an offset is taken as UTC, which is what Node
    does when ``TZ=UTC``; the legacy free-form formats V8 also accepts give NaN here.
    """
    t = type(value)
    if value is None:
        return 0.0
    if value is UNDEFINED:
        return math.nan
    if t is bool:
        return 1.0 if value else 0.0
    if t is int or t is float:
        f = float(value)
        if f != f or abs(f) > _MAX_TIME:
            return math.nan
        return float(math.trunc(f))
    if t is not str:
        return math.nan
    return _parse_iso(value)


def _parse_iso(text: str) -> float:
    m = _ISO_RE.match(text.strip())
    if m is None:
        return math.nan
    year_s = m.group("y")
    if year_s == "-000000":
        return math.nan
    year = int(year_s)
    month = int(m.group("mo") or 1)
    day = int(m.group("d") or 1)
    hour = int(m.group("h") or 0)
    minute = int(m.group("mi") or 0)
    second = int(m.group("s") or 0)
    frac = m.group("f") or ""
    ms = int((frac + "000")[:3]) if frac else 0
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
        return math.nan
    if hour > 24 or (hour == 24 and (minute or second or ms)):
        return math.nan
    days = _days_from_civil(year, month, 1) + day - 1
    if day > _days_in_month(year, month):
        return math.nan
    total = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + ms
    tz = m.group("tz")
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        oh, om = int(tz[1:3]), int(tz[4:6])
        if oh > 23 or om > 59:
            return math.nan
        total -= sign * (oh * 60 + om) * 60_000
    if abs(total) > _MAX_TIME:
        return math.nan
    return float(total)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 for a proleptic Gregorian date (any year, incl. negative)."""
    y -= m <= 2
    era = y // 400  # floor division already rounds negative years down
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_SECOND: tuple[int, str] = (-1, "")
"""The last second :func:`iso_now` formatted and its text up to the milliseconds."""


def iso_now() -> str:
    """``new Date().toISOString()`` for the current instant (ms precision, ``Z``).

    Every appended entry is stamped: the date and time are formatted once per second
    (``strftime`` was ~2.3 of its ~2.9 µs), the milliseconds appended. The same clock as
    ``datetime.now`` (the wall clock), truncated to the millisecond as before."""
    global _SECOND  # noqa: PLW0603 - a one-entry cache; swapping the tuple is atomic
    second, millis = divmod(time.time_ns() // 1_000_000, 1000)
    cached = _SECOND
    if cached[0] != second:
        cached = _SECOND = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    return f"{cached[1]}{millis:03d}Z"


def iso_from_ms(ms: float) -> str:
    """``new Date(ms).toISOString()`` for a finite time value."""
    seconds, millis = divmod(int(ms), 1000)
    dt = datetime.fromtimestamp(seconds, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis:03d}Z"


__all__ = [
    "UNDEFINED",
    "ceil",
    "date_ms",
    "get",
    "iso_from_ms",
    "iso_now",
    "key",
    "nullish",
    "number_to_string",
    "to_string",
    "trim",
    "truthy",
    "utf16_len",
    "utf16_slice",
    "utf16_slice_head",
    "utf16_sort_key",
]
