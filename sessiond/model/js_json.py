"""``JSON.parse`` and ``JSON.stringify`` with JavaScript's exact results.

A session line sessiond writes must be byte-identical to the line Pi would write for the same
entry, and Pi writes ``JSON.stringify(entry)``. orjson produces the same bytes for the common
case (compact separators, UTF-8 without ASCII escaping, the same control-character escapes),
so it is the fast path. It differs in four places, which the slow path handles:

* numbers: JS has only doubles (``1.0`` prints as ``1``, ``1e21`` as ``1e+21``, ``0.000001``
  stays positional, integers beyond 2**53 round to the nearest double);
* key order: JS objects list integer-like keys (``"0"``, ``"42"``) first, ascending;
* lone surrogates (``"\\ud800"`` is legal in JSON and in JS strings) are written escaped;
* ``undefined`` members are omitted from objects and become ``null`` in arrays.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

import orjson

from .js import UNDEFINED, number_to_string

_MAX_SAFE: Final = 2**53
_MAX_INDEX: Final = 2**32 - 2


class JSONParseError(ValueError):
    """A line that ``JSON.parse`` would reject."""


# --------------------------------------------------------------------------- parse


def _reject_constant(name: str) -> Any:
    raise JSONParseError(f"invalid JSON literal {name}")


def _parse_int(text: str) -> int | float:
    value = int(text)
    if -_MAX_SAFE <= value <= _MAX_SAFE:
        return value
    return float(value)


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int)


def parse(raw: bytes | str) -> Any:
    """``JSON.parse(text)`` where ``raw`` is UTF-8 bytes (invalid sequences decode as U+FFFD).

    orjson handles nearly every real line; the stdlib decoder is the fallback for what
    orjson refuses but JavaScript accepts: invalid UTF-8 (Node decodes it to U+FFFD), lone
    surrogate escapes, and numbers outside the double range (``1e400`` is ``Infinity``).
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    except (ValueError, RecursionError) as exc:
        raise JSONParseError(str(exc)) from None
    if _skip_ws(text, end) != len(text):
        raise JSONParseError("unexpected data after JSON value")
    return value


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\n\r":
        i += 1
    return i


# --------------------------------------------------------------------------- stringify


def stringify(value: Any, indent: int | None = None) -> str:
    """``JSON.stringify(value)`` or, with ``indent``, ``JSON.stringify(value, null, indent)``."""
    if indent is None and _plain(value):
        try:
            return orjson.dumps(value).decode()
        except (TypeError, orjson.JSONEncodeError):
            pass  # lone surrogates or an exotic type: the general path below decides
    return _encode_all(value, " " * indent if indent else "", "\n")


def dumps(value: Any) -> bytes:
    """``JSON.stringify(value)`` as UTF-8 bytes."""
    if _plain(value):
        try:
            return orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _encode_all(value, "", "\n").encode()


_DEEP_HEADROOM: Final = 4096
"""Extra Python frames for encoding a value nested deeper than the recursion limit allows."""


def _encode_all(value: Any, indent: str, newline: str) -> str:
    """``_encode`` of a whole value, however deeply it nests.

    orjson parses up to 1024 levels but refuses to write more than 254, so a deep value a
    session file or a client legitimately holds lands here, one Python frame per level, and
    would hit the recursion limit (RecursionError while sending or writing it). Parsed values
    nest at most ~1024 levels, so a higher limit for this call is enough; since Python 3.11 a
    call between Python functions uses no C stack, so the higher limit is safe.
    """
    parts: list[str] = []
    try:
        _encode(value, parts, indent, newline)
    except RecursionError:
        parts = []
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + _DEEP_HEADROOM)
        try:
            _encode(value, parts, indent, newline)
        finally:
            sys.setrecursionlimit(limit)
    return "".join(parts)


def _plain(value: Any) -> bool:
    """True when orjson's bytes are exactly JSON.stringify's for this value."""
    stack = [value]
    pop = stack.pop
    push = stack.append
    while stack:
        x = pop()
        t = type(x)
        if t is str or x is None or t is bool:
            continue
        if t is int:
            if -_MAX_SAFE <= x <= _MAX_SAFE:
                continue
            return False
        if t is dict:
            for k, v in x.items():
                if type(k) is not str or (k and "0" <= k[0] <= "9" and _is_index(k)):
                    return False
                tv = type(v)
                if tv is not str and v is not None and tv is not bool:
                    push(v)
            continue
        if t is list:
            stack.extend(x)
            continue
        return False
    return True


def _is_index(k: str) -> bool:
    """Is ``k`` an array index (canonical integer 0..2**32-2), which JS orders first?"""
    if not k.isdigit() or not k.isascii():
        return False
    if len(k) > 1 and k[0] == "0":
        return False
    return int(k) <= _MAX_INDEX


def object_items(obj: dict[str, Any]) -> list[tuple[str, Any]]:
    """``Object.entries(obj)``: integer-like keys first (ascending), then insertion order."""
    items = list(obj.items())
    index_keys = [(k, v) for k, v in items if type(k) is str and k[:1].isdigit() and _is_index(k)]
    if not index_keys:
        return items
    index_keys.sort(key=lambda kv: int(kv[0]))
    rest = [(k, v) for k, v in items if not (type(k) is str and k[:1].isdigit() and _is_index(k))]
    return index_keys + rest


def _quote(s: str) -> str:
    try:
        return orjson.dumps(s).decode()
    except orjson.JSONEncodeError:
        pass
    # Surrogates: a high+low pair is one character in JS; a lone one is written as a
    # \\uXXXX escape (well-formed JSON.stringify).
    s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    try:
        return orjson.dumps(s).decode()
    except orjson.JSONEncodeError:
        pass
    out = json.dumps(s, ensure_ascii=False)
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in out)


def _encode(value: Any, parts: list[str], indent: str, newline: str) -> None:
    t = type(value)
    if t is str:
        parts.append(_quote(value))
    elif value is None or value is UNDEFINED:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif t is int or t is float:
        s = number_to_string(value)
        parts.append("null" if s in ("NaN", "Infinity", "-Infinity") else s)
    elif t is dict:
        items = [(k, v) for k, v in object_items(value) if v is not UNDEFINED]
        if not items:
            parts.append("{}")
            return
        if indent:
            inner = newline + indent
            parts.append("{")
            for i, (k, v) in enumerate(items):
                parts.append(("," if i else "") + inner + _quote(str(k)) + ": ")
                _encode(v, parts, indent, inner)
            parts.append(newline + "}")
        else:
            parts.append("{")
            for i, (k, v) in enumerate(items):
                if i:
                    parts.append(",")
                parts.append(_quote(str(k)) + ":")
                _encode(v, parts, indent, newline)
            parts.append("}")
    elif t is list or t is tuple:
        if not value:
            parts.append("[]")
            return
        if indent:
            inner = newline + indent
            parts.append("[")
            for i, v in enumerate(value):
                parts.append(("," if i else "") + inner)
                _encode(v, parts, indent, inner)
            parts.append(newline + "]")
        else:
            parts.append("[")
            for i, v in enumerate(value):
                if i:
                    parts.append(",")
                _encode(v, parts, indent, newline)
            parts.append("]")
    else:
        raise TypeError(f"cannot encode {t.__name__} as JSON")


__all__ = ["JSONParseError", "dumps", "object_items", "parse", "stringify"]
